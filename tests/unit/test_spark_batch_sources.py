"""The batch spouts of a Spark query, without Spark or Kafka (host/spark/batch_sources.py,
batch_opener.py `source_root`, staged_spouts.py; docs/spark.md §4.9): every Kafka spout mapped onto the
transactional Kafka spout, one batch spout's state in the state directory, several spouts' each
in a directory of its own, kept in step with the state directory's txids, and the stager opening
each txid with every one of them."""

from __future__ import annotations

import dataclasses
import json
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from host.batch.store import BatchStore
from host.errors import TopologyError
from host.spark.batch_opener import source_root
from host.spark.batch_sources import BatchStates, with_kafka_as_batch_spouts
from host.spark.plan import DRIVER_SPOUT, TRANSACTIONAL_SOURCE, Stage, plan
from host.spark.source import currtx, meta_record
from host.spark.staged_spouts import StagedSpouts
from host.topology.model import BOLT, SPOUT, Component, Grouping, Input, Topology

KAFKA = ("python", "-m", "components.kafka_spout")
STORM_KAFKA = ("python", "-m", "components.storm_builtins.storm_kafka_spout")


def kafka(id: str, topic: str) -> Component:
    config = {"kafka.spout.bootstrap.servers": "127.0.0.1:9", "kafka.spout.topics": [topic]}
    outputs = {"default": ("topic", "partition", "offset", "key", "value")}
    return Component(id, SPOUT, KAFKA, outputs=outputs, config=config, parallelism=2)


def storm_kafka(id: str) -> Component:
    prefix = "kafka.spoutconfig."
    config = {
        prefix + "hosts.brokerZkStr": "127.0.0.1:2181",
        prefix + "topic": "lines",
        prefix + "zkRoot": "/kafka",
        prefix + "id": "reader",
    }
    return Component(id, SPOUT, STORM_KAFKA, outputs={"default": ("str",)}, config=config)


def topology(*spouts: Component) -> Topology:
    inputs = tuple(Input(s.id, "default", Grouping("shuffle")) for s in spouts)
    sink = Component("sink", BOLT, ("python", "b.py"), outputs={}, inputs=inputs)
    return Topology("sources", (*spouts, sink), source="sources.yaml")


def test_every_kafka_spout_runs_as_the_transactional_kafka_spout(tmp_path: Path) -> None:
    p = plan(
        topology(
            kafka("a", "lines"),
            kafka("b", "words"),
            storm_kafka("z"),
            Component("p", SPOUT, ("python", "s.py"), outputs={"default": ("x",)}),
        )
    )
    mapped = with_kafka_as_batch_spouts(p, str(tmp_path))
    roles = {s.id: s.role for s in mapped.stages if s.component.is_spout}
    assert roles == {
        "a": TRANSACTIONAL_SOURCE,
        "b": TRANSACTIONAL_SOURCE,
        "z": TRANSACTIONAL_SOURCE,
        "p": DRIVER_SPOUT,
    }
    t = mapped.topology
    assert t.component("a").command[2] == t.component("b").command[2]
    assert t.component("a").command[2] == "components.kafka_spout.transactional"
    assert t.component("z").command[2] == "components.kafka_spout.storm_kafka_tx"
    # each its own topics; the storm-kafka spout names the checkpoint's topology instance
    assert t.component("b").config["kafka.spout.topics"] == ["words"]
    instance = (tmp_path / "storm-kafka-topology-id").read_text().strip()
    assert t.component("z").config["kafka.spoutconfig.topology.id"] == instance
    assert mapped.tasks == p.tasks  # the same task ids, so the same contexts
    # a plan without a Kafka spout is left as it is
    plain = plan(topology(Component("p", SPOUT, ("python", "s.py"), outputs={"default": ("x",)})))
    assert with_kafka_as_batch_spouts(plain, str(tmp_path)) is plain


def stages(*ids: str) -> list[Stage]:
    p = with_kafka_as_batch_spouts(plan(topology(*(kafka(i, i) for i in ids))), "/unused")
    return [p.stage(i) for i in ids]


def test_one_batch_spout_keeps_its_state_in_the_state_directory(tmp_path: Path) -> None:
    state = str(tmp_path / "batches")
    states = BatchStates(state, stages("a"))
    assert states.roots == {"a": state} and states.own == {}
    assert source_root(state, "a", alone=True) == state
    states.prepare()
    BatchStore(state).put_meta(1, {"m": 1}, 0)
    states.attempt(1, 1)  # nothing of its own to write: the engine writes the state's record
    assert meta_record(state, 1) == {"meta": {"m": 1}, "attempt": 0}


def test_several_keep_theirs_apart_and_in_step_with_the_state_directory(tmp_path: Path) -> None:
    state = str(tmp_path / "batches")
    states = BatchStates(state, stages("a", "b/c"))
    assert states.roots["a"] == str(tmp_path / "batches" / "sources" / "a")
    assert states.roots["b/c"] == str(tmp_path / "batches" / "sources" / "b%2Fc")  # one directory
    states.prepare()
    for root in states.roots.values():
        assert json.loads((Path(root) / "coordinator" / "spout").read_text()) == 2  # its tasks
    # txid 1 opened by both (the stager stores each spout's metadata), run as attempt 3
    for spout, root in states.roots.items():
        BatchStore(root).put_meta(1, {"spout": spout}, 0)
    states.attempt(1, 3)
    assert {s: meta_record(r, 1) for s, r in states.roots.items()} == {
        "a": {"meta": {"spout": "a"}, "attempt": 3},
        "b/c": {"meta": {"spout": "b/c"}, "attempt": 3},
    }
    # a txid one of them never stored cannot run
    BatchStore(states.roots["a"]).put_meta(2, {}, 0)
    with pytest.raises(TopologyError, match="no stored metadata for txid 2 of batch spout 'b/c'"):
        states.attempt(2, 1)
    states.committed(1)
    assert [currtx(r) for r in states.roots.values()] == [2, 2]


def test_a_driver_that_died_between_the_commits_is_caught_up_at_the_start(tmp_path: Path) -> None:
    state = str(tmp_path / "batches")
    states = BatchStates(state, stages("a", "b"))
    states.prepare()
    # the state directory committed txid 4 (the engine's record), the spouts' stayed at 3
    BatchStore(state).committed(4)
    for root in states.roots.values():
        BatchStore(root).committed(3)
    BatchStates(state, stages("a", "b")).prepare()
    assert [currtx(r) for r in states.roots.values()] == [5, 5]


def test_a_batch_spout_with_another_parallelism_is_refused(tmp_path: Path) -> None:
    state = str(tmp_path / "batches")
    states = BatchStates(state, stages("a", "b"))
    states.prepare()
    BatchStore(states.roots["b"]).put_task_meta(0, 1, {"r": 1})
    b = dataclasses.replace(kafka("b", "b"), parallelism=3)
    three = with_kafka_as_batch_spouts(plan(topology(kafka("a", "a"), b)), "/unused")
    with pytest.raises(TopologyError, match="written by 2 task"):
        BatchStates(state, [three.stage("a"), three.stage("b")]).prepare()


# ---- the stager opens each txid with every batch spout (host/spark/staged_spouts.py) ------------


class FakeOpener:
    """A batch spout's opener: not ready for its first `late` calls, then ready (its metadata
    stored as BatchOpener stores it); or raising `error`."""

    def __init__(self, spout: str, root: str, late: int = 0, error: Exception | None = None):
        self.spout, self.root, self.late, self.error = spout, root, late, error
        self.asked: list[int] = []
        self.closed = False

    def open(self, txid: int) -> bool:
        self.asked.append(txid)
        if self.error is not None:
            raise self.error
        if len(self.asked) <= self.late:
            return False
        if meta_record(self.root, txid) is None:
            BatchStore(self.root).put_meta(txid, {"of": self.spout}, 0)
        return True

    def close(self) -> None:
        self.closed = True


def staged_with(tmp_path: Path, openers: list[FakeOpener]) -> StagedSpouts:
    p = with_kafka_as_batch_spouts(plan(topology(kafka("a", "a"), kafka("b", "b"))), "/unused")
    state = str(tmp_path / "batches")
    return StagedSpouts(p, [], str(tmp_path), state, trigger_secs=0.01, openers=openers)


def until(check: Callable[[], bool], secs: float = 30.0) -> None:
    deadline = time.monotonic() + secs
    while not check():
        assert time.monotonic() < deadline, "not reached"
        time.sleep(0.01)


def test_a_txid_is_staged_once_every_batch_spout_has_opened_it(tmp_path: Path) -> None:
    state = tmp_path / "batches"
    a = FakeOpener("a", str(state / "sources" / "a"))
    b = FakeOpener("b", str(state / "sources" / "b"), late=3)
    staged = staged_with(tmp_path, [a, b])
    staged.start()
    try:
        until(lambda: meta_record(str(state), 2) is not None)
        # txid 1 waited for b: asked 4 times, a each time too (a stored answer is not asked
        # again by the real opener); then 2, one ahead of the uncommitted 1, and no further
        assert b.asked[:4] == [1, 1, 1, 1] and a.asked[:4] == [1, 1, 1, 1]
        assert meta_record(str(state), 1) == {
            "meta": {"staged": True, "sources": ["a", "b"]},
            "attempt": 0,
        }
        manifest = json.loads((tmp_path / "staged" / "1" / "manifest.json").read_text())
        assert manifest["tasks"] == []  # no plain spout: the txid has only the sources' shares
        time.sleep(0.2)
        assert meta_record(str(state), 3) is None and max(a.asked) == 2
        staged.committed(1)
        until(lambda: meta_record(str(state), 3) is not None)
    finally:
        staged.close()
    assert a.closed and b.closed


def test_a_batch_spout_that_fails_the_opening_stops_the_stager_for_the_engine(
    tmp_path: Path,
) -> None:
    state = tmp_path / "batches"
    error = TopologyError("batch spout 'b' numbered batch 1 as 7")
    a = FakeOpener("a", str(state / "sources" / "a"))
    b = FakeOpener("b", str(state / "sources" / "b"), error=error)
    staged = staged_with(tmp_path, [a, b])
    staged.start()
    try:
        until(lambda: staged.failure is not None)
        assert staged.failure is error  # the engine ends the run with it (engine.py `_await`)
        assert a.closed and b.closed
        assert meta_record(str(state), 1) is None  # nothing handed to Spark
    finally:
        staged.close()


def test_a_coordinator_that_keeps_breaking_ends_the_run_after_max_failures(tmp_path: Path) -> None:
    """A coordinator process that breaks is started again at the next opening, as `host local`
    restarts a task; one that breaks more than `max_failures` times in a row ends the run (the
    engine's --max-restarts), rather than the plain spouts waiting for it forever."""
    from host.spark.batch_opener import BatchOpener
    from host.spark.component_process import ComponentFailed

    p = with_kafka_as_batch_spouts(plan(topology(kafka("a", "a"))), "/unused")
    broken = dataclasses.replace(
        p.topology.component("a"), command=("python", "-c", "raise SystemExit(3)")
    )
    t = dataclasses.replace(p.topology, components=(broken, *p.topology.components[1:]))
    state = str(tmp_path / "batches")
    opener = BatchOpener(t, "a", state, "run", max_failures=2)
    assert [opener.open(1), opener.open(1)] == [False, False]  # each time a new process
    with pytest.raises(ComponentFailed, match="exit"):
        opener.open(1)
    assert meta_record(state, 1) is None
