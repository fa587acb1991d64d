"""Several plain spouts in one topology on the Spark engine (docs/spark.md §4.9): one staged
source over every task of every spout, each micro-batch one transaction over all of them.

The topology file: a Python spout (two tasks, each its share of the ids), a Node spout and, in
the first test, the bash ledger spout of tests/integration/components/host; each emits its own
text per id with the id as message id and writes every ack and fail to its own ledger. The
Python and Node spouts keep a durable record of the ids acked to them, so a restarted process
emits again only what was never acked (as a spout with its own log would). A Python `tag` bolt
(two tasks, shuffle from every spout) emits `[source component, id, text]`; the committer
(`batch: committer`, fed by `global`) stores, per txid in one SQLite transaction, those rows,
skipping a txid it already has. So a tuple routed or labelled wrongly shows as a text that is not
its source's, and one stored twice as a duplicate (source, id).

Each test runs the command's engine from this file as a script (`--drive`, on `local[2]`) until
every id of every spout is stored: a run that ends on its own count of micro-batches could end
before some spout's tuples made it into one, which would depend on the machine's speed.
"""

from __future__ import annotations

import collections
import json
import os
import signal
import sys
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.support.spark_runs import (
    LOCAL,
    ROOT,
    SPARK_CONF,
    drive_main,
    kill,
    query,
    start_driver,
    wait_for,
)

pytestmark = pytest.mark.spark

BASH_SPOUT = ROOT / "tests" / "integration" / "components" / "host" / "ledger_spout.sh"

PY_SPOUT = """\
import os, sqlite3
from collections import deque
from multilang import Spout


class Ledger(Spout):
    # its share of ids 0..limit-1 (id % tasks == its index), ten per next
    def initialize(self, conf, context):
        self.me = context["componentid"]
        mine = sorted(int(t) for t, c in context["task->component"].items() if c == self.me)
        k, n = mine.index(context["taskid"]), len(mine)
        self.db = conf["test.db"]
        self.ledger = open(conf["test.ledger"], "a", buffering=1)
        acked_path = f"{conf['test.acked']}.{context['taskid']}"
        acked = set()
        if os.path.exists(acked_path):
            acked = {int(x) for x in open(acked_path).read().split()}
        self.acked = open(acked_path, "a", buffering=1)
        self.todo = deque(i for i in range(k, int(conf["test.limit"]), n) if i not in acked)

    def next_tuple(self):
        for _ in range(10):
            if not self.todo:
                return
            i = self.todo.popleft()
            self.emit([i, f"{self.me} sentence {i}"], id=i)

    def ack(self, i):
        # the txid the committer stored the id under: an ack before its commit finds none
        row = None
        if os.path.exists(self.db):
            conn = sqlite3.connect(self.db, timeout=30)
            try:
                row = conn.execute(
                    "SELECT txid FROM rows WHERE source = ? AND id = ?", (self.me, i)
                ).fetchone()
            except sqlite3.OperationalError:
                pass
            conn.close()
        self.ledger.write(f"ack {i} {None if row is None else row[0]}\\n")
        self.acked.write(f"{i}\\n")

    def fail(self, i):
        self.ledger.write(f"fail {i}\\n")
        self.todo.append(i)


Ledger().run()
"""

JS_SPOUT = """\
const fs = require('fs');
const { Spout } = require('multilang');

new Spout({
  // ids 0..limit-1, ten per next, minus those its durable record says were acked
  initialize(conf, context) {
    const ackedPath = `${conf['test.acked']}.${context.taskid}`;
    const acked = new Set();
    if (fs.existsSync(ackedPath)) {
      for (const x of fs.readFileSync(ackedPath, 'utf8').split(/\\s+/)) if (x) acked.add(Number(x));
    }
    this.todo = [];
    for (let i = 0; i < Number(conf['test.limit']); i++) if (!acked.has(i)) this.todo.push(i);
    this.ledger = fs.openSync(conf['test.ledger'], 'a');
    this.acked = fs.openSync(ackedPath, 'a');
  },
  nextTuple(emit) {
    for (let n = 0; n < 10 && this.todo.length; n++) {
      const i = this.todo.shift();
      emit([i, `js sentence ${i}`], { id: i });
    }
  },
  ack(id) {
    fs.writeSync(this.ledger, `ack ${id}\\n`);
    fs.writeSync(this.acked, `${id}\\n`);
  },
  fail(id) {
    fs.writeSync(this.ledger, `fail ${id}\\n`);
    this.todo.push(id);
  },
}).run();
"""

TAG = """\
from multilang import BasicBolt


class Tag(BasicBolt):
    # [id, text] from the Python and Node spouts, [text] from the bash one ("message <id> ...")
    def process(self, tup):
        if len(tup.values) == 2:
            i, text = tup.values
        else:
            text = tup.values[0]
            i = int(text.split()[1])
        self.emit([tup.component, i, text])


Tag().run()
"""

STORE = """\
import os, sqlite3
from multilang.batch import Committer

# the spouts whose tuples a batch must all hold for the committer to die on it ("py,js")
CRASH = set(filter(None, os.environ.get("CRASH_ON_MIXED_BATCH", "").split(",")))


class Store(Committer):
    def initialize(self, conf, context):
        self.db = conf["test.db"]
        with sqlite3.connect(self.db) as conn:
            conn.execute(
                "CREATE TABLE IF NOT EXISTS rows (source TEXT, id INTEGER, text TEXT, txid INTEGER)"
            )
            conn.execute(
                "CREATE TABLE IF NOT EXISTS audit (txid INTEGER PRIMARY KEY, attempt INTEGER)"
            )

    def begin(self, batch):
        batch.rows = []

    def process(self, tup, batch):
        batch.rows.append(tup.values)

    def finish_batch(self, batch):
        txid, attempt = batch.tx
        if CRASH and self._crashes_at(txid, {s for s, _, _ in batch.rows}):
            with open(self.db + ".crashes", "a") as f:
                f.write(f"{txid} {attempt}\\n")
            os._exit(137)
        conn = sqlite3.connect(self.db, isolation_level=None, timeout=30)
        conn.execute("BEGIN IMMEDIATE")
        last = conn.execute("SELECT MAX(txid) FROM audit").fetchone()[0] or 0
        if txid > last:
            conn.executemany(
                "INSERT INTO rows VALUES (?, ?, ?, ?)", [(*r, txid) for r in batch.rows]
            )
            conn.execute("INSERT INTO audit VALUES (?, ?)", (txid, attempt))
        conn.execute("COMMIT")
        conn.close()

    def _crashes_at(self, txid, sources):
        # the first txid after 1 whose batch holds both spouts' tuples, then that txid on every
        # attempt: txid 1 commits, and the batch left staged mixes the two spouts
        path = self.db + ".crashes"
        if os.path.exists(path):
            return txid == int(open(path).read().split()[0])
        return txid >= 2 and sources >= CRASH


Store().run()
"""


# ---- the test topology ---------------------------------------------------------------------------


def ledger_config(base: Path, spout: str, limit: int) -> dict[str, Any]:
    return {
        "test.ledger": str(base / f"{spout}-ledger.txt"),
        "test.acked": str(base / f"{spout}-acked"),
        "test.limit": limit,
        "test.messages": limit,  # the bash spout's name for it
        "test.per.next": 10,
    }


def make_topology(base: Path, limits: dict[str, int], *, env: dict[str, str] | None = None) -> Path:
    """The components and `topology.yaml` in `base`; `limits`: spout ("py", "js", "sh") -> how
    many ids it emits (the spouts not named are left out)."""
    base.mkdir(parents=True, exist_ok=True)
    (base / "py_spout.py").write_text(PY_SPOUT)
    (base / "js_spout.js").write_text(JS_SPOUT)
    (base / "tag.py").write_text(TAG)
    (base / "store.py").write_text(STORE)
    commands = {
        "py": (["python", "py_spout.py"], ["id", "text"], 2),
        "js": (["node", "js_spout.js"], ["id", "text"], 1),
        "sh": (["bash", str(BASH_SPOUT)], ["text"], 1),
    }
    spouts = {
        name: {
            "command": command,
            "outputs": outputs,
            "parallelism": parallelism,
            "config": ledger_config(base, name, limits[name]),
        }
        for name, (command, outputs, parallelism) in commands.items()
        if name in limits
    }
    doc = {
        "name": "several-spouts",
        "config": {"test.db": str(base / "out.db"), "topology.max.spout.pending": 100_000},
        "spouts": spouts,
        "bolts": tag_and_store(spouts, env),
    }
    path = base / "topology.yaml"
    path.write_text(yaml.safe_dump(doc))
    return path


def tag_and_store(spouts: Iterable[str], env: dict[str, str] | None) -> dict[str, Any]:
    """The bolts: `tag` (tag.py, two tasks, shuffle from every spout) -> `store` (store.py, the
    committer, fed by `global`, `env` its environment)."""
    return {
        "tag": {
            "command": ["python", "tag.py"],
            "outputs": ["source", "id", "text"],
            "parallelism": 2,
            "inputs": dict.fromkeys(spouts, "shuffle"),
        },
        "store": {
            "command": ["python", "store.py"],
            "outputs": [],
            "inputs": {"tag": "global"},
            "batch": "committer",
            "env": env or {},
        },
    }


def text_of(source: str, i: int) -> str:
    """What spout `source` emits for id i."""
    return f"message {i} with some words in it" if source == "sh" else f"{source} sentence {i}"


def drive(spec: dict[str, Any]) -> dict[str, Any]:
    """One engine run (script mode) of the topology file, as `python -m host spark` loads it."""
    from host.spark.engine import SparkEngine
    from host.spark.plan import plan
    from host.topology.files import load
    from host.topology.overrides import with_overrides
    from host.topology.targets import SPARK

    topology = with_overrides(
        load(spec["topology"], target=SPARK), {"host.spark.batch.max.tuples": spec["max_tuples"]}
    )
    engine = SparkEngine(
        plan(topology),
        spec["checkpoint"],
        master=LOCAL,
        trigger_secs=0.5,
        max_restarts=spec.get("max_restarts", 3),
    )
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


def stored(db: Path) -> list[tuple[str, int, str, int]]:
    """(source, id, text, txid) rows, as stored."""
    return [(s, i, t, x) for s, i, t, x in query(db, "SELECT source, id, text, txid FROM rows")]


def audit(db: Path) -> dict[int, int]:
    """txid -> the attempt that stored it."""
    return {t: a for t, a in query(db, "SELECT txid, attempt FROM audit")}


def ledger(base: Path, spout: str) -> tuple[list[tuple[int, str]], list[int]]:
    """(acked id, the txid it saw stored, or "?" where the spout does not look), failed ids."""
    acks, fails = [], []
    path = base / f"{spout}-ledger.txt"
    for line in path.read_text().splitlines() if path.exists() else []:
        parts = line.split()
        if parts[0] == "ack":
            acks.append((int(parts[1]), parts[2] if len(parts) > 2 else "?"))
        else:
            fails.append(int(parts[1]))
    return acks, fails


def staged_rows(topology: Path, checkpoint: Path, txid: int) -> list[tuple[str, int]]:
    """(spout, id) of each tuple staged for txid: the spout is the one whose task the manifest
    names for the file."""
    from host.runtime.context import assign_tasks
    from host.topology.files import load
    from host.topology.targets import SPARK

    owner = assign_tasks(load(str(topology), target=SPARK)).task_to_component
    directory = checkpoint / "staged" / str(txid)
    manifest = json.loads((directory / "manifest.json").read_text())
    out = []
    for index, task in enumerate(manifest["tasks"]):
        for line in (directory / f"{index}.rows").read_text().splitlines():
            out.append((owner[task], json.loads(line.split("\t", 3)[2])))
    return out


def check_every_id_once(base: Path, limits: dict[str, int]) -> list[tuple[str, int, str, int]]:
    """Every id of every spout stored once, under its own spout and with its own text; txids
    1..n stored, each once."""
    rows = stored(base / "out.db")
    keys = [(s, i) for s, i, _, _ in rows]
    duplicates = [k for k, n in collections.Counter(keys).items() if n > 1]
    assert not duplicates, f"stored twice: {duplicates[:10]}"
    assert sorted(keys) == sorted((s, i) for s, n in limits.items() for i in range(n))
    wrong = [(s, i, t) for s, i, t, _ in rows if t != text_of(s, i)]
    assert not wrong, f"tuples under another spout than the one that emitted them: {wrong[:10]}"
    assert sorted(audit(base / "out.db")) == list(range(1, max(x for *_, x in rows) + 1))
    return rows


def check_acks(base: Path, limits: dict[str, int]) -> None:
    """Each spout's tuples acked to that spout, each once, and only after its commit."""
    for spout, n in limits.items():
        acks, _ = ledger(base, spout)
        assert sorted(i for i, _ in acks) == list(range(n)), spout
        if spout == "py":  # it looks its ids up in the committer's table when acked
            assert all(txid != "None" for _, txid in acks), [a for a in acks if a[1] == "None"]


def all_stored(db: Path, limits: dict[str, int]) -> bool:
    return len(stored(db)) >= sum(limits.values())


def all_stored_and_acked(base: Path, limits: dict[str, int]) -> bool:
    """Every id stored and every spout's ledger holding as many acks: the acks of a txid come
    after the committer stored it, so a stop asked for between the two would leave that txid
    uncommitted (replayed by the next run) and its ids unacked, rightly."""
    return all_stored(base / "out.db", limits) and all(
        len(ledger(base, spout)[0]) >= n for spout, n in limits.items()
    )


def result_of(out: str) -> dict[str, Any]:
    """What `drive` returned, from the driver's output (its one JSON line)."""
    line = next(x for x in reversed(out.splitlines()) if x.startswith('{"committed"'))
    result: dict[str, Any] = json.loads(line)
    return result


def stop(proc: Any) -> str:
    """SIGTERM to the driver: a clean stop; its output."""
    proc.send_signal(signal.SIGTERM)
    out: str = proc.communicate(timeout=120)[0]
    assert proc.returncode == 0, out[-5000:]
    return out


def crash_and_kill(
    tmp_path: Path, topology: Path, checkpoint: Path, acked: Callable[[], bool]
) -> tuple[int, list[tuple[str, int]]]:
    """Runs the driver on `topology`, whose committer dies on every attempt of one txid (the
    first after 1 holding tuples of the spouts CRASH_ON_MIXED_BATCH names), until the txids
    before it are committed, `acked()` (the spouts' acks caught up with them) and that txid
    staged; SIGKILLs it (no clean-up, no fails, no deactivate). That txid, and the (spout, id)
    of the plain spouts' tuples staged for it."""
    db = checkpoint.parent / "out.db"
    crashes = Path(str(db) + ".crashes")
    spec = {
        "topology": str(topology),
        "checkpoint": str(checkpoint),
        "max_tuples": 200,
        "max_restarts": 1000,
    }

    def crash_txid() -> int:
        return int(crashes.read_text().split()[0])

    first = start_driver(__file__, spec, tmp_path / "first.json")
    try:
        wait_for(
            lambda: (
                crashes.exists()
                and (checkpoint / "staged" / str(crash_txid()) / "manifest.json").exists()
                and sorted(audit(db)) == list(range(1, crash_txid()))
                and acked()
            ),
            first,
            "the txids before the crashing one committed and acked, the crashing one staged",
        )
    finally:
        kill(first)
    txid = crash_txid()
    assert (checkpoint / "batches" / "coordinator" / "currtx").read_text().strip() == str(txid)
    return txid, staged_rows(topology, checkpoint, txid)


# ---- the tests ---------------------------------------------------------------------------------------


def test_three_plain_spouts_in_three_languages_commit_each_tuple_once(tmp_path: Path) -> None:
    limits = {"py": 300, "js": 300, "sh": 100}
    base = tmp_path / "three"
    topology = make_topology(base, limits)
    spec = {"topology": str(topology), "checkpoint": str(base / "checkpoint"), "max_tuples": 150}
    proc = start_driver(__file__, spec, tmp_path / "spec.json")
    try:
        wait_for(
            lambda: all_stored_and_acked(base, limits), proc, "every spout's ids stored and acked"
        )
    except BaseException:
        kill(proc)
        raise
    out = stop(proc)
    result = result_of(out)
    assert result["restarts"] == 0
    rows = check_every_id_once(base, limits)
    check_acks(base, limits)
    assert result["acked"] == sum(limits.values())
    # a micro-batch is at most host.spark.batch.max.tuples tuples, whatever spouts they came from
    per_txid = collections.Counter(x for *_, x in rows)
    assert all(0 < n <= 150 for n in per_txid.values()), per_txid


def test_driver_killed_mid_batch_replays_the_staged_batch_of_both_spouts(tmp_path: Path) -> None:
    limits = {"py": 1_000, "js": 1_000}
    base = tmp_path / "kill"
    db, checkpoint = base / "out.db", base / "checkpoint"
    # the first run's committer dies on the first txid after 1 that holds both spouts' tuples,
    # on every attempt: that txid stays staged and uncommitted however long the run goes on
    faulty = make_topology(base, limits, env={"CRASH_ON_MIXED_BATCH": "py,js"})
    txid, staged = crash_and_kill(
        tmp_path,
        faulty,
        checkpoint,
        lambda: sum(len(ledger(base, s)[0]) for s in limits) == len(stored(db)),
    )
    assert {s for s, _ in staged} == {"py", "js"}  # the precondition: a batch of both spouts
    assert not set(staged) & {(s, i) for s, i, _, _ in stored(db)}
    # the restart: txid `txid` comes from the staging, and the spouts' own replay of those ids
    # (never acked to them) is not staged twice
    make_topology(base, limits)  # the committer without its fault
    spec = {"topology": str(faulty), "checkpoint": str(checkpoint), "max_tuples": 200}
    second = start_driver(__file__, spec, tmp_path / "second.json")
    try:
        wait_for(
            lambda: all_stored_and_acked(base, limits), second, "every spout's ids stored and acked"
        )
    except BaseException:
        kill(second)
        raise
    out = stop(second)
    assert f"txid {txid}: staged by an earlier run, replayed" in out
    result = result_of(out)
    assert result["deduplicated"] > 0
    rows = check_every_id_once(base, limits)
    assert sorted((s, i) for s, i, _, x in rows if x == txid) == sorted(staged)  # from disk
    assert audit(db)[txid] > 1  # a later attempt than the ones that crashed
    check_acks(base, limits)


if __name__ == "__main__" and sys.argv[1:2] == ["--drive"]:
    os.chdir(ROOT)
    drive_main(drive, sys.argv[2])
