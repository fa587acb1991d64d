"""A topology FILE whose committer follows a plain spout (docs/spark.md §4.6): `python -m host spark`
runs it as it is, each micro-batch one transaction, and `python -m host local` refuses it before
anything starts, saying that `host spark` runs it.

The file: a plain Python spout emitting `[id, sentence]` with message id `id` from a fixed list,
in order, ten per `next`; a Python split bolt emitting `[id, word]`; the SQLite committer
(components/sqlite_committer) as `batch: committer`, inserting a row per tuple, with an audit
table. The list is far longer than the three micro-batches the run commits
(`host.spark.batch.max.tuples` each at most), so the spout never runs dry and `--max-batches 3`
always ends the run; what was committed is then compared with the sentences themselves.
"""

from __future__ import annotations

import collections
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.support.spark_runs import (
    LOCAL,
    ROOT,
    WAIT_SECS,
    applied_tuples,
    conf_args,
    kill,
    spark_command,
    start,
    wait_for,
)

SENTENCES = 3_000
MAX_TUPLES = 100  # sentences per micro-batch at most
BATCHES = 3

pytestmark = pytest.mark.spark

SPOUT = """\
import os
from collections import deque
from multilang import Spout

WORDS = ["alpha", "beta", "gamma", "delta", "epsilon"]


def sentence(i):
    return f"{WORDS[i % 5]} {WORDS[(i * 3) % 5]} sentence {i % 7}"


class Sentences(Spout):
    def initialize(self, conf, context):
        with open(conf["test.started"], "a") as f:  # the spout ran: host local must not get here
            f.write("started\\n")
        self.todo = deque(range(int(conf["test.sentences"])))
        self.go = conf.get("test.go")  # a file: nothing is emitted before it exists

    def next_tuple(self):
        if self.go is not None:
            if not os.path.exists(self.go):
                return
            self.go = None
        for _ in range(10):
            if self.todo:
                i = self.todo.popleft()
                self.emit([i, sentence(i)], id=i)

    def fail(self, i):
        self.todo.appendleft(i)


Sentences().run()
"""

SPLIT = """\
from multilang import BasicBolt


class Split(BasicBolt):
    def process(self, tup):
        i, text = tup.values
        for word in text.split():
            self.emit([i, word])


Split().run()
"""


def sentence(i: int) -> str:
    """The spout's sentence `i`, computed here directly."""
    words = ["alpha", "beta", "gamma", "delta", "epsilon"]
    return f"{words[i % 5]} {words[(i * 3) % 5]} sentence {i % 7}"


def make_topology(base: Path, go: Path | None = None) -> Path:
    """The topology directory: the two scripts and `topology.yaml`, with `batch: committer` and
    no batch spout nor `transactional:` block. `go`: the spout emits nothing before that file
    exists."""
    base.mkdir(parents=True, exist_ok=True)
    (base / "sentences.py").write_text(SPOUT)
    (base / "split.py").write_text(SPLIT)
    doc = {
        "name": "plain-committer",
        "config": {
            "test.started": str(base / "started.txt"),
            "test.sentences": SENTENCES,
            "host.spark.batch.max.tuples": MAX_TUPLES,
            "topology.max.spout.pending": 100_000,
            **({"test.go": str(go)} if go is not None else {}),
        },
        "spouts": {
            "sentences": {"command": ["python", "sentences.py"], "outputs": ["id", "sentence"]}
        },
        "bolts": {
            "split": {
                "command": ["python", "split.py"],
                "outputs": ["id", "word"],
                "parallelism": 2,
                "inputs": {"sentences": "shuffle"},
            },
            "store": {
                "command": ["python", "-m", "components.sqlite_committer"],
                "batch": "committer",
                "outputs": [],
                "inputs": {"split": "global"},
                "config": {
                    "sqlite.committer.path": str(base / "out.db"),
                    "sqlite.committer.table": "words",
                    "sqlite.committer.audit": "audit",
                },
            },
        },
    }
    path = base / "topology.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def host(*args: str, timeout: float) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "host", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def stored_words(db: Path) -> list[tuple[int, str]]:
    with sqlite3.connect(db) as conn:
        return [(int(i), w) for i, w in conn.execute("SELECT id, word FROM words")]


def test_host_spark_runs_the_file_each_sentence_committed_once(tmp_path: Path) -> None:
    path = make_topology(tmp_path / "topology")
    db = tmp_path / "topology" / "out.db"
    assert not db.exists()
    result = host(
        "spark",
        str(path),
        "--master",
        "local[2]",
        "--max-batches",
        str(BATCHES),
        "--checkpoint",
        str(tmp_path / "checkpoint"),
        "--trigger",
        "0.5",
        *conf_args(),
        timeout=WAIT_SECS * 2,  # generous: Spark's start-up on two busy shared cores
    )
    out = result.stdout + result.stderr
    assert result.returncode == 0, out[-5000:]
    assert f"stopped: {BATCHES} micro-batch(es) committed" in out, out[-5000:]
    rows = stored_words(db)
    ids = sorted({i for i, _ in rows})
    # the spout emits in order and a batch takes the oldest tuples: the committed sentences are
    # the first ones, at most MAX_TUPLES per micro-batch, and fewer than the spout has
    assert ids == list(range(len(ids))) and 0 < len(ids) <= BATCHES * MAX_TUPLES
    # each committed sentence exactly once: its words, each once, and nothing else
    expected = [(i, w) for i in ids for w in sentence(i).split()]
    assert collections.Counter(rows) == collections.Counter(expected)
    assert collections.Counter(w for _, w in rows) == collections.Counter(
        w for i in ids for w in sentence(i).split()
    )
    # one transaction per micro-batch, txids 1..3, holding every stored row
    audit = applied_tuples(db)
    assert [t for t, _ in audit] == list(range(1, BATCHES + 1))
    assert sum(n for _, n in audit) == len(rows)


def test_a_spout_with_nothing_at_the_first_trigger(tmp_path: Path) -> None:
    """A fresh query runs Spark's micro-batch 0 at its first trigger even when the source has no
    txid yet (its offset still the initial one): an empty micro-batch, which must be no
    transaction; the txids then start at Spark's micro-batch 1 (host/spark/engine.py `_txid`)."""
    go = tmp_path / "go"
    path = make_topology(tmp_path / "topology", go=go)
    db, checkpoint = tmp_path / "topology" / "out.db", tmp_path / "checkpoint"
    proc = start(spark_command(path, checkpoint, LOCAL, "--max-batches", "2"))
    try:
        # the precondition: Spark recorded micro-batch 0 done while the spout had emitted nothing
        wait_for(lambda: (checkpoint / "query" / "commits" / "0").exists(), proc, "micro-batch 0")
        assert not go.exists() and not applied_tuples(db)
        go.write_text("")
        out, _ = proc.communicate(timeout=WAIT_SECS * 2)
    finally:
        if proc.poll() is None:
            kill(proc)
    assert proc.returncode == 0, out[-5000:]
    assert "Spark batch 0: the source had nothing yet, no txid" in out, out[-5000:]
    assert "txid 2 committed (attempt 1" in out, out[-5000:]
    # txids 1 and 2, each sentence's words stored once
    assert [t for t, _ in applied_tuples(db)] == [1, 2]
    rows = stored_words(db)
    ids = sorted({i for i, _ in rows})
    assert ids == list(range(len(ids))) and ids
    assert collections.Counter(rows) == collections.Counter(
        (i, w) for i in ids for w in sentence(i).split()
    )


def test_host_local_refuses_the_file_before_anything_starts(tmp_path: Path) -> None:
    path = make_topology(tmp_path / "topology")
    started = tmp_path / "topology" / "started.txt"
    assert not started.exists()
    result = host("local", str(path), timeout=120)
    assert result.returncode == 2, result.stdout + result.stderr
    assert result.stderr == (
        f"error: {path}: component 'store': key 'batch': 'batch: committer' needs a "
        "transactional batch spout under `host local` (a spout with 'batch: spout'), and no "
        "spout here has one; on Spark every spout is transactional (each micro-batch one "
        f"transaction), so `python -m host spark {path}` runs this topology as it is\n"
    )
    assert not started.exists()  # no spout ran
    assert not (tmp_path / "topology" / "out.db").exists()
