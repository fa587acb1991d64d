"""An idle spout's back-off (host/runtime/idle_backoff.py): doubling per round of asking, from
1 ms to the longest sleep, back to nothing once a `next` emits; the `next`s a pipelining spout
had in flight together count as one round."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from host.runtime.idle_backoff import FIRST_SLEEP_SECS, MAX_WINDOW, IdleBackoff


def test_a_lock_step_spout_that_emits_nothing_waits_twice_as_long_each_time() -> None:
    b = IdleBackoff(0.1)
    sleeps = []
    for _ in range(9):
        b.wrote()
        again = b.synced(False, 10.0)
        assert again is not None
        sleeps.append(round(again - 10.0, 6))
    assert sleeps == [0.001, 0.002, 0.004, 0.008, 0.016, 0.032, 0.064, 0.1, 0.1]
    assert b.empty == 9
    b.wrote()
    assert b.synced(True, 11.0) is None  # it emitted: asked again at once
    assert b.sleep == 0.0 and b.empty == 0


def test_the_nexts_in_flight_together_are_one_round() -> None:
    """A paced spout: of the 32 `next`s written together, the first emits and the others come
    back empty; the wait stays 1 ms, round after round (it was 100 ms after one round)."""
    b = IdleBackoff(0.1)
    for _ in range(5):
        for _ in range(32):
            b.wrote()
        assert b.synced(True, 0.0) is None
        waits = [b.synced(False, 0.0) for _ in range(31)]
        assert waits == [FIRST_SLEEP_SECS] * 31
    assert b.empty == 31  # still counted one by one (a test harness's "idle": 3 in a row)
    # a whole round empty, then the next round empty too: that one doubles, once
    for _ in range(32):
        b.wrote()
    assert {b.synced(False, 0.0) for _ in range(32)} == {0.002}


@given(st.lists(st.tuples(st.integers(1, 32), st.integers(0, 32)), min_size=1, max_size=30))
def test_the_wait_never_exceeds_the_longest_sleep_nor_doubles_twice_in_a_round(
    rounds: list[tuple[int, int]],
) -> None:
    b = IdleBackoff(0.05)
    for written, first_emitting in rounds:
        before = b.sleep
        for _ in range(written):
            b.wrote()
        for i in range(written):
            again = b.synced(i == first_emitting, 1.0)
            assert again is None or 0.0 < again - 1.0 <= 0.05 + 1e-12
        assert b.sleep <= max(0.05, 2 * before) and b.sleep <= 0.05


def test_the_window_is_one_next_once_a_whole_round_came_back_empty() -> None:
    b = IdleBackoff(0.1)
    assert b.window == MAX_WINDOW  # the link's depth rules until the spout is seen idle
    for _ in range(32):  # a paced spout's round: one emits, the rest are empty
        b.wrote()
    b.synced(True, 0.0)
    for _ in range(31):
        b.synced(False, 0.0)
    assert b.sleep == FIRST_SLEEP_SECS and b.window == MAX_WINDOW  # it keeps its rounds
    for _ in range(32):  # a whole round empty: idle
        b.wrote()
    for _ in range(32):
        b.synced(False, 0.0)
    assert b.window == 1
    for _ in range(5):  # asked one `next` at a time while it stays idle
        b.wrote()
        b.synced(False, 0.0)
        assert b.window == 1
    b.wrote()
    b.synced(True, 0.0)  # it emitted: a whole round again at once
    assert b.window == MAX_WINDOW
    b.wrote()
    b.synced(False, 0.0)
    b.wrote()
    b.synced(False, 0.0)
    b.reset()
    assert b.window == MAX_WINDOW
