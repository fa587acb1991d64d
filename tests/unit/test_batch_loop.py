"""The batch layer in the event loop, over fake children and the fake clock
(tests/unit/fake_children.py): the exchange of docs/transactional.md §4 message by message, a
timeout's abort and replay, a death's, and the commit order with several attempts open. The same
through real processes: tests/integration/test_transactional.py and the chaos tier."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from host.runtime.supervisor import Supervisor
from host.testing import FakeClock
from host.topology.model import BOLT, SPOUT, Component, Grouping, Input, Topology
from tests.unit.fake_children import FakeChild, FakeLauncher


def topology(state: Path, pending: int = 1, timeout: int = 30) -> Topology:
    return Topology(
        name="tx",
        components=(
            Component("spout", SPOUT, ("fake", "spout"), {"default": ("n",)}, batch="spout"),
            Component(
                "bolt",
                BOLT,
                ("fake", "bolt"),
                {"default": ("txid", "sum")},
                (Input("spout", "default", Grouping("shuffle")),),
                batch="bolt",
            ),
            Component(
                "sink",
                BOLT,
                ("fake", "sink"),
                {},
                (Input("bolt", "default", Grouping("global")),),
                batch="committer",
            ),
        ),
        config={
            "topology.transactional.id": "t",
            "host.state.dir": str(state),
            "topology.max.spout.pending": pending,
            "topology.message.timeout.secs": timeout,
            "topology.subprocess.timeout.secs": 600,
            "host.restart.backoff.initial.secs": 1,
        },
    )


def frames(child: FakeChild) -> list[dict[str, Any]]:
    """What the host wrote to a fake child since the last call, as parsed JSON."""
    data = b""
    while True:
        try:
            chunk = os.read(child._stdin_r, 1 << 16)
        except BlockingIOError:
            break
        if not chunk:
            break
        data += chunk
    return [json.loads(f) for f in data.split(b"\nend\n") if f.strip()]


class Run:
    def __init__(self, state: Path, **kw: Any) -> None:
        self.clock = FakeClock()
        self.launcher = FakeLauncher()
        self.sup = Supervisor(topology(state, **kw), clock=self.clock, launcher=self.launcher)
        self.sup.start()
        self.steps()
        for name in ("spout", "bolt", "sink"):
            self.start(name)

    def start(self, name: str, ext: tuple[str, ...] = ("batch/1",)) -> dict[str, Any]:
        child = self.launcher.last(name)
        handshake = frames(child)[0]
        child.send(pid=child.pid, ext=list(ext))
        self.steps()
        return handshake

    def steps(self, n: int = 4) -> None:
        for _ in range(n):
            self.sup.step(max_wait=0)

    def child(self, name: str) -> FakeChild:
        return self.launcher.last(name)

    def answer_init(self, meta: Any) -> dict[str, Any]:
        spout = self.child("spout")
        (init,) = [f for f in frames(spout)]
        assert init["command"] == "batch_init"
        spout.send(command="batch_meta", meta=meta)
        spout.send(command="sync")
        self.steps()
        return init

    def emit_batch(self, values: list[int]) -> dict[str, Any]:
        spout = self.child("spout")
        got = frames(spout)
        emit = next(f for f in got if f["command"] == "batch_emit")
        for v in values:
            spout.send(command="emit", tuple=[v], need_task_ids=False)
        spout.send(command="sync")
        self.steps()
        return emit

    @property
    def layer(self):  # type: ignore[no-untyped-def]
        assert self.sup.path.batches is not None
        return self.sup.path.batches

    def close(self) -> None:
        for c in self.launcher.children:
            c.exit(0)
        self.sup.finish()


@pytest.fixture
def run(tmp_path: Path):  # type: ignore[no-untyped-def]
    runs: list[Run] = []

    def make(**kw: Any) -> Run:
        r = Run(tmp_path / "state", **kw)
        runs.append(r)
        return r

    yield make
    for r in runs:
        r.close()


def test_one_batch_message_by_message(run) -> None:  # type: ignore[no-untyped-def]
    r = run()
    handshake = frames(r.child("bolt"))  # already read by `start`: nothing more yet
    assert handshake == []
    init = r.answer_init({"from": 0, "to": 2})
    assert init == {"command": "batch_init", "id": "", "txid": 1, "prev_meta": None}
    emit = r.emit_batch([1, 2])
    assert emit["tx"] == {"txid": 1, "attempt": 1} and emit["meta"] == {"from": 0, "to": 2}
    assert (emit["task_meta"], emit["prev_task_meta"], emit["replay"]) == (None, None, False)
    bolt, sink = r.child("bolt"), r.child("sink")
    tuples = frames(bolt)
    assert [t["tuple"] for t in tuples] == [[1], [2]]
    assert all(t["tx"] == {"txid": 1, "attempt": 1} for t in tuples)
    for t in tuples:
        bolt.send(command="ack", id=t["id"])
    r.steps()
    (finish,) = frames(bolt)
    assert finish["stream"] == "__heartbeat" and finish["task"] == -1
    assert finish["batch"] == {"op": "finish", "txid": 1, "attempt": 1, "commit": False}
    bolt.send(command="emit", tuple=[1, 3], anchors=[finish["id"]], need_task_ids=False)
    bolt.send(command="ack", id=finish["id"])
    r.steps()
    (partial,) = frames(sink)
    assert partial["tuple"] == [1, 3] and partial["tx"] == {"txid": 1, "attempt": 1}
    sink.send(command="ack", id=partial["id"])
    r.steps()
    (commit,) = frames(sink)  # processed, and the lowest: the commit phase begins
    assert commit["batch"] == {"op": "finish", "txid": 1, "attempt": 1, "commit": True}
    assert r.layer.coordinator.committed_txid == 0
    assert frames(r.child("spout")) == []  # the spout hears of it once the sink has it
    sink.send(command="ack", id=commit["id"])
    r.steps()
    spout_commit = frames(r.child("spout"))
    assert spout_commit == [{"command": "batch_commit", "id": "", "tx": {"txid": 1, "attempt": 1}}]
    r.child("spout").send(command="sync")
    r.steps()
    assert r.layer.coordinator.committed_txid == 1
    init2 = frames(r.child("spout"))[0]
    assert init2 == {
        "command": "batch_init",
        "id": "",
        "txid": 2,
        "prev_meta": {"from": 0, "to": 2},
    }


def test_a_timed_out_attempt_is_aborted_and_replayed_with_its_stored_metadata(run) -> None:  # type: ignore[no-untyped-def]
    r = run(timeout=5)
    r.answer_init({"batch": "A"})
    r.emit_batch([7])
    bolt = r.child("bolt")
    (tup,) = frames(bolt)  # never acked: the attempt cannot finish
    r.clock.advance(7)
    r.steps()
    aborts = [f for f in frames(bolt) if f.get("batch", {}).get("op") == "abort"]
    assert aborts and aborts[0]["batch"] == {"op": "abort", "txid": 1, "attempt": 1}
    assert "timed out" in (r.layer.figures.last_abort or "")
    again = r.emit_batch([7])  # the replay: same txid, next attempt, the stored metadata
    assert again["tx"] == {"txid": 1, "attempt": 2} and again["meta"] == {"batch": "A"}
    assert again["replay"] is True
    bolt.send(command="ack", id=tup["id"])  # the old attempt's late ack: ignored
    r.steps()
    (replayed,) = [f for f in frames(bolt) if "tx" in f]
    assert replayed["tx"] == {"txid": 1, "attempt": 2}


def test_a_dead_task_fails_the_attempts_it_held_and_the_later_ones(run) -> None:  # type: ignore[no-untyped-def]
    r = run(pending=2)
    r.answer_init({"b": 1})
    r.emit_batch([1])
    r.answer_init({"b": 2})
    r.emit_batch([2])
    assert sorted(r.layer.open) == [1, 2]
    r.child("bolt").exit(137)
    r.steps()
    assert r.layer.open == {} or all(a.number == 2 for a in r.layer.open.values())
    assert "died" in (r.layer.figures.last_abort or "")
    r.clock.advance(1.5)  # the restart's back-off
    r.steps()
    r.start("bolt")
    first = r.emit_batch([1])
    assert first["tx"] == {"txid": 1, "attempt": 2} and first["meta"] == {"b": 1}


def test_commits_go_in_txid_order_when_a_later_attempt_is_processed_first(run) -> None:  # type: ignore[no-untyped-def]
    r = run(pending=2)
    r.answer_init({"b": 1})
    r.emit_batch([1])
    r.answer_init({"b": 2})
    r.emit_batch([2])
    bolt, sink = r.child("bolt"), r.child("sink")
    first, second = frames(bolt)
    bolt.send(command="ack", id=second["id"])  # txid 2 completes first
    r.steps()
    (finish2,) = frames(bolt)
    assert finish2["batch"]["txid"] == 2
    bolt.send(command="ack", id=finish2["id"])
    r.steps()
    assert frames(sink) == []  # nothing reaches the committer: txid 2 emitted nothing at finish
    assert (
        r.layer.open[2].phase.value == "processed" and r.layer.open[1].phase.value == "processing"
    )
    bolt.send(command="ack", id=first["id"])
    r.steps()
    (finish1,) = frames(bolt)
    bolt.send(command="ack", id=finish1["id"])
    r.steps()
    (commit1,) = frames(sink)
    assert commit1["batch"]["txid"] == 1 and commit1["batch"]["commit"] is True
    sink.send(command="ack", id=commit1["id"])
    r.steps()
    r.child("spout").send(command="sync")  # batch_commit of 1
    r.steps()
    (commit2,) = frames(sink)  # only now: strict txid order
    assert commit2["batch"]["txid"] == 2


def test_a_batch_component_without_batch_1_stops_the_run(run) -> None:  # type: ignore[no-untyped-def]
    r = Run.__new__(Run)
    r.clock = FakeClock()
    r.launcher = FakeLauncher()
    state = Path(os.environ.get("TMPDIR", "/tmp")) / f"batch-loop-{os.getpid()}"
    r.sup = Supervisor(topology(state), clock=r.clock, launcher=r.launcher)
    r.sup.start()
    r.steps()
    r.start("spout")
    r.start("bolt", ext=())
    assert r.sup.failure is not None and "bolt[" in r.sup.failure and "batch/1" in r.sup.failure
    r.close()


def test_a_dead_spout_task_fails_its_attempt_and_its_successor_replays_it(run) -> None:  # type: ignore[no-untyped-def]
    r = run()
    r.answer_init({"b": 1})
    spout = r.child("spout")
    emit = frames(spout)[0]
    assert emit["command"] == "batch_emit"
    spout.send(command="emit", tuple=[1], need_task_ids=False)  # half a batch, then it dies
    spout.exit(137)
    r.steps()
    assert "died" in (r.layer.figures.last_abort or "")
    r.clock.advance(1.5)  # the restart's back-off
    r.steps()
    r.start("spout")
    again = frames(r.child("spout"))
    assert again[0]["command"] == "batch_emit"
    assert again[0]["tx"] == {"txid": 1, "attempt": 2} and again[0]["meta"] == {"b": 1}
    # the half batch reached the bolt before the death; then the bolt was told to drop it
    got = frames(r.child("bolt"))
    assert [f["tx"] for f in got if "tx" in f] == [{"txid": 1, "attempt": 1}]
    assert [f["batch"] for f in got if "batch" in f] == [{"op": "abort", "txid": 1, "attempt": 1}]
