"""Spout commands: one at a time (Storm's `ShellSpout`) unless the library announces `pipeline/1`
in its pid reply or the component's `pipelining` switch says otherwise (docs/protocol.md, "Protocol
extensions"). Played against the real event loop with fake children and the fake clock."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from host.runtime.supervisor import Supervisor
from host.testing import FakeClock
from host.topology.model import Component, Topology
from multilang.messages import PIPELINE_EXT, Handshake, SpoutCommand, TupleMessage
from tests.unit.fake_children import FakeChild, FakeLauncher, spout_and_bolt

FAST = {"host.shutdown.grace.secs": 3, "topology.subprocess.timeout.secs": 50}


class SpoutRun:
    """A Supervisor over fake children; the test plays the spout and the bolt, and this keeps
    count of the spout commands written and not yet answered."""

    def __init__(self, config: dict | None = None, pipelining: bool | None = None) -> None:
        topology = spout_and_bolt({**FAST, **(config or {})})
        spout = topology.component("spout")
        topology = Topology(
            topology.name,
            tuple(
                Component(**{**c.__dict__, "pipelining": pipelining}) if c is spout else c
                for c in topology.components
            ),
            topology.config,
        )
        self.clock = FakeClock()
        self.launcher = FakeLauncher()
        self.sup = Supervisor(topology, clock=self.clock, launcher=self.launcher)  # type: ignore[arg-type]
        self.sup.start()
        self.commands: list[SpoutCommand] = []  # every command the spout was written, in order
        self.syncs = 0  # syncs the spout wrote
        self.most_outstanding = 0

    def steps(self, n: int = 5) -> None:
        for _ in range(n):
            self.sup.step(max_wait=0)
            self.take()

    def take(self) -> list[SpoutCommand]:
        new = [m for m in self.spout.received() if type(m) is SpoutCommand]
        self.commands.extend(new)
        self.most_outstanding = max(self.most_outstanding, self.outstanding)
        return new

    @property
    def outstanding(self) -> int:
        return len(self.commands) - self.syncs

    @property
    def spout(self) -> FakeChild:
        return self.launcher.last("spout")

    @property
    def bolt(self) -> FakeChild:
        return self.launcher.last("bolt")

    def start(self, ext: tuple[str, ...] = ()) -> None:
        for name in ("bolt", "spout"):
            child = self.launcher.last(name)
            self.sup.step(max_wait=0)
            assert type(child.received()[0]) is Handshake
            child.send(pid=child.pid, **({"ext": list(ext)} if ext else {}))
        self.steps()

    def sync(self) -> None:
        self.syncs += 1
        self.spout.send(command="sync")

    def emit(self, msg_id: str) -> None:
        self.spout.send(command="emit", tuple=[msg_id], id=msg_id, need_task_ids=False)

    def ack_all_at_bolt(self) -> int:
        tuples = [m for m in self.bolt.received() if type(m) is TupleMessage]
        for t in tuples:
            self.bolt.send(command="ack", id=t.id)
        return len(tuples)

    def close(self) -> None:
        for child in self.launcher.children:
            child.exit(0)
        self.sup.finish()


@pytest.fixture
def make():  # type: ignore[no-untyped-def]
    runs: list[SpoutRun] = []

    def new(config: dict | None = None, pipelining: bool | None = None) -> SpoutRun:
        runs.append(SpoutRun(config, pipelining))
        return runs[-1]

    yield new
    for r in runs:
        r.close()


def test_a_spout_that_announces_nothing_gets_one_command_at_a_time(make):
    r = make()
    r.start()
    assert [c.command for c in r.commands] == ["activate"]
    r.sync()
    r.steps()
    assert [c.command for c in r.commands[1:]] == ["next"]
    r.emit("m1")
    r.emit("m2")
    r.steps()
    assert r.ack_all_at_bolt() == 2
    r.steps()
    # both trees are complete, but the `next` is not answered: nothing more is written
    assert [c.command for c in r.commands[1:]] == ["next"] and r.outstanding == 1
    r.sync()
    r.steps()
    assert [c.command for c in r.commands[2:]] == ["ack"]  # one ack, alone
    r.sync()
    r.steps()
    assert [c.command for c in r.commands[3:]] == ["ack"]
    r.sync()
    r.steps()
    assert [c.command for c in r.commands[4:]] == ["next"]
    assert r.most_outstanding == 1


def test_a_spout_that_announces_pipelining_is_written_ahead(make):
    r = make({"host.spout.next.depth": 4})
    r.start(ext=(PIPELINE_EXT,))
    r.sync()  # activate
    r.steps()
    assert [c.command for c in r.commands[1:]] == ["next"]  # none ahead until one has emitted
    r.emit("m1")
    r.sync()
    r.steps()
    assert [c.command for c in r.commands[2:]] == ["next"] * 4
    assert r.outstanding == 4


def test_an_idle_spout_is_asked_one_next_at_a_time_until_it_emits_again(make):
    """Once a whole round of `next`s came back empty, one is in flight per wait, not a round of
    them; the first that emits brings the whole depth back (host/runtime/idle_backoff.py)."""
    r = make({"host.spout.next.depth": 4})
    r.start(ext=(PIPELINE_EXT,))
    r.sync()  # activate
    r.steps()
    r.emit("m1")
    r.sync()
    r.steps()
    assert r.outstanding == 4
    for _ in range(4):  # the round after m1 comes back empty: a paced spout's, asked again
        r.sync()
    r.steps()
    assert r.outstanding == 0  # waiting
    r.clock.advance(1.0)  # past any wait
    r.steps()
    assert r.outstanding == 4  # a whole round again
    for _ in range(4):  # that one empty too: the spout is idle
        r.sync()
    for _ in range(3):  # one `next` per wait
        r.steps()
        r.clock.advance(1.0)
        r.steps()
        assert r.outstanding == 1
        r.sync()
    r.steps()
    r.clock.advance(1.0)
    r.steps()
    assert r.outstanding == 1
    r.emit("m2")
    r.sync()
    r.steps()
    assert r.outstanding == 4  # the whole depth at once


@pytest.mark.parametrize(
    ("switch", "ext", "ahead"),
    [(False, (PIPELINE_EXT,), False), (True, (), True), (None, ("batch/1",), False)],
)
def test_the_component_switch_overrides_what_the_library_announces(make, switch, ext, ahead):
    r = make({"host.spout.next.depth": 4}, pipelining=switch)
    r.start(ext=ext)
    r.sync()
    r.steps()
    r.emit("m1")
    r.sync()
    r.steps()
    assert (r.outstanding > 1) is ahead


def test_the_topology_key_sets_lock_step_for_a_spout_without_a_switch(make):
    r = make({"host.spout.next.depth": 4, "host.spout.pipelining": False})
    r.start(ext=(PIPELINE_EXT,))
    r.sync()
    r.steps()
    r.emit("m1")
    r.sync()
    r.steps()
    assert r.outstanding == 1


def test_on_stop_no_next_is_written_and_deactivate_follows_the_answer_at_once(make):
    r = make()
    r.start()
    r.sync()  # activate
    r.steps()
    assert [c.command for c in r.commands[1:]] == ["next"]
    r.sup.request_stop("test")
    r.steps()
    assert r.sup.phase == "draining" and len(r.commands) == 2  # nothing after the stop began
    r.emit("m1")
    r.sync()  # the `next` written before the stop is answered
    r.steps()
    assert [c.command for c in r.commands[2:]] == ["deactivate"]


def test_a_restarted_pipelining_spout_is_in_lock_step_until_its_new_pid_reply(make):
    r = make({"host.spout.next.depth": 4, "host.restart.backoff.initial.secs": 0.5})
    r.start(ext=(PIPELINE_EXT,))
    link = r.sup.tasks[next(t for t in r.sup.tasks if r.sup.tasks[t].link.cid == "spout")].link
    assert link.pipelined
    r.spout.exit(1)
    r.steps()
    r.clock.advance(1)
    r.steps()
    assert len(r.launcher.of("spout")) == 2 and not link.pipelined
    r.syncs = len(r.commands)  # the first process's commands died with it
    r.spout.send(pid=r.spout.pid)  # the new one announces nothing
    r.steps()
    assert not link.pipelined and r.commands[-1].command == "activate"


# ---- the invariant, whatever the spout and the bolt do -------------------------------------------

ACTIONS = st.lists(st.sampled_from(["emit", "sync", "ack", "fail", "step"]), max_size=60)


@settings(max_examples=60, deadline=None)
@given(actions=ACTIONS, max_pending=st.sampled_from([None, 1, 3]))
def test_lock_step_never_has_two_commands_outstanding(actions, max_pending):
    config = {"topology.max.spout.pending": max_pending} if max_pending else {}
    r = SpoutRun(config)
    try:
        r.start()
        emitted = 0
        for action in actions:
            if action == "emit" and r.outstanding and r.commands[-1].command == "next":
                emitted += 1
                r.emit(f"m{emitted}")
            elif action == "sync" and r.outstanding:
                r.sync()
            elif action in ("ack", "fail"):
                for t in [m for m in r.bolt.received() if type(m) is TupleMessage]:
                    r.bolt.send(command=action, id=t.id)
            r.steps(2)
            assert r.outstanding <= 1
        assert r.most_outstanding <= 1
    finally:
        r.close()
