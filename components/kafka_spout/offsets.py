"""Per-partition offset bookkeeping for at-least-once: which offsets may be committed.

storm-kafka-client's rule (its `OffsetManager`): the committed offset of a partition is the first
offset that is not yet done, so a restart resumes at the oldest record whose tuple tree has not
completed and nothing acked-but-uncommitted is lost. "Done" is acked, or given up on after the
retry limit (dead-lettered or skipped): both count as acked here.

Offsets are tracked when emitted; per partition they are emitted in increasing order (a replay
re-emits an offset that is still tracked), so the tracked offsets are kept in a deque in order
and the committable prefix is found by walking its front. Offsets that were never emitted between
two emitted ones (compacted away, transaction markers) do not hold a commit back: as in Storm,
the commit moves to the next emitted offset when that one is done.

Pure logic, no Kafka: the spout (spout.py) calls it; tests/unit/test_kafka_offsets.py checks it.
"""

from __future__ import annotations

from collections import deque


class OffsetOrderError(ValueError):
    """An offset was tracked out of order: a bug in the caller, never data."""


class PartitionOffsets:
    """One partition's emitted-but-uncommitted offsets and which of them are done.

    `committed` is the offset the group has (or will have, after `commit`) for this partition:
    the first offset not known to be done. None until the first offset is tracked when the start
    position was not known as a number (a seek to the beginning or the end).
    """

    __slots__ = ("committed", "_emitted", "_done", "_latest", "has_committed")

    def __init__(self, committed: int | None = None):
        self.committed = committed
        self._emitted: deque[int] = deque()  # tracked, not committed yet, ascending
        self._done: set[int] = set()  # the tracked offsets that are done
        self._latest = -1 if committed is None else committed - 1
        self.has_committed = False  # a commit was made by this instance

    # ---- what the spout reports ------------------------------------------------------------
    def track(self, offset: int) -> None:
        """`offset` was emitted for the first time. Offsets must come in increasing order."""
        if offset <= self._latest:
            raise OffsetOrderError(f"offset {offset} tracked after {self._latest}")
        if self.committed is None:
            self.committed = offset
        self._latest = offset
        self._emitted.append(offset)

    def done(self, offset: int) -> bool:
        """`offset`'s tuple tree completed (or was given up on). False if it is not tracked
        (already committed, or never emitted by this instance)."""
        if offset < self._start() or offset > self._latest or offset in self._done:
            return False
        self._done.add(offset)
        return True

    def _start(self) -> int:
        return self._emitted[0] if self._emitted else self._latest + 1

    # ---- commits ---------------------------------------------------------------------------
    def next_commit(self) -> int | None:
        """The offset to commit now: one past the longest done prefix of the tracked offsets.
        None when that would not move the committed offset."""
        done = self._done
        position = None
        for offset in self._emitted:
            if offset not in done:
                break
            position = offset + 1
        if position is None or (self.committed is not None and position <= self.committed):
            return None
        return position

    def commit(self, offset: int) -> None:
        """The group now has `offset` committed: forget what lies before it."""
        emitted, done = self._emitted, self._done
        while emitted and emitted[0] < offset:
            done.discard(emitted.popleft())
        self.committed = offset if self.committed is None else max(self.committed, offset)
        self._latest = max(self._latest, offset - 1)
        self.has_committed = True

    # ---- the bound on uncommitted offsets --------------------------------------------------
    @property
    def uncommitted(self) -> int:
        """Tracked offsets not committed yet (done or not): what `max.uncommitted.offsets`
        bounds."""
        return len(self._emitted)

    @property
    def latest(self) -> int:
        """The highest offset tracked or committed past (-1 when none)."""
        return self._latest

    def pending(self) -> list[int]:
        """The tracked offsets not done yet, ascending (for logs and tests)."""
        return [o for o in self._emitted if o not in self._done]
