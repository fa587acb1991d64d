"""Shuffle runs (host/runtime/run_length.py): the run length's rules, the router's runs, and the
event loop measuring bolts over fake children and the fake clock (tests/unit/fake_children.py).
The throughput they buy is measured by `python -m benchmarks scaling-tasks`, not here."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from host.runtime.router import Router
from host.runtime.run_length import INITIAL_K, MAX_HOLD, RunLength
from host.runtime.supervisor import ADAPT_SECS, Supervisor
from host.testing import FakeClock
from host.topology.model import BOLT, SPOUT, Component, Grouping, Input, Topology
from multilang.messages import Handshake, SpoutCommand, TupleMessage
from tests.unit.fake_children import FakeLauncher, spout_and_bolt

BUDGET = 0.001

# ---- the run length's rules ------------------------------------------------------------------------


def test_before_any_read_runs_are_short():
    assert RunLength(32, BUDGET).k == INITIAL_K
    assert RunLength(1, BUDGET).k == 1


def test_a_component_answering_whole_writes_in_one_read_gets_runs_doubling_to_the_most():
    runs = RunLength(32, BUDGET)
    seen = []
    for _ in range(6):
        runs.answered()
        seen.append(runs.update())
    assert seen == [4, 8, 16, 32, 32, 32]


def test_no_reads_no_change():
    runs = RunLength(32, BUDGET)
    assert [runs.update() for _ in range(3)] == [INITIAL_K] * 3


def test_a_measured_time_per_tuple_sizes_the_run_to_the_budget_at_once():
    runs = RunLength(32, BUDGET)
    for _ in range(3):
        runs.answered()
        runs.update()
    assert runs.k == 16
    runs.answered()
    runs.measured(0.0006, 3)  # 200 us a tuple: 5 fit in 1 ms
    assert runs.update() == 5


def test_the_fastest_measurement_since_the_last_update_counts():
    # waiting for a core only lengthens what is measured: the least figure is the truest
    runs = RunLength(32, BUDGET)
    runs.measured(0.050, 5)
    runs.measured(0.0004, 4)  # 100 us a tuple
    runs.answered()
    assert runs.update() == 4  # 10 would fit: it grows by doubling ...
    runs.measured(0.0004, 4)
    assert runs.update() == 8
    runs.measured(0.0004, 4)
    assert runs.update() == 10  # ... up to what fits


def test_a_slow_bolt_gets_round_robin_and_is_probed_ever_more_rarely():
    runs = RunLength(32, BUDGET)
    runs.measured(0.020, 1)  # 20 ms a tuple
    assert runs.update() == 1
    holds = []
    for _ in range(3):
        # fast-looking updates (runs of 1 show no measurement) until k grows again ...
        waited = 0
        while runs.k == 1:
            runs.answered()
            runs.update()
            waited += 1
        holds.append(waited)
        # ... and the next run of two shows the bolt slow again
        runs.measured(0.020, 1)
        assert runs.update() == 1
    assert holds == [2, 3, 5]  # the hold (1, 2, 4 updates), then the update that grows


def test_the_hold_is_bounded():
    runs = RunLength(32, BUDGET)
    for _ in range(40):
        runs.k = 2  # grown again after its hold ...
        runs.measured(0.020, 1)  # ... and found slow
        runs.update()
    assert runs._next_hold == MAX_HOLD


@given(
    max_k=st.integers(1, 64),
    events=st.lists(
        st.one_of(st.none(), st.tuples(st.floats(0, 1, allow_nan=False), st.integers(1, 100))),
        max_size=60,
    ),
)
def test_k_stays_within_one_and_the_most(max_k: int, events: list):
    runs = RunLength(max_k, BUDGET)
    for event in events:
        if event is None:
            runs.answered()
        else:
            runs.measured(*event)
        assert 1 <= runs.update() <= max_k


# ---- the router's runs --------------------------------------------------------------------------


def router_topology(tasks: int) -> Topology:
    """src -> dst (shuffle), dst with `tasks` tasks."""
    return Topology(
        name="t",
        components=(
            Component(id="src", kind=SPOUT, command=("x",), outputs={"default": ("w",)}),
            Component(
                id="dst",
                kind=BOLT,
                command=("x",),
                outputs={},
                inputs=(Input("src", "default", Grouping("shuffle")),),
                parallelism=tasks,
            ),
        ),
    )


def runs_router(tasks: int, k: int) -> tuple[Router, list[int]]:
    """A router whose shuffle into dst's tasks (2, 3, ...) runs k tuples to a task."""
    runs = RunLength(64, BUDGET)
    runs.k = k
    ids = list(range(2, 2 + tasks))
    return Router(router_topology(tasks), {"src": [1], "dst": ids}, {"dst": runs}), ids


def test_runs_give_k_consecutive_tuples_to_a_task_then_move_on():
    router, ids = runs_router(4, 3)
    chosen = [router.targets("src", "default", [i])[0] for i in range(24)]
    for start in range(0, 24, 3):
        assert len(set(chosen[start : start + 3])) == 1
    assert [chosen[i] for i in range(0, 12, 3)] == sorted(set(chosen[:12]), key=chosen[:12].index)
    assert Counter(chosen) == {t: 6 for t in ids}


@given(tasks=st.integers(1, 20), k=st.integers(1, 40), rounds=st.integers(1, 4))
def test_every_task_gets_an_equal_share_over_k_times_n_tuples(tasks: int, k: int, rounds: int):
    router, ids = runs_router(tasks, k)
    seen = Counter(router.targets("src", "default", [i])[0] for i in range(k * tasks * rounds))
    assert seen == {t: k * rounds for t in ids}


def test_without_a_run_length_shuffle_is_round_robin():
    ids = [2, 3, 4]
    router = Router(router_topology(3), {"src": [1], "dst": ids})
    chosen = [router.targets("src", "default", [i])[0] for i in range(6)]
    assert chosen[:3] == chosen[3:] and sorted(chosen[:3]) == ids


# ---- the event loop measures its bolts ---------------------------------------------------------


class Loop:
    """A fake spout that emits `burst` tuples per `next`, and three fake bolt tasks the test
    answers; the fake clock moves only when the test says."""

    def __init__(self) -> None:
        self.clock = FakeClock()
        self.launcher = FakeLauncher()
        topology = spout_and_bolt(
            {"topology.subprocess.timeout.secs": 600, "topology.message.timeout.secs": 600},
            parallelism=3,
        )
        self.sup = Supervisor(topology, clock=self.clock, launcher=self.launcher)  # type: ignore[arg-type]
        self.sup.start()
        for child in self.launcher.children:
            self.step()
            assert type(child.received()[0]) is Handshake
            child.send(pid=child.pid)
        self.step()
        self.runs = self.sup.run_lengths["bolt"]
        self.serial = 0

    def step(self, n: int = 3) -> None:
        for _ in range(n):
            self.sup.step(max_wait=0)

    def bolts(self) -> list[Any]:
        return self.launcher.of("bolt")

    def emit(self, count: int) -> dict[Any, list[TupleMessage]]:
        """The spout emits `count` tracked tuples for one `next`; what each bolt task got."""
        spout = self.launcher.last("spout")
        for _ in range(1000):  # answer activate and acks (one at a time) until a `next`
            commands = [m for m in spout.received() if type(m) is SpoutCommand]
            if any(m.command == "next" for m in commands):
                break
            for _ in commands:
                spout.send(command="sync")
            self.step()
        else:
            raise AssertionError("the spout was never asked for tuples")
        for m in commands:
            if m.command == "next":
                for _ in range(count):
                    self.serial += 1
                    spout.send(command="emit", tuple=[f"w{self.serial}"], id=self.serial)
                count = 0
            spout.send(command="sync")
        self.step()
        got = {}
        for bolt in self.bolts():
            got[bolt] = [
                m for m in bolt.received() if type(m) is TupleMessage and m.stream != "__heartbeat"
            ]
        return got

    def ack(self, bolt: Any, tuples: list[TupleMessage]) -> None:
        for t in tuples:
            bolt.send(command="ack", id=t.id)
        self.step()

    def update(self) -> int:
        """One update of the run lengths later (host/runtime/supervisor.py, ADAPT_SECS): the
        run length."""
        self.clock.advance(ADAPT_SECS)
        self.step()
        return self.runs.k

    def close(self) -> None:
        for child in self.launcher.children:
            child.exit(0)
        self.sup.finish()


@pytest.fixture
def loop():  # type: ignore[no-untyped-def]
    made = Loop()
    yield made
    made.close()


def test_tasks_answering_each_write_in_one_read_get_longer_runs(loop: Loop):
    assert loop.runs.k == INITIAL_K
    lengths = []
    for _ in range(7):
        got = loop.emit(loop.runs.k * 3)
        # every task got one run, in one write, in order
        assert sorted(len(tuples) for tuples in got.values()) == [loop.runs.k] * 3
        for bolt, tuples in got.items():
            loop.ack(bolt, tuples)
        lengths.append(loop.update())
    assert lengths == [4, 8, 16, 32, 64, 128, 128]  # up to host.shuffle.run.max


def test_a_task_slow_over_one_write_shrinks_its_components_runs_at_once(loop: Loop):
    for _ in range(3):
        for bolt, tuples in loop.emit(loop.runs.k * 3).items():
            loop.ack(bolt, tuples)
        loop.update()
    assert loop.runs.k == 16
    got = loop.emit(16 * 3)
    bolts = [b for b, tuples in got.items() if tuples]
    slow = bolts[0]
    tuples = got[slow]
    assert len(tuples) == 16
    loop.ack(slow, tuples[:1])
    loop.clock.advance(0.075)  # 5 ms a tuple for the other 15
    loop.ack(slow, tuples[1:])
    for bolt in bolts[1:]:
        loop.ack(bolt, got[bolt])
    assert loop.update() == 1  # 4 ms / 5 ms: runs of one, Storm's round robin
    got = loop.emit(3)
    assert sorted(len(tuples) for tuples in got.values()) == [1, 1, 1]
