"""Collecting the exit status of a process the host has given up on (killed, or abandoned at the
end of a run) without waiting for it: when its exit descriptor says it exited, or, on a kernel
without pidfd, by polling on a deadline. Until then it is a zombie the kernel keeps for us."""

from __future__ import annotations

from host.runtime.loop import EventLoop
from host.runtime.process import Child

POLL_SECS = 0.05  # without an exit descriptor, how often an exit is polled


def reap(loop: EventLoop, child: Child) -> None:
    for fd in (child.stdout_fd, child.stderr_fd, child.stdin_fd):
        loop.unwatch(fd)
    child.close_pipes()
    exit_fd = child.exit_fd
    if child.poll() is not None or exit_fd is None:
        child.close()
        if child.exit_status is None:
            _poll(loop, child)
        return
    loop.unwatch(exit_fd)

    def exited() -> None:
        loop.unwatch(exit_fd)
        child.poll()
        child.close()

    loop.watch_read(exit_fd, exited)


def _poll(loop: EventLoop, child: Child) -> None:
    def again() -> None:
        if child.poll() is None:
            _poll(loop, child)

    loop.deadlines.at(("reap", child.pid), loop.now + POLL_SECS, again)
