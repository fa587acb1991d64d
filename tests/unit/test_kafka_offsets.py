"""The Kafka spout's offset bookkeeping (components/kafka_spout/offsets.py) and retry schedule
(retry.py): pure logic, checked against storm-kafka-client's rules."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from components.kafka_spout.offsets import OffsetOrderError, PartitionOffsets
from components.kafka_spout.retry import Backoff, RetrySchedule
from components.kafka_spout.spout import share
from host.testing.clock import FakeClock


def test_commit_stops_at_the_first_offset_not_done():
    po = PartitionOffsets(10)
    for o in range(10, 15):
        po.track(o)
    assert po.next_commit() is None, "nothing done: nothing to commit"
    po.done(11)
    po.done(12)
    assert po.next_commit() is None, "10 is not done: 11 and 12 wait behind it"
    po.done(10)
    assert po.next_commit() == 13
    po.commit(13)
    assert po.committed == 13 and po.uncommitted == 2 and po.pending() == [13, 14]


def test_offsets_never_emitted_do_not_hold_a_commit_back():
    """Compacted-away offsets (or transaction markers) leave gaps; as in Storm, the commit moves
    to the next emitted offset once that one is done."""
    po = PartitionOffsets(0)
    for o in (0, 3, 7):
        po.track(o)
    po.done(0)
    po.done(3)
    assert po.next_commit() == 4
    po.done(7)
    assert po.next_commit() == 8


def test_an_unknown_start_is_the_first_tracked_offset():
    po = PartitionOffsets(None)
    assert po.next_commit() is None
    po.track(42)
    assert po.committed == 42
    po.done(42)
    assert po.next_commit() == 43


def test_tracking_out_of_order_is_a_bug():
    po = PartitionOffsets(5)
    po.track(5)
    with pytest.raises(OffsetOrderError):
        po.track(5)
    with pytest.raises(OffsetOrderError):
        PartitionOffsets(5).track(4)


def test_done_ignores_what_is_not_tracked():
    po = PartitionOffsets(0)
    po.track(0)
    po.done(0)
    po.commit(1)
    assert po.done(0) is False, "committed already"
    assert po.done(9) is False, "never tracked"


@settings(max_examples=300, deadline=None)
@given(
    start=st.integers(0, 1000),
    steps=st.lists(
        st.one_of(
            st.tuples(st.just("emit"), st.integers(1, 3)),  # the next offset, after a gap
            st.tuples(st.just("done"), st.integers(0, 50)),  # the n-th pending offset is done
            st.tuples(st.just("commit"), st.just(0)),
        ),
        max_size=120,
    ),
)
def test_committed_offset_never_passes_an_offset_not_done(start, steps):
    po = PartitionOffsets(start)
    next_offset = start
    done: set[int] = set()
    tracked: list[int] = []
    for op, arg in steps:
        if op == "emit":
            po.track(next_offset)
            tracked.append(next_offset)
            next_offset += arg
        elif op == "done":
            pending = [o for o in tracked if o not in done]
            if pending:
                offset = pending[arg % len(pending)]
                assert po.done(offset) or offset < po.committed
                done.add(offset)
        else:
            offset = po.next_commit()
            if offset is not None:
                po.commit(offset)
        # the invariant: everything tracked below the committed offset is done
        assert all(o in done for o in tracked if o < po.committed), (po.committed, tracked, done)
        assert po.uncommitted == len([o for o in tracked if o >= po.committed])
    # liveness: once everything tracked is done, the commit reaches past the last of it
    for o in tracked:
        po.done(o)
    offset = po.next_commit()
    if tracked and tracked[-1] >= po.committed:
        assert offset == tracked[-1] + 1


def test_the_manual_partitioner_spreads_sorted_partitions_round_robin():
    parts = [("b", 0), ("a", 1), ("a", 0), ("b", 1), ("a", 2)]
    assert share(parts, 0, 2) == [("a", 0), ("a", 2), ("b", 1)]
    assert share(parts, 1, 2) == [("a", 1), ("b", 0)]
    together = share(parts, 0, 3) + share(parts, 1, 3) + share(parts, 2, 3)
    assert sorted(together) == sorted(parts)


# ---- retries ------------------------------------------------------------------------------------


def test_backoff_delays_are_storms():
    b = Backoff(initial_delay=0.5, delay_period=0.1, max_retries=5, max_delay=1.0)
    assert [b.delay(n) for n in (1, 2, 3, 4, 5)] == [0.5, 0.2, 0.4, 0.8, 1.0]
    assert not b.gives_up(5) and b.gives_up(6)
    assert not Backoff(max_retries=-1).gives_up(10**6), "negative: retry forever"


def test_retry_schedule_releases_ids_when_due_and_gives_up_past_the_limit():
    clock = FakeClock()
    sched = RetrySchedule(Backoff(initial_delay=1.0, delay_period=1.0, max_retries=2), clock)
    m = ("t", 0, 7)
    assert sched.failed(m) and m in sched
    assert sched.ready(10) == []
    clock.advance(1.0)
    assert sched.ready(10) == [m] and m not in sched
    assert sched.failed(m)  # second failure: 1.0 * 2**1 seconds
    clock.advance(1.5)
    assert sched.ready(10) == []
    clock.advance(0.5)
    assert sched.ready(10) == [m]
    assert not sched.failed(m), "third failure is past max_retries=2"
    assert m not in sched and m not in sched.failures


def test_retry_schedule_forgets_revoked_partitions():
    clock = FakeClock()
    sched = RetrySchedule(Backoff(), clock)
    for msg_id in [("t", 0, 1), ("t", 1, 1), ("u", 0, 3)]:
        sched.failed(msg_id)
    sched.retain_partitions([("t", 1)])
    clock.advance(1.0)
    assert sched.ready(10) == [("t", 1, 1)]
    assert set(sched.failures) == {("t", 1, 1)}
