"""Every timer of the event loop in one place: a heap of deadlines, each under a key.

Scheduling a key again replaces its deadline; cancelling drops it. Entries are dropped lazily (a
replaced or cancelled entry stays in the heap until it reaches the top), so both are O(log n) and
the loop asks only for the earliest deadline. Time is whatever clock the loop uses (a FakeClock in
tests), so nothing here sleeps.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable, Hashable

Action = Callable[[], None]


class Deadlines:
    def __init__(self) -> None:
        self._heap: list[tuple[float, int, Hashable, Action]] = []
        self._live: dict[Hashable, int] = {}  # key -> sequence number of its current entry
        self._when: dict[Hashable, float] = {}
        self._seq = itertools.count()

    def __len__(self) -> int:
        return len(self._live)

    def __contains__(self, key: Hashable) -> bool:
        return key in self._live

    def at(self, key: Hashable, when: float, action: Action) -> None:
        """Run `action` once the clock reaches `when`; replaces what `key` had scheduled."""
        seq = next(self._seq)
        self._live[key] = seq
        self._when[key] = when
        heapq.heappush(self._heap, (when, seq, key, action))

    def cancel(self, key: Hashable) -> None:
        if self._live.pop(key, None) is not None:
            del self._when[key]

    def when(self, key: Hashable) -> float | None:
        return self._when.get(key)

    def next_due(self, skip: Callable[[Hashable], bool] | None = None) -> float:
        """The earliest deadline (infinity when none); `skip(key)` leaves keys out, which costs a
        pass over the heap (for the test harness, never the loop)."""
        self._drop_stale()
        if skip is None:
            return self._heap[0][0] if self._heap else float("inf")
        return min((w for k, w in self._when.items() if not skip(k)), default=float("inf"))

    def run_due(self, now: float) -> None:
        """Run every action due by `now`, earliest first. An action that schedules a deadline
        that is already due runs in the next call, so a zero period cannot spin here."""
        last = next(self._seq)
        heap = self._heap
        while heap and heap[0][0] <= now and heap[0][1] < last:
            _, seq, key, action = heapq.heappop(heap)
            if self._live.get(key) != seq:
                continue  # replaced or cancelled
            del self._live[key]
            del self._when[key]
            action()

    def _drop_stale(self) -> None:
        heap = self._heap
        while heap and self._live.get(heap[0][2]) != heap[0][1]:
            heapq.heappop(heap)
