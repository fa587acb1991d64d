"""The Spark spout with real local Spark, for each of its three sources.

Every topology is `spout (python -m components.spark_spout) -> ledger bolt (Python, 2 tasks)`,
run by the Supervisor in this process, the spout a real subprocess (with its own Spark for the
DataFrame and streaming sources). The same 1200 rows [id, text] come from each source; row
POISON_ID's text is "poison". Evidence comes from three places: the bolt's ledger file (what
arrived, acked or failed), the spout's emits as the host saw them (`SteppedRun.emits`), and the
spout's checkpoint file.

Spark start-ups are the cost of this tier, so they are shared: the test process's SparkSession
writes the directory source's data once; the DataFrame source's staging directory is shared by
its tests (the first spout to run materialises the job, the others resume from the staged copy,
as a restarted spout does); the streaming source starts Spark in each spout process.
"""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

import pytest

from components.spark_spout.checkpoint import Checkpoint
from host.testing import ComponentPeer, make_context
from host.topology import TopologyBuilder
from multilang.messages import Emit, Error, Sync
from tests.integration.components.spark.support import (
    HERE,
    SPARK_TEST_CONF,
    SteppedRun,
    ledger,
    read_checkpoint,
    spark_session,
)

pytestmark = pytest.mark.spark

SOURCES = ["dataframe", "directory", "streaming"]
N = 1200
POISON_ID = 500
SPARK_START_SECS = 240  # a spout's Spark start and first micro-batch, on a loaded 2-core box
SPOUT = ["python", "-m", "components.spark_spout"]


def _text(i: int) -> str:
    return "poison" if i == POISON_ID else f"row {i}"


# ---- data, once per module ----------------------------------------------------------------------


@pytest.fixture(scope="module")
def data(tmp_path_factory) -> dict[str, dict]:
    """Per source: the component config that points the spout at the 1200 rows, and the key of
    the last segment (the checkpoint's watermark once everything is done)."""
    root = tmp_path_factory.mktemp("spark-data")
    spark = spark_session()
    # directory: three Spark output directories of 400 rows in 2 part files each
    outputs = root / "outputs"
    for d in range(3):
        rows = [(i, _text(i)) for i in range(d * 400, (d + 1) * 400)]
        # a local list is sliced in order: 2 partitions = 2 part files, rows in id order
        spark.createDataFrame(
            spark.sparkContext.parallelize(rows, 2), "id LONG, text STRING"
        ).write.parquet(str(outputs / f"run-{d:03d}"))
    # streaming: four JSON-lines files of 300 rows, one micro-batch each
    stream_in = root / "stream-in"
    stream_in.mkdir()
    for f in range(4):
        with open(stream_in / f"f{f}.json", "w") as fh:
            for i in range(f * 300, (f + 1) * 300):
                fh.write(json.dumps({"id": i, "text": _text(i)}) + "\n")
    return {
        "dataframe": {
            "conf": {
                "spark.spout.job": "jobs:numbers",
                "test.rows": N,
                "test.partitions": 3,
                "test.poison.id": POISON_ID,
                "spark.spout.staging.dir": str(root / "df-staging"),
            },
            "last": "part-00002",
        },
        "directory": {
            "conf": {"spark.spout.path": str(outputs), "spark.spout.poll.secs": 0.1},
            "last": "run-002/part-00001",
        },
        "streaming": {
            "conf": {"spark.spout.job": "jobs:stream", "test.input": str(stream_in)},
            "last": "batch-3",
        },
    }


def topology(
    tmp_path: Path,
    source: str,
    data: dict,
    *,
    bolt: dict | None = None,
    spout: dict | None = None,
    outputs=("id", "text"),
):
    conf = {
        **SPARK_TEST_CONF,
        **data[source]["conf"],
        "spark.spout.source": source,
        "spark.spout.checkpoint.dir": str(tmp_path / "ck"),
        "spark.spout.checkpoint.interval.ms": 50,
        **(spout or {}),
    }
    b = TopologyBuilder(
        "spark-test",
        config={
            "topology.max.spout.pending": 50,
            "host.restart.backoff.initial.secs": 0.1,
            "topology.message.timeout.secs": 60,
            "host.shutdown.grace.secs": 10,
        },
    )
    b.spout(
        "spout",
        SPOUT,
        outputs=list(outputs) if isinstance(outputs, tuple) else outputs,
        config=conf,
    )
    b.bolt(
        "bolt",
        ["python", "ledger_bolt.py"],
        outputs=[],
        parallelism=2,
        config={"test.ledger": str(tmp_path / "ledger"), **(bolt or {})},
    ).shuffle("spout")
    return b.build(HERE)


def checkpoint_of(tmp_path: Path) -> Checkpoint:
    return read_checkpoint(tmp_path / "ck") or Checkpoint("", "")


def all_done(tmp_path: Path, last: str, expect_ok: set[int]):
    """Every expected row acked by the bolt and the checkpoint's watermark at the last
    segment: the spout saw every row done."""

    def check() -> bool:
        ok, _ = ledger(tmp_path / "ledger")
        ck = read_checkpoint(tmp_path / "ck")
        return expect_ok <= set(ok) and ck is not None and ck.watermark == last and not ck.segments

    return check


def assert_none_emitted_again(ids: list[tuple], ck: Checkpoint, when: str) -> None:
    again = [i for i in ids if ck.is_done(*i)]
    assert not again, (
        f"{len(again)} rows covered by the checkpoint were emitted again after "
        f"{when}, e.g. {again[:5]}"
    )


# ---- every source -------------------------------------------------------------------------------


@pytest.mark.parametrize("source", SOURCES)
def test_every_row_arrives_exactly_once(tmp_path, data, source):
    run = SteppedRun(topology(tmp_path, source, data)).start()
    try:
        run.until(
            all_done(tmp_path, data[source]["last"], set(range(N))),
            SPARK_START_SECS,
            "every row acked",
        )
    finally:
        assert run.stop() == 0
    ok, failed = ledger(tmp_path / "ledger")
    assert ok == dict.fromkeys(range(N), 1) and not failed
    ids = run.ids()
    assert len(ids) == N == len(set(ids)), "each row emitted once, with its own id"
    values = {msg_id: v for _, msg_id, v in run.emits}
    assert sorted(v[0] for v in values.values()) == list(range(N))
    assert all(v[1] == _text(v[0]) for v in values.values())
    ck = checkpoint_of(tmp_path)
    assert (ck.acked, ck.dead) == (N, 0)
    assert ck.finished == (source == "dataframe")
    assert (tmp_path / "ck" / "checkpoint.json").stat().st_mode & 0o777 == 0o600
    assert (tmp_path / "ck").stat().st_mode & 0o777 == 0o700


@pytest.mark.parametrize("source", SOURCES)
def test_failed_rows_are_replayed_and_a_poison_row_is_dead_lettered(tmp_path, data, source):
    """The bolt fails every 7th tuple it gets (each id at most once) and always fails the poison
    row: every other row is acked in the end, and the poison row, after 1 + 2 retries, goes to
    the dead-letter file and the `dead` stream."""
    topo = topology(
        tmp_path,
        source,
        data,
        bolt={"test.fail.every": 7, "test.fail.poison": True},
        spout={"spark.spout.retries": 2},
        outputs={"default": ["id", "text"], "dead": ["key", "offset", "row", "reason"]},
    )
    run = SteppedRun(topo).start()
    expected = set(range(N)) - {POISON_ID}
    try:
        run.until(
            all_done(tmp_path, data[source]["last"], expected),
            SPARK_START_SECS,
            "every row acked or dead-lettered",
        )
    finally:
        assert run.stop() == 0
    ok, failed = ledger(tmp_path / "ledger")
    assert set(ok) == expected and set(ok.values()) == {1}
    assert failed[POISON_ID] == 3
    assert len(failed) > N // 10, "every 7th tuple failed once"
    # every failure but the poison row's last one was answered by a re-emit of the same id
    ids = [i for i in run.ids()]
    assert len(ids) == N + sum(failed.values()) - 1
    dead_lines = (tmp_path / "ck" / "dead-letter.jsonl").read_text().splitlines()
    assert len(dead_lines) == 1
    dead = json.loads(dead_lines[0])
    assert dead["row"] == {"id": POISON_ID, "text": "poison"} and dead["attempts"] == 3
    assert "spark.spout.retries=2" in dead["reason"]
    assert [tuple(dead[k] for k in ("key", "offset"))] == [
        i for i in set(ids) if values_of(run, i)[0] == POISON_ID
    ]
    dead_emits = [v for stream, _, v in run.emits if stream == "dead"]
    assert dead_emits == [[dead["key"], dead["offset"], dead["row"], dead["reason"]]]
    ck = checkpoint_of(tmp_path)
    assert ck.dead == 1 and ck.acked == N - 1


def values_of(run: SteppedRun, msg_id: tuple) -> list:
    return next(v for _, i, v in run.emits if i == msg_id)


@pytest.mark.parametrize("source", SOURCES)
def test_spout_killed_then_host_restarted_resume_from_the_checkpoint(tmp_path, data, source):
    """SIGKILL the spout mid-run (the host restarts it), later stop the whole host and start a
    new one on the same checkpoint directory: every row is acked at least once, and no row that
    a checkpoint on disk covered is emitted after that checkpoint was read."""
    # the bolt fails every 7th tuple once, so replays are pending at the kill and at the stop;
    # in the first host it holds the second half of the rows, so that host cannot finish them
    # however fast it runs (the spout's checkpoint lags by its interval, in which a fast run
    # could otherwise ack everything): it is stopped mid-run by construction
    spout = {"spark.spout.rows.per.next": 10}
    topo = topology(tmp_path, source, data, bolt={"test.fail.every": 7}, spout=spout)
    held = topology(
        tmp_path, source, data, bolt={"test.fail.every": 7, "test.hold.from": N // 2}, spout=spout
    )
    last = data[source]["last"]
    run = SteppedRun(held).start()
    try:
        run.until(
            lambda: checkpoint_of(tmp_path).acked >= N // 5,
            SPARK_START_SECS,
            "a fifth of the rows checkpointed",
        )
        run.kill_spout()
        at_kill = checkpoint_of(tmp_path)
        mark = len(run.emits)
        assert at_kill.acked < N, "killed mid-run"
        # what the checkpoint does not cover comes again from the restarted spout (the held rows
        # at least, never acked)
        run.until(lambda: bool(run.ids(mark)), SPARK_START_SECS, "emits after the restart")
        assert run.sup.snapshot()["components"]["spout"]["restarts"] == 1
        assert_none_emitted_again(run.ids(mark), at_kill, "the spout was killed")
    finally:
        assert run.stop() == 0
    at_stop = checkpoint_of(tmp_path)
    assert at_stop.acked < N or at_stop.watermark != last, "the host was stopped mid-run"

    second = SteppedRun(topo).start()
    try:
        second.until(
            all_done(tmp_path, last, set(range(N))),
            SPARK_START_SECS,
            "every row acked after the host restart",
        )
    finally:
        assert second.stop() == 0
    assert_none_emitted_again(second.ids(), at_stop, "the host restarted")
    assert second.ids(), "the second host emitted the rest"
    ok, _ = ledger(tmp_path / "ledger")
    assert set(ok) == set(range(N))
    final = checkpoint_of(tmp_path)
    assert final.watermark == last and not final.segments


# ---- the directory source -----------------------------------------------------------------------


def _spark_output(tmp_path: Path, name: str, fmt: str, rows: list[tuple]) -> Path:
    """A real Spark output directory (part files, checksums, _SUCCESS) at tmp_path/name."""
    spark = spark_session()
    path = tmp_path / "written" / name
    writer = spark.createDataFrame(rows, "id LONG, text STRING").coalesce(1).write
    getattr(writer, fmt)(str(path))
    return path


def test_directory_source_waits_for_success_and_reads_new_directories_in_order(tmp_path):
    """json and csv outputs; a directory is read only once its _SUCCESS exists, directories in
    name order as they appear."""
    parent = tmp_path / "outputs"
    parent.mkdir()
    first = _spark_output(tmp_path, "a", "json", [(i, f"json {i}") for i in range(5)])
    shutil.move(str(first), parent / "run-001")
    b = TopologyBuilder("spark-dir", config={"topology.max.spout.pending": 50})
    b.spout(
        "spout",
        SPOUT,
        outputs=["id", "text"],
        config={
            "spark.spout.source": "directory",
            "spark.spout.path": str(parent),
            "spark.spout.poll.secs": 0.05,
            "spark.spout.checkpoint.dir": str(tmp_path / "ck"),
        },
    )
    b.bolt(
        "bolt",
        ["python", "ledger_bolt.py"],
        outputs=[],
        config={"test.ledger": str(tmp_path / "ledger")},
    ).shuffle("spout")
    run = SteppedRun(b.build(HERE)).start(120)

    def ok_ids():
        return set(ledger(tmp_path / "ledger")[0])

    try:
        run.until(lambda: ok_ids() == set(range(5)), 30, "the first directory's rows")
        # a csv output without its _SUCCESS yet: not read
        second = _spark_output(tmp_path, "b", "csv", [(i, f"csv, {i}") for i in range(5, 9)])
        (second / "_SUCCESS").rename(tmp_path / "held-back")
        shutil.move(str(second), parent / "run-002")
        stop_at = len(run.emits)
        deadline = run.sup.clock() + 0.5  # ten polls
        run.until(lambda: run.sup.clock() >= deadline, 5, "ten polls")
        assert len(run.emits) == stop_at, "rows emitted before _SUCCESS"
        (tmp_path / "held-back").rename(parent / "run-002" / "_SUCCESS")
        run.until(lambda: ok_ids() == set(range(9)), 30, "the csv directory's rows")
    finally:
        run.stop()
    by_id = {v[0]: v[1] for _, _, v in run.emits}
    assert by_id[0] == "json 0" and by_id[5] == "csv, 5"
    assert [i[0] for i in run.ids()] == ["run-001/part-00000"] * 5 + ["run-002/part-00000"] * 4


def test_the_checkpoint_is_finished_by_the_last_ack_without_another_next(tmp_path, data):
    """The host may stop the spout right after the last ack, with no `next` in between: the
    checkpoint must say finished all the same. With max.spout.pending = N, the `next` that emits
    the last row has no budget left to take the source's End, so only the ack can see it."""
    conf = {
        **SPARK_TEST_CONF,
        **data["dataframe"]["conf"],
        "spark.spout.source": "dataframe",
        "topology.max.spout.pending": N,
    }
    peer = _start_spout(tmp_path, conf, {"default": ["id", "text"]})
    peer.command("activate")
    peer.read_until(Sync)
    ids: list = []
    deadline = time.monotonic() + SPARK_START_SECS
    while len(ids) < N:
        assert time.monotonic() < deadline, f"only {len(ids)} of {N} rows emitted"
        peer.command("next")
        ids += [m.id for m in peer.read_until(Sync, timeout=60) if isinstance(m, Emit)]
        if len(ids) < N:
            time.sleep(0.02)
    assert len(ids) == N
    for msg_id in ids:
        peer.command("ack", id=msg_id)
    for _ in ids:
        peer.read_until(Sync)
    assert peer.close() == 0
    ck = checkpoint_of(tmp_path)
    assert (ck.acked, ck.finished, ck.segments) == (N, True, {})


# ---- errors at start ----------------------------------------------------------------------------


def _start_spout(tmp_path: Path, conf: dict, outputs: dict) -> ComponentPeer:
    peer = ComponentPeer(SPOUT, cwd=str(HERE))
    peer.handshake(
        conf={"spark.spout.checkpoint.dir": str(tmp_path / "ck"), **conf},
        context=make_context(componentid="lines", outputs=outputs, sources={}),
    )
    return peer


def _fatal(peer: ComponentPeer, timeout: float = 30) -> str:
    """The error the spout reports before it exits with status 1."""
    messages = peer.read_until(Error, timeout=timeout)
    assert peer.close() == 1
    return messages[-1].msg


def test_fields_that_do_not_match_the_declared_outputs_are_an_error_at_start(tmp_path):
    peer = _start_spout(
        tmp_path,
        {
            "spark.spout.source": "directory",
            "spark.spout.path": str(tmp_path),
            "spark.spout.fields": ["text", "id"],
        },
        {"default": ["id", "text"]},
    )
    message = _fatal(peer)
    assert (
        "spark.spout.fields ['text', 'id'] do not match the spout's declared output fields "
        "['id', 'text']" in message
    )


def test_a_declared_field_missing_from_the_data_is_a_clear_error(tmp_path, data):
    outputs = data["directory"]["conf"]["spark.spout.path"]
    peer = _start_spout(
        tmp_path,
        {"spark.spout.source": "directory", "spark.spout.path": outputs},
        {"default": ["id", "colour"]},
    )
    peer.command("activate")
    peer.read_until(Sync)
    errors: list[Error] = []
    deadline = time.monotonic() + 60
    while not errors and time.monotonic() < deadline:
        # the spout reads the files on its own thread; ask until it knows (by time, not by a
        # count of `next`s: on a busy machine hundreds of them can pass before it has looked)
        peer.command("next")
        errors = [m for m in peer.read_until((Sync, Error)) if isinstance(m, Error)]
        if not errors:
            time.sleep(0.05)
    assert errors, "the spout never reported the missing column"
    assert peer.close() == 1
    assert "has no column(s) colour (its columns: id, text)" in errors[0].msg
