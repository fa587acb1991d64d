"""A Spark spout's directory and streaming inputs beside other spouts, without Spark (host/spark/
spark_input_opener.py, the stager in host/spark/staged_spouts.py; docs/spark.md §4.9): each
txid's share is the next complete output directory, or none (an idle share keeping the position);
a share stored is kept; the stager makes a txid for the input's new files alone, and none while
no spout has anything."""

from __future__ import annotations

import base64
import json
import pickle
import time
from pathlib import Path

import pytest

from host.batch.store import BatchStore
from host.spark.plan import plan
from host.spark.source import meta_record
from host.spark.spark_input_opener import RELAY_RESTARTS, SparkInputOpener
from host.spark.staged_spouts import StagedSpouts
from host.topology.model import BOLT, SPOUT, Component, Grouping, Input, Topology
from tests.unit.test_spark_batch_sources import until

SPARK_SPOUT = ("python", "-m", "components.spark_spout")


def topology(base: Path) -> Topology:
    rows = Component(
        "rows",
        SPOUT,
        SPARK_SPOUT,
        outputs={"default": ("id", "text")},
        config={
            "spark.spout.source": "directory",
            "spark.spout.path": "outputs",
            "spark.spout.checkpoint.dir": "spout-state",
        },
        cwd=str(base),
    )
    inputs = (Input("rows", "default", Grouping("shuffle")),)
    sink = Component("sink", BOLT, ("python", "b.py"), outputs={}, inputs=inputs, cwd=str(base))
    return Topology("inputs", (rows, sink), source=str(base / "inputs.yaml"))


def write_directory(base: Path, name: str, complete: bool = True) -> list[str]:
    """An output directory with one part file (its content is not read here); its file's URI."""
    directory = base / "outputs" / name
    directory.mkdir(parents=True)
    (directory / "part-00000.parquet").write_bytes(b"")
    if complete:
        (directory / "_SUCCESS").write_text("")
    return [f"{base / 'outputs'}/{name}/part-00000.parquet"]


def opener_in(tmp_path: Path) -> SparkInputOpener:
    (tmp_path / "outputs").mkdir()
    opener = SparkInputOpener(
        topology(tmp_path), "rows", str(tmp_path / "checkpoint"), str(tmp_path / "batches")
    )
    opener.prepare(None, 0)  # a directory input stages nothing: no Spark needed
    return opener


def share(opener: SparkInputOpener, txid: int) -> dict:
    record = meta_record(opener.root, txid)
    assert record is not None
    meta: dict = record["meta"]
    return meta


def test_each_txid_takes_the_next_complete_directory_or_none(tmp_path: Path) -> None:
    opener = opener_in(tmp_path)
    assert opener.root == str(tmp_path / "batches" / "sources" / "rows")
    assert not opener.has_new(1)
    write_directory(tmp_path, "out-00", complete=False)
    assert not opener.has_new(1)  # the spout waits for `_SUCCESS`, and so does the engine
    (tmp_path / "outputs" / "out-00" / "_SUCCESS").write_text("")
    assert opener.has_new(1)
    assert opener.open(1)
    first = share(opener, 1)
    assert first["name"] == "out-00" and len(first["files"]) == 1
    # nothing new: txid 2 holds none of the input's rows and keeps its position
    assert not opener.has_new(2)
    assert opener.open(2)
    assert share(opener, 2)["files"] == [] and share(opener, 2)["name"] == "out-00"
    files = write_directory(tmp_path, "out-01")
    assert opener.has_new(3)
    assert opener.open(3)
    assert share(opener, 3)["files"] == files
    # a share stored is kept (a driver restarted with txid 3 opened but not staged), and a
    # stored txid counts as new for the stager
    write_directory(tmp_path, "out-02")
    assert opener.open(3) and share(opener, 3)["files"] == files
    assert opener.has_new(3)
    opener.committed(3)
    assert BatchStore(opener.root).currtx() == 4
    assert meta_record(opener.root, 2) is None and meta_record(opener.root, 3) is not None
    assert opener.open(4) and share(opener, 4)["name"] == "out-02"  # after the committed one


def test_its_state_moves_up_to_the_engines_committed_txid(tmp_path: Path) -> None:
    opener = opener_in(tmp_path)
    opener.prepare(None, 5)
    assert BatchStore(opener.root).currtx() == 6
    opener.prepare(None, 2)  # never back
    assert BatchStore(opener.root).currtx() == 6


def test_the_staged_sources_option_carries_the_spouts_settings(tmp_path: Path) -> None:
    opener = opener_in(tmp_path)
    spout, root, spec = opener.option()
    assert (spout, root) == ("rows", opener.root)
    restored = pickle.loads(base64.b64decode(spec))
    assert restored.cfg.path == str(tmp_path / "outputs") and restored.spout == "rows"


def test_the_stager_makes_a_txid_for_new_files_alone_and_none_without(tmp_path: Path) -> None:
    opener = opener_in(tmp_path)
    state = tmp_path / "batches"
    staged = StagedSpouts(
        plan(topology(tmp_path)), [], str(tmp_path), str(state), trigger_secs=0.01, openers=[opener]
    )
    staged.start()
    try:
        time.sleep(0.3)  # thirty trigger intervals with nothing from any spout
        assert meta_record(str(state), 1) is None
        files = write_directory(tmp_path, "out-00")
        until(lambda: meta_record(str(state), 1) is not None)
        assert meta_record(str(state), 1) == {
            "meta": {"staged": True, "sources": ["rows"]},
            "attempt": 0,
        }
        assert share(opener, 1)["files"] == files
        manifest = json.loads((tmp_path / "staged" / "1" / "manifest.json").read_text())
        assert manifest["tasks"] == []  # no plain spout here: only the input's share
        time.sleep(0.3)
        assert meta_record(str(state), 2) is None  # nothing new, though txid 2 is allowed
        write_directory(tmp_path, "out-01")
        until(lambda: meta_record(str(state), 2) is not None)
        assert share(opener, 2)["name"] == "out-01"
    finally:
        staged.close()


# ---- a streaming input, through its relay (host/spark/stream_relay.py) ----------------------------


def streaming_opener(tmp_path: Path, max_rows: int = 100) -> SparkInputOpener:
    """The opener of a streaming input whose relay query is not started (it needs Spark: the
    integration tests run it); the test stages the relay's micro-batches itself."""
    base = topology(tmp_path)
    rows = base.component("rows")
    config = {
        "spark.spout.source": "streaming",
        "spark.spout.job": "jobs:stream",
        "spark.spout.checkpoint.dir": "spout-state",
    }
    changed = Topology(
        base.name,
        tuple(
            Component(**{**c.__dict__, "config": config}) if c is rows else c
            for c in base.components
        ),
        {"host.spark.batch.max.tuples": max_rows},
        source=base.source,
    )
    opener = SparkInputOpener(
        changed, "rows", str(tmp_path / "checkpoint"), str(tmp_path / "batches")
    )
    assert opener.relay is not None
    opener.relay.start = lambda spark: None  # type: ignore[method-assign]
    return opener


def relay_stage(opener: SparkInputOpener, b: int, rows: int) -> str:
    """Micro-batch b as the relay stages it: a directory with a part file and the manifest."""
    from components.spark_spout.segments import MANIFEST

    assert opener.relay is not None
    directory = Path(opener.relay.root) / f"batch-{b}"
    directory.mkdir(parents=True)
    (directory / "part-0.parquet").write_bytes(b"")
    doc = {"batch": b, "files": [{"name": "part-0.parquet", "rows": rows}], "rows": rows}
    (directory / MANIFEST).write_text(json.dumps(doc))
    return str(directory / "part-0.parquet")


def test_a_streaming_input_hands_out_its_relayed_micro_batches_in_order(tmp_path: Path) -> None:
    opener = streaming_opener(tmp_path, max_rows=100)
    opener.prepare(None, 0)
    relay = opener.relay
    assert relay is not None
    assert not opener.has_new(1)
    first = [relay_stage(opener, 0, 60), relay_stage(opener, 1, 30)]
    relay_stage(opener, 2, 50)
    assert opener.has_new(1) and opener.open(1)
    # consecutive micro-batches within the bound, read as a staged DataFrame's files
    assert share(opener, 1) == {
        "input": "dataframe",
        "relayed": [0, 1],
        "files": first,
        "rows": 90,
        "end": 2,
    }
    assert opener.open(2) and share(opener, 2)["relayed"] == [2]
    assert not opener.has_new(3)
    assert opener.open(3)  # nothing staged: an idle share, keeping the position
    assert share(opener, 3)["files"] == [] and share(opener, 3)["end"] == 3
    opener.committed(1)
    # the committed txid's micro-batches are not read again; the later ones' stay
    assert sorted(p.name for p in Path(relay.root).iterdir()) == ["batch-2"]
    # restarted with txids 2 and 3 opened, not committed: batch 2 stays for txid 2's replay,
    # and a micro-batch Spark replays below the committed end is not staged again
    again = streaming_opener(tmp_path)
    again.prepare(None, 1)
    assert again.relay is not None
    assert (again.relay.committed_end, again.relay.opened_end) == (2, 3)
    assert sorted(p.name for p in Path(relay.root).iterdir()) == ["batch-2"]


def test_a_relay_query_that_stops_is_started_again_then_ends_the_stager(tmp_path: Path) -> None:
    """A relay query that ended by itself is started again from its checkpoint at the next look;
    after three restarts in a row with no new micro-batch staged between them, the stager's look
    raises with the reason (the engine then ends the run)."""
    opener = streaming_opener(tmp_path)
    opener.prepare(None, 0)
    relay = opener.relay
    assert relay is not None
    starts: list[object] = []
    relay.start = starts.append  # type: ignore[method-assign]
    relay.failure = lambda: "the disk is full"  # type: ignore[method-assign]
    for n in range(RELAY_RESTARTS):
        assert not opener.has_new(1)
        assert len(starts) == n + 1
    relay_stage(opener, 0, 10)  # it staged one after all: the count starts again
    assert opener.has_new(1) and opener.open(1)
    for _ in range(RELAY_RESTARTS - 1):
        assert not opener.has_new(2)
    with pytest.raises(RuntimeError, match="failed 4 times in a row: the disk is full"):
        opener.has_new(2)
    assert len(starts) == 2 * RELAY_RESTARTS
