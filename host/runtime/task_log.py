"""What a task says outside the data path: its stderr and its `log` / `error` messages, as log
lines `component[task] pid=N: text`, kept for the live view, the web UI and failure reports.

stderr is read as it comes (a chatty child must never block on a full pipe, the mistake of Storm's
`ShellBolt`, which reads stderr only when it writes) and logged line by line up to a rate; beyond
it, lines are counted and the count is logged once a second.
"""

from __future__ import annotations

import logging
from collections import deque

from host.observe.observations import Observations

component_log = logging.getLogger("host.component")

STDERR_TAIL = 20  # lines kept per task for failure reports
STDERR_LINES_PER_SEC = 200  # beyond this a task's stderr is counted, not logged line by line
MAX_PARTIAL_LINE = 65536  # a longer line without its end is logged in pieces
MAX_LINE_CHARS = 2000


def clip(line: str, limit: int = MAX_LINE_CHARS) -> str:
    return line if len(line) <= limit else f"{line[:limit]}... ({len(line)} chars)"


class TaskLog:
    def __init__(self, name: str, component: str, task: int, observe: Observations) -> None:
        self.name = name  # component[task]
        self.component = component
        self.task = task
        self.observe = observe
        self.pid: int | None = None
        self.tail: deque[str] = deque(maxlen=STDERR_TAIL)
        self._partial = b""
        self._window = 0.0  # start of the current one-second window
        self._count = 0  # lines logged in it
        self.suppressed = 0

    def new_process(self, pid: int) -> None:
        self.pid = pid
        self._partial = b""

    def line(self, level: int, text: str) -> None:
        text = clip(text)
        component_log.log(level, "%s pid=%s: %s", self.name, self.pid, text)
        self.observe.log(self.component, self.task, logging.getLevelName(level), text)

    def stderr(self, data: bytes, now: float) -> None:
        """Log the complete lines of a chunk of stderr, within the rate."""
        if now - self._window >= 1.0:
            self.report_suppressed()
            self._window = now
            self._count = 0
        for text in self._lines(data):
            self._count += 1
            if self._count > STDERR_LINES_PER_SEC:
                self.suppressed += 1
            else:
                self.line(logging.INFO, text)

    def stderr_unlimited(self, data: bytes) -> None:
        """A dying task's last words: all of them, for the failure report."""
        for text in self._lines(data):
            self.line(logging.INFO, text)

    def stderr_end(self) -> None:
        """The process is gone: what is left without a line end is a line too."""
        if self._partial:
            text = self._partial.decode("utf-8", "replace")
            self._partial = b""
            self.tail.append(text)
            self.line(logging.INFO, text)

    def report_suppressed(self) -> None:
        if self.suppressed:
            component_log.warning(
                "%s pid=%s: %d stderr lines not shown (more than %d a second)",
                self.name,
                self.pid,
                self.suppressed,
                STDERR_LINES_PER_SEC,
            )
            self.suppressed = 0

    def due_report(self, now: float) -> None:
        if self.suppressed and now - self._window >= 1.0:
            self.report_suppressed()

    def _lines(self, data: bytes) -> list[str]:
        data = self._partial + data
        *lines, self._partial = data.split(b"\n")
        if len(self._partial) > MAX_PARTIAL_LINE:
            lines.append(self._partial)
            self._partial = b""
        text = [line.rstrip(b"\r").decode("utf-8", "replace") for line in lines]
        self.tail.extend(text)
        return text
