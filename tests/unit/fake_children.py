"""Fake children for testing the event loop without processes: `FakeLauncher` hands the runtime
`FakeChild`ren with the same interface as host/runtime/process.py's `Child`, backed by real pipes
whose other ends the test holds. The test plays the component: it reads what the host wrote,
writes protocol messages, writes stderr, and exits, all in the test's own thread, so a test of a
crash, a restart, a hang or a stop runs in milliseconds and the same way every time."""

from __future__ import annotations

import itertools
import os
import signal

from host.topology.model import BOLT, SPOUT, Component, Grouping, Input, Topology
from multilang.codec import dumps
from multilang.host_decoding import HostDecoder

_pids = itertools.count(900_001)


class FakeChild:
    def __init__(self, argv: list[str]) -> None:
        self.argv = argv
        self.pid = next(_pids)
        self._stdin_r, self.stdin_fd = os.pipe()
        self.stdout_fd, self._stdout_w = os.pipe()
        self.stderr_fd, self._stderr_w = os.pipe()
        exit_r, self._exit_w = os.pipe()
        self.exit_fd: int | None = exit_r
        for fd in (self.stdin_fd, self.stdout_fd, self.stderr_fd, self._stdin_r):
            os.set_blocking(fd, False)
        self.exit_status: int | None = None
        self._status_on_exit: int | None = None
        self.signals: list[int] = []
        self.stdin_open = True
        self.stdin_closed_by_host = False
        self.ignores_sigterm = False
        self._decoder = HostDecoder()
        self.env: dict = {}  # what the launcher was given

    # -- the Child interface the runtime uses ----------------------------------------------------
    def poll(self) -> int | None:
        if self.exit_status is None and self._status_on_exit is not None:
            self.exit_status = self._status_on_exit
        return self.exit_status

    def signal_group(self, sig: int) -> None:
        self.signals.append(sig)
        if self._status_on_exit is None and not (sig == signal.SIGTERM and self.ignores_sigterm):
            self.exit(-sig)

    def close_stdin(self) -> None:
        if self.stdin_open:
            self.stdin_open = False
            self.stdin_closed_by_host = True
            os.close(self.stdin_fd)

    def close_pipes(self) -> None:
        if self.stdin_open:
            self.stdin_open = False
            os.close(self.stdin_fd)
        for fd in (self.stdout_fd, self.stderr_fd):
            _close(fd)
        self.stdout_fd = self.stderr_fd = -1

    def close(self) -> None:
        self.close_pipes()
        if self.exit_fd is not None:
            os.close(self.exit_fd)
            self.exit_fd = None

    # -- the component's side, played by the test ------------------------------------------------
    def received(self) -> list:
        """The messages the host wrote since the last call."""
        return self._decoder.feed(self.received_bytes())

    def received_bytes(self) -> bytes:
        """What the host wrote since the last call, undecoded (shell frames are not JSON)."""
        chunks = []
        while True:
            try:
                data = os.read(self._stdin_r, 1 << 16)
            except BlockingIOError:
                break
            if not data:
                break
            chunks.append(data)
        return b"".join(chunks)

    def send(self, **message: object) -> None:
        self.write(dumps(message).encode() + b"\nend\n")

    def write(self, data: bytes) -> None:
        if self._stdout_w >= 0:
            os.write(self._stdout_w, data)

    def say(self, line: str) -> None:
        if self._stderr_w >= 0:
            os.write(self._stderr_w, line.encode() + b"\n")

    def exit(self, status: int) -> None:
        """The process ends: its pipes close, then its exit is visible."""
        if self._status_on_exit is not None:
            return
        self._status_on_exit = status
        for fd in (self._stdout_w, self._stderr_w, self._exit_w):
            _close(fd)
        self._stdout_w = self._stderr_w = self._exit_w = -1

    @property
    def exited(self) -> bool:
        return self._status_on_exit is not None


def _close(fd: int) -> None:
    if fd >= 0:
        try:
            os.close(fd)
        except OSError:
            pass


class FakeLauncher:
    extra_env: dict = {}

    def __init__(self) -> None:
        self.children: list[FakeChild] = []

    def start(self, argv: list[str], cwd: str, env: dict) -> FakeChild:
        child = FakeChild(argv)
        child.env = env
        self.children.append(child)
        return child

    def of(self, name: str) -> list[FakeChild]:
        """Every child started for the component whose command is ['fake', name]."""
        return [c for c in self.children if c.argv[1:] == [name]]

    def last(self, name: str) -> FakeChild:
        return self.of(name)[-1]


def spout_and_bolt(config: dict | None = None, **bolt: object) -> Topology:
    """spout -> bolt (shuffle), one task each; commands ['fake', id]."""
    return Topology(
        name="fake",
        components=(
            Component(
                id="spout", kind=SPOUT, command=("fake", "spout"), outputs={"default": ("word",)}
            ),
            Component(
                id="bolt",
                kind=BOLT,
                command=("fake", "bolt"),
                outputs={"default": ("word",)},
                inputs=(Input("spout", "default", Grouping("shuffle")),),
                **bolt,
            ),  # type: ignore[arg-type]
        ),
        config=dict(config or {}),
    )
