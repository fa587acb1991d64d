"""A Spark spout reading output directories, a DataFrame or a streaming query beside a plain
spout on the Spark engine (docs/spark.md §4.9): each micro-batch one transaction over what the
plain spout emitted and the input's next share (a directory, files, relayed micro-batches),
chosen by the driver's stager and read in the executors.

The topology is test_spark_several_spouts.py's (the Python ledger spout, two tasks, its share of
the ids each; the `tag` bolt; the SQLite committer) with a Spark spout `rows` beside the ledger
spout, reading the parquet output directories under `outputs/` ([id, text], the text
`rows sentence <id>`, as the tag bolt expects of a spout named `rows`). Each directory is written
with pyarrow, complete with `_SUCCESS`, before the run or while it runs; the runs go until every
id of both spouts is stored.
"""

from __future__ import annotations

import collections
import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.integration import test_spark_several_spouts as several
from tests.support.spark_runs import ROOT, drive_main, kill, start_driver, wait_for

pytestmark = pytest.mark.spark

PER_DIRECTORY = 50
STREAM_EPOCH = 1_700_000_000  # the streaming input's files' modification times count from it


JOBS = """\
def frame(spark, conf):
    # ids 0 .. test.rows - 1 in test.partitions slices, the text the tag bolt expects of `rows`
    n, parts = int(conf["test.rows"]), int(conf["test.partitions"])
    return spark.range(0, n, 1, parts).selectExpr("id", "concat('rows sentence ', id) AS text")


def stream(spark, conf):
    # the parquet files of test.stream.dir, one per micro-batch, in the order they arrived
    return (
        spark.readStream.schema("id LONG, text STRING")
        .option("maxFilesPerTrigger", 1)
        .parquet(conf["test.stream.dir"])
    )
"""


def make_topology(
    base: Path,
    limit: int,
    directories: int,
    frame: dict[str, int] | None = None,
    stream: int | None = None,
) -> tuple[Path, dict[str, int]]:
    """The topology (several.make_topology with `rows` beside the ledger spout `py`) and the
    first `directories` output directories; or, with `frame` (test.rows, test.partitions), `rows`
    reading that DataFrame instead; or, with `stream`, `rows` reading a streaming query over the
    parquet files of `stream-in/`, the first `stream` of them written. The ids each spout
    emits."""
    path = several.make_topology(base, {"py": limit})
    doc = yaml.safe_load(path.read_text())
    config: dict[str, Any] = {"spark.spout.source": "directory", "spark.spout.path": "outputs"}
    if frame is not None:
        (base / "jobs.py").write_text(JOBS)
        config = {"spark.spout.source": "dataframe", "spark.spout.job": "jobs:frame", **frame}
    if stream is not None:
        (base / "jobs.py").write_text(JOBS)
        (base / "stream-in").mkdir()
        config = {
            "spark.spout.source": "streaming",
            "spark.spout.job": "jobs:stream",
            "test.stream.dir": str(base / "stream-in"),
        }
        for n in range(stream):
            write_stream_file(base, n)
    doc["spouts"]["rows"] = {
        "command": ["python", "-m", "components.spark_spout"],
        "outputs": ["id", "text"],
        "config": {**config, "spark.spout.checkpoint.dir": "spout-state"},
    }
    doc["bolts"]["tag"]["inputs"]["rows"] = "shuffle"
    path.write_text(yaml.safe_dump(doc))
    for n in range(directories):
        write_directory(base, n)
    rows = PER_DIRECTORY * (directories if stream is None else stream)
    return path, {"py": limit, "rows": rows if frame is None else frame["test.rows"]}


def write_stream_file(base: Path, n: int) -> None:
    """Parquet file n of the streaming input (ids n*50 .. n*50+49), written under a name Spark's
    file source skips, then renamed: it sees the file whole or not at all. Its modification time
    is n seconds after a fixed past instant (Spark's file source takes the oldest first), so
    the files are read in order even when written within the same millisecond."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    ids = list(range(n * PER_DIRECTORY, (n + 1) * PER_DIRECTORY))
    texts = [several.text_of("rows", i) for i in ids]
    table = pa.table({"id": pa.array(ids, pa.int64()), "text": texts})
    tmp = base / "stream-in" / f".part-{n:02d}.parquet"
    pq.write_table(table, tmp)
    at = STREAM_EPOCH + n
    os.utime(tmp, (at, at))
    tmp.rename(base / "stream-in" / f"part-{n:02d}.parquet")


def write_directory(base: Path, n: int) -> None:
    """Output directory `out-<n>` (ids n*50 .. n*50+49), as a Spark job leaves one: a part file,
    then `_SUCCESS`."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    ids = list(range(n * PER_DIRECTORY, (n + 1) * PER_DIRECTORY))
    texts = [several.text_of("rows", i) for i in ids]
    directory = base / "outputs" / f"out-{n:02d}"
    directory.mkdir(parents=True)
    table = pa.table({"id": pa.array(ids, pa.int64()), "text": texts})
    pq.write_table(table, directory / "part-00000.parquet")
    (directory / "_SUCCESS").write_text("")


def wait_all_stored(proc: Any, base: Path, limits: dict[str, int], what: str) -> None:
    """Until every id of both spouts is stored and the ledger spout's acked (killing the driver
    if that never comes)."""
    try:
        wait_for(
            lambda: (
                several.all_stored_and_acked(base, {"py": limits["py"]})
                and several.all_stored(base / "out.db", limits)
            ),
            proc,
            what,
        )
    except BaseException:
        kill(proc)
        raise


def shares(checkpoint: Path) -> dict[int, dict[str, Any]]:
    """txid -> the input's stored share (what is left: committed txids below the last go)."""
    meta = checkpoint / "batches" / "sources" / "rows" / "coordinator" / "meta"
    return {int(p.stem): json.loads(p.read_text())["meta"] for p in meta.glob("*.json")}


def rows_by_txid(base: Path) -> dict[int, list[int]]:
    """txid -> the ids of `rows` it stored, in order."""
    out: dict[int, list[int]] = collections.defaultdict(list)
    for source, i, _, txid in several.stored(base / "out.db"):
        if source == "rows":
            out[txid].append(i)
    return {t: sorted(ids) for t, ids in out.items()}


def directory_of(ids: list[int]) -> int:
    """The one output directory a txid's `rows` ids came from (each directory is one share)."""
    directories = {i // PER_DIRECTORY for i in ids}
    assert len(directories) == 1 and len(ids) == PER_DIRECTORY, ids
    return directories.pop()


def test_each_output_directory_joins_one_micro_batch_beside_the_plain_spout(
    tmp_path: Path,
) -> None:
    base = tmp_path / "mixed"
    topology, limits = make_topology(base, 400, directories=2)
    checkpoint = base / "checkpoint"
    spec = {"topology": str(topology), "checkpoint": str(checkpoint), "max_tuples": 100}
    proc = start_driver(__file__, spec, tmp_path / "spec.json")
    try:
        # the two directories there at the start, in name order, each within one txid
        wait_for(lambda: len(rows_by_txid(base)) == 2, proc, "both directories stored")
        # a directory written while the query runs is read at the next trigger
        write_directory(base, 2)
        limits["rows"] += PER_DIRECTORY
    except BaseException:
        kill(proc)
        raise
    wait_all_stored(proc, base, limits, "every id of both spouts stored, the ledger spout's acked")
    out = several.stop(proc)
    result = several.result_of(out)
    assert result["restarts"] == 0
    assert result["acked"] == limits["py"]
    rows = several.check_every_id_once(base, limits)
    several.check_acks(base, {"py": limits["py"]})
    by_txid = rows_by_txid(base)
    order = [directory_of(by_txid[t]) for t in sorted(by_txid)]
    assert order == [0, 1, 2]  # the spout's name order, one directory per txid
    # the plain spout's tuples went on in the txids without a directory, and txids with a
    # directory held both spouts' tuples where the ledger spout had any
    per_txid = collections.Counter(x for s, *_, x in rows if s == "py")
    assert len(per_txid) > 3, per_txid
    assert all(n <= 100 for n in per_txid.values())  # the plain share stays within the bound
    # what is left of the input's state: the last committed txid's share, its position
    last = max(shares(checkpoint))
    assert shares(checkpoint)[last]["name"] == "out-02"


def test_a_dataframe_is_staged_once_and_handed_out_a_bound_at_a_time(tmp_path: Path) -> None:
    """The DataFrame input beside the ledger spout: staged once by the driver before the stager
    starts, then its parquet files shared out over the txids, at most host.spark.batch.max.tuples
    rows of it in one, in order; every id of both spouts once."""
    base = tmp_path / "frame"
    frame = {"test.rows": 600, "test.partitions": 4}  # four files of 150 rows
    topology, limits = make_topology(base, 300, directories=0, frame=frame)
    checkpoint = base / "checkpoint"
    spec = {"topology": str(topology), "checkpoint": str(checkpoint), "max_tuples": 300}
    proc = start_driver(__file__, spec, tmp_path / "spec.json")
    wait_all_stored(proc, base, limits, "every id of both spouts stored, the ledger spout's acked")
    several.stop(proc)
    several.check_every_id_once(base, limits)
    several.check_acks(base, {"py": limits["py"]})
    by_txid = rows_by_txid(base)
    # two files (300 rows) a txid at most, and the frame's ids in txid order
    assert all(len(ids) <= 300 for ids in by_txid.values()), by_txid
    assert [i for t in sorted(by_txid) for i in by_txid[t]] == list(range(600))
    from components.spark_spout.segments import staged

    copies = list((checkpoint / "input").iterdir())  # staged once, complete
    assert len(copies) == 1
    manifest = staged(str(copies[0]))
    assert manifest is not None and manifest["rows"] == 600 and len(manifest["files"]) == 4


def crash_then_restart(
    tmp_path: Path, base: Path, topology: Path, crash_on: str, limits: dict[str, int], check: Any
) -> tuple[int, list[tuple[str, int]], Any]:
    """The committer made to die on every attempt of the first txid after 1 holding tuples of
    the spouts `crash_on` names, the driver SIGKILLed with that txid staged
    (several.crash_and_kill); `check(txid, staged)` called then; the driver started again on the
    checkpoint with the committer fixed, until every id of both spouts is stored. That txid, the
    ledger spout's tuples staged for it and what `check` returned."""
    checkpoint = base / "checkpoint"
    db = base / "out.db"
    plain = topology.read_text()
    doc = yaml.safe_load(plain)
    doc["bolts"]["store"]["env"] = {"CRASH_ON_MIXED_BATCH": crash_on}
    topology.write_text(yaml.safe_dump(doc))
    txid, staged = several.crash_and_kill(
        tmp_path,
        topology,
        checkpoint,
        lambda: (
            len(several.ledger(base, "py")[0])
            == sum(1 for s, *_ in several.stored(db) if s == "py")
        ),
    )
    checked = check(txid, staged)
    topology.write_text(plain)  # the committer without its fault
    spec = {"topology": str(topology), "checkpoint": str(checkpoint), "max_tuples": 200}
    second = start_driver(__file__, spec, tmp_path / "second.json")
    wait_all_stored(second, base, limits, "every id of both spouts stored after the restart")
    out = several.stop(second)
    assert f"txid {txid}: staged by an earlier run, replayed" in out
    return txid, staged, checked


def test_driver_killed_mid_batch_replays_the_same_directory_and_staged_tuples(
    tmp_path: Path,
) -> None:
    """The committer dies on every attempt of the first txid after 1 holding both spouts'
    tuples; the driver is SIGKILLed with that txid staged. Started again on its checkpoint, the
    txid is replayed whole: the same output directory (its share stored before the staging) and
    the same staged tuples of the ledger spout, every id once."""
    base = tmp_path / "killed"
    topology, limits = make_topology(base, 300, directories=3)
    checkpoint = base / "checkpoint"

    def check(txid: int, staged: list[tuple[str, int]]) -> dict[str, Any]:
        assert {s for s, _ in staged} == {"py"}  # the precondition: the ledger spout's tuples
        share = shares(checkpoint)[txid]
        assert share["files"], share  # and a directory, in the crashing txid
        return share

    txid, staged, share = crash_then_restart(tmp_path, base, topology, "py,rows", limits, check)
    rows = several.check_every_id_once(base, limits)
    stored_py = sorted(("py", i) for s, i, _, x in rows if x == txid and s == "py")
    assert stored_py == sorted(staged)  # the ledger spout's share, from the staging
    ids = sorted(i for s, i, _, x in rows if x == txid and s == "rows")
    assert f"out-{directory_of(ids):02d}" == share["name"]  # the same directory
    assert several.audit(base / "out.db")[txid] > 1  # a later attempt than the crashed ones
    several.check_acks(base, {"py": limits["py"]})


def relay_batches(checkpoint: Path) -> list[str]:
    """The relay's staged micro-batches left on disk."""
    root = checkpoint / "input" / "relay-rows"
    return sorted(p.name for p in root.iterdir() if p.name.startswith("batch-"))


def test_a_streaming_input_beside_the_plain_spout_is_relayed_each_row_once(
    tmp_path: Path,
) -> None:
    """The streaming input's micro-batches (one parquet file each), staged by the relay query
    and handed out in order beside the ledger spout's tuples, at most 100 of its rows a txid;
    a file written while the query runs arrives too. Every id of both spouts once; the relay's
    stagings of committed txids deleted."""
    base = tmp_path / "stream"
    topology, limits = make_topology(base, 400, directories=0, stream=3)
    checkpoint = base / "checkpoint"
    spec = {"topology": str(topology), "checkpoint": str(checkpoint), "max_tuples": 100}
    proc = start_driver(__file__, spec, tmp_path / "spec.json")
    try:
        wait_for(
            lambda: sum(map(len, rows_by_txid(base).values())) == limits["rows"],
            proc,
            "the first three files stored",
        )
        write_stream_file(base, 3)
        limits["rows"] += PER_DIRECTORY
    except BaseException:
        kill(proc)
        raise
    wait_all_stored(proc, base, limits, "every id of both spouts stored, the ledger spout's acked")
    out = several.stop(proc)
    assert several.result_of(out)["restarts"] == 0
    rows = several.check_every_id_once(base, limits)
    several.check_acks(base, {"py": limits["py"]})
    by_txid = rows_by_txid(base)
    assert all(len(ids) <= 100 for ids in by_txid.values()), by_txid
    # the files' rows in txid order: Spark's micro-batches handed out in order
    assert [i for t in sorted(by_txid) for i in by_txid[t]] == list(range(limits["rows"]))
    assert any(s == "py" for s, *_ in rows)
    # every share but the last committed one is gone, and with it the micro-batches it held
    last = max(shares(checkpoint))
    relayed = shares(checkpoint)[last]
    left = relay_batches(checkpoint)
    assert all(int(name.removeprefix("batch-")) >= relayed["end"] for name in left), left


def test_driver_killed_mid_batch_replays_the_same_relayed_micro_batches(tmp_path: Path) -> None:
    """The committer dies on every attempt of the first txid after 1 holding rows of the
    streaming input (eight files of 50 rows, at most 200 a txid: at least two txids hold some);
    the driver is SIGKILLed with that txid staged. Started again on its checkpoint (the relay
    query from its own), the txid is replayed with the same relayed micro-batches, as staged on
    disk before the restart, and the same staged tuples of the ledger spout (maybe none: the
    relay query starts after the ledger spout), and every id of both spouts is stored once."""
    import pyarrow.parquet as pq

    base = tmp_path / "killed-stream"
    topology, limits = make_topology(base, 300, directories=0, stream=8)
    checkpoint = base / "checkpoint"

    def check(txid: int, staged: list[tuple[str, int]]) -> list[int]:
        share = shares(checkpoint)[txid]
        assert share["relayed"], share  # the precondition: relayed micro-batches in that txid
        for b in share["relayed"]:  # kept on disk for the replay
            assert f"batch-{b}" in relay_batches(checkpoint)
        ids = sorted(i for f in share["files"] for i in pq.read_table(f)["id"].to_pylist())
        assert len(ids) == share["rows"] > 0
        return ids

    txid, staged, relayed_ids = crash_then_restart(tmp_path, base, topology, "rows", limits, check)
    rows = several.check_every_id_once(base, limits)
    stored_py = sorted(("py", i) for s, i, _, x in rows if x == txid and s == "py")
    assert stored_py == sorted(staged)  # the ledger spout's share, from the staging
    ids = sorted(i for s, i, _, x in rows if x == txid and s == "rows")
    assert ids == relayed_ids  # the same relayed micro-batches
    assert several.audit(base / "out.db")[txid] > 1  # a later attempt than the crashed ones
    several.check_acks(base, {"py": limits["py"]})


if __name__ == "__main__" and sys.argv[1:2] == ["--drive"]:
    os.chdir(ROOT)
    drive_main(several.drive, sys.argv[2])
