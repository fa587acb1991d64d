"""How long a spout whose `next`s emit nothing waits before it is asked again: doubling from 1 ms
up to `host.spout.idle.max.sleep.ms`, back to nothing once a `next` emits. Pure: the spout's link
(host/runtime/spout_link.py, and the Spark driver's host/spark/spout_process.py) reports each
`next` it writes and each one's `sync`, in order.

The back-off doubles once per round of asking, not once per empty `next`: a pipelining spout
has up to `host.spout.next.depth` `next`s in flight, written together, and when the first comes
back empty the others were already written and come back empty too. Doubling for each of them
took a paced spout (a few tuples per millisecond, the rest of its `next`s empty) to the longest
sleep within one round, and it then emitted once per 100 ms: the word count paced at 19,000
sentences/s ran at 1,000 (benchmarks/latency_under_load.py). Only a `next` written after the
last back-off was decided, i.e. after the spout was seen to be idle, doubles it again.

It also bounds how many `next`s may be in flight (`window`): one once a whole round came back
empty (the wait is past its first step), else what the link allows (`host.spout.next.depth`). An
idle spout is then asked with one `next` per wait instead of a round of 32. A paced spout keeps
its rounds: each is one write and one read, and asking it with fewer `next`s at a time, more
often, cost the host more than the empty `next`s did (1.24x its CPU at half load, measured with
`python -m benchmarks.ab`).
"""

from __future__ import annotations

FIRST_SLEEP_SECS = 0.001  # Storm's spout wait strategy sleeps 1 ms (its level 3)
MAX_WINDOW = 1024  # above any `host.spout.next.depth` worth setting; the link caps it anyway


class IdleBackoff:
    __slots__ = ("max_sleep", "sleep", "empty", "_written", "_synced", "_mark")

    def __init__(self, max_sleep: float) -> None:
        self.max_sleep = max_sleep
        self.sleep = 0.0
        self.empty = 0  # `next`s in a row that emitted nothing
        self._written = 0  # `next`s written
        self._synced = 0  # `next`s answered, in the order written
        self._mark = 0  # `next`s written when the sleep last doubled

    def reset(self) -> None:
        """A new process: nothing written, nothing owed."""
        self.sleep = 0.0
        self.empty = self._written = self._synced = self._mark = 0

    @property
    def window(self) -> int:
        """How many `next`s may be in flight (see the module's docstring)."""
        return 1 if self.sleep > FIRST_SLEEP_SECS else MAX_WINDOW

    def wrote(self) -> None:
        self._written += 1

    def synced(self, emitted: bool, now: float) -> float | None:
        """The oldest `next` in flight was answered, having emitted or not: None when it did,
        else the clock time at which to ask again."""
        self._synced += 1
        if emitted:
            self.sleep = 0.0
            self.empty = 0
            return None
        self.empty += 1
        # written after the last doubling (a new round), or the first empty one since an emit
        if self._synced > self._mark or not self.sleep:
            self.sleep = min(self.max_sleep, max(FIRST_SLEEP_SECS, self.sleep * 2))
            self._mark = self._written
        return now + self.sleep
