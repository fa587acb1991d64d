"""The operating-system seam: starting a component's child process and signalling it.

Everything the runtime does to a process goes through `Launcher` and the `Child` it returns, so
that tests can put fake children behind the same interface (tests/unit/fake_children.py). Nothing
here waits: an exit is learnt from `Child.exit_fd` (a pidfd, readable once the process has
exited) or from `poll()`, and the event loop owns both.
"""

from __future__ import annotations

import ctypes
import os
import signal
import subprocess
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import IO

from host.runtime.task_priority import TaskPriority
from host.topology.model import Component
from multilang.paths import client_environment

_PR_SET_PDEATHSIG = 1


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


def child_environment(component: Component) -> dict[str, str]:
    """The host's environment, the host interpreter's bin directory first on PATH (so `python` is
    the interpreter with our `multilang` package), our client libraries' variables, then the
    component's own `env` (a `PATH` entry is appended, as Storm's `ShellProcess` setEnv does)."""
    from host.topology.commands import host_bin_dir

    env = client_environment()
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
        popen = subprocess.Popen(
            argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=cwd,
            env=env,
            bufsize=0,
            start_new_session=True,
            preexec_fn=_die_with_parent
            if self.cpus is None and not self.nice
            else _preexec(self.cpus, self.nice),
        )
        if self.priority is not None:
            self.priority.started(popen.pid)
        return Child(popen)
