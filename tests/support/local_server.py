"""A server the tests start as a plain process on 127.0.0.1 (the Kafka broker, ZooKeeper): a
free port, its output in a log file, ready once the port accepts connections, a port taken
between choosing and binding it retried on another, and a stop that ends its process group."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

STOP_GRACE_SECS = 5.0
ATTEMPTS = 3  # ports tried


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def listening(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
        return True
    except OSError:
        return False


@dataclass
class LocalServer:
    process: subprocess.Popen
    port: int
    log_path: Path
    stop_signal: int = signal.SIGTERM

    def stop(self) -> None:
        """`stop_signal` to the process group, then SIGKILL after STOP_GRACE_SECS."""
        if self.process.poll() is None:
            os.killpg(self.process.pid, self.stop_signal)
            try:
                self.process.wait(STOP_GRACE_SECS)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()


def start_server(
    name: str,
    argv_for: Callable[[int], Sequence[str]],
    workdir: Path,
    *,
    timeout: float,
    stop_signal: int = signal.SIGTERM,
) -> LocalServer:
    """Run `argv_for(port)` in `workdir` until it listens on `port`; RuntimeError with the tail
    of its output when it does not, on ATTEMPTS ports."""
    last_output = ""
    for _attempt in range(ATTEMPTS):
        port = free_port()
        log_path = workdir / f"{name}-{port}.log"
        with open(log_path, "wb") as log:
            process = subprocess.Popen(
                list(argv_for(port)),
                cwd=workdir,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # its own process group, stopped as a whole
            )
        server = LocalServer(process, port, log_path, stop_signal)
        deadline = time.monotonic() + timeout
        while process.poll() is None and time.monotonic() < deadline:
            if listening(port):
                return server
            time.sleep(0.01)
        server.stop()
        last_output = log_path.read_text(errors="replace")[-2000:]
    raise RuntimeError(f"{name} did not start on 127.0.0.1; its last output:\n{last_output}")
