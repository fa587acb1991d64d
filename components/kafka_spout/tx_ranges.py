"""The pure part of the transactional Kafka spout (transactional.py): which records an offset range
holds, and which partition a partition number stands for.

A partition's batch is the offset range `[from, to)`: the records read from `from` on, at most
`batch.max.records` of them, and `to` the offset after the last one, or the end of the partition
when the read reached it (past transaction markers and compacted gaps there, so the next batch
does not scan them again). A replay reads the range again and keeps exactly the records whose
offsets fall in it, so a transactional source emits the same tuples (docs/transactional.md §2.3,
Storm's `PartitionedTransactionalSpoutExecutor`: new batches from the last metadata, replays from
the stored one). The readers are fed what the consumer delivers, in offset order: records
(`offer`) and the end of the partition (`end`, librdkafka's partition EOF, at the offset after
the last record a consumer can see).

Partition numbers: Kafka partitions, in the order they were first seen, so that a partition keeps
its number when partitions or topics are added (the coordinator's metadata carries the list, and
each batch's list starts with the previous batch's).

No Kafka here: tests/unit/test_kafka_tx_ranges.py checks it.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

TopicPartition = tuple[str, int]
Meta = dict[str, Any]


class ReplayError(ValueError):
    """A stored range can no longer be read as it was (the partition was truncated)."""


class NewRange:
    """The next batch of a partition from offset `start`: at most `limit` records."""

    __slots__ = ("start", "limit", "records", "last", "end_at", "done")

    def __init__(self, start: int, limit: int) -> None:
        if limit < 1:
            raise ValueError(f"limit must be >= 1, got {limit}")
        self.start = start
        self.limit = limit
        self.records = 0
        self.last = -1  # the last record kept
        self.end_at: int | None = None  # where the partition ended, when the read got there
        self.done = False

    def offer(self, offset: int) -> bool:
        """A record at `offset`: True if it belongs to the batch (emit it)."""
        if self.done or offset < self.start or offset <= self.last:
            return False  # a record from before the seek, or one seen already
        self.records += 1
        self.last = offset
        self.done = self.records >= self.limit
        return True

    def end(self, offset: int) -> None:
        """The partition ends at `offset` (nothing more to read now)."""
        if not self.done:
            self.end_at = offset
            self.done = True

    @property
    def to(self) -> int:
        """The offset after the batch: past the end of the partition when the read got there
        (a gap at the end holds no records: markers, compacted ones), else after the last record
        kept."""
        after = max(self.start, self.last + 1)
        if self.end_at is not None and self.end_at > after:
            return self.end_at
        return after


class ReplayRange:
    """Exactly the records of a stored range `[first, to)`."""

    __slots__ = ("first", "to", "records", "last", "done")

    def __init__(self, first: int, to: int) -> None:
        if to < first:
            raise ValueError(f"bad range [{first}, {to})")
        self.first = first
        self.to = to
        self.records = 0
        self.last = -1
        self.done = to == first

    def offer(self, offset: int) -> bool:
        """A record at `offset`: True if it lies in the range (emit it)."""
        if self.done or offset < self.first or offset <= self.last:
            return False
        if offset >= self.to:
            self.done = True
            return False
        self.records += 1
        self.last = offset
        self.done = offset == self.to - 1
        return True

    def end(self, offset: int) -> None:
        """The partition ends at `offset`: the range must lie below it, as it did when read."""
        if self.done:
            return
        if offset < self.to:
            raise ReplayError(
                f"the partition now ends at offset {offset}, but the range [{self.first}, "
                f"{self.to}) was read from it before: it was truncated"
            )
        self.done = True


def range_meta(topic: str, partition: int, first: int, to: int, records: int) -> Meta:
    """A partition's metadata of a batch: the range, and what it is of (a replay reads the
    partition its metadata names, and checks that it read as many records)."""
    return {"topic": topic, "partition": partition, "from": first, "to": to, "records": records}


def layout(previous: Iterable[Any], found: Iterable[TopicPartition]) -> list[TopicPartition]:
    """The partitions, numbered: the previous batch's list, then those found now that it lacks,
    sorted. A partition never changes number; one that went away keeps its number (its batches
    are empty)."""
    known = [(str(t), int(p)) for t, p in previous]
    seen = set(known)
    return known + sorted(tp for tp in set(found) if tp not in seen)


def behind(ends: dict[TopicPartition, int], committed: dict[TopicPartition, int]) -> bool:
    """Whether some partition has records past the group's committed offset (none committed:
    counts as behind), i.e. a new batch may find something to read."""
    return any(end > committed.get(tp, -1) or committed.get(tp, -1) < 0 for tp, end in ends.items())
