"""Failed records waiting to be emitted again: exponential back-off with a retry limit.

The delays are storm-kafka-client's (`KafkaSpoutRetryExponentialBackoff`): after the first
failure `initial_delay`; after the n-th (n >= 2) `delay_period * 2**(n-1)`; never more than
`max_delay`. A record that has failed more than `max_retries` times is not scheduled: the spout
then dead-letters or skips it. `max_retries < 0` retries forever (Storm's default).

Pure logic with an injected clock (seconds, monotonic): tests/unit/test_kafka_retry.py.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterable
from dataclasses import dataclass

MessageId = tuple[str, int, int]  # (topic, partition, offset)


@dataclass(frozen=True)
class Backoff:
    initial_delay: float = 0.0
    delay_period: float = 0.002
    max_retries: int = -1
    max_delay: float = 10.0

    def delay(self, failures: int) -> float:
        """Seconds to wait before the retry that follows failure number `failures` (>= 1)."""
        if failures <= 1:
            wanted = self.initial_delay
        else:
            # the exponent is capped: past it the product is beyond any max_delay anyway
            wanted = self.delay_period * 2.0 ** min(failures - 1, 62)
        return min(wanted, self.max_delay)

    def gives_up(self, failures: int) -> bool:
        return 0 <= self.max_retries < failures


class RetrySchedule:
    """Message ids that failed and when each may be emitted again. A heap ordered by due time;
    an id rescheduled or removed leaves a stale heap entry that is skipped when it surfaces."""

    def __init__(self, backoff: Backoff, clock: Callable[[], float]):
        self.backoff = backoff
        self.clock = clock
        self._due: dict[MessageId, float] = {}
        self._heap: list[tuple[float, MessageId]] = []
        self.failures: dict[MessageId, int] = {}  # failures so far, while the id is live

    def __len__(self) -> int:
        return len(self._due)

    def __contains__(self, msg_id: object) -> bool:
        return msg_id in self._due

    def failed(self, msg_id: MessageId) -> bool:
        """Count a failure; schedule the retry and return True, or return False when the retry
        limit is spent (the caller gives the record up; its count is forgotten)."""
        failures = self.failures.get(msg_id, 0) + 1
        if self.backoff.gives_up(failures):
            self.failures.pop(msg_id, None)
            self._due.pop(msg_id, None)
            return False
        self.failures[msg_id] = failures
        due = self.clock() + self.backoff.delay(failures)
        self._due[msg_id] = due
        heapq.heappush(self._heap, (due, msg_id))
        return True

    def later(self, msg_id: MessageId, delay: float) -> None:
        """Schedule `msg_id` again in `delay` seconds without counting a failure."""
        due = self.clock() + delay
        self._due[msg_id] = due
        heapq.heappush(self._heap, (due, msg_id))

    def ready(self, limit: int) -> list[MessageId]:
        """Up to `limit` ids whose time has come, earliest first; they leave the schedule (their
        failure counts stay until `forget`)."""
        out: list[MessageId] = []
        heap, due_of = self._heap, self._due
        now = self.clock()
        while heap and len(out) < limit and heap[0][0] <= now:
            due, msg_id = heapq.heappop(heap)
            if due_of.get(msg_id) == due:
                del due_of[msg_id]
                out.append(msg_id)
        return out

    def next_due(self) -> float | None:
        while self._heap and self._due.get(self._heap[0][1]) != self._heap[0][0]:
            heapq.heappop(self._heap)
        return self._heap[0][0] if self._heap else None

    def forget(self, msg_id: MessageId) -> None:
        """The id is done (acked, given up) or no longer ours."""
        self._due.pop(msg_id, None)
        self.failures.pop(msg_id, None)

    def retain_partitions(self, keep: Iterable[tuple[str, int]]) -> None:
        """Forget every id whose partition is not in `keep` (after a reassignment)."""
        kept = set(keep)
        for msg_id in [m for m in self.failures if (m[0], m[1]) not in kept]:
            self.forget(msg_id)
        for msg_id in [m for m in self._due if (m[0], m[1]) not in kept]:
            self._due.pop(msg_id, None)
