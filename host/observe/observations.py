"""What the host shows about a run besides counters: recent component log lines, failure reports,
rates between snapshots, and each task's CPU and memory. Bounded, read by the live view, the web UI
and the stats file; the event loop only appends to it."""

from __future__ import annotations

import time
from collections import deque

import psutil

from host.observe.snapshot import FailureReport, LogEntry, RecentActivity
from multilang.codec import printable, shorten

RECENT_LOGS = 100
RECENT_FAILURES = 20


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit] + f"... ({len(text)} chars)"


def _head(data: bytes | None, limit: int = 300) -> str | None:
    """The start of what was written to a process, every byte shown (`codec.printable`), and
    its size when cut."""
    if data is None:
        return None
    return shorten(data, limit, newlines=True)


def _tail(data: bytes | None, limit: int = 400) -> str | None:
    """The newest part of what a process wrote (every byte shown: `codec.printable`), from a
    line start when one is in reach."""
    if data is None:
        return None
    text = printable(data[-limit:], newlines=True)
    if len(data) <= limit:
        return text
    cut = text.find("\n")
    return text[cut + 1 :] if 0 <= cut < len(text) // 2 else text


class Observations:
    def __init__(self) -> None:
        self.logs: deque[LogEntry] = deque(maxlen=RECENT_LOGS)
        self.failures: deque[FailureReport] = deque(maxlen=RECENT_FAILURES)
        self._last_rate: tuple[float, int, int, int] | None = None
        self.acked_per_s = 0.0
        self.failed_per_s = 0.0
        self.timed_out_per_s = 0.0
        self._procs: dict[int, psutil.Process] = {}

    def log(self, component: str, task: int, level: str, message: str) -> None:
        self.logs.append(
            {
                "time": time.time(),
                "component": component,
                "task": task,
                "level": level,
                "message": _clip(message, 500),
            }
        )

    def failure(
        self,
        *,
        component: str,
        task: int,
        pid: int | None,
        reason: str,
        exit_status: str | None,
        stderr: list[str],
        last_sent: bytes | None,
        last_received: bytes | None,
    ) -> None:
        self.failures.append(
            {
                "time": time.time(),
                "component": component,
                "task": task,
                "pid": pid,
                "reason": reason,
                "exit": exit_status,
                "stderr": stderr[-10:],
                "last_sent": _head(last_sent),
                "last_received": _tail(last_received),
            }
        )

    def rates(self, now: float, acked: int, failed: int, timed_out: int) -> None:
        """Acked, failed and timed-out spout tuples per second since the previous call (at
        least 0.2 s before)."""
        last = self._last_rate
        if last is None:
            self._last_rate = (now, acked, failed, timed_out)
            return
        elapsed = now - last[0]
        if elapsed >= 0.2:
            self.acked_per_s = (acked - last[1]) / elapsed
            self.failed_per_s = (failed - last[2]) / elapsed
            self.timed_out_per_s = (timed_out - last[3]) / elapsed
            self._last_rate = (now, acked, failed, timed_out)

    def usage(self, pid: int | None) -> tuple[float | None, int | None]:
        """CPU % since the previous call for this pid, and resident memory in bytes."""
        if pid is None:
            return None, None
        proc = self._procs.get(pid)
        try:
            if proc is None:
                proc = self._procs[pid] = psutil.Process(pid)
                proc.cpu_percent(None)  # the first call only starts the measurement
                return 0.0, proc.memory_info().rss
            return proc.cpu_percent(None), proc.memory_info().rss
        except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
            self._procs.pop(pid, None)
            return None, None

    def forget(self, pid: int | None) -> None:
        if pid is not None:
            self._procs.pop(pid, None)

    def as_json(self) -> RecentActivity:
        """Its part of the stats snapshot (`host.observe.snapshot`)."""
        return {"recent_logs": list(self.logs), "failures": list(self.failures)}
