"""Tick tuples on the Spark engine (docs/spark.md §2.4; host/spark/ticks.py): sinks that write,
and ack, what they hold only on a tick finish every micro-batch under `python -m host spark`, and
every tuple is written, once.

The topology: a plain Python spout emits `[id, text]` with message id `id`, for ids 0..ROWS-1,
ten per `next`, and appends every acked id to a file (on Spark an id is acked once its
micro-batch has committed); two sinks read it, two tasks each:
- `parquet`: the real Parquet sink (components/parquet_sink), its roll count far above what a
  partition holds, so that within a partition only a tick makes it write and ack;
- `held`: tests/support/tick_sink.py, which writes and acks only on a tick, with a period of an
  hour: only the tick at the end of each partition's input can flush it.
Without ticks on Spark, the first would never be judged done but by the rule for bolts that never
ack, its rows left unwritten, and the second the same.

The run stops (SIGTERM) once the spout has had every id acked: each micro-batch holds at most
MAX_TUPLES tuples, so there are several. The Parquet files then hold every row once, as the same
topology (without `held`, whose hour-long period would hold its tuples past the spout's timeout
under `host local`) writes them under `host local`.

Then ticks while the spout is quiet: idle micro-batches (host/spark/staged_spouts.py) bring a
1-second tick sink its ticks after the spout's last tuple; and beside a transactional spout whose
coordinator opens no more batches, idle micro-batches that hold no txid do the same.
"""

from __future__ import annotations

import collections
import json
import sys
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
import yaml

from tests.support.spark_runs import (
    LOCAL,
    ROOT,
    run_host_local_until,
    run_ok,
    spark_command,
    start,
    wait_for,
)

pytestmark = pytest.mark.spark

ROWS = 500
MAX_TUPLES = 100  # host.spark.batch.max.tuples: at least ROWS / MAX_TUPLES micro-batches
TICK_SINK = ROOT / "tests" / "support" / "tick_sink.py"

SPOUT = """\
from collections import deque
from multilang import Spout


class Rows(Spout):
    def initialize(self, conf, context):
        self.acked = open(conf["test.acked"], "a", buffering=1)
        self.todo = deque(range(int(conf["test.rows"])))

    def next_tuple(self):
        for _ in range(10):
            if self.todo:
                i = self.todo.popleft()
                self.emit([i, f"row {i}"], id=i)

    def ack(self, i):
        self.acked.write(f"{i}\\n")

    def fail(self, i):
        self.todo.appendleft(i)


Rows().run()
"""


def make_topology(base: Path, held: bool) -> Path:
    """The topology directory at `base`: the spout's script and `topology.yaml`; with the `held`
    sink or without it."""
    base.mkdir(parents=True, exist_ok=True)
    (base / "rows.py").write_text(SPOUT)
    bolts: dict[str, Any] = {
        "parquet": {
            "command": ["python", "-m", "components.parquet_sink"],
            "outputs": [],
            "parallelism": 2,
            "inputs": {"rows": "shuffle"},
            "config": {
                "parquet.sink.dir": str(base / "parquet"),
                "parquet.sink.rows": 100_000,  # capped at host.bolt.max.in.flight: 1,000
                "topology.tick.tuple.freq.secs": 2,
            },
        }
    }
    if held:
        bolts["held"] = held_sink(base, 3600)
    doc = {
        "name": "tick-sinks",
        "config": {
            "test.acked": str(base / "acked.txt"),
            "test.rows": ROWS,
            "host.spark.batch.max.tuples": MAX_TUPLES,
        },
        "spouts": {"rows": {"command": ["python", "rows.py"], "outputs": ["id", "text"]}},
        "bolts": bolts,
    }
    path = base / "topology.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def held_sink(base: Path, period: int) -> dict[str, Any]:
    """The tick sink (two tasks, shuffle from `rows`), writing under `base`/held, ticking every
    `period` seconds."""
    return {
        "command": ["python", str(TICK_SINK)],
        "outputs": [],
        "parallelism": 2,
        "inputs": {"rows": "shuffle"},
        "config": {"test.sink.dir": str(base / "held"), "topology.tick.tuple.freq.secs": period},
    }


def acked_ids(base: Path) -> list[int]:
    path = base / "acked.txt"
    return [int(x) for x in path.read_text().split()] if path.exists() else []


def parquet_files(base: Path) -> list[Path]:
    directory = base / "parquet"
    return sorted(directory.glob("part-*.parquet")) if directory.exists() else []


def parquet_rows(base: Path) -> list[tuple[int, str]]:
    rows = []
    for path in parquet_files(base):
        table = pq.read_table(path)
        rows.extend(zip(table.column("id").to_pylist(), table.column("text").to_pylist()))
    return rows


def parquet_row_count(base: Path) -> int:
    return sum(pq.read_metadata(path).num_rows for path in parquet_files(base))


def read_jsonl(path: Path) -> list[Any]:
    return [json.loads(line) for line in path.read_text().splitlines()]


EXPECTED = collections.Counter((i, f"row {i}") for i in range(ROWS))


def test_sinks_that_flush_on_ticks_finish_every_micro_batch_and_write_every_row(tmp_path):
    base = tmp_path / "spark"
    path = make_topology(base, held=True)
    assert not (base / "parquet").exists() and not (base / "held").exists()
    proc = start(spark_command(path, tmp_path / "checkpoint", LOCAL))
    try:
        wait_for(lambda: len(acked_ids(base)) >= ROWS, proc, "every id acked")
    finally:
        proc.terminate()
        out, _ = proc.communicate(timeout=120)
    assert proc.returncode == 0, out[-5000:]
    assert sorted(acked_ids(base)) == list(range(ROWS))  # each micro-batch committed once

    # the Parquet sink: every row, once
    assert collections.Counter(parquet_rows(base)) == EXPECTED

    # the held sink: every row, once, each written at the tick that ended its partition (the
    # only ticks: an hour's period), at least one per micro-batch per task
    held_rows = [
        tuple(r) for p in sorted((base / "held").glob("rows-*.jsonl")) for r in read_jsonl(p)
    ]
    assert collections.Counter(held_rows) == EXPECTED
    tick_files = sorted((base / "held").glob("ticks-*.jsonl"))
    assert len(tick_files) == 2  # both tasks
    for tick_file in tick_files:
        ticks = read_jsonl(tick_file)
        assert {(c, s, t, tuple(v)) for c, s, t, v, _ in ticks} == {
            ("__system", "__tick", -1, (3600,))
        }
        assert len(ticks) >= ROWS // MAX_TUPLES
    assert sum(n for f in tick_files for *_, n in read_jsonl(f)) == ROWS


def test_the_parquet_output_is_the_same_as_under_host_local(tmp_path):
    """The same spout and Parquet sink under `host local`: the same rows, each once."""
    base = tmp_path / "local"
    path = make_topology(base, held=False)
    assert parquet_row_count(base) == 0
    result = run_host_local_until(path, tmp_path / "state", lambda: parquet_row_count(base) >= ROWS)
    assert result.returncode == 0, result.stdout[-5000:]
    assert collections.Counter(parquet_rows(base)) == EXPECTED


def _ticks_by_file(directory: Path) -> dict[str, list[list[Any]]]:
    """Each task's tick lines, whole lines only (the sink may be writing one)."""
    out = {}
    for path in sorted(directory.glob("ticks-*.jsonl")):
        text = path.read_text()
        out[path.name] = [json.loads(line) for line in text[: text.rfind("\n") + 1].splitlines()]
    return out


def _tick_count(directory: Path) -> dict[str, int]:
    return {name: len(ticks) for name, ticks in _ticks_by_file(directory).items()}


def test_ticks_go_on_over_idle_micro_batches_once_the_spout_is_quiet(tmp_path):
    """A bolt that ticks every second keeps getting ticks after the spout has emitted its last
    tuple: the plain spouts' source stages an idle micro-batch once a tick period passes with
    none (host.spark.idle.batch.secs, by default the shortest period), and each runs every
    partition, which brings each task its end-of-input tick. Without them no micro-batch would
    come, and the sink would get no tick at all: the wait below would time out."""
    base = tmp_path / "spark"
    path = make_topology(base, held=False)
    doc = yaml.safe_load(path.read_text())
    doc["config"]["test.rows"] = 50  # one micro-batch's worth, then a quiet spout
    doc["bolts"] = {"held": held_sink(base, 1)}
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    explained = run_ok([sys.executable, "-m", "host", "spark", str(path), "--explain"], 120)
    assert "idle micro-batches: one after 1 s with none" in explained
    proc = start(spark_command(path, tmp_path / "checkpoint", LOCAL))
    try:
        wait_for(lambda: len(acked_ids(base)) >= 50, proc, "every id acked")
        # every row was flushed and acked before its txid committed and the spout got the ack
        after_last_ack = _tick_count(base / "held")
        assert len(after_last_ack) == 2  # both tasks ran (each opens its file as it starts)

        def more_ticks() -> bool:  # two more ticks for each task, the spout emitting no more
            now = _tick_count(base / "held")
            return all(now[name] >= n + 2 for name, n in after_last_ack.items())

        wait_for(more_ticks, proc, "ticks after the spout's last tuple")
    finally:
        proc.terminate()
        out, _ = proc.communicate(timeout=120)
    assert proc.returncode == 0, out[-5000:]
    assert sorted(acked_ids(base)) == list(range(50))  # each id committed and acked once
    held_rows = [
        tuple(r) for p in sorted((base / "held").glob("rows-*.jsonl")) for r in read_jsonl(p)
    ]
    assert collections.Counter(held_rows) == collections.Counter((i, f"row {i}") for i in range(50))
    for name, ticks in _ticks_by_file(base / "held").items():
        assert {(c, s, t, tuple(v)) for c, s, t, v, _ in ticks} == {
            ("__system", "__tick", -1, (1,))
        }
        assert all(n == 0 for *_, n in ticks[after_last_ack[name] :])  # nothing left to flush


STREAM_JOB = """\
def stream(spark, conf):
    return spark.readStream.schema("id LONG, text STRING").parquet(conf["test.stream.dir"])
"""


def test_ticks_go_on_beside_a_quiet_streaming_input_through_its_relay(tmp_path):
    """The Spark spout reading a streaming query, alone, into the 1-second tick sink: Spark's own
    micro-batches of the input come only when it has data, so, because a bolt ticks (idle
    micro-batches on by default), the input runs through a relay query
    (host/spark/stream_relay.py) and the stager makes the txids, idle ones too. The sink keeps
    getting ticks after the input's one file, and every row is written once."""
    import pyarrow as pa

    base = tmp_path / "stream"
    (base / "in").mkdir(parents=True)
    (base / "jobs.py").write_text(STREAM_JOB)
    ids = list(range(50))
    table = pa.table({"id": pa.array(ids, pa.int64()), "text": [f"row {i}" for i in ids]})
    pq.write_table(table, base / "in" / ".part-0.parquet")
    (base / "in" / ".part-0.parquet").rename(base / "in" / "part-0.parquet")
    doc = {
        "name": "stream-ticks",
        "spouts": {
            "rows": {
                "command": ["python", "-m", "components.spark_spout"],
                "outputs": ["id", "text"],
                "config": {
                    "spark.spout.source": "streaming",
                    "spark.spout.job": "jobs:stream",
                    "test.stream.dir": str(base / "in"),
                    "spark.spout.checkpoint.dir": "spout-state",
                },
            }
        },
        "bolts": {"held": held_sink(base, 1)},
    }
    path = base / "topology.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    explained = run_ok([sys.executable, "-m", "host", "spark", str(path), "--explain"], 120)
    assert "source: the streaming input of 'rows' runs through a relay query" in explained
    assert "idle micro-batches: one after 1 s with none" in explained

    def held_rows() -> list[tuple[int, str]]:
        return [
            tuple(r) for p in sorted((base / "held").glob("rows-*.jsonl")) for r in read_jsonl(p)
        ]

    checkpoint = tmp_path / "checkpoint"
    proc = start(spark_command(path, checkpoint, LOCAL))
    try:
        wait_for(lambda: len(held_rows()) >= 50, proc, "the file's rows flushed by a tick")
        after = _tick_count(base / "held")

        def more_ticks() -> bool:  # two more ticks for each task, the input having no more
            now = _tick_count(base / "held")
            return all(now.get(name, 0) >= n + 2 for name, n in after.items())

        wait_for(more_ticks, proc, "ticks after the input's last row")
    finally:
        proc.terminate()
        out, _ = proc.communicate(timeout=120)
    assert proc.returncode == 0, out[-5000:]
    assert collections.Counter(held_rows()) == collections.Counter((i, f"row {i}") for i in ids)
    # the relay staged the input's micro-batches under the checkpoint, and its query is its own
    assert (checkpoint / "input" / "relay-rows" / "query").is_dir()


TRANSACTIONAL_SPOUT = """\
from multilang import TransactionalSpout


class Rows(TransactionalSpout):
    def initialize(self, txid, prev_meta):
        start = prev_meta["end"] if prev_meta else 0
        if start >= int(self.conf["test.rows"]):
            return None  # all emitted: the coordinator opens no batch from now on
        return {"start": start, "end": start + 25}

    def emit_batch(self, tx, meta):
        for i in range(meta["start"], meta["end"]):
            self.emit([i, f"row {i}"])


Rows().run()
"""

TXID_LEDGER = """\
import sys

from multilang import Committer


class Ledger(Committer):
    def process(self, tup, batch):
        pass

    def finish_batch(self, batch):
        with open(sys.argv[1], "a") as f:
            f.write(f"{batch.tx.txid}\\n")


Ledger().run()
"""


QUIET_SPOUT = """\
from multilang import Spout


class Quiet(Spout):
    def next_tuple(self):
        pass


Quiet().run()
"""


@pytest.mark.parametrize("beside", ["alone", "beside a plain spout"])
def test_ticks_go_on_over_idle_micro_batches_that_hold_no_txid_beside_a_quiet_batch_spout(
    tmp_path, beside
):
    """A transactional spout whose coordinator opens two batches and then none: the 1-second
    tick sink beside it keeps getting ticks, from idle micro-batches that hold no txid. Alone,
    its source makes them (host/spark/idle_batches.py `idle_offset`); beside a plain spout that
    never emits, the stager that opens their shared txids asks for them (host/spark/staging.py
    `request_idle`). The committer beside the sink has no batch in them: it finishes txids 1 and
    2 once each, and no third txid is opened or committed."""
    base = tmp_path / "spark"
    base.mkdir()
    (base / "rows.py").write_text(TRANSACTIONAL_SPOUT)
    (base / "ledger.py").write_text(TXID_LEDGER)
    (base / "quiet.py").write_text(QUIET_SPOUT)
    ledger = base / "txids.txt"
    spouts: dict[str, Any] = {
        "rows": {"command": ["python", "rows.py"], "outputs": ["id", "text"], "batch": "spout"}
    }
    bolts: dict[str, Any] = {
        "held": held_sink(base, 1),
        "ledger": {
            "command": ["python", "ledger.py", str(ledger)],
            "outputs": [],
            "batch": "committer",
            "inputs": {"rows": "global"},
        },
    }
    sinks = [base / "held"]
    if beside != "alone":  # the plain spout's own tick sink: outside the batch group
        spouts["quiet"] = {"command": ["python", "quiet.py"], "outputs": ["id", "text"]}
        bolts["quiet_held"] = {**held_sink(base / "quiet", 1), "inputs": {"quiet": "shuffle"}}
        sinks.append(base / "quiet" / "held")
    doc = {
        "name": "tick-beside-batches",
        "transactional": {"id": "tick-beside-batches"},
        "config": {"test.rows": 50},
        "spouts": spouts,
        "bolts": bolts,
    }
    path = base / "topology.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    explained = run_ok([sys.executable, "-m", "host", "spark", str(path), "--explain"], 120)
    assert (
        "idle micro-batches: one after 1 s with none, while a batch spout's coordinator"
        in explained
    )
    assert "only the plain bolts run in it" in explained

    def held_rows() -> list[tuple[Any, ...]]:
        return [
            tuple(r) for p in sorted((base / "held").glob("rows-*.jsonl")) for r in read_jsonl(p)
        ]

    proc = start(spark_command(path, tmp_path / "checkpoint", LOCAL))
    try:
        wait_for(
            lambda: ledger.exists() and ledger.read_text().split() == ["1", "2"], proc, "txid 2"
        )
        wait_for(lambda: len(held_rows()) == 50, proc, "both batches' rows flushed on ticks")
        after_last_batch = {sink: _tick_count(sink) for sink in sinks}
        assert all(len(counts) == 2 for counts in after_last_batch.values())  # every task ran

        def more_ticks() -> bool:  # two more ticks for each task, the coordinator opening none
            return all(
                _tick_count(sink)[name] >= n + 2
                for sink, counts in after_last_batch.items()
                for name, n in counts.items()
            )

        wait_for(more_ticks, proc, "ticks after the spout's last batch")
    finally:
        proc.terminate()
        out, _ = proc.communicate(timeout=120)
    assert proc.returncode == 0, out[-5000:]
    assert "idle, no txid" in out, out[-5000:]
    assert "txid 3" not in out, out[-5000:]
    assert "stopped: 2 micro-batch(es) committed" in out, out[-5000:]
    assert "idle with no txid" in out, out[-5000:]
    assert ledger.read_text().split() == ["1", "2"]  # no finish in an idle micro-batch
    assert collections.Counter(held_rows()) == collections.Counter(
        (i, f"row {i}") for i in range(50)
    )
    for name, ticks in _ticks_by_file(base / "held").items():
        assert {(c, s, t, tuple(v)) for c, s, t, v, _ in ticks} == {
            ("__system", "__tick", -1, (1,))
        }
        # nothing left to flush
        assert all(n == 0 for *_, n in ticks[after_last_batch[base / "held"][name] :])
