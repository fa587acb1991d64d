"""host/runtime/deadlines.py and host/runtime/lifecycle.py: the loop's timers and a task's state
machine with its restart policy. Pure logic: no process, no clock but numbers."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from host.runtime.deadlines import Deadlines
from host.runtime.lifecycle import (
    TRANSITIONS,
    IllegalTransition,
    Lifecycle,
    RestartPolicy,
    State,
)

operations = st.lists(
    st.tuples(
        st.sampled_from(["at", "cancel", "run"]),
        st.integers(0, 5),
        st.floats(0, 100, allow_nan=False),
    ),
    max_size=60,
)


@given(operations)
def test_deadlines_run_in_time_order_and_only_their_latest_schedule(ops):
    d = Deadlines()
    model: dict[int, float] = {}  # key -> when, the reference
    ran: list[tuple[float, int]] = []
    now = 0.0
    for op, key, value in ops:
        if op == "at":
            d.at(key, value, lambda key=key, when=value: ran.append((when, key)))
            model[key] = value
        elif op == "cancel":
            d.cancel(key)
            model.pop(key, None)
        else:
            now = max(now, value)
            ran.clear()
            expected = sorted((w, k) for k, w in model.items() if w <= now)
            d.run_due(now)
            assert sorted(ran) == expected
            assert [w for w, _ in ran] == sorted(w for w, _ in ran), "earliest first"
            for _, k in expected:
                del model[k]
        assert len(d) == len(model)
        assert d.next_due() == min(model.values(), default=float("inf"))


def test_an_action_that_schedules_a_due_deadline_runs_it_in_the_next_call():
    d = Deadlines()
    calls: list[str] = []

    def again() -> None:
        calls.append("again")
        d.at("k", 0.0, again)

    d.at("k", 0.0, again)
    d.run_due(1.0)
    assert calls == ["again"] and d.when("k") == 0.0
    d.run_due(1.0)
    assert calls == ["again", "again"]


def test_next_due_can_leave_keys_out():
    d = Deadlines()
    d.at(("next", 1), 5.0, lambda: None)
    d.at("housekeeping", 7.0, lambda: None)
    assert d.next_due() == 5.0
    assert d.next_due(lambda key: isinstance(key, tuple)) == 7.0


def test_every_transition_outside_the_table_raises():
    for start in State:
        for end in State:
            life = Lifecycle("c[1]")
            life.state = start
            if end in TRANSITIONS[start]:
                life.to(end)
                assert life.state is end
            else:
                with pytest.raises(IllegalTransition, match=f"c\\[1\\]: {start.value} -> "):
                    life.to(end)


def test_a_fatal_task_stays_fatal_and_alive_means_starting_or_running():
    assert TRANSITIONS[State.FATAL] == frozenset()
    assert {s for s in State if _alive(s)} == {State.STARTING, State.RUNNING}


def _alive(state: State) -> bool:
    life = Lifecycle("x")
    life.state = state
    return life.alive


def test_the_restart_policy_doubles_its_back_off_up_to_the_maximum_and_gives_up():
    policy = RestartPolicy(initial=0.5, maximum=3.0, max_restarts=4, window=60)
    assert [policy.after_failure(t) for t in (0, 1, 2, 3)] == [0.5, 1.0, 2.0, 3.0]
    assert policy.after_failure(4) is None  # a fifth failure within the window


def test_failures_outside_the_window_are_forgotten():
    policy = RestartPolicy(initial=1, maximum=30, max_restarts=2, window=10)
    assert policy.after_failure(0) == 1
    assert policy.after_failure(5) == 2
    assert policy.after_failure(20) == 1  # both earlier ones are older than 10 s
    assert policy.recent_failures == 1
