"""The transactional Kafka spout's pure part (components/kafka_spout/tx_ranges.py, tx_config.py):
offset ranges read from a log with gaps, replayed exactly; partition numbering; the settings."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from components.kafka_spout.config import ConfigError
from components.kafka_spout.tx_config import tx_from_conf
from components.kafka_spout.tx_ranges import (
    NewRange,
    ReplayError,
    ReplayRange,
    behind,
    layout,
)

# a partition's log: the offsets that hold records a consumer sees (gaps: compacted records,
# transaction markers), and the end (past the last offset, maybe past trailing markers)
logs = (
    st.lists(st.integers(0, 60), unique=True)
    .map(sorted)
    .flatmap(
        lambda offsets: st.tuples(
            st.just(offsets), st.integers(offsets[-1] + 1 if offsets else 0, 70)
        )
    )
)


def deliver(scan: NewRange | ReplayRange, offsets: list[int], end: int, start: int) -> list[int]:
    """What the consumer hands over after a seek to `start`: the records from there, then the
    end of the partition; the kept offsets, in order."""
    kept = []
    for offset in offsets:
        if scan.done:
            return kept
        if offset >= start and scan.offer(offset):
            kept.append(offset)
    if not scan.done:
        scan.end(end)
    return kept


@given(logs, st.integers(1, 10), st.integers(0, 70))
def test_a_replay_keeps_exactly_what_the_new_batch_kept(log, limit, start) -> None:
    offsets, end = log
    new = NewRange(start, limit)
    kept = deliver(new, offsets, max(end, start), start)
    assert kept == [o for o in offsets if o >= start][:limit]
    assert new.records == len(kept)
    assert new.to >= start and all(start <= o < new.to for o in kept)
    # nothing between the batch's last record and `to` is a record: the next batch misses none
    assert [o for o in offsets if start <= o < new.to] == kept
    replay = ReplayRange(start, new.to)
    assert deliver(replay, offsets, max(end, start), start) == kept
    assert replay.done and replay.records == len(kept)


@given(logs, st.integers(1, 10))
def test_batches_one_after_another_read_every_record_once(log, limit) -> None:
    offsets, end = log
    start, read = 0, []
    for _ in range(len(offsets) + 2):
        new = NewRange(start, limit)
        read += deliver(new, offsets, end, start)
        start = new.to
    assert read == offsets and start == end


def test_a_batch_that_reached_the_end_skips_the_markers_there() -> None:
    new = NewRange(5, 10)
    assert [new.offer(o) for o in (5, 6)] == [True, True]
    new.end(9)  # 7, 8: a transaction's commit markers
    assert new.done and (new.to, new.records) == (9, 2)


def test_a_full_batch_ends_after_its_last_record_and_ignores_the_end() -> None:
    new = NewRange(0, 2)
    assert [new.offer(o) for o in (0, 3, 4)] == [True, True, False]
    new.end(10)
    assert new.to == 4


def test_an_empty_partition_gives_an_empty_range_at_its_start() -> None:
    new = NewRange(7, 5)
    new.end(7)
    assert (new.to, new.records) == (7, 0)
    assert ReplayRange(7, 7).done


def test_a_replay_ignores_records_before_and_after_its_range() -> None:
    replay = ReplayRange(3, 6)
    assert [replay.offer(o) for o in (1, 3, 4)] == [False, True, True]
    assert not replay.done
    assert replay.offer(8) is False and replay.done  # 5 is gone: compacted since


def test_a_partition_shorter_than_a_stored_range_is_an_error() -> None:
    replay = ReplayRange(0, 10)
    replay.offer(0)
    with pytest.raises(ReplayError, match="truncated"):
        replay.end(5)


def test_partitions_keep_their_numbers_when_more_appear() -> None:
    first = layout([], [("b", 0), ("a", 1), ("a", 0)])
    assert first == [("a", 0), ("a", 1), ("b", 0)]
    grown = layout([list(tp) for tp in first], [("a", 2), ("a", 0), ("0new", 0)])
    assert grown == [("a", 0), ("a", 1), ("b", 0), ("0new", 0), ("a", 2)]


def test_behind_when_an_end_is_past_the_committed_offset_or_nothing_is_committed() -> None:
    assert not behind({("t", 0): 5, ("t", 1): 0}, {("t", 0): 5, ("t", 1): 0})
    assert behind({("t", 0): 6}, {("t", 0): 5})
    assert behind({("t", 0): 0}, {("t", 0): -1001})
    assert behind({("t", 0): 0}, {})


BASE = {"kafka.spout.bootstrap.servers": "127.0.0.1:9092", "kafka.spout.topics": ["t"]}


def test_settings_take_the_kafka_spouts_and_the_batch_size() -> None:
    cfg = tx_from_conf({**BASE, "kafka.spout.batch.max.records": 50}, {"componentid": "s"})
    assert cfg.batch_max_records == 50 and cfg.spout.topics == ("t",)
    assert tx_from_conf(BASE, {}).batch_max_records == 1000


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("kafka.spout.batch.max.records", 0, "batch.max.records must be an integer >= 1"),
        ("kafka.spout.retry.max.retries", 3, "not a setting of the transactional"),
        ("kafka.spout.processing.guarantee", "AT_MOST_ONCE", "not a setting of the transact"),
        ("kafka.spout.no.such", 1, "unknown setting kafka.spout.no.such"),
    ],
)
def test_bad_settings_are_refused(key, value, message) -> None:
    with pytest.raises(ConfigError, match=message):
        tx_from_conf({**BASE, key: value}, {})
