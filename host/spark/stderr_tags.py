"""A component's stderr and its `log` / `error` messages inside a Spark executor, as log lines tagged
with the component and the task: `split[3] pid=4242: text` on the logger `host.spark` (docs/spark.md;
the same tag `host local` writes, host/runtime/task_log.py). Spark's executor log is where they land:
a Python worker's stderr is its executor's stderr (in a standalone worker's directory,
`<work dir>/<app id>/<executor id>/stderr`; YARN's and Kubernetes' container logs).

Nothing configures Python's logging in an executor's Python worker, and a logger with no handler
prints only warnings and errors (Python's last-resort handler): every stderr line would be lost.
So the first TaggedLog in a process whose `host.spark` logger reaches no handler at all (not its
own, not `host`'s, which `python -m host spark` sets in the driver, not the root's) gives it one:
the process's real stderr, at INFO unless a level was set. A process that configured logging
(or pytest, whose handlers sit on the root) keeps its own.

stderr is split into lines as it comes; a partial line is held until its end, but never more than
MAX_PARTIAL_LINE bytes of it (a longer one is logged in pieces), so a chatty child costs bounded
memory. The last STDERR_TAIL lines are kept for the failure report.
"""

from __future__ import annotations

import logging
import os
import sys
from collections import deque
from typing import TextIO

from multilang.messages import DEBUG, ERROR, INFO, TRACE, WARN

log = logging.getLogger("host.spark")

STDERR_TAIL = 20
READ_CHUNK = 1 << 16  # one read of a child's stderr
DRAIN_READS = 64  # reads of an exited child's stderr at most
MAX_PARTIAL_LINE = 65536
MAX_LINE_CHARS = 2000

# the `log` command's levels (docs/protocol.md §7) as Python's
LOG_LEVELS = {
    TRACE: logging.DEBUG,
    DEBUG: logging.DEBUG,
    INFO: logging.INFO,
    WARN: logging.WARNING,
    ERROR: logging.ERROR,
}


LINE_FORMAT = "%(levelname)s %(name)s: %(message)s"  # as command.py's, in the driver
_handler: logging.Handler | None = None


class _RealStderr(logging.StreamHandler[TextIO]):
    """Writes to the process's stderr as it is at each line: `sys.__stderr__`, never a stand-in
    that a library put in `sys.stderr` for a while."""

    def __init__(self) -> None:
        super().__init__(sys.__stderr__ or sys.stderr)

    def emit(self, record: logging.LogRecord) -> None:
        stream: TextIO | None = sys.__stderr__
        if stream is not None:
            self.stream = stream
        super().emit(record)


def ensure_handler() -> None:
    """Give `host.spark` a handler to stderr if it reaches none (see above)."""
    global _handler
    if _handler is not None or log.hasHandlers():
        return
    _handler = _RealStderr()
    _handler.setFormatter(logging.Formatter(LINE_FORMAT))
    log.addHandler(_handler)
    if log.level == logging.NOTSET:
        log.setLevel(logging.INFO)


def clip(line: str, limit: int = MAX_LINE_CHARS) -> str:
    return line if len(line) <= limit else f"{line[:limit]}... ({len(line)} chars)"


class TaggedLog:
    """One task's lines: `stderr(bytes)` as read, `stderr_end()` when the pipe closes,
    `line(level, text)` for what it said through the protocol."""

    def __init__(self, component: str, task: int) -> None:
        ensure_handler()
        self.name = f"{component}[{task}]"
        self.pid: int | None = None
        self.tail: deque[str] = deque(maxlen=STDERR_TAIL)
        self._partial = b""

    def new_process(self, pid: int) -> None:
        self.pid = pid
        self._partial = b""
        self.tail.clear()  # a failure report shows this process's lines only

    def line(self, level: int, text: str) -> None:
        log.log(level, "%s pid=%s: %s", self.name, self.pid, clip(text))

    def stderr(self, data: bytes) -> None:
        data = self._partial + data if self._partial else data
        *lines, self._partial = data.split(b"\n")
        if len(self._partial) > MAX_PARTIAL_LINE:
            lines.append(self._partial)
            self._partial = b""
        for raw in lines:
            self._stderr_line(raw)

    def stderr_end(self) -> None:
        """The pipe closed: what is left without a line end is a line too."""
        if self._partial:
            raw, self._partial = self._partial, b""
            self._stderr_line(raw)

    def read_from(self, fd: int) -> bool:
        """One read of the child's stderr pipe `fd` (non-blocking), logged; False once the pipe
        has ended, so that the caller stops polling it (a closed pipe polls as ready forever)."""
        try:
            data = os.read(fd, READ_CHUNK)
        except BlockingIOError:
            return True
        if not data:
            self.stderr_end()
            return False
        self.stderr(data)
        return True

    def drain(self, fd: int) -> None:
        """What an exited child left in its stderr pipe, for the failure report. Bounded: a
        grandchild that inherited the pipe may still be writing to it."""
        for _ in range(DRAIN_READS):
            try:
                data = os.read(fd, READ_CHUNK)
            except (BlockingIOError, OSError, ValueError):
                return
            if not data:
                self.stderr_end()
                return
            self.stderr(data)

    def _stderr_line(self, raw: bytes) -> None:
        text = raw.rstrip(b"\r").decode("utf-8", "replace")
        self.tail.append(text)
        self.line(logging.INFO, text)
