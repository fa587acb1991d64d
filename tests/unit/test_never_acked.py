"""A bolt that never acks does not stop the flow (docs/protocol.md §4.5): once its in-flight
bound is reached, the oldest tuples whose ack can no longer change anything are forgotten and
counted as `never_acked`. The event loop over fake children and the fake clock
(tests/unit/fake_children.py); the same against real processes is
tests/integration/test_never_acking_bolt.py."""

from __future__ import annotations

import dataclasses
import logging
from typing import Any

import pytest

from host.observe.component_table import component_table
from host.observe.render import plain_line, summary_lines
from host.observe.view import Rates
from host.runtime.lifecycle import State
from host.runtime.supervisor import Supervisor
from host.testing import FakeClock
from multilang.messages import Handshake, SpoutCommand, TupleMessage
from tests.unit.fake_children import FakeChild, FakeLauncher, spout_and_bolt

BOUND = 3  # host.bolt.max.in.flight
QUEUE = 2  # topology.shellbolt.max.pending
TIMEOUT = 2  # topology.message.timeout.secs: spout tuples time out 2 to 3 s after their emit


class Run:
    """A Supervisor over a fake spout and a fake bolt, stepped by hand. The test plays the bolt;
    the spout is played here: each `next` is answered with the next tuple of `to_emit` (with the
    message id given, or none), every command with a `sync`."""

    def __init__(self, config: dict | None = None) -> None:
        self.clock = FakeClock()
        self.launcher = FakeLauncher()
        self.sup = Supervisor(
            spout_and_bolt(
                {
                    "host.bolt.max.in.flight": BOUND,
                    "topology.shellbolt.max.pending": QUEUE,
                    "topology.message.timeout.secs": TIMEOUT,
                    "topology.subprocess.timeout.secs": 60,
                    **(config or {}),
                }
            ),
            clock=self.clock,
            launcher=self.launcher,
        )  # type: ignore[arg-type]
        self.sup.start()
        self.to_emit: list[tuple[list, Any]] = []  # (values, message id or None)
        self.spout_got: list[SpoutCommand] = []  # every command the spout was sent
        self.unanswered: list[SpoutCommand] = []
        self.emits_per_play: int | None = None  # at most this many emits per turn
        self.bolt_got: list[TupleMessage] = []
        # the bolt answers heartbeats (in order, once it has read what came before them); while
        # False, it has not got to them yet: they are answered when it is True again
        self.answer_heartbeats = True
        self.heartbeats = 0  # heartbeats the bolt was sent
        self.owed_syncs = 0
        self.playing = False
        for name in ("bolt", "spout"):
            child = self.launcher.last(name)
            self.steps()
            assert type(child.received()[0]) is Handshake
            child.send(pid=child.pid)
            self.steps()
        self.playing = True

    @property
    def spout(self) -> FakeChild:
        return self.launcher.last("spout")

    @property
    def bolt(self) -> FakeChild:
        return self.launcher.last("bolt")

    def link(self, name: str) -> Any:
        return next(t.link for t in self.sup.tasks.values() if t.link.cid == name)

    def state(self, name: str) -> State:
        return next(t.state for t in self.sup.tasks.values() if t.link.cid == name)

    def steps(self, n: int = 6, tick: float = 0.0) -> None:
        for _ in range(n):
            self.clock.advance(tick)
            self.sup.step(max_wait=0)
            if self.playing:
                self._play_spout()
                self._play_bolt()

    def advance(self, seconds: float, by: float = 0.5) -> None:
        """Move the clock on in small steps, so that each housekeeping round runs."""
        left = seconds
        while left > 1e-9:
            step = min(by, left)
            self.clock.advance(step)
            left -= step
            self.steps()

    def _play_spout(self) -> None:
        """Answers the commands in order; a `next` waits (unanswered) until there is a tuple
        to emit, so that the spout never backs off as an idle one would."""
        spout = self.launcher.of("spout")
        if not spout:
            return
        child = spout[-1]
        commands = [m for m in child.received() if type(m) is SpoutCommand]
        self.spout_got += commands
        self.unanswered += commands
        emits = 0
        while self.unanswered:
            m = self.unanswered[0]
            if m.command == "next":
                if not self.to_emit or emits == self.emits_per_play:
                    return
                emits += 1
                values, msg_id = self.to_emit.pop(0)
                message: dict[str, Any] = {"command": "emit", "tuple": values}
                if msg_id is not None:
                    message["id"] = msg_id
                child.send(**message, need_task_ids=False)
            self.unanswered.pop(0)
            child.send(command="sync")

    def _play_bolt(self) -> None:
        for m in self.bolt.received():
            if type(m) is not TupleMessage:
                continue
            if m.stream == "__heartbeat":
                self.heartbeats += 1
                self.owed_syncs += 1
            else:
                self.bolt_got.append(m)
        if self.answer_heartbeats:
            for _ in range(self.owed_syncs):
                self.bolt.send(command="sync")
            self.owed_syncs = 0

    def emit(self, n: int, tracked: bool, first: int = 0, tick: float = 0.0) -> None:
        """Queue n tuples for the spout and step until it has emitted all it may (a paused spout
        gets no `next`), and the host has routed them; the clock moves `tick` a step."""
        self.to_emit += [([f"w{i}"], f"m{i}" if tracked else None) for i in range(first, first + n)]
        left = -1
        for _ in range(500):
            if len(self.to_emit) == left:
                break
            left = len(self.to_emit)
            self.steps(4, tick)

    def close(self) -> None:
        for child in self.launcher.children:
            child.exit(0)
        self.sup.finish()


@pytest.fixture
def run():  # type: ignore[no-untyped-def]
    runs: list[Run] = []

    def make(config: dict | None = None) -> Run:
        runs.append(Run(config))
        return runs[-1]

    yield make
    for r in runs:
        r.close()


def test_a_full_bolt_waits_while_its_spout_tuples_are_pending(run):
    """Live spout tuples are real backpressure: nothing is forgotten before they time out."""
    r = run()
    r.emit(10, tracked=True)
    bolt = r.link("bolt")
    assert len(r.bolt_got) == BOUND and len(bolt.in_flight) == BOUND
    assert bolt.full and r.link("spout").paused
    r.advance(1.5)  # heartbeats answered, nothing acked, no spout tuple timed out yet
    assert len(r.bolt_got) == BOUND and bolt.stats.never_acked == 0
    assert not any(m.command == "fail" for m in r.spout_got)


def test_tuples_whose_spout_tuples_timed_out_are_forgotten_and_the_flow_goes_on(run, caplog):
    r = run()
    r.emit(BOUND + QUEUE + 5, tracked=True)
    bolt = r.link("bolt")
    assert len(r.bolt_got) == BOUND and bolt.full
    first = [m.id for m in r.bolt_got]
    r.advance(3.5)  # past the timeout: the housekeeping round after it makes room
    timed_out = [m.id for m in r.spout_got if m.command == "fail"]
    assert {"m0", "m1", "m2"} <= set(timed_out)
    assert bolt.stats.never_acked >= BOUND
    assert len(r.bolt_got) > BOUND, "the bolt got tuples again"
    assert all(tid not in bolt.in_flight for tid in map(int, first))
    assert len(bolt.in_flight) <= BOUND
    assert r.link("spout").stats.emitted > BOUND + QUEUE, "the spout was asked again"
    warnings = [rec.getMessage() for rec in caplog.records if rec.levelno == logging.WARNING]
    assert len([w for w in warnings if "never acked" in w]) == 1
    (warning,) = [w for w in warnings if "never acked" in w]
    assert "bolt[2]" in warning and "timed out" in warning and "does it ack" in warning
    logged = [e["message"] for e in r.sup.snapshot()["recent_logs"] if e["level"] == "WARNING"]
    assert any("never acked" in line for line in logged), "shown in the live view and web UI"

    # a late answer to a forgotten tuple is not a protocol error: ack, fail, anchored emit
    r.bolt.send(command="emit", anchors=[first[0]], tuple=["late"], need_task_ids=False)
    r.bolt.send(command="ack", id=first[0])
    r.bolt.send(command="fail", id=first[1])
    r.steps()
    assert r.state("bolt") is State.RUNNING and bolt.stats.errors == 0
    assert bolt.stats.acked == 1 and bolt.stats.failed == 1

    # more timeouts: still one warning
    r.emit(20, tracked=True, first=100)
    r.advance(7)
    assert bolt.stats.never_acked > BOUND + QUEUE
    warnings = [rec.getMessage() for rec in caplog.records if "never acked" in rec.getMessage()]
    assert len(warnings) == 1


def test_the_snapshot_counts_never_acked_tuples_per_bolt_and_task(run):
    r = run()
    r.emit(BOUND + QUEUE, tracked=True)
    r.advance(3.5)
    snap = r.sup.snapshot()
    bolt, spout = snap["components"]["bolt"], snap["components"]["spout"]
    assert bolt["never_acked"] == r.link("bolt").stats.never_acked == QUEUE
    assert bolt["tasks_detail"][0]["never_acked"] == bolt["never_acked"]
    assert "never_acked" not in spout and "never_acked" not in spout["tasks_detail"][0]
    table = component_table(snap).renderables[1].plain  # type: ignore[attr-defined]
    assert "never acked" in table
    assert f"never_acked={bolt['never_acked']}" in plain_line(snap, Rates())
    assert any(f"never_acked={bolt['never_acked']}" in line for line in summary_lines(snap))


def test_untracked_tuples_the_bolt_read_past_without_acking_are_forgotten(run):
    r = run()
    r.answer_heartbeats = False  # it has not got to them yet
    r.emit(BOUND + QUEUE, tracked=False)
    bolt = r.link("bolt")
    assert len(r.bolt_got) == BOUND and bolt.full
    assert r.heartbeats == 1, "a probe: a heartbeat written after the tuples in flight"
    r.advance(1.0)  # not a second of silence: it may still be reading them
    assert bolt.stats.never_acked == 0 and len(r.bolt_got) == BOUND
    r.answer_heartbeats = True  # it has read past them, and acked nothing
    r.steps()
    assert bolt.stats.never_acked == QUEUE and len(r.bolt_got) == BOUND + QUEUE
    assert not bolt.full
    # it still acks nothing: what comes next goes on as it comes, a probe a bound's worth
    r.emit(30, tracked=False, first=100, tick=0.001)
    assert len(r.bolt_got) == BOUND + QUEUE + 30
    assert bolt.stats.never_acked == QUEUE + 30 and len(bolt.in_flight) == BOUND
    assert r.clock() < 1000 + TIMEOUT, "neither the timeout nor a second of silence was needed"


def test_untracked_tuples_are_forgotten_after_the_timeout_without_heartbeats(run):
    """A component that gets no heartbeats (`heartbeats: false`) cannot say what it read: a
    tuple is forgotten once the bolt has acked nothing for the message timeout."""
    r = run()
    bolt = r.link("bolt")
    bolt.component = dataclasses.replace(bolt.component, heartbeats=False)
    r.emit(BOUND + QUEUE, tracked=False)
    r.advance(TIMEOUT - 0.5)
    assert bolt.stats.never_acked == 0 and r.heartbeats == 0
    r.advance(1.0)
    assert bolt.stats.never_acked == QUEUE and not bolt.full


def test_a_slow_bolt_that_acks_keeps_its_bound_for_untracked_tuples(run):
    """Not tracked is not enough: a bolt that answers within the timeout is waited for."""
    r = run({"topology.message.timeout.secs": 10})
    r.emit(40, tracked=False)
    bolt = r.link("bolt")
    for _ in range(12):  # one ack a second, oldest first
        assert len(bolt.in_flight) == BOUND and bolt.full
        r.bolt.send(command="ack", id=r.bolt_got[bolt.stats.acked].id)
        r.advance(1.0)
    assert bolt.stats.never_acked == 0 and bolt.stats.acked == 12
    assert len(r.bolt_got) == BOUND + 12


def test_nothing_is_forgotten_while_the_bolt_does_not_read_its_stdin(run):
    """Forgetting must not pile writes up in the host: with the pipe full it waits, and the
    pipe draining starts it again (no ack needed)."""
    r = run()
    big = "x" * 25_000  # three tuples fill a pipe (64 KiB)
    r.emits_per_play = 1  # so that the spout's own pipe never fills
    r.to_emit += [([f"{big}{i}"], None) for i in range(BOUND + QUEUE)]
    for _ in range(12):  # the test's bolt reads nothing
        r.sup.step(max_wait=0)
        r._play_spout()
    bolt = r.link("bolt")
    assert len(bolt.in_flight) == BOUND and bolt.out_pending and bolt.full
    r.clock.advance(TIMEOUT + 0.5)
    for _ in range(12):
        r.sup.step(max_wait=0)
        r._play_spout()
    assert bolt.stats.never_acked == 0, "the pipe is full: nothing is forgotten"
    r.steps(20)  # it reads: the pipe drains, the rest is written
    assert bolt.stats.never_acked == QUEUE
    assert len(r.bolt_got) == BOUND + QUEUE and not bolt.full


def test_a_bolt_idle_longer_than_the_timeout_is_not_taken_for_one_that_does_not_ack(run):
    """Silence counts only while it has tuples to answer: a burst after a quiet spell waits."""
    r = run()
    r.emit(1, tracked=False)
    r.bolt.send(command="ack", id=r.bolt_got[0].id)
    r.steps()
    bolt = r.link("bolt")
    assert not bolt.in_flight
    r.advance(TIMEOUT + 1)  # nothing to do, for longer than the timeout
    r.answer_heartbeats = False  # slow: it answers heartbeats once it has got to them
    r.emit(BOUND + QUEUE, tracked=False, first=1)
    assert len(bolt.in_flight) == BOUND and bolt.full
    for _ in range(3):  # it acks, slowly, in order
        r.advance(0.5)
        r.bolt.send(command="ack", id=r.bolt_got[bolt.stats.acked].id)
    r.answer_heartbeats = True
    r.steps()
    assert bolt.stats.never_acked == 0 and bolt.stats.acked == 4
