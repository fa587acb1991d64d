"""The host's log records during a `run_topology` run, kept in its `TopologyResult.logs`."""

from __future__ import annotations

import logging
from types import TracebackType

from host.testing.results import TopologyResult, log_line


class _Capture(logging.Handler):
    def __init__(self, result: TopologyResult):
        super().__init__(logging.DEBUG)
        self.result = result

    def emit(self, record: logging.LogRecord) -> None:
        try:
            self.result.logs.append(log_line(record, self.result.uptime))
        except Exception:  # noqa: BLE001 - a log call must never break the run
            self.handleError(record)


class CapturedLogs:
    """Attach a handler to the `host` logger for the run; make sure component log lines (any
    level) and the host's INFO lines are produced, and put the levels back afterwards."""

    def __init__(self, result: TopologyResult):
        self.handler = _Capture(result)
        self.host = logging.getLogger("host")
        self.component = logging.getLogger("host.component")

    def __enter__(self) -> None:
        self.levels = (self.host.level, self.component.level)
        if self.host.getEffectiveLevel() > logging.INFO:
            self.host.setLevel(logging.INFO)
        if self.component.getEffectiveLevel() > logging.DEBUG:
            self.component.setLevel(logging.DEBUG)
        self.host.addHandler(self.handler)

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.host.removeHandler(self.handler)
        self.host.setLevel(self.levels[0])
        self.component.setLevel(self.levels[1])
