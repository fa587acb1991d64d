"""Running a Python topology file: a `.py` file that defines a module-level `topology`, a
TopologyBuilder or the Topology it built. Whatever goes wrong while it runs is a TopologyError
naming the file (and the line, when the failure is in the file itself)."""

from __future__ import annotations

import os
import runpy
import sys
import traceback
from dataclasses import replace
from pathlib import Path
from typing import Any

from host.errors import TopologyError
from host.topology.builder import LOADING_FILE, LoadingFile, TopologyBuilder
from host.topology.model import Topology
from host.topology.targets import LOCAL, Target
from host.topology.validation import validate


def load_python(path: Path, base_dir: Path, target: Target = LOCAL) -> Topology:
    """Run `path` and return the topology it defines, validated for `target`; components run in
    `base_dir` (the file's directory) unless they say otherwise."""
    file = str(path)
    namespace = _run(path, LoadingFile(file, base_dir, target))
    if "topology" not in namespace:
        raise TopologyError(
            "a Python topology file must define a module-level `topology` "
            "(a TopologyBuilder, or the Topology its build() returns)",
            file=file,
            key="topology",
        )
    value = namespace["topology"]
    if isinstance(value, TopologyBuilder):
        return value.build(base_dir, source=file, target=target)
    if isinstance(value, Topology):
        return _finish(value, base_dir, file, target)
    raise TopologyError(
        f"`topology` must be a TopologyBuilder or a Topology, not {type(value).__name__}",
        file=file,
        key="topology",
    )


def _run(path: Path, loading: LoadingFile) -> dict[str, Any]:
    token = LOADING_FILE.set(loading)
    # so that the file can import helpers next to it, like a script run from its directory
    sys.path.insert(0, str(loading.base_dir))
    try:
        return runpy.run_path(str(path), run_name="__topology__")
    except TopologyError as e:
        raise TopologyError(
            e.problem, file=e.file or loading.file, component=e.component, key=e.key
        ) from e
    except SyntaxError as e:
        raise TopologyError(
            f"Python syntax error at line {e.lineno}: {e.msg}", file=loading.file
        ) from None
    except (Exception, SystemExit) as e:  # the user's code: any failure is a bad topology
        line = _failing_line(e, path)
        where = f" at line {line}" if line else ""
        raise TopologyError(
            f"running the file failed{where}: {type(e).__name__}: {e}", file=loading.file
        ) from e
    finally:
        LOADING_FILE.reset(token)
        if sys.path and sys.path[0] == str(loading.base_dir):
            del sys.path[0]


def _failing_line(error: BaseException, path: Path) -> int | None:
    target = os.path.abspath(path)
    lines = [
        frame.lineno
        for frame in traceback.extract_tb(error.__traceback__)
        if os.path.abspath(frame.filename) == target
    ]
    return lines[-1] if lines else None


def _finish(topology: Topology, base_dir: Path, file: str, target: Target) -> Topology:
    """A Topology made by hand in a .py file: resolve relative cwds, remember the file, validate."""
    components = tuple(
        replace(c, cwd=os.path.normpath(base_dir / c.cwd))
        if isinstance(c.cwd, str) and not os.path.isabs(c.cwd)
        else c
        for c in topology.components
    )
    topology = replace(topology, components=components, source=topology.source or file)
    validate(topology, target=target)
    return topology
