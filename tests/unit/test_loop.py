"""The event loop with fake children and the fake clock: crash and restart with back-off, hang
detection, a handshake never answered, backpressure, and the staged stop, in milliseconds and
without a process (tests/unit/fake_children.py). The same behaviour against real processes is the
integration tier's (tests/integration/test_supervisor.py, tests/chaos/)."""

from __future__ import annotations

import logging
import signal

import pytest

from host.runtime.lifecycle import State
from host.runtime.supervisor import Supervisor
from host.testing import FakeClock
from multilang.messages import Handshake, SpoutCommand, TupleMessage
from tests.unit.fake_children import FakeLauncher, spout_and_bolt

FAST = {
    "host.restart.backoff.initial.secs": 1,
    "host.restart.backoff.max.secs": 8,
    "topology.subprocess.timeout.secs": 5,
    "host.shutdown.grace.secs": 3,
}


class Run:
    """A Supervisor over fake children, stepped by hand."""

    def __init__(self, config: dict | None = None, **bolt: object) -> None:
        self.clock = FakeClock()
        self.launcher = FakeLauncher()
        self.sup = Supervisor(
            spout_and_bolt({**FAST, **(config or {})}, **bolt),
            clock=self.clock,
            launcher=self.launcher,
        )  # type: ignore[arg-type]
        self.sup.start()
        self.idle_spout = False  # answer every spout command with a bare sync

    def steps(self, n: int = 5) -> bool:
        alive = True
        for _ in range(n):
            alive = self.sup.step(max_wait=0)
            if not alive:
                break
            if self.idle_spout:
                spout = self.launcher.last("spout")
                for m in spout.received():
                    if type(m) is SpoutCommand:
                        spout.send(command="sync")
                        self.spout_commands.append(m)
        return alive

    spout_commands: list = []

    def advance(self, seconds: float) -> None:
        self.clock.advance(seconds)
        self.steps()

    def handshake(self, name: str) -> list:
        child = self.launcher.last(name)
        self.steps()
        first, *rest = child.received()
        assert type(first) is Handshake
        child.send(pid=child.pid)
        self.steps()
        return rest + child.received()

    def state(self, name: str) -> State:
        return next(t.state for t in self.sup.tasks.values() if t.link.cid == name)

    def task(self, name: str):  # type: ignore[no-untyped-def]
        return next(t for t in self.sup.tasks.values() if t.link.cid == name)

    def close(self) -> None:
        for child in self.launcher.children:
            child.exit(0)
        self.sup.finish()


@pytest.fixture
def run():  # type: ignore[no-untyped-def]
    runs: list[Run] = []

    def make(config: dict | None = None, **bolt: object) -> Run:
        runs.append(Run(config, **bolt))
        return runs[-1]

    yield make
    for r in runs:
        r.close()


def test_a_crashed_task_is_restarted_after_a_back_off_that_doubles(run, caplog):
    r = run()
    r.handshake("spout")
    r.handshake("bolt")
    assert r.state("bolt") is State.RUNNING
    r.launcher.last("bolt").say("Traceback: boom")
    r.launcher.last("bolt").exit(3)
    r.steps()
    assert r.state("bolt") is State.BACKOFF
    # the failure report (its stderr line is logged too, at INFO, when an earlier test in the
    # same process left the `host` logger at INFO: host/spark/command.py sets it)
    report = next(m for m in caplog.messages if m.startswith("bolt[2] pid=") and "exited" in m)
    assert "exit status 3" in report and "Traceback: boom" in report
    r.advance(0.9)
    assert len(r.launcher.of("bolt")) == 1 and r.state("bolt") is State.BACKOFF
    r.advance(0.2)  # 1 s back-off
    assert len(r.launcher.of("bolt")) == 2 and r.state("bolt") is State.STARTING
    r.handshake("bolt")
    r.launcher.last("bolt").exit(1)
    r.steps()
    r.advance(1.5)
    assert len(r.launcher.of("bolt")) == 2, "the second back-off is 2 s"
    r.advance(0.6)
    assert len(r.launcher.of("bolt")) == 3
    assert r.task("bolt").link.stats.restarts == 2


def test_too_many_failures_make_the_task_fatal_and_the_run_fail(run):
    r = run({"host.restart.max": 1})
    r.handshake("spout")
    for _ in range(2):
        r.handshake("bolt")
        r.launcher.last("bolt").exit(1)
        r.steps()
        r.advance(1.1)
    assert r.state("bolt") is State.FATAL
    assert r.sup.failure and "failed 2 times" in r.sup.failure
    assert r.sup.stop_reason == r.sup.failure


def test_a_bolt_silent_while_it_owes_an_ack_is_killed_and_its_tuples_fail(run, caplog):
    r = run()
    r.handshake("bolt")
    spout = r.launcher.last("spout")
    assert [m.command for m in r.handshake("spout")] == ["activate"]
    spout.send(command="sync")
    r.steps()
    assert [type(m) for m in spout.received()] == [SpoutCommand]  # a next
    spout.send(command="emit", tuple=["w"], id="m1", need_task_ids=False)
    spout.send(command="sync")
    r.steps()
    bolt = r.launcher.last("bolt")
    assert [m.values for m in bolt.received() if type(m) is TupleMessage] == [["w"]]
    r.spout_commands = []
    r.idle_spout = True
    r.advance(4.0)
    bolt.send(command="sync")  # answers the heartbeat, not the tuple: still owes the ack
    r.steps()
    r.advance(1.0)
    assert r.state("bolt") is State.RUNNING
    r.advance(5.0)
    assert r.state("bolt") is State.BACKOFF and r.state("spout") is State.RUNNING
    assert signal.SIGKILL in bolt.signals
    report = next(m for m in caplog.messages if m.startswith("bolt[2]"))
    assert "hung: silent for" in report and "killed by SIGKILL" in report
    assert "1 in-flight spout tuple(s) failed for replay" in report
    r.steps()
    fails = [m for m in r.spout_commands if m.command == "fail"]
    assert [m.id for m in fails] == ["m1"]


def test_a_handshake_never_answered_is_a_fault(run, caplog):
    r = run({"host.handshake.timeout.secs": 2})
    r.handshake("spout")
    r.advance(1.9)
    assert r.state("bolt") is State.STARTING
    r.advance(0.2)
    assert r.state("bolt") is State.BACKOFF
    assert any("no pid reply within 2s" in m for m in caplog.messages)


def test_a_full_bolt_pauses_its_spout_and_resumes_it(run):
    r = run({"host.bolt.max.in.flight": 1, "topology.shellbolt.max.pending": 2})
    r.handshake("bolt")
    r.handshake("spout")
    spout, bolt = r.launcher.last("spout"), r.launcher.last("bolt")
    spout.send(command="sync")  # activate
    r.steps()
    spout.received()
    for i in range(3):
        spout.send(command="emit", tuple=[f"w{i}"], id=f"m{i}", need_task_ids=False)
    spout.send(command="sync")
    r.steps()
    assert r.task("bolt").link.full and not r.task("spout").reading
    assert r.task("spout").link.paused and not r.task("spout").link.may_next()
    tuples = [m for m in bolt.received() if type(m) is TupleMessage]
    assert len(tuples) == 1
    bolt.send(command="ack", id=tuples[0].id)
    r.steps()
    assert not r.task("bolt").link.full and r.task("spout").reading


def test_a_stop_deactivates_drains_closes_stdin_and_escalates_to_signals(run):
    r = run()
    r.handshake("bolt")
    r.handshake("spout")
    spout, bolt = r.launcher.last("spout"), r.launcher.last("bolt")
    spout.send(command="sync")
    r.steps()
    spout.received()
    bolt.ignores_sigterm = True
    r.sup.request_stop("test")
    r.steps()
    assert r.sup.phase == "draining"
    spout.send(command="sync")  # for the next written before the stop
    r.steps()
    assert [m.command for m in spout.received() if type(m) is SpoutCommand] == ["deactivate"]
    spout.send(command="sync")
    r.steps()
    assert r.sup.phase == "stopping"
    assert spout.stdin_closed_by_host and bolt.stdin_closed_by_host
    spout.exit(0)  # our clients exit on EOF
    r.steps()
    assert r.state("spout") is State.STOPPED and r.state("bolt") is State.STOPPING
    r.advance(2.0)  # min(grace, 2 s) after stdin closed: SIGTERM, which it ignores
    assert bolt.signals == [signal.SIGTERM] and r.state("bolt") is State.STOPPING
    r.clock.advance(3.0)  # the grace: SIGKILL
    assert not r.steps(10)
    assert bolt.signals[:2] == [signal.SIGTERM, signal.SIGKILL]
    assert r.state("bolt") is State.STOPPED and r.sup.phase == "done"


def test_stderr_is_logged_under_the_task_name(run, caplog):
    caplog.set_level(logging.INFO)
    r = run()
    r.handshake("spout")
    r.launcher.last("spout").say("hello from the spout")
    r.steps()
    assert any(
        m.startswith("spout[3] pid=") and m.endswith("hello from the spout")
        for m in caplog.messages
    )
