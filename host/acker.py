"""The central acker: Storm's XOR ledger, with no I/O and an injected clock.

One small record per pending spout tuple (a *root*): the XOR of the ids of every tuple in its tree
that was created and not yet acked, the spout task and the message id. Every delivered tuple has a
random 64-bit id, XORed into each of its roots once when it is created and once when it is acked;
a root whose value returns to zero is complete. The tree itself is never stored, so memory is per
spout tuple, not per tuple: about 200 bytes each, message id included (benchmarks/acker-memory).
Start times are kept for one root in `latency_sample` (default 16) only, which is enough for
complete-latency percentiles (Storm samples its statistics too) and keeps a float out of every
record; 1 times every root (host.acker.latency.sample).

Timeouts use rotating buckets (Storm's RotatingMap): a root lives in the bucket that was newest when
it was opened; every `timeout / (BUCKETS - 1)` seconds the oldest bucket expires as a whole, so a
root times out between `timeout` and `timeout * BUCKETS / (BUCKETS - 1)` seconds after it was
opened, at O(1) cost per root.
"""

from __future__ import annotations

from collections import defaultdict
from itertools import count
from random import getrandbits
from typing import Any, Callable, Iterable, NamedTuple

BUCKETS = 3
LATENCY_SAMPLE = 16  # one root in 16 has its start time kept

# record layout: (xor, spout_task, msg_id); a tuple is 40 bytes smaller than a list, and replacing
# it on an update costs about what mutating a list does
_XOR, _TASK, _MSG = 0, 1, 2


class Outcome(NamedTuple):
    """A root that left the ledger: to be sent to its spout as `ack` or `fail`."""

    spout_task: int
    msg_id: Any
    latency: float | None  # seconds since the root was opened, for sampled roots


def new_id() -> int:
    """A random non-zero 64-bit tuple or root id."""
    return getrandbits(64) or 1


class Acker:
    def __init__(self, timeout_secs: float, clock: Callable[[], float],
                 timeouts_enabled: bool = True, latency_sample: int = LATENCY_SAMPLE):
        self.clock = clock
        self.latency_sample = max(1, int(latency_sample))
        self.timeouts_enabled = timeouts_enabled
        self._period = max(float(timeout_secs), 0.001) / (BUCKETS - 1)
        self._buckets: list[dict[int, list]] = [{} for _ in range(BUCKETS)]  # [0] is newest
        self._next_rotation = clock() + self._period
        self._pending: dict[int, int] = defaultdict(int)  # spout task -> open roots
        self._roots = count(1)  # root ids are keys, never XORed: a counter will do
        self._started: dict[int, float] = {}  # sampled roots -> open time

    # -- queries ---------------------------------------------------------------------------------
    def pending(self, spout_task: int) -> int:
        return self._pending.get(spout_task, 0)

    def __len__(self) -> int:
        return sum(len(b) for b in self._buckets)

    def _find(self, root: int) -> tuple[dict, list] | tuple[None, None]:
        for bucket in self._buckets:
            rec = bucket.get(root)
            if rec is not None:
                return bucket, rec
        return None, None

    # -- updates ---------------------------------------------------------------------------------
    def open(self, spout_task: int, msg_id: Any, xor: int) -> int:
        """A reliable spout emit whose copies have ids XORing to `xor` (0 until `add`ed).
        Returns the new root id, which every copy carries."""
        root = next(self._roots)
        self._buckets[0][root] = (xor, spout_task, msg_id)
        self._pending[spout_task] += 1
        if not root % self.latency_sample:
            self._started[root] = self.clock()
        return root

    def _latency(self, root: int) -> float | None:
        started = self._started.pop(root, None)
        return None if started is None else self.clock() - started

    def add(self, roots: Iterable[int], xor: int) -> None:
        """New tuples anchored to `roots` were created; `xor` is the XOR of their ids."""
        for root in roots:
            bucket, rec = self._find(root)
            if rec is not None:  # a root already failed or timed out: nothing to track
                bucket[root] = (rec[_XOR] ^ xor, rec[_TASK], rec[_MSG])

    def ack(self, roots: Iterable[int], xor: int) -> list[Outcome] | None:
        """A tuple with these roots was acked; `xor` is its id XOR the ids of the children it
        created (when those were not already `add`ed). Returns the roots that completed."""
        done = None
        newest = self._buckets[0]
        for root in roots:
            rec = newest.get(root)  # most acks come well within a rotation period
            if rec is not None:
                bucket = newest
            else:
                bucket, rec = self._find(root)
                if rec is None:
                    continue  # failed, timed out or its spout died: late acks are ignored
            value = rec[_XOR] ^ xor
            if value:
                bucket[root] = (value, rec[_TASK], rec[_MSG])
                continue
            del bucket[root]
            self._pending[rec[_TASK]] -= 1
            if done is None:
                done = []
            done.append(Outcome(rec[_TASK], rec[_MSG],
                                self._latency(root) if not root % self.latency_sample else None))
        return done

    def fail(self, roots: Iterable[int]) -> list[Outcome]:
        """Fail these roots at once (explicit fail, or the task holding a tuple died)."""
        out = []
        for root in roots:
            bucket, rec = self._find(root)
            if rec is None:
                continue
            del bucket[root]
            self._pending[rec[_TASK]] -= 1
            out.append(Outcome(rec[_TASK], rec[_MSG], self._latency(root)))
        return out

    def drop_spout_task(self, spout_task: int) -> list[Outcome]:
        """Forget every root of a spout task whose process died: its replacement never emitted
        those ids, so they cannot be acked or failed to it. Returns what was dropped."""
        dropped = []
        for bucket in self._buckets:
            doomed = [r for r, rec in bucket.items() if rec[_TASK] == spout_task]
            for root in doomed:
                rec = bucket.pop(root)
                dropped.append(Outcome(spout_task, rec[_MSG], self._latency(root)))
        self._pending[spout_task] = 0
        return dropped

    def next_deadline(self) -> float | None:
        """When `expire` next has work to do (for the event loop's timer)."""
        if not self.timeouts_enabled:
            return None
        return self._next_rotation

    def expire(self) -> list[Outcome]:
        """Rotate the buckets whose time has come; the roots of an expiring bucket time out."""
        if not self.timeouts_enabled:
            return []
        now = self.clock()
        out = []
        while now >= self._next_rotation:
            self._next_rotation += self._period
            oldest = self._buckets.pop()
            self._buckets.insert(0, {})
            for root, rec in oldest.items():
                self._pending[rec[_TASK]] -= 1
                out.append(Outcome(rec[_TASK], rec[_MSG], self._latency(root)))
            if not any(self._buckets) and now >= self._next_rotation:
                # nothing pending: jump ahead instead of rotating empty buckets one by one
                periods = int((now - self._next_rotation) // self._period) + 1
                self._next_rotation += periods * self._period
        return out
