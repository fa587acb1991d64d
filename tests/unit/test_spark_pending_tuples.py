"""host/spark/pending_tuples.py: what a bolt owes a Spark partition's run and when it stops owing
it, with the time given by the test (docs/spark.md §4.3). Through real bolts:
tests/integration/test_spark_component_process.py (the tick and never-acking tests)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from host.spark.pending_tuples import HEARTBEAT_SECS, MAX_BEATS, Other, PendingTuples

TIMEOUT = 30.0


def ledger(window: int = 4, ticking: bool = True, heartbeats: bool = True) -> PendingTuples:
    p = PendingTuples(window=window, timeout=TIMEOUT, ticking=ticking, heartbeats=heartbeats)
    p.start_run(0.0)
    return p


def write(p: PendingTuples, n: int) -> list[str]:
    return [p.tuple_written(b"t") for _ in range(n)]


def tick(p: PendingTuples) -> str:
    tid = str(p.new_id())
    p.tick_written(tid, b"tick " + tid.encode())
    return tid


def sync(p: PendingTuples, now: float = 1.0) -> list[str]:
    """A heartbeat written and answered at once: the bolt read everything written so far."""
    p.beat_written(now)
    return p.synced(now)


# ---- ticks: awaited, outside the window ----------------------------------------------------------


def test_a_tick_is_awaited_but_takes_no_room_in_the_window():
    p = ledger(window=3)
    write(p, 3)
    assert p.window - len(p.in_flight) == 0  # the window is full...
    t = tick(p)
    assert p.window - len(p.in_flight) == 0  # ...and a tick is still written, taking no room
    for tid in list(p.in_flight):
        assert p.answered(tid) == (Other.INPUT, b"t")
    assert not p.settled  # the run waits for the tick's ack too
    assert p.answered(t) == (Other.TICK, b"tick " + t.encode())
    assert p.settled
    assert p.tick_answers == 1 and p.answers == 4


def test_ids_are_one_count_for_tuples_ticks_heartbeats_and_the_finish():
    p = ledger()
    assert write(p, 2) == ["1", "2"]
    assert tick(p) == "3"
    assert p.beat_written(0.0) == 4
    assert p.finish_written() == 5 and p.finish_id == "5"
    assert p.tuple_written(b"t") == "6"
    assert p.written == 3 and p.ticked == 2


# ---- a tick read past without an ack is forgotten ------------------------------------------------


def test_a_tick_read_past_with_nothing_answered_since_is_forgotten_and_its_late_ack_let_through():
    p = ledger()
    for tid in write(p, 2):
        p.answered(tid)
    t = tick(p)
    assert sync(p) == [t]
    assert p.settled and p.ticks_forgotten == 1 and p.progressed
    assert p.answered(t) == (Other.LATE, b"")  # its late ack


def test_a_tick_is_kept_while_the_bolt_still_answers():
    """An ack read after the heartbeat was written: the bolt may yet ack the tick."""
    p = ledger()
    a, b = write(p, 2)
    t = tick(p)
    p.beat_written(1.0)
    p.answered(a)
    assert p.synced(1.0) == []
    assert t in p.ticks and b in p.in_flight


def test_only_ticks_written_before_the_answered_heartbeat_are_forgotten():
    p = ledger()
    first = tick(p)
    p.beat_written(1.0)
    second = tick(p)
    assert p.synced(1.0) == [first]
    assert list(p.ticks) == [second]


def test_ticks_owed_alone_for_the_timeout_are_forgotten_not_a_timeout():
    p = ledger(heartbeats=False)
    t = tick(p)
    assert p.owing(1.0) and not p.overdue(TIMEOUT)
    assert p.overdue(TIMEOUT + 1.5)
    assert p.expire_ticks(TIMEOUT + 1.5) == [t]
    assert p.settled and not p.overdue(TIMEOUT + 2.0)  # the clock starts again


def test_an_input_tuple_owed_for_the_timeout_is_a_timeout():
    p = ledger(heartbeats=False)
    write(p, 1)
    tick(p)
    assert p.owing(0.0) and p.overdue(TIMEOUT + 0.5)
    assert p.expire_ticks(TIMEOUT + 0.5) is None
    assert len(p.ticks) == 1


def test_progress_moves_the_timeout_and_nothing_owed_keeps_it_at_now():
    p = ledger()
    assert not p.owing(100.0) and p.progress_at == 100.0
    write(p, 1)
    assert p.owing(120.0) and p.progress_at == 100.0
    p.progressed = True  # something read
    assert p.owing(125.0) and p.progress_at == 125.0
    assert not p.overdue(125.0 + TIMEOUT)


# ---- the never-acking judgement ------------------------------------------------------------------


def test_a_bolt_without_ticks_that_never_acks_has_every_tuple_it_read_past_forgotten():
    p = ledger(ticking=False)
    ids = write(p, 4)
    p.beat_written(1.0)
    late = write(p, 2)
    p.synced(1.0)
    assert p.forgotten == 4 and list(p.in_flight) == late
    assert p.may_anchor(ids[0])  # a late emit of a forgotten tuple
    assert p.answered(ids[0]) == (Other.LATE, b"")


def test_a_bolt_with_ticks_is_judged_only_on_tuples_a_tick_came_after():
    """A buffering sink is silent until its tick: the tuples after the last tick are not taken
    for a bolt that never acks, however many heartbeats it answers."""
    p = ledger()
    before = write(p, 3)
    tick(p)
    after = write(p, 2)
    sync(p, 1.0)
    assert p.forgotten == 3 and list(p.in_flight) == after
    assert not set(before) & set(p.in_flight)


def test_a_bolt_with_ticks_and_no_tick_yet_keeps_its_tuples_within_the_timeout():
    p = ledger()
    write(p, 4)
    sync(p, 1.0)
    sync(p, TIMEOUT - 1.0)
    assert p.forgotten == 0 and len(p.in_flight) == 4


def test_once_found_not_to_ack_or_past_the_timeout_a_bolt_with_ticks_is_judged_as_any():
    p = ledger()
    assert not p.judged_as_any(TIMEOUT - 0.1)
    assert p.judged_as_any(TIMEOUT)  # as long as host local waits for an untracked tuple
    write(p, 2)
    tick(p)
    sync(p, 1.0)
    assert p.forgotten == 2 and p.judged_as_any(1.0)
    rest = write(p, 3)
    sync(p, 2.0)  # no tick after these: judged all the same
    assert p.forgotten == 5 and not set(rest) & set(p.in_flight)


def test_a_bolt_that_has_answered_an_input_tuple_never_has_tuples_forgotten():
    p = ledger(ticking=False)
    first, *rest = write(p, 4)
    p.answered(first)
    sync(p, 100.0)
    assert p.forgotten == 0 and list(p.in_flight) == rest


def test_acked_ticks_do_not_count_as_answering_an_input_tuple():
    p = ledger()
    write(p, 2)
    p.answered(tick(p))
    assert p.answers == p.tick_answers == 1
    sync(p, 1.0)
    assert p.forgotten == 2 and p.settled


# ---- answers and anchors of no input tuple in flight ---------------------------------------------


def test_the_finish_is_awaited_and_its_ack_recognised():
    p = ledger()
    fid = p.finish_written()
    assert not p.settled and p.may_anchor(str(fid))
    assert p.answered(str(fid)) == (Other.FINISH, b"")
    assert p.settled


def test_an_answer_or_anchor_of_nothing_pending_is_stray():
    p = ledger()
    (a,) = write(p, 1)
    assert p.answered(a) == (Other.INPUT, b"t")
    assert p.answered(a) == (Other.STRAY, b"")  # already acked
    assert p.answered("99") == (Other.STRAY, b"")  # never written
    assert p.answered(7) == (Other.STRAY, b"")  # not even a string
    assert not p.may_anchor(a) and not p.may_anchor("99")
    assert p.may_anchor(tick(p))


# ---- heartbeats ----------------------------------------------------------------------------------


def test_heartbeats_come_once_a_second_and_never_more_than_max_beats_unanswered():
    p = ledger(ticking=False)
    (a,) = write(p, 1)
    p.answered(a)  # an acking bolt: no probes
    write(p, 1)
    assert p.beat_due(0.0, input_done=False)
    p.beat_written(0.0)
    assert not p.beat_due(HEARTBEAT_SECS - 0.01, input_done=False)
    now = 0.0
    for _ in range(MAX_BEATS - 1):
        now += HEARTBEAT_SECS
        assert p.beat_due(now, input_done=False)
        p.beat_written(now)
    assert not p.beat_due(now + 100.0, input_done=False)
    p.synced(now)
    assert p.beat_due(now + 100.0, input_done=False)


def test_no_heartbeats_to_a_component_that_does_not_answer_them():
    p = ledger(ticking=False, heartbeats=False)
    write(p, 4)
    assert not p.beat_due(100.0, input_done=True)


def test_a_probe_asks_at_once_when_its_answer_can_forget_something():
    p = ledger(window=2, ticking=False)
    p.beat_written(0.0)
    p.synced(0.0)
    write(p, 1)
    assert not p.beat_due(0.1, input_done=False)  # room in the window: more input may come
    assert p.beat_due(0.1, input_done=True)  # the input is all written
    write(p, 1)
    assert p.beat_due(0.1, input_done=False)  # the window is full
    p.beat_written(0.1)
    assert not p.beat_due(0.2, input_done=True)  # one probe at a time


def test_a_probe_for_ticks_owed_once_the_input_is_answered():
    p = ledger()
    p.beat_written(0.0)
    p.synced(0.0)
    (a,) = write(p, 1)
    p.answered(a)
    tick(p)
    assert not p.beat_due(0.1, input_done=False)
    assert p.beat_due(0.1, input_done=True)


def test_no_probe_for_tuples_no_tick_came_after():
    p = ledger(window=2)
    p.beat_written(0.0)
    p.synced(0.0)
    write(p, 2)
    assert not p.beat_due(0.1, input_done=False)  # the window is full, but nothing judged
    tick(p)
    assert p.beat_due(0.1, input_done=False)


# ---- properties ----------------------------------------------------------------------------------

STEPS = st.lists(
    st.one_of(
        st.tuples(st.just("write"), st.integers(1, 5)),
        st.tuples(st.just("tick"), st.just(0)),
        st.tuples(st.just("ack"), st.integers(0, 10)),
        st.tuples(st.just("ack_tick"), st.integers(0, 3)),
        st.tuples(st.just("beat"), st.just(0)),
        st.tuples(st.just("sync"), st.just(0)),
        st.tuples(st.just("wait"), st.integers(0, 20)),
    ),
    max_size=80,
)


@given(steps=STEPS, ticking=st.booleans(), window=st.integers(1, 6))
def test_forgetting_keeps_the_books_and_the_window(steps, ticking, window):
    """Whatever the bolt answers and when: input tuples never exceed the window (the writer
    fills only its room), every input tuple written is in flight, answered or forgotten, the
    forgotten are always the oldest, a bolt that answered an input tuple loses none, and a
    tick is forgotten only if nothing was answered between its heartbeat and the sync."""
    p = PendingTuples(window=window, timeout=TIMEOUT, ticking=ticking, heartbeats=True)
    p.start_run(0.0)
    now = 0.0
    order: list[str] = []  # input tuple ids, in the order written
    input_answers = 0
    for op, n in steps:
        if op == "write":
            for _ in range(min(n, p.window - len(p.in_flight))):
                order.append(p.tuple_written(b"t"))
        elif op == "tick":
            tick(p)
        elif op == "ack" and p.in_flight:
            tid = list(p.in_flight)[n % len(p.in_flight)]
            assert p.answered(tid)[0] is Other.INPUT
            input_answers += 1
        elif op == "ack_tick" and p.ticks:
            tid = list(p.ticks)[n % len(p.ticks)]
            assert p.answered(tid)[0] is Other.TICK
        elif op == "beat":
            p.beat_written(now)
        elif op == "sync" and p.beats:
            beat = p.beats[0]
            ticks_before = [t for t in p.ticks if int(t) < beat.id]
            forgotten_before = p.forgotten
            doomed = p.synced(now)
            quiet = p.answers == beat.answers
            assert doomed == (ticks_before if quiet else [])
            if input_answers:
                assert p.forgotten == forgotten_before
        elif op == "wait":
            now += n
        assert len(p.in_flight) <= p.window
        assert p.written == len(order)
        assert p.written == len(p.in_flight) + input_answers + p.forgotten
        assert set(p.in_flight).isdisjoint(order[: p.forgotten])
        if not ticking:
            assert p.judged_as_any(now)
        assert p.settled == (not p.in_flight and not p.ticks and p.finish_id is None)
