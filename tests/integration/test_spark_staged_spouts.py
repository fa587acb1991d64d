"""Plain spouts on the Spark engine (host/spark/staged_spouts.py, spout_process.py): run in the
driver, what they emit staged durably per micro-batch, acked when the batch commits.

The exactly-once topology: a plain spout emits `[id, sentence]` with message id `id` and writes
every ack and fail to a ledger (our Python client's spout looks up, when acked, the txid the
committer stored the id under: an ack before its commit would find none); a Python split bolt
emits `[id, word]`; a committer stores, per txid and in one SQLite transaction, the ids and the
word counts of its batch, skipping a txid it already has. Validation lets `batch: committer`
only into a topology with a batch spout, so the driver (this file run as a script) loads the
topology and then makes `store` a committer itself, as the Spark engine allows.

Spark start-ups are the cost (10-40 s each on two busy cores): the two spouts (Python, pipelined;
pystorm, lock-step) share one local-cluster session; the killed driver runs twice on local[2].
"""

from __future__ import annotations

import collections
import json
import os
import signal
import sqlite3
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.support.spark_runs import (
    CLUSTER,
    LOCAL,
    ROOT,
    SPARK_CONF,
    WAIT_SECS,
    drive_main,
    kill,
    load_as_committer,
    query,
    run_shared_runs,
    run_spark,
    runs_in_one_session,
    start_driver,
    wait_for,
)

PYSTORM_SPOUT = ROOT / "tests" / "integration" / "components" / "pystorm" / "ledger_spout.py"

pytestmark = pytest.mark.spark


def sentence(i: int) -> str:
    words = ["alpha", "beta", "gamma", "delta", "epsilon"]
    return f"{words[i % 5]} {words[(i * 3) % 5]} sentence {i % 7}"


LEDGER_SPOUT = """\
import os, sqlite3, sys
from collections import deque
from multilang import Spout

WORDS = ["alpha", "beta", "gamma", "delta", "epsilon"]


def sentence(i):
    return f"{WORDS[i % 5]} {WORDS[(i * 3) % 5]} sentence {i % 7}"


class Ledger(Spout):
    # ids 0..limit-1, ten per next; a durable record of acked ids (`test.acked`), so that a
    # restarted process replays what was never acked, as a spout with its own log would
    def initialize(self, conf, context):
        self.db = conf["test.db"]
        self.ledger = open(conf["test.ledger"], "a", buffering=1)
        self.acked_file = conf["test.acked"]
        acked = set()
        if os.path.exists(self.acked_file):
            acked = {int(x) for x in open(self.acked_file).read().split()}
        self.acked = open(self.acked_file, "a", buffering=1)
        self.todo = deque(i for i in range(int(conf["test.limit"])) if i not in acked)

    def next_tuple(self):
        for _ in range(10):
            if not self.todo:
                return
            i = self.todo.popleft()
            self.emit([i, sentence(i)], id=i)

    def ack(self, i):
        txid = None
        if os.path.exists(self.db):
            with sqlite3.connect(self.db) as conn:
                row = conn.execute("SELECT txid FROM ids WHERE id = ?", (i,)).fetchone()
                txid = None if row is None else row[0]
        self.ledger.write(f"ack {i} {txid}\\n")
        self.acked.write(f"{i}\\n")

    def fail(self, i):
        self.ledger.write(f"fail {i}\\n")
        self.todo.append(i)


Ledger().run()
"""

SPLIT = """\
from multilang import BasicBolt


class Split(BasicBolt):
    # [id, sentence], or pystorm's ledger spout's [sentence] "message <id> with some words in it"
    def process(self, tup):
        if len(tup.values) == 2:
            i, text = tup.values
        else:
            text = tup.values[0]
            i = int(text.split()[1])
        for word in text.split():
            self.emit([i, word])


Split().run()
"""

COMMITTER = """\
import collections, json, os, sqlite3
from multilang.batch import Committer

CRASH = os.environ.get("CRASH_TXID")


class Store(Committer):
    def initialize(self, conf, context):
        self.db = conf["test.db"]
        with sqlite3.connect(self.db) as conn:
            conn.execute("CREATE TABLE IF NOT EXISTS ids (id INTEGER, txid INTEGER)")
            conn.execute("CREATE TABLE IF NOT EXISTS counts (word TEXT PRIMARY KEY, n INTEGER)")
            conn.execute("CREATE TABLE IF NOT EXISTS audit (txid INTEGER PRIMARY KEY, attempt INTEGER)")

    def begin(self, batch):
        batch.rows = []

    def process(self, tup, batch):
        batch.rows.append(tup.values)

    def finish_batch(self, batch):
        txid, attempt = batch.tx
        if CRASH is not None and txid == int(CRASH):
            with open(self.db + ".crashes", "a") as f:
                f.write(f"{txid} {attempt}\\n")
            os._exit(137)
        conn = sqlite3.connect(self.db, isolation_level=None)
        conn.execute("BEGIN IMMEDIATE")
        last = conn.execute("SELECT MAX(txid) FROM audit").fetchone()[0] or 0
        if txid > last:
            for i in sorted({i for i, _ in batch.rows}):
                conn.execute("INSERT INTO ids VALUES (?, ?)", (i, txid))
            for word, n in collections.Counter(w for _, w in batch.rows).items():
                conn.execute(
                    "INSERT INTO counts VALUES (?, ?) ON CONFLICT(word) DO UPDATE SET n = n + ?",
                    (word, n, n),
                )
            conn.execute("INSERT INTO audit VALUES (?, ?)", (txid, attempt))
        conn.execute("COMMIT")
        conn.close()


Store().run()
"""


# ---- the test topologies --------------------------------------------------------------------------


def make_topology(base: Path, spout: str, *, limit: int, env: dict[str, str] | None = None) -> Path:
    """A directory with the components and `topology.yaml`; `spout`: "python" or "pystorm"."""
    base.mkdir(parents=True, exist_ok=True)
    (base / "ledger_spout.py").write_text(LEDGER_SPOUT)
    (base / "split.py").write_text(SPLIT)
    (base / "store.py").write_text(COMMITTER)
    if spout == "python":
        spout_doc: dict[str, Any] = {
            "command": ["python", "ledger_spout.py"],
            "outputs": ["id", "sentence"],
        }
    else:
        spout_doc = {"command": ["python", str(PYSTORM_SPOUT)], "outputs": ["sentence"]}
    doc = {
        "name": f"staged-{spout}",
        "config": {
            "test.db": str(base / "out.db"),
            "test.ledger": str(base / "ledger.txt"),
            "test.acked": str(base / "acked.txt"),
            "test.limit": limit,
            "test.messages": limit,
            "topology.max.spout.pending": 100_000,
        },
        "spouts": {"sentences": spout_doc},
        "bolts": {
            "split": {
                "command": ["python", "split.py"],
                "outputs": ["id", "word"],
                "parallelism": 2,
                "inputs": {"sentences": "shuffle"},
            },
            "store": {
                "command": ["python", "store.py"],
                "outputs": [],
                "inputs": {"split": "global"},
                "env": env or {},
            },
        },
    }
    path = base / "topology.yaml"
    path.write_text(yaml.safe_dump(doc))
    return path


def drive(spec: dict[str, Any], spark: Any = None) -> dict[str, Any]:
    """One engine run (script mode): the topology of spec["topology"] until max_batches."""
    from host.spark.engine import SparkEngine
    from host.spark.plan import plan

    engine = SparkEngine(
        # `store` a committer (see the module's docstring), and the batch size
        plan(
            load_as_committer(spec["topology"], {"host.spark.batch.max.tuples": spec["max_tuples"]})
        ),
        spec["checkpoint"],
        master=spec.get("master"),
        trigger_secs=0.5,
        max_batches=spec.get("max_batches"),
        max_restarts=spec.get("max_restarts", 3),
        spark=spark,
    )
    if spark is None:
        engine.settings.update(SPARK_CONF)
        engine.install_signal_handlers()
    engine.run()
    staged = engine.staged
    assert staged is not None
    return {
        "committed": engine.committed,
        "restarts": engine.restarts,
        "acked": staged.acked,
        "failed": staged.failed,
        "deduplicated": staged.deduplicated,
    }


# ---- reading what a run left ------------------------------------------------------------------------


def committed_ids(db: Path) -> list[tuple[int, int]]:
    """(id, txid) rows, as stored."""
    return [(i, t) for i, t in query(db, "SELECT id, txid FROM ids")]


def word_counts(db: Path) -> dict[str, int]:
    with sqlite3.connect(db) as conn:
        return dict(conn.execute("SELECT word, n FROM counts"))


def audit(db: Path) -> list[int]:
    with sqlite3.connect(db) as conn:
        return [t for (t,) in conn.execute("SELECT txid FROM audit ORDER BY txid")]


def ledger(base: Path) -> tuple[list[tuple[int, str]], list[int]]:
    """(acked id, the txid it saw committed or 'None'), failed ids."""
    acks, fails = [], []
    path = base / "ledger.txt"
    for line in path.read_text().splitlines() if path.exists() else []:
        parts = line.split()
        if parts[0] == "ack":
            acks.append((int(parts[1]), parts[2] if len(parts) > 2 else "?"))
        else:
            fails.append(int(parts[1]))
    return acks, fails


def expected_counts(ids: list[int], text: Callable[[int], str]) -> dict[str, int]:
    return dict(collections.Counter(w for i in ids for w in text(i).split()))


def pystorm_text(i: int) -> str:
    return f"message {i} with some words in it"


def staged_rows_ids(checkpoint: Path, txid: int) -> list[int]:
    directory = checkpoint / "staged" / str(txid)
    out = []
    for rows in sorted(directory.glob("*.rows")):
        for line in rows.read_text().splitlines():
            out.append(json.loads(line.split("\t", 3)[2]))
    return out


def check_exactly_once(base: Path, batches: int, text: Callable[[int], str]) -> list[int]:
    """Every committed id once, counts those of the committed ids, txids 1..batches."""
    rows = committed_ids(base / "out.db")
    ids = [i for i, _ in rows]
    assert ids and len(ids) == len(set(ids)), "an id was committed twice"
    assert audit(base / "out.db") == list(range(1, batches + 1))
    assert word_counts(base / "out.db") == expected_counts(ids, text)
    return ids


# ---- two spouts, one local-cluster session ------------------------------------------------------


@pytest.fixture(scope="module")
def shared(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    base = tmp_path_factory.mktemp("staged")
    runs = []
    for spout in ("python", "pystorm"):
        topology = make_topology(base / spout, spout, limit=100_000)
        runs.append(
            {
                "name": spout,
                "topology": str(topology),
                "checkpoint": str(base / spout / "checkpoint"),
                "max_batches": 3,
                "max_tuples": 300,
            }
        )
    results, out = run_shared_runs(__file__, runs, base)
    return {"base": base, "results": results, "out": out}


def shared_runs(spec_path: str, results_path: str) -> None:
    runs_in_one_session(
        spec_path,
        results_path,
        {"spark.master": CLUSTER, **SPARK_CONF},
        "staged-spout-tests",
        drive,
    )


@pytest.mark.parametrize("spout", ["python", "pystorm"])
def test_plain_spout_batches_reach_the_committer_exactly_once_and_are_acked_after_commit(
    shared: dict[str, Any], spout: str
) -> None:
    base = shared["base"] / spout
    result = shared["results"][spout]
    assert result["committed"] == 3 and result["restarts"] == 0
    text = pystorm_text if spout == "pystorm" else sentence
    ids = check_exactly_once(base, 3, text)
    # a batch is at most host.spark.batch.max.tuples sentences
    per_txid = collections.Counter(t for _, t in committed_ids(base / "out.db"))
    assert all(0 < n <= 300 for n in per_txid.values()), per_txid
    acks, fails = ledger(base)
    acked = [i for i, _ in acks]
    # acked: exactly the committed ids, each once; failed: only tuples never staged
    assert sorted(acked) == sorted(ids)
    assert result["acked"] == len(ids)
    assert not set(fails) & set(ids)
    assert len(fails) == result["failed"]
    if spout == "python":  # the spout found each id committed when its ack came
        assert all(txid != "None" for _, txid in acks), [a for a in acks if a[1] == "None"]


def test_spout_commands_follow_the_library_lock_step_or_pipelined(tmp_path: Path) -> None:
    """No Spark: the spout process alone. Our client announces pipeline/1; pystorm does not."""
    from host.spark.spout_process import SpoutProcess
    from host.topology.files import load

    for spout, pipelined in (("python", True), ("pystorm", False)):
        topology = load(make_topology(tmp_path / spout, spout, limit=50))
        proc = SpoutProcess(topology, "sentences", topology_task(topology))
        proc.start()
        try:
            assert proc.pipelined is pipelined
            emits: list[Any] = []
            deadline = time.monotonic() + WAIT_SECS
            while len(emits) < 50:
                assert time.monotonic() < deadline
                emits.extend(proc.pump(True, 0.1))
            assert sorted(m.id for m in emits) == list(range(50))
            for m in emits[:5]:
                proc.ack(m.id)
            while not proc.idle:
                proc.pump(False, 0.1)
        finally:
            proc.close()
        acks, _ = ledger(tmp_path / spout)
        assert sorted(i for i, _ in acks) == sorted(m.id for m in emits[:5])


def topology_task(topology: Any) -> int:
    from host.runtime.context import assign_tasks

    return assign_tasks(topology).tasks_of("sentences")[0]


# ---- the driver killed between staging and commit ------------------------------------------------


def test_driver_killed_after_staging_replays_the_staged_batch(tmp_path: Path) -> None:
    limit, max_tuples = 1_000, 200
    base = tmp_path / "kill"
    db, checkpoint = base / "out.db", base / "checkpoint"
    # the first run's committer dies at txid 2 on every attempt: txid 1 commits, txid 2 is
    # staged and never committed, however long the run goes on
    faulty = make_topology(base, "python", limit=limit, env={"CRASH_TXID": "2"})
    spec = {
        "topology": str(faulty),
        "checkpoint": str(checkpoint),
        "master": LOCAL,
        "max_tuples": max_tuples,
        "max_restarts": 1000,
    }
    first = start_driver(__file__, spec, tmp_path / "first.json")
    crashes = Path(str(db) + ".crashes")
    try:
        wait_for(
            lambda: (
                crashes.exists()
                and (checkpoint / "staged" / "2" / "manifest.json").exists()
                and len(ledger(base)[0]) == len(committed_ids(db)) > 0
            ),
            first,
            "txid 1 committed and acked, txid 2 staged and failing",
        )
    finally:
        kill(first)  # SIGKILL: no clean-up, no fails, no deactivate
    assert audit(db) == [1]
    staged_2 = staged_rows_ids(checkpoint, 2)
    assert 0 < len(staged_2) <= max_tuples
    assert not set(staged_2) & {i for i, _ in committed_ids(db)}
    # the restart: txid 2 comes from the staging, and the spout's own replay of those ids (it
    # never saw them acked) is not staged twice
    make_topology(base, "python", limit=limit)  # the committer without its fault
    second = start_driver(__file__, spec, tmp_path / "second.json")
    try:
        wait_for(lambda: len(committed_ids(db)) >= limit, second, "every sentence committed")
    finally:
        second.send_signal(signal.SIGTERM)
        out = second.communicate(timeout=120)[0]
    assert second.returncode == 0, out[-5000:]
    assert "txid 2: staged by an earlier run, replayed" in out
    assert '"deduplicated": ' in out and '"deduplicated": 0' not in out
    rows = committed_ids(db)
    assert sorted(i for i, t in rows if t == 2) == sorted(staged_2)  # replayed from disk
    ids = check_exactly_once(base, max(t for _, t in rows), sentence)
    assert sorted(ids) == list(range(limit))
    acks, _ = ledger(base)
    assert sorted(i for i, _ in acks) == list(range(limit))  # each acked once, after commit
    assert all(txid != "None" for _, txid in acks)


# ---- the example, as a command ----------------------------------------------------------------------


def test_the_wordcount_example_runs_on_spark(tmp_path: Path) -> None:
    """examples/wordcount (a Python spout, bash split, Node count, Python report; no
    `transactional:`) runs on Spark: its spout staged in the driver, each micro-batch a
    transaction."""
    out = run_spark(
        Path("examples/wordcount/topology.yaml"),
        tmp_path / "checkpoint",
        LOCAL,
        "--max-batches",
        "2",
    )
    assert "txid 2 committed" in out
    assert "stopped: 2 micro-batch(es) committed" in out


# ---- no Spark ----------------------------------------------------------------------------------------


def test_batch_size_setting_is_validated() -> None:
    from host.errors import TopologyError
    from host.spark.batch_shares import max_batch_tuples
    from host.topology.model import Topology
    from host.topology.settings import SPARK_BATCH_MAX_TUPLES as MAX_TUPLES_KEY

    assert max_batch_tuples(Topology("t", ())) == 10_000
    assert max_batch_tuples(Topology("t", (), {MAX_TUPLES_KEY: 5})) == 5
    for bad in (0, -1, "10", 1.5, True):
        with pytest.raises(TopologyError, match=MAX_TUPLES_KEY):
            max_batch_tuples(Topology("t", (), {MAX_TUPLES_KEY: bad}))


def test_staged_rows_round_trip(tmp_path: Path) -> None:
    from host.spark.staging import encode_row, read_rows, staged_ids, write_staged
    from multilang.messages import Emit

    emits = [
        Emit(["tab\there", {"a": [1, 2]}], id=7),
        Emit(["line\nbreak", None], stream="other", task=9),
        Emit(["é", 1.5], id="x\ty"),
    ]
    write_staged(str(tmp_path), 3, (4, 5), [[encode_row(m) for m in emits], []])
    rows = list(read_rows(str(tmp_path), 3, 0, 4)) + list(read_rows(str(tmp_path), 3, 1, 5))
    # a row per run of tuples with one stream and direct target (host/spark/source_rows.py)
    assert [(r[0], r[1], r[2], json.loads(r[3]), r[4]) for r in rows] == [
        (0, 4, "default", [["tab\there", {"a": [1, 2]}]], None),
        (0, 4, "other", [["line\nbreak", None]], 9),
        (0, 4, "default", [["é", 1.5]], None),
    ]
    assert staged_ids(str(tmp_path), 3) == ["7", '"x\\ty"']
    assert sorted(os.listdir(tmp_path)) == ["3"]  # no temporary directory left


if __name__ == "__main__" and sys.argv[1:2] == ["--shared-runs"]:
    os.chdir(ROOT)
    sys.path.insert(0, str(ROOT))
    shared_runs(sys.argv[2], sys.argv[3])
elif __name__ == "__main__" and sys.argv[1:2] == ["--drive"]:
    drive_main(drive, sys.argv[2])
