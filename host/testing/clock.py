"""`FakeClock`: the clock `run_topology(..., clock=FakeClock())` runs the host on (what it
controls and what it cannot: see `host.testing`)."""

from __future__ import annotations

import time


class FakeClock:
    """A monotonic clock that stands still until `advance` moves it (see `host.testing`
    for what it controls when given to `run_topology`). Callable, like `time.monotonic`, so it
    can be given to `Supervisor(clock=...)` or `Acker(clock=...)` directly.

    `autojump_threshold`: real seconds of silence from every component before `run_topology`
    moves the fake time on. `stall_threshold`: the same while some component owes the host an
    answer."""

    def __init__(
        self,
        start: float = 1000.0,
        *,
        autojump_threshold: float = 0.005,
        stall_threshold: float = 0.25,
    ):
        self._now = float(start)
        self._real_base: float | None = None  # set while following real time
        self.autojump_threshold = autojump_threshold
        self.stall_threshold = stall_threshold

    def __call__(self) -> float:
        if self._real_base is not None:
            return self._now + (time.monotonic() - self._real_base)
        return self._now

    @property
    def now(self) -> float:
        return self()

    def advance(self, seconds: float) -> None:
        """Move the time forward by `seconds` (>= 0)."""
        if seconds < 0:
            raise ValueError(f"a clock cannot go back: advance({seconds})")
        self._now = self() + seconds
        if self._real_base is not None:
            self._real_base = time.monotonic()

    def follow_real_time(self) -> None:
        """From now on, move with real time (from the current fake time) until `freeze`."""
        if self._real_base is None:
            self._real_base = time.monotonic()

    def freeze(self) -> None:
        """Stop following real time; the clock keeps the time it had reached."""
        if self._real_base is not None:
            self._now = self()
            self._real_base = None

    def __repr__(self) -> str:
        return f"FakeClock(now={self():.3f})"
