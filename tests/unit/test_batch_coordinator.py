"""The transactional coordinator and the finish tracking (host/batch/coordinator.py,
host/batch/tracker.py), pure: a store in memory, attempts moved by hand and by random schedules."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from host.batch.coordinator import Coordinator
from host.batch.tracker import BOLT, COMMITTER, PLAIN, SPOUT, Attempt, Group, Member, Phase, Tracker


class MemoryStore:
    def __init__(self) -> None:
        self.current = 1
        self.records: dict[int, dict[str, Any]] = {}
        self.writes: list[tuple[str, int]] = []

    def currtx(self) -> int:
        return self.current

    def metas(self) -> dict[int, dict[str, Any]]:
        return dict(self.records)

    def put_meta(self, txid: int, meta: Any, attempt: int) -> None:
        self.records[txid] = {"meta": meta, "attempt": attempt}
        self.writes.append(("meta", txid))

    def committed(self, txid: int) -> None:
        self.current = txid + 1
        for t in [t for t in self.records if t < txid]:
            del self.records[t]
        self.writes.append(("commit", txid))

    def forget_from(self, txid: int) -> None:
        for t in [t for t in self.records if t >= txid]:
            del self.records[t]


def group() -> Group:
    """spout (tasks 1, 2) -> split (3, 4, 5: batch bolt) -> count (6: plain) -> sink (7: committer)
    -> audit (8: plain, after the commit)."""
    return Group(
        [
            Member("spout", SPOUT, [1, 2], []),
            Member("split", BOLT, [3, 4, 5], ["spout"]),
            Member("count", PLAIN, [6], ["split"]),
            Member("sink", COMMITTER, [7], ["count"]),
            Member("audit", PLAIN, [8], ["sink"]),
        ]
    )


def test_only_the_lowest_processed_txid_commits_and_a_failure_drops_the_tail() -> None:
    store = MemoryStore()
    c = Coordinator(store, max_open=3)
    a1, a2, a3 = (c.open_next(0.0, {"n": i}) for i in (1, 2, 3))
    assert [a.txid for a in (a1, a2, a3)] == [1, 2, 3]
    assert not c.room()
    assert store.writes == [("meta", 1), ("meta", 2), ("meta", 3)]  # stored before emitting
    a2.phase = Phase.PROCESSED
    assert c.to_commit() is None  # txid 1 is not processed: 2 waits
    a1.phase = Phase.PROCESSED
    assert c.to_commit() is a1
    c.committed(a1)
    assert c.committed_txid == 1 and store.current == 2
    assert c.to_commit() is a2
    # txid 2 fails: it and 3 are aborted and opened again, in order, with the stored metadata
    assert c.fail(a2) == [a2, a3]
    assert a2.dead and a3.dead and c.open == {}
    assert c.fail(a2) == []  # already dropped
    assert c.replay_due()
    r2 = c.open_next(1.0)
    r3 = c.open_next(1.0)
    assert (r2.txid, r2.number, r2.meta, r2.replay) == (2, 2, {"n": 2}, True)
    assert (r3.txid, r3.number, r3.meta) == (3, 2, {"n": 3})
    assert not c.replay_due()


def test_a_restarted_coordinator_replays_what_was_stored_and_never_a_committed_txid() -> None:
    store = MemoryStore()
    c = Coordinator(store, max_open=2)
    a1, a2 = c.open_next(0.0, "m1"), c.open_next(0.0, "m2")
    a1.phase = Phase.PROCESSED
    c.committed(c.to_commit() or a1)
    # the host dies here; a new one reads the same store
    again = Coordinator(store, max_open=2)
    assert again.committed_txid == 1 and again.next_txid == 2
    assert again.prev_meta(2) == "m1"  # the committed txid's metadata is kept for batch_init
    assert again.replay_due()
    r2 = again.open_next(5.0)
    assert (r2.txid, r2.number, r2.meta) == (2, a2.number + 1, "m2")
    assert again.open_next(5.0, "m3").txid == 3


def test_a_source_that_numbers_its_batches_skips_txids() -> None:
    c = Coordinator(MemoryStore(), max_open=1)
    a = c.open_next(0.0, "spark batch 4", txid=5)
    assert a.txid == 5 and c.next_txid == 6
    a.phase = Phase.PROCESSED
    assert c.to_commit() is a


def drive_tracker(t: Tracker, a: Attempt, deliveries: dict[int, int]) -> list[tuple[int, bool]]:
    """Deliver and ack `deliveries` (task -> tuples) after the spouts emitted, acking finishes
    as they are asked for; returns the finishes in the order they were asked for."""
    asked: list[tuple[int, bool]] = []
    for task, n in deliveries.items():
        for _ in range(n):
            t.delivered(a, task)
    for spout_task in t.group.spout.tasks:
        t.spout_emitted(a, spout_task)
    for task, n in deliveries.items():
        for _ in range(n):
            t.acked(a, task)
    while t.finishes:
        due, t.finishes = t.finishes, []
        for _, task, commit in due:
            asked.append((task, commit))
            if not commit:
                t.finish_acked(a, task)
    return asked


def test_finish_goes_once_a_task_has_everything_and_committers_wait_for_the_commit() -> None:
    t = Tracker(group())
    a = Attempt(1, 1, None, False, 0.0)
    t.opened(a)
    asked = drive_tracker(t, a, {3: 2, 4: 0, 5: 1, 6: 3, 7: 3})
    assert sorted(asked) == [(3, False), (4, False), (5, False)]
    assert a.phase is Phase.PROCESSED and a.commit_ready == {7}
    assert 8 not in a.finished  # after the committer: finished in the commit phase
    t.start_commit(a)
    assert t.finishes == [(a, 7, True)]
    t.finishes.clear()
    t.finish_acked(a, 7)
    assert len(a.finished) == t.complete


def test_finish_waits_for_the_acks_of_every_tuple_delivered() -> None:
    t = Tracker(group())
    a = Attempt(1, 1, None, False, 0.0)
    t.opened(a)
    t.delivered(a, 3)
    t.delivered(a, 3)
    t.spout_emitted(a, 1)
    t.spout_emitted(a, 2)
    assert [task for _, task, _ in t.finishes] == [4, 5]  # nothing delivered: due at once
    t.finishes.clear()
    t.acked(a, 3)
    assert t.finishes == []
    assert t.held_by(a, 3) and not t.held_by(a, 6)
    t.acked(a, 3)
    assert [task for _, task, _ in t.finishes] == [3]


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.integers(0, 3), min_size=5, max_size=5),
    st.permutations([3, 4, 5, 6, 7]),
)
def test_every_task_finishes_exactly_once_whatever_the_counts(
    counts: list[int], order: list[int]
) -> None:
    t = Tracker(group())
    a = Attempt(1, 1, None, False, 0.0)
    t.opened(a)
    deliveries = {task: counts[i] for i, task in enumerate(order)}
    asked = drive_tracker(t, a, deliveries)
    assert sorted(task for task, _ in asked) == [3, 4, 5]
    assert a.phase is Phase.PROCESSED
    t.start_commit(a)
    t.finish_acked(a, 7)
    assert len(a.finished) == t.complete == 8


def test_a_spout_task_owing_its_batch_commit_holds_the_attempt() -> None:
    t = Tracker(group())
    a = Attempt(1, 1, None, False, 0.0)
    t.opened(a)
    t.spout_emitted(a, 1)
    assert not t.held_by(a, 1)  # finished its share: its death loses nothing of it
    a.owed[1] = "batch_commit"
    assert t.held_by(a, 1)  # but a commit it owes is lost with it
