"""What a component runs: its argv, checked, and whether it can start (its program found the way
the child will look it up, the scripts it names present in its directory).

The host's interpreter comes first on every component's PATH, so that `python` in a command is
the interpreter the host runs on: `host_bin_dir()` is the one place that rule is written.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import sys
from collections.abc import Mapping

from host.errors import TopologyError
from host.topology.model import Component

SCRIPT_EXTENSIONS = (".py", ".js", ".sh", ".rb")

# options whose value is code or a module name (python -c/-m, node -e, bash -c, ruby -e)
CODE_OPTIONS = frozenset({"-c", "-m", "-e", "--eval", "-p", "--print"})

_SCRIPT_ARG = re.compile(r"[^\s]+(" + "|".join(re.escape(e) for e in SCRIPT_EXTENSIONS) + r")")


def check_command(value: object, *, file: str | None, component: str) -> tuple[str, ...]:
    """A command as given (YAML, the builder, a Flux constructor) -> its argv; anything that is
    not a non-empty list of non-empty strings is a TopologyError."""
    where = {"file": file, "component": component, "key": "command"}
    if value is None:
        raise TopologyError(
            "missing command: give the argv list to run, e.g. [python, my_bolt.py]", **where
        )
    if isinstance(value, str):
        raise TopologyError(
            f"must be a list of arguments (argv), not a string: commands run "
            f"without a shell, so write {_argv_hint(value)}",
            **where,
        )
    if not isinstance(value, (list, tuple)):
        raise TopologyError(
            f"must be a list of arguments (argv), e.g. [python, my_bolt.py], "
            f"not {type(value).__name__}",
            **where,
        )
    if not value:
        raise TopologyError(
            "is empty: give the argv list to run, e.g. [python, my_bolt.py]", **where
        )
    argv: list[str] = []
    for i, arg in enumerate(value):
        if not isinstance(arg, str) or not arg:
            raise TopologyError(
                f"argument {i} must be a non-empty string, got {arg!r} (quote numbers in YAML)",
                **where,
            )
        argv.append(arg)
    return tuple(argv)


def _argv_hint(text: str) -> str:
    try:
        return "[" + ", ".join(shlex.split(text)) + "]"
    except ValueError:
        return "[program, argument, ...]"


def looks_like_script(arg: str) -> bool:
    """`split.py`, `lib/count.js`: worth checking. Options, URLs and code snippets are not."""
    return not arg.startswith("-") and "://" not in arg and _SCRIPT_ARG.fullmatch(arg) is not None


# ---- can it start? ------------------------------------------------------------------------------


def host_bin_dir() -> str:
    """The host interpreter's bin directory, first on every component's PATH (so `python` is the
    interpreter the host runs on). Not resolved: a venv's python is a symlink out of the venv."""
    return os.path.dirname(sys.executable)


def search_path(env: Mapping[str, str] | None = None) -> str:
    """The PATH a component's executable is looked up on: the host's bin directory, the host's
    PATH, then any PATH the component's `env` adds (appended, as Storm's setEnv does)."""
    parts = [host_bin_dir(), os.environ.get("PATH", "")]
    if env and env.get("PATH"):
        parts.append(env["PATH"])
    return os.pathsep.join(p for p in parts if p)


def find_executable(program: str, cwd: str, env: Mapping[str, str] | None = None) -> str | None:
    """Where argv[0] would be found: a name with a slash is a path relative to `cwd` (as exec
    resolves it in the child), a bare name is looked up on `search_path(env)`."""
    if os.sep in program or (os.altsep and os.altsep in program):
        path = os.path.normpath(os.path.join(cwd, program))
        return path if os.path.isfile(path) and os.access(path, os.X_OK) else None
    return shutil.which(program, path=search_path(env))


def check_launchable(c: Component, file: str | None) -> None:
    """The component's program exists and is executable, and the scripts its argv names exist
    in its directory."""
    where = {"file": file, "component": c.id, "key": "command"}
    program = c.command[0]
    if find_executable(program, c.cwd, c.env) is None:
        raise TopologyError(_not_found(program, c.cwd), **where)
    for previous, arg in zip(c.command, c.command[1:]):
        if previous in CODE_OPTIONS:
            continue  # `python -m pkg.mod`, `bash -c code`: not a file
        if looks_like_script(arg) and not os.path.exists(os.path.join(c.cwd, arg)):
            raise TopologyError(
                f"script {arg!r} does not exist in the component's directory {c.cwd}", **where
            )


def _not_found(program: str, cwd: str) -> str:
    if os.sep not in program:
        return (
            f"executable {program!r} not found on PATH (the host's {host_bin_dir()} is "
            f"searched first); install it or give its path"
        )
    path = os.path.join(cwd, program)
    if not os.path.exists(path):
        return f"{program!r} does not exist (relative to the component's directory {cwd})"
    if os.path.isdir(path):
        return f"{program!r} is a directory, not a program"
    return (
        f"{program!r} is not executable: chmod +x it, or run it through its interpreter, "
        f"e.g. [bash, {program}]"
    )
