"""When a bolt running inside a Spark partition gets its tick tuples (docs/spark.md §2.4). Pure:
the caller gives the time.

Under `host local` a bolt whose config sets `topology.tick.tuple.freq.secs` gets a tick every
that many seconds of wall-clock time for as long as it runs (host/runtime/supervision.py
`_schedule_tick`). On Spark its process runs only while a partition of a micro-batch streams
through it, so it gets the same period *within each run*: the first tick one period after the run
starts, the next one period after that tick, and so on while the partition's input is still being
written. Then one more when the input has all been written, before the run waits for its last
acks, so that a bolt that buffers until a tick (a Parquet sink) flushes and acks what it holds
inside the micro-batch, and whatever it emits on that tick belongs to this micro-batch.
"""

from __future__ import annotations


class TickSchedule:
    """The ticks of one bolt task, run after run. `start(now)` at the start of each run, then
    `periodic_due(now)` whenever the run may write (True: write a tick now), and
    `end_due()` once the run's input is exhausted (True once per run)."""

    def __init__(self, freq_secs: int) -> None:
        if freq_secs <= 0:
            raise ValueError(f"a tick frequency must be positive, got {freq_secs!r}")
        self.freq_secs = freq_secs
        self._next = float("inf")  # no run: nothing is due
        self._end_owed = False

    def start(self, now: float) -> None:
        """A run starts: its first periodic tick is due one period from now, its end tick is
        owed."""
        self._next = now + self.freq_secs
        self._end_owed = True

    def periodic_due(self, now: float) -> bool:
        """Whether a periodic tick is due at `now`; if so the next is one period from `now`, as
        `host local` schedules the next tick from when it fires (a late tick is not followed
        by a burst of catch-up ticks)."""
        if now < self._next:
            return False
        self._next = now + self.freq_secs
        return True

    def secs_to_next(self, now: float) -> float:
        """Seconds until the next periodic tick is due (0 when it is; inf outside a run)."""
        return max(0.0, self._next - now)

    def end_due(self) -> bool:
        """True the first time it is asked after `start`, then False until the next `start`:
        the run's input is exhausted and its end tick is to be written now. No periodic tick is
        due after it, until the next run starts."""
        owed, self._end_owed = self._end_owed, False
        if owed:
            self._next = float("inf")
        return owed
