"""A component's stderr and its `log` / `error` messages inside a Spark executor, as log lines tagged
with the component and the task: `split[3] pid=4242: text` on the logger `host.spark` (docs/spark.md;
the same tag `host local` writes, host/runtime/task_log.py). Spark's executor log is where they land.

stderr is split into lines as it comes; a partial line is held until its end, but never more than
MAX_PARTIAL_LINE bytes of it (a longer one is logged in pieces), so a chatty child costs bounded
memory. The last STDERR_TAIL lines are kept for the failure report.
"""

from __future__ import annotations

import logging
from collections import deque

from multilang.messages import DEBUG, ERROR, INFO, TRACE, WARN

log = logging.getLogger("host.spark")

STDERR_TAIL = 20
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


def clip(line: str, limit: int = MAX_LINE_CHARS) -> str:
    return line if len(line) <= limit else f"{line[:limit]}... ({len(line)} chars)"


class TaggedLog:
    """One task's lines: `stderr(bytes)` as read, `stderr_end()` when the pipe closes,
    `line(level, text)` for what it said through the protocol."""

    def __init__(self, component: str, task: int) -> None:
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

    def _stderr_line(self, raw: bytes) -> None:
        text = raw.rstrip(b"\r").decode("utf-8", "replace")
        self.tail.append(text)
        self.line(logging.INFO, text)
