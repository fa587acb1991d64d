"""The Spark spout's inputs plugged into the Spark engine directly (host/spark/spark_input.py,
spark_input_source.py; docs/spark.md §4.8): the spout's streaming query, DataFrame and output
directories read by Spark itself, each micro-batch one transaction.

Every topology here is the spout -> a Python bolt (`tag`: the row plus its word count) -> the
SQLite committer (insert mode, with its audit table: one row per applied txid). The streaming
topology is a valid transactional topology (`spark.spout.transactional: true`), so it runs as a
command and under `host local` too. The DataFrame and directory inputs are plain spouts under
`host local`; a topology file may put a committer after them only for `host spark`
(host/topology/targets.py): the DataFrame input's kill-and-restart test runs such a file as a
command, and the shared local-cluster session loads its topologies and makes `store` a committer
itself (`load_as_committer`).

Spark start-ups are the cost (10-40 s each on two busy cores): the DataFrame and directory runs
share one local-cluster session (executors in other JVMs, so the source's reads and the stages
run in other processes than the driver's Python worker); the streaming input runs as a command
on local[2], then killed and restarted.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.support import spark_runs
from tests.support.spark_runs import (
    CLUSTER,
    JAVA_OPTS,
    LOCAL,
    ROOT,
    WAIT_SECS,
    applied_tuples,
    conf_args,
    engine_run,
    kill,
    load_as_committer,
    query,
    run_host_local_until,
    run_ok,
    run_shared_runs,
    run_spark,
    runs_in_one_session,
    spark_command,
    start,
    wait_for,
)

SPARK_CONF = {**spark_runs.SPARK_CONF, "spark.sql.shuffle.partitions": "2"}
STREAM_FILES = 4  # one file per micro-batch (maxFilesPerTrigger 1)
ROWS_PER_FILE = 50

pytestmark = pytest.mark.spark

JOBS = """\
def stream(spark, conf):
    # one JSON-lines file per micro-batch, in name order (Spark's file source, its own offsets)
    return (
        spark.readStream.schema("id LONG, text STRING, amount DECIMAL(10,2), at TIMESTAMP")
        .option("maxFilesPerTrigger", 1)
        .json(conf["test.input"])
    )


def socket_lines(spark, conf):
    # the file stream beside lines from a TCP socket: Spark's socket source, which cannot replay
    lines = (
        spark.readStream.format("socket")
        .option("host", "127.0.0.1")
        .option("port", int(conf["test.port"]))
        .load()
        .selectExpr(
            "CAST(NULL AS LONG) AS id", "value AS text", "CAST(NULL AS DECIMAL(10,2)) AS amount",
            "CAST(NULL AS TIMESTAMP) AS at",
        )
    )
    return stream(spark, conf).unionByName(lines)


def numbers(spark, conf):
    # test.rows rows in test.partitions slices, in id order (spark.range slices in order)
    n, parts = int(conf["test.rows"]), int(conf["test.partitions"])
    return spark.range(0, n, 1, parts).selectExpr(
        "id", "concat('row ', id, ' of ', id % 7) AS text",
        "CAST(id / 4 AS DECIMAL(10,2)) AS amount",
        "CAST(TIMESTAMP '2024-05-01 12:00:00+00:00' + make_interval(0, 0, 0, 0, 0, 0, id) AS TIMESTAMP) AS at",
    )
"""

TAG = """\
from multilang import BasicBolt


class Tag(BasicBolt):
    def process(self, tup):
        self.emit(list(tup.values) + [len(str(tup.values[1]).split())])


Tag().run()
"""

FIELDS = ["id", "text", "amount", "at"]


def stream_text(i: int) -> str:
    return f"stream row {i}" + " x" * (i % 3)


def stream_rows() -> list[dict[str, Any]]:
    rows = []
    for i in range(STREAM_FILES * ROWS_PER_FILE):
        rows.append(
            {
                "id": i,
                "text": stream_text(i),
                "amount": i * 1.25,  # a JSON number, read as DECIMAL(10,2)
                "at": f"2024-05-01T12:{i // 60:02d}:{i % 60:02d}+02:00",
            }
        )
    return rows


def write_stream_input(directory: Path) -> None:
    directory.mkdir(parents=True)
    rows = stream_rows()
    for f in range(STREAM_FILES):
        chunk = rows[f * ROWS_PER_FILE : (f + 1) * ROWS_PER_FILE]
        (directory / f"part-{f:03d}.json").write_text("".join(json.dumps(r) + "\n" for r in chunk))


def expected_stream_table() -> list[tuple[Any, ...]]:
    """The stored rows, computed without Spark: the spout's conversion of each row (decimal as
    plain text with its scale; a TIMESTAMP as its UTC instant in ISO-8601 with the offset)."""
    out = []
    for r in stream_rows():
        i = r["id"]
        minute, second = i // 60, i % 60
        at = f"2024-05-01T{10:02d}:{minute:02d}:{second:02d}+00:00"
        out.append((i, r["text"], f"{r['amount']:.2f}", at, len(r["text"].split())))
    return out


def make_topology(
    base: Path,
    name: str,
    spout_config: dict[str, Any],
    *,
    config: dict[str, Any] | None = None,
    transactional: bool = False,
    committer: bool = False,
    env: dict[str, str] | None = None,
) -> Path:
    """The topology file under `base`: `transactional`, the transactional Spark spout and its
    committer (valid for `host local` too); `committer` alone, `store` a committer after the
    plain Spark spout (valid for `host spark` only: host/topology/targets.py)."""
    base.mkdir(parents=True, exist_ok=True)
    (base / "jobs.py").write_text(JOBS)
    (base / "tag.py").write_text(TAG)
    spout: dict[str, Any] = {
        "command": ["python", "-m", "components.spark_spout"],
        "outputs": FIELDS,
        "config": {"spark.spout.checkpoint.dir": "spout-state", **spout_config},
    }
    store: dict[str, Any] = {
        "command": ["python", "-m", "components.sqlite_committer"],
        "inputs": {"tag": "global"},
        "outputs": [],
        "env": env or {},
        "config": {
            "sqlite.committer.path": "out.db",
            "sqlite.committer.table": "rows",
            "sqlite.committer.audit": "audit",
        },
    }
    doc: dict[str, Any] = {"name": name, "config": config or {}}
    if transactional:
        doc["transactional"] = {"id": name}
        spout["batch"] = "spout"
        spout["config"]["spark.spout.transactional"] = True
        store["batch"] = "committer"
    if committer:
        store["batch"] = "committer"
    doc["spouts"] = {"rows": spout}
    doc["bolts"] = {
        "tag": {
            "command": ["python", "tag.py"],
            "outputs": [*FIELDS, "words"],
            "parallelism": 2,
            "inputs": {"rows": "shuffle"},
        },
        "store": store,
    }
    path = base / "topology.yaml"
    path.write_text(yaml.safe_dump(doc))
    return path


def stream_topology(
    base: Path, env: dict[str, str] | None = None, *, write_input: bool = True
) -> Path:
    if write_input:
        write_stream_input(base / "input")
    return make_topology(
        base,
        "spark-input-stream",
        {
            "spark.spout.source": "streaming",
            "spark.spout.job": "jobs:stream",
            # the session of the spout under `host local`; `host spark` takes --master
            "spark.master": LOCAL,
            "spark.ui.enabled": "false",
            "spark.driver.extraJavaOptions": JAVA_OPTS,
        },
        config={"test.input": str(base / "input")},
        transactional=True,
        env=env,
    )


# ---- reading what a run left ------------------------------------------------------------------------


def table(db: Path) -> list[tuple[Any, ...]]:
    return query(db, "SELECT id, text, amount, at, words FROM rows ORDER BY id")


# ---- the streaming input, as a command -------------------------------------------------------------


def test_streaming_input_on_spark_equals_the_input_and_host_local(tmp_path: Path) -> None:
    topology = stream_topology(tmp_path / "spark")
    out = run_spark(topology, tmp_path / "checkpoint", LOCAL, "--max-batches", "4", conf=SPARK_CONF)
    assert "txid 4 committed (attempt 1" in out
    on_spark = table(tmp_path / "spark" / "out.db")
    # every row once, each value as the spout converts it; one micro-batch per input file
    assert on_spark == expected_stream_table()
    assert applied_tuples(tmp_path / "spark" / "out.db") == [
        (t, ROWS_PER_FILE) for t in (1, 2, 3, 4)
    ]
    # the same topology under `host local` (the spout runs its own Spark): the same table
    local = stream_topology(tmp_path / "local")
    run_host_local_until(
        local, tmp_path / "st", lambda: len(applied_tuples(tmp_path / "local" / "out.db")) >= 4
    )
    assert table(tmp_path / "local" / "out.db") == on_spark


def test_streaming_input_driver_killed_and_restarted_loses_nothing_and_repeats_nothing(
    tmp_path: Path,
) -> None:
    base = tmp_path / "kill"
    db, checkpoint = base / "out.db", tmp_path / "checkpoint"
    # the first run's committer dies before writing txid 3, on every attempt: the kill surely
    # lands with txids 1-2 committed and txid 3 read by Spark and never committed
    faulty = stream_topology(base, env={"FAULT": "before_write:3"})
    first = start(
        spark_command(faulty, checkpoint, LOCAL, "--max-restarts", "100", conf=SPARK_CONF)
    )
    try:
        # txid 3's first attempt has begun (its attempt is stored before any tuple is read):
        # Spark having planned it (offsets/2) is not enough, the kill could land before that
        wait_for(
            lambda: len(applied_tuples(db)) == 2 and _attempts(checkpoint, 3) >= 1,
            first,
            "txids 1-2 committed, txid 3 attempted",
        )
    finally:
        kill(first)  # SIGKILL: nothing cleaned up
    assert [t for t, _ in applied_tuples(db)] == [1, 2]
    assert (checkpoint / "query" / "offsets" / "2").exists()  # Spark's batch 2 is txid 3
    assert 0 < len(table(db)) < STREAM_FILES * ROWS_PER_FILE
    healthy = stream_topology(base, write_input=False)  # the same files, the committer healthy
    out = run_spark(healthy, checkpoint, LOCAL, "--max-batches", "2", conf=SPARK_CONF)
    # txid 3 is Spark's batch 2 again (its offsets from the query's checkpoint), a later attempt
    assert "txid 3 committed (attempt" in out and "txid 3 committed (attempt 1," not in out
    assert table(db) == expected_stream_table()
    assert applied_tuples(db) == [(t, ROWS_PER_FILE) for t in (1, 2, 3, 4)]


def test_streaming_input_from_a_socket_is_refused_before_any_micro_batch(tmp_path: Path) -> None:
    """A job whose streaming DataFrame reads a socket (beside a file source) is refused when the
    engine has built it, before the query starts: exit 2, the file, the spout and the socket
    source named; no query checkpoint, no micro-batch, and Spark never connected."""
    base, checkpoint = tmp_path / "socket", tmp_path / "checkpoint"
    with socket.create_server(("127.0.0.1", 0)) as listener:
        port = listener.getsockname()[1]
        # the precondition: a real listening socket Spark could read from
        with socket.create_connection(("127.0.0.1", port), timeout=10):
            probe, _ = listener.accept()
            probe.close()
        listener.setblocking(False)
        write_stream_input(base / "input")
        topology = make_topology(
            base,
            "spark-input-socket",
            {"spark.spout.source": "streaming", "spark.spout.job": "jobs:socket_lines"},
            config={"test.input": str(base / "input"), "test.port": port},
            transactional=True,
        )
        command = [
            *(sys.executable, "-m", "host", "spark", str(topology), "--master", LOCAL),
            *("--checkpoint", str(checkpoint), *conf_args(SPARK_CONF)),
        ]
        result = subprocess.run(
            command, cwd=ROOT, capture_output=True, text=True, timeout=WAIT_SECS
        )
        output = result.stdout + result.stderr
        assert result.returncode == 2, output[-spark_runs.OUTPUT_TAIL :]
        errors = [line for line in result.stderr.splitlines() if line.startswith("error: ")]
        assert len(errors) == 1, output[-spark_runs.OUTPUT_TAIL :]
        error = errors[0]
        assert f"{topology}: component 'rows': spark.spout.job jobs:socket_lines" in error
        assert "socket (org.apache.spark.sql.execution.streaming.sources.TextSocket" in error
        assert "FileSource" not in error  # the file source beside it replays
        # nothing ran: Spark never opened the socket, no query checkpoint, no txid begun
        with pytest.raises(BlockingIOError):
            listener.accept()
    assert not (checkpoint / "query").exists()
    assert not list(checkpoint.glob("batches/coordinator/meta/*"))
    assert not (checkpoint / "input").exists()
    assert not (base / "out.db").exists()


def _attempts(checkpoint: Path, txid: int) -> int:
    """The attempts of `txid` the engine has begun (host/spark/engine.py stores the number in
    `<checkpoint>/batches/coordinator/meta/<txid>.json` before the attempt reads anything)."""
    path = checkpoint / "batches" / "coordinator" / "meta" / f"{txid}.json"
    try:
        return int(json.loads(path.read_text()).get("attempt", 0))
    except (OSError, ValueError):
        return 0  # not written yet (the write is a rename: never half-read)


# ---- the DataFrame and directory inputs, one local-cluster session ----------------------------------


def shared_runs(spec_path: str, results_path: str) -> None:
    """Script mode: every run of the spec in one SparkSession, one after the other, with `store`
    a committer (see the module's docstring)."""
    runs_in_one_session(
        spec_path,
        results_path,
        {"spark.master": CLUSTER, **SPARK_CONF},
        "spark-input-tests",
        lambda run, spark: engine_run(
            load_as_committer(run["topology"], run["config"]), run, spark
        ),
    )


def write_directories(spark: Any, parent: Path) -> list[tuple[Any, ...]]:
    """Three Spark output directories (parquet, JSON, parquet) under `parent`; the rows they hold,
    as the spout converts them."""
    rows: list[tuple[Any, ...]] = []
    for n, fmt in enumerate(("parquet", "json", "parquet")):
        ids = range(n * 100, n * 100 + 100)
        df = spark.createDataFrame(
            [(i, f"dir {n} row {i}", None, None) for i in ids],
            "id LONG, text STRING, amount STRING, at STRING",
        )
        df.coalesce(2).write.format(fmt).save(str(parent / f"out-{n:02d}"))
        rows.extend((i, f"dir {n} row {i}", None, None, 4) for i in ids)
    return rows


@pytest.fixture(scope="module")
def shared(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    base = tmp_path_factory.mktemp("spark-input")
    frame = make_topology(
        base / "dataframe",
        "spark-input-frame",
        {"spark.spout.source": "dataframe", "spark.spout.job": "jobs:numbers"},
        config={"test.rows": 1000, "test.partitions": 5},
    )
    directory = make_topology(
        base / "directory",
        "spark-input-dirs",
        {"spark.spout.source": "directory", "spark.spout.path": "outputs"},
    )
    runs: list[dict[str, Any]] = [
        # 5 staged files of 200 rows, at most 450 rows per micro-batch: files 1-2, 3-4, 5
        {"name": "dataframe", "topology": str(frame), "max_batches": 3},
        {"name": "directory", "topology": str(directory), "max_batches": 3},
    ]
    for run in runs:
        run["config"] = {"host.spark.batch.max.tuples": 450}
        run["checkpoint"] = str(Path(run["topology"]).parent / "checkpoint")
    run_ok(
        [sys.executable, __file__, "--write-directories", str(base / "directory" / "outputs")],
        WAIT_SECS,
    )
    results, _ = run_shared_runs(__file__, runs, base)
    return {
        "base": base,
        "results": results,
        "directory_rows": json.loads((base / "directory" / "outputs.json").read_text()),
        "runs": {r["name"]: r for r in runs},
    }


def test_dataframe_input_in_micro_batches_of_staged_files(shared: dict[str, Any]) -> None:
    base = shared["base"] / "dataframe"
    assert shared["results"]["dataframe"] == {"committed": 3, "restarts": 0}
    assert applied_tuples(base / "out.db") == [(1, 400), (2, 400), (3, 200)]
    assert table(base / "out.db") == expected_frame_table(1000)
    # then nothing more: the next offset is the last one
    assert next_offset(shared["runs"]["dataframe"], 3) == {"txid": 3}


def test_directory_input_one_micro_batch_per_output_directory(shared: dict[str, Any]) -> None:
    base = shared["base"] / "directory"
    assert shared["results"]["directory"] == {"committed": 3, "restarts": 0}
    assert applied_tuples(base / "out.db") == [(1, 100), (2, 100), (3, 100)]
    assert table(base / "out.db") == [tuple(r) for r in shared["directory_rows"]]
    assert next_offset(shared["runs"]["directory"], 3) == {"txid": 3}


def expected_frame_table(n: int) -> list[tuple[Any, ...]]:
    """The stored rows of `jobs:numbers` with `n` rows, computed without Spark."""
    return [
        (
            i,
            f"row {i} of {i % 7}",
            f"{i / 4:.2f}",
            f"2024-05-01T12:{i // 60:02d}:{i % 60:02d}+00:00",
            4,
        )
        for i in range(n)
    ]


def killed_in_txid_2(faulty: Path, db: Path, checkpoint: Path) -> dict[str, Any]:
    """Runs `faulty` (its committer dies before writing txid 2, on every attempt) as a command on
    local[2] until txid 1 is committed and txid 2 attempted, then SIGKILLs the driver (nothing
    cleaned up); returns txid 2's stored record (its metadata: what a replay must read)."""
    first = start(
        spark_command(faulty, checkpoint, LOCAL, "--max-restarts", "100", conf=SPARK_CONF)
    )
    try:
        wait_for(
            lambda: [t for t, _ in applied_tuples(db)] == [1] and _attempts(checkpoint, 2) >= 1,
            first,
            "txid 1 committed, txid 2 attempted",
        )
    finally:
        kill(first)
    record: dict[str, Any] = json.loads(
        (checkpoint / "batches" / "coordinator" / "meta" / "2.json").read_text()
    )
    return record


def test_dataframe_input_driver_killed_and_restarted_replays_the_stored_files(
    tmp_path: Path,
) -> None:
    """The DataFrame input as a command (`store` a committer after the plain Spark spout), its
    driver SIGKILLed while txid 2 fails in the committer: the restart reads txid 2's stored files
    again (not the next ones), then txid 3, and every row is stored once."""
    base = tmp_path / "frame"
    db, checkpoint = base / "out.db", tmp_path / "checkpoint"

    def frame_topology(env: dict[str, str] | None = None) -> Path:
        return make_topology(
            base,
            "spark-input-frame-kill",
            {"spark.spout.source": "dataframe", "spark.spout.job": "jobs:numbers"},
            # 5 staged files of 200 rows, at most 450 rows per micro-batch: files 1-2, 3-4, 5
            config={"test.rows": 1000, "test.partitions": 5, "host.spark.batch.max.tuples": 450},
            committer=True,
            env=env,
        )

    stored = killed_in_txid_2(frame_topology({"FAULT": "before_write:2"}), db, checkpoint)
    # the precondition: txid 1 (files 1-2) stored, txid 2 read from its stored files, not stored
    assert applied_tuples(db) == [(1, 400)]
    assert table(db) == expected_frame_table(400)
    files_2 = stored["meta"]["files"]
    assert len(files_2) == 2
    out = run_spark(frame_topology(), checkpoint, LOCAL, "--max-batches", "2", conf=SPARK_CONF)
    assert "txid 2 committed (attempt" in out and "txid 2 committed (attempt 1," not in out
    # txid 2 read its stored files again: 400 rows, and txid 3 (the last metadata kept once it
    # committed) holds the one file after them
    assert applied_tuples(db) == [(1, 400), (2, 400), (3, 200)]
    last = json.loads((checkpoint / "batches" / "coordinator" / "meta" / "3.json").read_text())
    assert len(last["meta"]["files"]) == 1 and not set(last["meta"]["files"]) & set(files_2)
    assert table(db) == expected_frame_table(1000)


def write_parquet_directory(path: Path, first: int, n: int, label: str) -> list[tuple[Any, ...]]:
    """One complete output directory as a Spark job leaves it (a part file, then `_SUCCESS`),
    written with pyarrow: no Spark start for a test's input. The rows it holds, as stored."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    ids = list(range(first, first + n))
    texts = [f"{label} row {i}" for i in ids]
    nulls = pa.array([None] * n, pa.string())
    path.mkdir(parents=True)
    pq.write_table(
        pa.table({"id": pa.array(ids, pa.int64()), "text": texts, "amount": nulls, "at": nulls}),
        path / "part-00000.parquet",
    )
    (path / "_SUCCESS").write_text("")
    return [(i, t, None, None, len(t.split())) for i, t in zip(ids, texts, strict=True)]


def test_with_nothing_new_an_idle_micro_batch_comes_after_the_period_and_keeps_the_position(
    shared: dict[str, Any], tmp_path: Path
) -> None:
    """The directory input with its three directories read: with nothing new, the source hands
    Spark an idle (empty) micro-batch once `host.spark.idle.batch.secs` have passed since the
    last micro-batch ended, so that ticking bolts get their ticks (docs/spark.md §2.4). It
    carries the position of the batch before it: a new directory is read next, none again. On a
    copy of the run's directory, with the reader's clock set by hand (no Spark: the reader is a
    plain object over the state directory)."""
    from host.spark.source import meta_record
    from host.spark.spark_input_source import SparkInput, SparkInputReader, source_options

    base = tmp_path / "directory"
    shutil.copytree(shared["base"] / "directory", base)
    state = str(base / "checkpoint" / "batches")
    topology = load_as_committer(str(base / "topology.yaml"), {"host.spark.idle.batch.secs": 5})
    spark_input = SparkInput(topology, "rows", str(base / "checkpoint"), state)
    assert spark_input.idle_secs == 5.0
    reader = SparkInputReader(
        source_options(spark_input.spec, state, None, 450, spark_input.idle_secs)
    )
    now = [1000.0]
    reader._clock = lambda: now[0]
    assert meta_record(state, 3) is not None and meta_record(state, 4) is None  # 3 committed

    assert reader.latestOffset({"txid": 3}, None) == {"txid": 3}  # txid 3 ended: period starts
    now[0] += 4.9
    assert reader.latestOffset({"txid": 3}, None) == {"txid": 3}
    now[0] += 0.1
    assert reader.latestOffset({"txid": 3}, None) == {"txid": 4}
    idle = meta_record(state, 4)
    last = meta_record(state, 3)
    assert idle is not None and last is not None
    assert idle["meta"] == {**last["meta"], "files": [], "rows": 0, "idle": True}
    parts = reader.partitions({"txid": 3}, {"txid": 4})
    assert [list(reader.read(p)) for p in parts] == [[]]  # every partition runs, on no rows

    # txid 4 ended: the period starts again from there
    now[0] += 1.0
    assert reader.latestOffset({"txid": 4}, None) == {"txid": 4}
    # a new output directory is read at once, after the last one read before the idle batch
    write_parquet_directory(base / "outputs" / "out-03", 300, 10, "d3")
    assert reader.latestOffset({"txid": 4}, None) == {"txid": 5}
    record = meta_record(state, 5)
    assert record is not None and record["meta"]["name"] == "out-03"
    assert len(record["meta"]["files"]) == 1 and "idle" not in record["meta"]

    # off: never an idle micro-batch
    quiet = SparkInputReader(source_options(spark_input.spec, state, None, 450, None))
    quiet._clock = lambda: now[0]
    assert quiet.latestOffset({"txid": 5}, None) == {"txid": 5}
    now[0] += 3600
    assert quiet.latestOffset({"txid": 5}, None) == {"txid": 5}


def test_idle_micro_batches_run_and_commit_through_the_engine(tmp_path: Path) -> None:
    """The directory input as a command on local[2], `host.spark.idle.batch.secs` set: the one
    output directory is txid 1, then the quiet input still gets micro-batches, each run through
    the stages and committed with no tuples (the committer's audit row of 0 tuples)."""
    base = tmp_path / "idle"
    rows = write_parquet_directory(base / "outputs" / "out-00", 0, 20, "d0")
    topology = make_topology(
        base,
        "spark-input-idle",
        {"spark.spout.source": "directory", "spark.spout.path": "outputs"},
        config={"host.spark.idle.batch.secs": 1},
        committer=True,
    )
    run_spark(topology, base / "checkpoint", LOCAL, "--max-batches", "3", conf=SPARK_CONF)
    assert applied_tuples(base / "out.db") == [(1, 20), (2, 0), (3, 0)]
    assert table(base / "out.db") == rows


def test_directory_input_driver_killed_and_restarted_replays_the_stored_directory(
    tmp_path: Path,
) -> None:
    """The directory input as a command (`store` a committer after the plain Spark spout), its
    driver SIGKILLed while txid 2 (the second output directory) fails in the committer; a new
    output directory arrives while it is down. The restart reads txid 2's stored directory again
    (not the new one), then the others in name order, and every row is stored once."""
    base = tmp_path / "dirs"
    db, checkpoint, outputs = base / "out.db", tmp_path / "checkpoint", base / "outputs"
    rows = [
        write_parquet_directory(outputs / f"out-{n:02d}", n * 100, 100, f"d{n}") for n in (0, 1, 2)
    ]

    def dirs_topology(env: dict[str, str] | None = None) -> Path:
        return make_topology(
            base,
            "spark-input-dirs-kill",
            {"spark.spout.source": "directory", "spark.spout.path": "outputs"},
            committer=True,
            env=env,
        )

    stored = killed_in_txid_2(dirs_topology({"FAULT": "before_write:2"}), db, checkpoint)
    # the precondition: txid 1 (out-00) stored, txid 2 read from out-01's files, not stored
    assert applied_tuples(db) == [(1, 100)]
    assert table(db) == rows[0]
    assert stored["meta"]["name"] == "out-01" and len(stored["meta"]["files"]) == 1
    # while the driver is down, a new output directory that sorts before none of the others
    rows.append(write_parquet_directory(outputs / "out-03", 300, 100, "d3"))
    out = run_spark(dirs_topology(), checkpoint, LOCAL, "--max-batches", "3", conf=SPARK_CONF)
    assert "txid 2 committed (attempt" in out and "txid 2 committed (attempt 1," not in out
    assert applied_tuples(db) == [(1, 100), (2, 100), (3, 100), (4, 100)]
    assert table(db) == [r for directory in rows for r in directory]


def next_offset(run: dict[str, Any], txid: int) -> dict[str, int]:
    """The source's answer after `txid`, asked in this process (no Spark: the reader is a plain
    object over the state directory)."""
    from host.spark.spark_input_source import SparkInput, SparkInputReader, source_options

    topology = load_as_committer(run["topology"], run["config"])
    checkpoint = run["checkpoint"]
    spark_input = SparkInput(topology, "rows", checkpoint, os.path.join(checkpoint, "batches"))
    staging = spark_input.staging if spark_input.spec.source == "dataframe" else None
    options = source_options(
        spark_input.spec, spark_input.state_root, staging, spark_input.max_rows, None
    )
    answer: dict[str, int] = SparkInputReader(options).latestOffset({"txid": txid}, None)
    return answer


# ---- no Spark: refusals ------------------------------------------------------------------------------


def test_settings_the_spout_refuses_are_refused_before_anything_starts(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from host.spark.command import spark

    topology = make_topology(
        tmp_path,
        "bad",
        {"spark.spout.source": "dataframe", "spark.spout.job": "jobs:numbers"},
    )
    doc = yaml.safe_load(topology.read_text())
    doc["spouts"]["rows"]["parallelism"] = 2
    topology.write_text(yaml.safe_dump(doc))
    result = CliRunner().invoke(spark, [str(topology), "--checkpoint", str(tmp_path / "c")])
    assert result.exit_code == 2, result.output
    assert "component 'rows'" in result.output and "runs as one task" in result.output
    assert not (tmp_path / "c").exists()


if __name__ == "__main__" and sys.argv[1:2] == ["--shared-runs"]:
    os.chdir(ROOT)
    sys.path.insert(0, str(ROOT))
    shared_runs(sys.argv[2], sys.argv[3])
elif __name__ == "__main__" and sys.argv[1:2] == ["--write-directories"]:
    sys.path.insert(0, str(ROOT))
    from components.spark_spout.session import start_session

    session = start_session({"spark.master": "local[1]", **SPARK_CONF}, "spark-input-writer")
    parent = Path(sys.argv[2])
    written = write_directories(session, parent)
    session.stop()
    Path(f"{parent}.json").write_text(json.dumps(written))
