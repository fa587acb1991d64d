"""The operating-system seam: starting a component's child process and signalling it.

Everything the runtime does to a process goes through `Launcher` and the `Child` it returns, so
that tests can put fake children behind the same interface (tests/unit/fake_children.py). Nothing
here waits: an exit is learnt from `Child.exit_fd` (a pidfd, readable once the process has
exited) or from `poll()`, and the event loop owns both.
"""

from __future__ import annotations

import ctypes
import errno
import functools
import logging
import os
import shutil
import signal
import subprocess
import threading
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import IO

from host.runtime.task_priority import TaskPriority
from host.topology.model import Component
from multilang.paths import client_environment
from multilang.shell_frames import OFFER_ENV

_PR_SET_PDEATHSIG = 1
# Run by `sh` between setpriv and the command, with the launcher's pid as $1: a parent that died
# before setpriv set the signal never sends it, so the child looks for itself (it has been
# handed to another parent by then) and ends instead of running on as an orphan.
_PARENT_CHECK = '[ "$PPID" = "$1" ] || exit 1; shift; exec "$@"'
log = logging.getLogger(__name__)


def _die_with_parent() -> None:  # pragma: no cover - runs in the child between fork and exec
    # If the host is SIGKILLed, the kernel kills the direct child too; grandchildren notice the
    # closed pipes. Best effort: only Linux has PR_SET_PDEATHSIG.
    try:
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    except (OSError, AttributeError):
        pass


def _preexec(cpus: set[int] | None, nice: int) -> Callable[[], None]:
    def preexec() -> None:  # pragma: no cover - runs in the child between fork and exec
        _die_with_parent()
        if nice:
            try:
                os.nice(nice)  # yield to the host (host/runtime/task_priority.py)
            except OSError:
                pass
        if cpus is not None:
            try:
                os.sched_setaffinity(0, cpus)
            except OSError:
                pass

    return preexec


@functools.cache
def _setpriv() -> str | None:
    """util-linux's setpriv, if it is on PATH and can set a parent-death signal (2.33 on)."""
    path = shutil.which("setpriv")
    if path is None:
        return None
    try:
        usage = subprocess.run(
            [path, "--help"], capture_output=True, text=True, timeout=10, check=False
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    return path if "--pdeathsig" in usage else None


@functools.cache
def _warn_no_setpriv() -> None:
    log.warning(
        "setpriv (util-linux) is not on PATH: component processes started from this "
        "multi-threaded process get no parent-death signal, and a SIGKILLed parent leaves "
        "them to notice their closed pipes"
    )


def _check_executable(argv0: str, cwd: str, env: Mapping[str, str]) -> None:
    """The OSError Popen would raise for a command it cannot run, raised before setpriv runs it
    (setpriv would report it only as its own exit status 127)."""
    if os.sep in argv0:
        path = argv0 if os.path.isabs(argv0) else os.path.join(cwd, argv0)
        if not os.path.exists(path):
            raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), argv0)
        if os.path.isdir(path) or not os.access(path, os.X_OK):
            raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), argv0)
        return
    search = env.get("PATH", os.defpath)
    # relative PATH entries are looked up from the child's working directory, as execvp does
    dirs = [d if os.path.isabs(d) else os.path.join(cwd, d) for d in search.split(os.pathsep)]
    if shutil.which(argv0, path=os.pathsep.join(dirs)) is None:
        raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), argv0)


def child_environment(component: Component) -> dict[str, str]:
    """The host's environment, the host interpreter's bin directory first on PATH (so `python` is
    the interpreter with our `multilang` package), our client libraries' variables, then the
    component's own `env` (a `PATH` entry is appended, as Storm's `ShellProcess` setEnv does)."""
    from host.topology.commands import host_bin_dir

    env = client_environment()
    # offered by host local's supervision alone, to its own children: not passed on from a host
    # that started this one, nor to what the Spark engine starts (multilang/shell_frames.py)
    env.pop(OFFER_ENV, None)
    env["PATH"] = host_bin_dir() + os.pathsep + env.get("PATH", "")
    for key, value in component.env.items():
        if key == "PATH":
            env["PATH"] = env["PATH"] + os.pathsep + value
        else:
            env[key] = value
    return env


def describe_exit(status: int | None) -> str:
    if status is None:
        return "still running"
    if status < 0:
        try:
            return f"killed by {signal.Signals(-status).name}"
        except ValueError:
            return f"killed by signal {-status}"
    return f"exit status {status}"


class Child:
    """One started child process: its pid, our non-blocking ends of its three pipes, and its exit
    status once it is known."""

    def __init__(self, popen: subprocess.Popen[bytes]) -> None:
        assert popen.stdin and popen.stdout and popen.stderr
        self.popen = popen
        self.pid = popen.pid
        self.stdin_fd = popen.stdin.fileno()
        self.stdout_fd = popen.stdout.fileno()
        self.stderr_fd = popen.stderr.fileno()
        for fd in (self.stdin_fd, self.stdout_fd, self.stderr_fd):
            os.set_blocking(fd, False)
        try:
            self.exit_fd: int | None = os.pidfd_open(self.pid)
        except OSError:  # pragma: no cover - kernels before 5.3: the loop polls instead
            self.exit_fd = None
        self.exit_status: int | None = None
        self.stdin_open = True

    def poll(self) -> int | None:
        """The exit status, reaping the process if it has exited; None while it runs."""
        if self.exit_status is None:
            self.exit_status = self.popen.poll()
        return self.exit_status

    def signal_group(self, sig: int) -> None:
        """Signal the child's whole process group (what it started must not outlive it)."""
        try:
            os.killpg(self.pid, sig)
        except (ProcessLookupError, PermissionError):
            pass

    def close_stdin(self) -> None:
        if self.stdin_open:
            self.stdin_open = False
            _close(self.popen.stdin)

    def close_pipes(self) -> None:
        """Close our ends of the pipes (the process may live on)."""
        self.stdin_open = False
        for stream in (self.popen.stdin, self.popen.stdout, self.popen.stderr):
            _close(stream)

    def close(self) -> None:
        """Close the pipes and the exit descriptor."""
        self.close_pipes()
        if self.exit_fd is not None:
            os.close(self.exit_fd)
            self.exit_fd = None


def _set_from_parent(pid: int, cpus: set[int] | None, nice: int) -> None:
    """What `_preexec` does in the child, done by the parent (best effort: it may have exited)."""
    if nice:
        try:
            ours = os.getpriority(os.PRIO_PROCESS, 0)
            os.setpriority(os.PRIO_PROCESS, pid, min(19, ours + nice))
        except OSError:
            pass
    if cpus is not None:
        try:
            os.sched_setaffinity(pid, cpus)
        except OSError:
            pass


def _close(stream: IO[bytes] | None) -> None:
    try:
        if stream is not None and not stream.closed:
            stream.close()
    except OSError:
        pass


class Launcher:
    """Starts child processes, each in its own session (its own process group)."""

    #: added to every child's environment (the supervisor sets its watchdog's token here)
    extra_env: Mapping[str, str] = MappingProxyType({})
    #: the CPUs a new child may run on, or None for the host's (host/runtime/cpu_isolation.py)
    cpus: set[int] | None = None
    #: new children's niceness, and what sets their sessions' (host/runtime/task_priority.py)
    nice: int = 0
    priority: TaskPriority | None = None

    def start(self, argv: list[str], cwd: str, env: dict[str, str]) -> Child:
        if self.extra_env:
            env = {**env, **self.extra_env}
        # No Python may run in the child of a process with other threads: with a preexec_fn,
        # CPython clears the other threads' states in the child before calling it, and what
        # their thread-locals held is finalized there -- py4j's idle connections among them,
        # whose finalizer shuts the socket down for the parent too (the Spark driver's JVM
        # connection lost at a query's start: docs/architecture.md, "Starting a process").
        # Alone, the host keeps its preexec_fn; with threads, setpriv sets the parent-death
        # signal and the parent sets niceness and CPUs right after the start.
        threaded = threading.active_count() > 1
        setpriv = _setpriv() if threaded else None
        if setpriv is not None:
            _check_executable(argv[0], cwd, env)
            argv = [
                setpriv,
                *("--pdeathsig", "KILL", "--", "/bin/sh", "-c", _PARENT_CHECK, "sh"),
                str(os.getpid()),
                *argv,
            ]
        elif threaded:
            _warn_no_setpriv()
        popen = subprocess.Popen(
            argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=cwd,
            env=env,
            bufsize=0,
            start_new_session=True,
            preexec_fn=None
            if threaded
            else _die_with_parent
            if self.cpus is None and not self.nice
            else _preexec(self.cpus, self.nice),
        )
        if threaded:
            _set_from_parent(popen.pid, self.cpus, self.nice)
        if self.priority is not None:
            self.priority.started(popen.pid)
        return Child(popen)
