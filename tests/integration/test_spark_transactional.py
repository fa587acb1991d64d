"""The transactional Spark spout (`spark.spout.transactional: true`) through the real host, with
real local Spark: `spout (python -m components.spark_spout, batch: spout) -> ledger (an
exactly-once committer, tx_ledger_committer.py)`.

The input is FILES JSON-lines files of ROWS rows `{id, text}`, read with `maxFilesPerTrigger: 1`,
so each Spark micro-batch is one file. Spark's own checkpoint says which file each micro-batch
read (`sources/0/<batch id>`), so the test checks that txid N+1 carried exactly the rows of Spark
batch N. The one Spark test runs the host three times on the same state (three Spark start-ups:
the cost of this file): the first run is stopped, with no grace, while txid 3's commit hangs; the
second replays txid 3 from the staged rows (its input file deleted meanwhile, so Spark could not
give those rows again) and goes on with Spark; before the third, Spark's commit of its last
micro-batch is deleted, as if the host had died right after that txid's `batch_commit`: Spark
runs the micro-batch again and the spout lets it go at once, as the host committed its txid;
the committer crashes in the next txid's commit, which the host replays from the staging.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from host.runtime.supervisor import Supervisor
from host.testing import ComponentPeer, make_context
from host.topology.model import Topology
from host.topology.native import from_document
from multilang.batch import NO_BATCH_HOST
from multilang.messages import Error, Handshake
from tests.integration.components.spark.support import HERE, SPARK_TEST_CONF
from tests.support.batch_frames import batch_context

pytestmark = pytest.mark.spark  # the spout needs the [spark] extra (pyarrow), the first test Spark

FILES, ROWS = 4, 50
SPARK_START_SECS = 180  # a spout's Spark start and its micro-batches, on a loaded 2-core box
SPOUT = ["python", "-m", "components.spark_spout"]


def write_input(directory: Path) -> None:
    directory.mkdir()
    for f in range(FILES):
        add_input(directory, f)


def add_input(directory: Path, f: int) -> None:
    # written whole, then renamed in: Spark's file source never sees half a file
    tmp = directory / f".f{f}.tmp"
    tmp.write_text("".join(json.dumps({"id": i, "text": f"row {i}"}) + "\n" for i in ids_of(f)))
    tmp.rename(directory / f"f{f}.json")


def ids_of(f: int) -> list[int]:
    return list(range(f * ROWS, (f + 1) * ROWS))


def spout_conf(tmp: Path, extra: dict[str, Any] | None = None) -> dict[str, Any]:
    return {
        **SPARK_TEST_CONF,
        "spark.spout.source": "streaming",
        "spark.spout.transactional": True,
        "spark.spout.job": "jobs:stream",
        "test.input": str(tmp / "input"),
        "spark.spout.checkpoint.dir": str(tmp / "ck"),
        **(extra or {}),
    }


def topology(tmp: Path, committer_env: dict[str, str] | None = None, grace: float = 5) -> Topology:
    return from_document(
        {
            "name": "spark-tx",
            "transactional": {"id": "spark"},
            "config": {
                "host.state.dir": str(tmp / "state"),
                "host.spout.idle.max.sleep.ms": 20,  # how soon a staged batch is asked for
                "host.shutdown.grace.secs": grace,
                "host.restart.backoff.initial.secs": 0.1,
                "topology.message.timeout.secs": 120,
            },
            "spouts": {
                "spout": {
                    "command": SPOUT,
                    "outputs": ["id", "text"],
                    "batch": "spout",
                    "config": spout_conf(tmp),
                }
            },
            "bolts": {
                "ledger": {
                    "command": [sys.executable, str(HERE / "tx_ledger_committer.py")],
                    "batch": "committer",
                    "inputs": {"spout": "global"},
                    "env": {"LEDGER": str(tmp / "ledger.json"), **(committer_env or {})},
                }
            },
        },
        base_dir=HERE,  # jobs.py is imported from the spout's cwd
    )


def run(topo: Topology, done: Callable[[Supervisor], bool]) -> Supervisor:
    """Run until `done` holds, then stop (with the topology's grace: none kills a hung commit)."""
    sup = Supervisor(topo)
    sup.start()
    deadline = time.monotonic() + SPARK_START_SECS
    try:
        while sup.step(0.05):
            if sup.stop_reason is None and (done(sup) or sup.failure):
                sup.request_stop("the test has what it waited for")
            assert time.monotonic() < deadline, f"not done in time: {sup.snapshot()}"
    finally:
        sup.finish()
    assert sup.failure is None, sup.failure
    assert sup.snapshot()["components"]["spout"]["restarts"] == 0, "the spout never failed"
    return sup


def committed_txid(sup: Supervisor) -> int:
    batches = sup.path.batches
    return 0 if batches is None else batches.coordinator.committed_txid


def seen(tmp: Path) -> list[dict[str, Any]]:
    """The committer's commit-phase finishes, every attempt (a line still being written left)."""
    path = tmp / "ledger.json.seen"
    lines = path.read_text().split("\n")[:-1] if path.exists() else []
    return [json.loads(line) for line in lines]


def ledger(tmp: Path) -> dict[str, Any]:
    return json.loads((tmp / "ledger.json").read_text())


def staging(tmp: Path) -> list[str]:
    return sorted(p.name for p in (tmp / "ck" / "staging").iterdir() if p.name.startswith("batch-"))


def spark_batches(tmp: Path, log: str) -> list[int]:
    """The micro-batch ids in Spark's `offsets` or `commits` log."""
    directory = tmp / "ck" / "streaming" / log
    return sorted(int(p.name) for p in directory.iterdir() if p.name.isdigit())


def file_of_spark_batch(tmp: Path, batch_id: int) -> int:
    """Which input file Spark's micro-batch `batch_id` read (its file source's log)."""
    lines = (tmp / "ck" / "streaming" / "sources" / "0" / str(batch_id)).read_text().splitlines()
    [entry] = [json.loads(line) for line in lines[1:]]  # after the version line
    return int(Path(entry["path"]).stem.removeprefix("f"))


def test_micro_batches_are_txids_and_a_restarted_host_replays_from_staging(tmp_path: Path) -> None:
    write_input(tmp_path / "input")

    # first run: txid 3 (Spark batch 2) hangs in its commit; the host is stopped with no grace
    def commit_of_3_entered(sup: Supervisor) -> bool:
        return any(s["txid"] == 3 for s in seen(tmp_path))

    run(topology(tmp_path, {"BLOCK": "3"}, grace=0), commit_of_3_entered)
    assert ledger(tmp_path)["txid"] == 2  # the precondition: 3 and later not applied
    coordinator = tmp_path / "state" / "transactional" / "spark" / "coordinator"
    assert (coordinator / "currtx").read_text() == "3"
    stored = json.loads((coordinator / "meta" / "3.json").read_text())
    assert stored["meta"]["spark_batch_id"] == 2 and stored["meta"]["rows"] == ROWS
    # foreachBatch(2) never returned: Spark did not commit batch 2, and will run it again
    assert spark_batches(tmp_path, "commits") == [0, 1]
    assert spark_batches(tmp_path, "offsets") == [0, 1, 2]
    # staging is deleted only once its txid's commit is recorded: batch 2's is kept
    assert staging(tmp_path) == ["batch-2"]
    # Spark batch 2's input goes: replayed from Spark it would fail on the missing file
    blocked_file = file_of_spark_batch(tmp_path, 2)
    (tmp_path / "input" / f"f{blocked_file}.json").unlink()

    # second run on the same state: txid 3 again (from its staging), then Spark's batch 3
    def all_committed(sup: Supervisor) -> bool:
        return committed_txid(sup) >= FILES and 3 in spark_batches(tmp_path, "commits")

    run(topology(tmp_path), all_committed)

    state = ledger(tmp_path)
    assert [t for t, _, _ in state["ledger"]] == [1, 2, 3, 4], "each txid applied once, in order"
    assert dict((t, a) for t, a, _ in state["ledger"])[3] >= 2, "txid 3 applied by a replay"
    assert state["counts"] == {str(i): 1 for i in range(FILES * ROWS)}, "every row counted once"
    for txid, _, ids in state["ledger"]:  # txid N+1 = Spark batch N, with that batch's rows
        assert ids == ids_of(file_of_spark_batch(tmp_path, txid - 1))
    attempts_of_3 = [s for s in seen(tmp_path) if s["txid"] == 3]
    assert len(attempts_of_3) >= 2 and all(
        s["ids"] == attempts_of_3[0]["ids"] for s in attempts_of_3
    )
    assert spark_batches(tmp_path, "commits") == [0, 1, 2, 3]
    assert staging(tmp_path) == ["batch-3"]  # txid 4's commit is recorded only by the next run

    # third run: as if the host had recorded txid 4's commit and Spark had not yet written its
    # commit of batch 3 (the window after batch_commit): Spark runs batch 3 again, and the
    # foreachBatch returns at once, as the handshake's committed_txid (4) covers it
    for name in ("3", ".3.crc"):  # the commit and its checksum, which Spark would not replace
        (tmp_path / "ck" / "streaming" / "commits" / name).unlink()
    add_input(tmp_path / "input", FILES)

    def fifth_committed(sup: Supervisor) -> bool:
        return committed_txid(sup) >= FILES + 1 and FILES in spark_batches(tmp_path, "commits")

    # and txid 5's first commit crashes the committer: the host replays it, from its staging
    run(topology(tmp_path, {"CRASH": "5:1"}), fifth_committed)
    state = ledger(tmp_path)
    assert [(t, a) for t, a, _ in state["ledger"][-2:]] == [(4, 1), (5, 2)]
    attempts_of_5 = [s for s in seen(tmp_path) if s["txid"] == 5]
    assert [s["attempt"] for s in attempts_of_5] == [1, 2]
    assert attempts_of_5[0]["ids"] == attempts_of_5[1]["ids"]
    assert [s["attempt"] for s in seen(tmp_path) if s["txid"] == 4] == [1], "4 not opened again"
    assert state["ledger"][-1][2] == ids_of(FILES) == ids_of(file_of_spark_batch(tmp_path, FILES))
    assert state["counts"] == {str(i): 1 for i in range((FILES + 1) * ROWS)}
    assert spark_batches(tmp_path, "commits") == list(range(FILES + 1))
    # batch 3's staging went at the start (its txid committed) and was not staged again
    assert staging(tmp_path) == [f"batch-{FILES}"]


# ---- errors at start (no Spark is started) -------------------------------------------------------


def _start(tmp: Path, conf: dict[str, Any], batch: bool) -> ComponentPeer:
    peer = ComponentPeer(SPOUT, cwd=str(HERE))
    shape: dict[str, Any] = {
        "componentid": "lines",
        "outputs": {"default": ["id", "text"]},
        "sources": {},
    }
    context = batch_context("spout", **shape) if batch else make_context(**shape)
    peer.handshake(conf=conf, context=context)
    return peer


def _end(peer: ComponentPeer, timeout: float = 30) -> tuple[int, str]:
    """Close stdin, read stdout and stderr to their end: the exit status and all of stderr."""
    peer.close_stdin()
    deadline = time.monotonic() + timeout
    while peer.sel.get_map() and time.monotonic() < deadline:
        peer._pump(0.5)
    return peer.close(), peer.stderr.decode(errors="replace")


def test_the_transactional_switch_needs_the_streaming_source(tmp_path: Path) -> None:
    conf = spout_conf(tmp_path, {"spark.spout.source": "dataframe"})
    peer = _start(tmp_path, conf, batch=True)
    assert "batch/1" in peer.extensions  # the switch makes the spout a batch spout
    errors = [m for m in peer.read_until(Error) if isinstance(m, Error)]
    assert peer.close() == 1
    assert "spark.spout.transactional needs spark.spout.source: streaming" in errors[0].msg


def test_a_spout_declared_batch_without_the_switch_says_what_to_set(tmp_path: Path) -> None:
    # the directory source: the plain spout starts no Spark
    conf = spout_conf(
        tmp_path,
        {
            "spark.spout.transactional": False,
            "spark.spout.source": "directory",
            "spark.spout.path": str(tmp_path),
        },
    )
    peer = _start(tmp_path, conf, batch=True)
    assert "batch/1" not in peer.extensions  # the host refuses this reply (§4, negotiated)
    code, stderr = _end(peer)
    assert code == 0 and "set spark.spout.transactional: true" in stderr


def test_the_switch_without_a_batch_host_fails_fast(tmp_path: Path) -> None:
    peer = ComponentPeer(SPOUT, cwd=str(HERE))
    context = make_context(componentid="lines", outputs={"default": ["id", "text"]}, sources={})
    conf = {"topology.name": "test", **spout_conf(tmp_path)}
    peer.send(Handshake(peer.pid_dir, conf, context))  # no `batch` in the context: not batch/1
    code, stderr = _end(peer)
    assert code == 1 and NO_BATCH_HOST in stderr
