"""One component task's child process: launch, pipes, stderr lines, stop and restart state.

Every OS call that starts or stops a child goes through `Launcher`, the one seam tests can replace.
The event loop (`host.runtime.supervisor`) owns reading and writing; this module only holds per-process
state and does the blocking-free parts of process control.
"""

from __future__ import annotations

import ctypes
import enum
import os
import signal
import subprocess
import sys
from collections import deque
from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType

from host.topology.model import Component
from multilang.paths import client_environment

STDERR_TAIL = 20  # lines kept per process for error reports
_PR_SET_PDEATHSIG = 1


class State(enum.Enum):
    STARTING = "starting"  # launched, handshake written, waiting for the pid reply
    RUNNING = "running"
    BACKOFF = "backoff"  # died; waiting to be restarted
    STOPPED = "stopped"
    FATAL = "fatal"  # restarted too often; given up


def _die_with_parent() -> None:  # pragma: no cover - runs in the child between fork and exec
    # If the host is SIGKILLed, the kernel kills the direct child too; grandchildren notice the
    # closed pipes. Best effort: only Linux has PR_SET_PDEATHSIG.
    try:
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    except (OSError, AttributeError):
        pass


def child_environment(component: Component) -> dict[str, str]:
    """The host's environment, the host interpreter's bin directory first on PATH (so `python` is
    the interpreter with our `multilang` package), our client libraries' variables, then the
    component's own `env` (a `PATH` entry is appended, as Storm's setEnv does)."""
    env = client_environment()
    host_bin = str(Path(sys.executable).parent)
    env["PATH"] = host_bin + os.pathsep + env.get("PATH", "")
    for key, value in component.env.items():
        if key == "PATH":
            env["PATH"] = env["PATH"] + os.pathsep + value
        else:
            env[key] = value
    return env


class Launcher:
    """Starts and signals child processes (the seam for tests)."""

    #: added to every child's environment (the supervisor sets its watchdog's token here)
    extra_env: Mapping[str, str] = MappingProxyType({})

    def start(self, argv: list[str], cwd: str, env: dict[str, str]) -> subprocess.Popen:
        if self.extra_env:
            env = {**env, **self.extra_env}
        return subprocess.Popen(
            argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=cwd,
            env=env,
            bufsize=0,
            start_new_session=True,
            preexec_fn=_die_with_parent,
        )

    def signal_group(self, pid: int, sig: int) -> None:
        try:
            os.killpg(pid, sig)
        except (ProcessLookupError, PermissionError):
            pass


class ComponentProcess:
    """The state of one task's process across restarts."""

    def __init__(self, component: Component, task: int, launcher: Launcher | None = None):
        self.component = component
        self.task = task
        self.name = f"{component.id}[{task}]"
        self.launcher = launcher or Launcher()
        self.state = State.STOPPED
        self.proc: subprocess.Popen | None = None
        self.pid: int | None = None
        self.decoder = None  # the serializer's incremental decoder, new at every launch
        self.stderr_tail: deque[str] = deque(maxlen=STDERR_TAIL)
        self._stderr_partial = b""
        self.out: list[bytes] = []  # frames to write to stdin, in order
        self.out_pending = b""  # the unwritten rest of a partial write
        self.restart_times: deque[float] = deque()
        self.backoff = 0.0
        self.restart_at = 0.0
        self.started_at = 0.0
        self.exit_status: int | None = None

    # -- launch ----------------------------------------------------------------------------------
    def launch(self, now: float, decoder) -> None:
        """Start the process with a fresh `decoder` for its stdout (its serializer's); raises
        OSError when it cannot be started."""
        self.proc = self.launcher.start(
            list(self.component.command), self.component.cwd, child_environment(self.component)
        )
        self.pid = self.proc.pid
        for stream in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            os.set_blocking(stream.fileno(), False)
        self.decoder = decoder
        self.out.clear()  # cleared, not replaced: the supervisor holds this list
        self.out_pending = b""
        self._stderr_partial = b""
        self.exit_status = None
        self.started_at = now
        self.state = State.STARTING

    @property
    def stdin_fd(self) -> int:
        return self.proc.stdin.fileno()

    @property
    def stdout_fd(self) -> int:
        return self.proc.stdout.fileno()

    @property
    def stderr_fd(self) -> int:
        return self.proc.stderr.fileno()

    @property
    def alive(self) -> bool:
        return self.state in (State.STARTING, State.RUNNING)

    # -- stdin -----------------------------------------------------------------------------------
    def flush(self) -> bool:
        """Write what is queued without blocking. True when everything was written."""
        data = self.out_pending
        if self.out:
            data = data + b"".join(self.out) if data else b"".join(self.out)
            self.out.clear()
        if not data:
            return True
        try:
            written = os.write(self.stdin_fd, data)
        except BlockingIOError:
            written = 0
        self.out_pending = data[written:]
        return not self.out_pending

    @property
    def has_output(self) -> bool:
        return bool(self.out or self.out_pending)

    # -- stderr ----------------------------------------------------------------------------------
    def stderr_lines(self, data: bytes) -> list[str]:
        """Complete lines in `data` (plus what was left of earlier chunks); also kept in the
        tail for error reports."""
        data = self._stderr_partial + data
        *lines, self._stderr_partial = data.split(b"\n")
        if len(self._stderr_partial) > 65536:  # a line without end: report it in pieces
            lines.append(self._stderr_partial)
            self._stderr_partial = b""
        text = [line.rstrip(b"\r").decode("utf-8", "replace") for line in lines]
        self.stderr_tail.extend(text)
        return text

    def stderr_rest(self) -> list[str]:
        if not self._stderr_partial:
            return []
        line = self._stderr_partial.decode("utf-8", "replace")
        self._stderr_partial = b""
        self.stderr_tail.append(line)
        return [line]

    # -- stop ------------------------------------------------------------------------------------
    def close_stdin(self) -> None:
        if self.proc and self.proc.stdin and not self.proc.stdin.closed:
            try:
                self.proc.stdin.close()
            except OSError:
                pass

    def signal(self, sig: int) -> None:
        if self.proc is not None and self.proc.returncode is None:
            self.launcher.signal_group(self.proc.pid, sig)

    def poll(self) -> int | None:
        if self.proc is None:
            return None
        status = self.proc.poll()
        if status is not None:
            self.exit_status = status
        return status

    def wait_briefly(self, seconds: float = 0.2) -> int | None:
        """The exit status, waiting a moment for a process whose stdout just closed (it is
        usually exiting); None if it is still running."""
        if self.proc is None:
            return None
        try:
            self.exit_status = self.proc.wait(timeout=seconds)
        except subprocess.TimeoutExpired:
            return None
        return self.exit_status

    def kill_now(self) -> None:
        """SIGKILL the whole process group and reap the child; for a task already declared
        broken (hung, protocol error), where a grace period buys nothing."""
        if self.proc is None:
            return
        self.launcher.signal_group(self.proc.pid, signal.SIGKILL)
        try:
            self.exit_status = self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:  # pragma: no cover - a process stuck in the kernel
            pass
        self.release()

    def release(self) -> None:
        """Close our ends of the pipes."""
        if self.proc is None:
            return
        for stream in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            try:
                if stream and not stream.closed:
                    stream.close()
            except OSError:
                pass

    def describe_exit(self) -> str:
        status = self.exit_status
        if status is None:
            return "still running"
        if status < 0:
            try:
                return f"killed by {signal.Signals(-status).name}"
            except ValueError:
                return f"killed by signal {-status}"
        return f"exit status {status}"
