"""The Kafka source of the Spark engine (host/spark/kafka_source.py, kafka_commits.py;
docs/spark.md §4.7) against the real broker (Tansu, tests/support/kafka_broker.py) on real local
Spark (`local[2]`).

The topology: a plain Kafka spout (a `kafka:` block, 2 tasks, default translator) reads a topic
of 3 partitions; a Python split bolt emits `[topic, partition, offset, key, value, word]` per
word of the record's value; the SQLite committer stores a row per tuple (`insert`) and an audit
row per txid. Validation lets `batch: committer` only into a topology with a batch spout, so the
driver (this file run as a script) loads the topology and makes `store` a committer itself, as
the Spark engine allows (as tests/integration/test_spark_staged_spouts.py does).

Every record is written before the driver starts (a batch per record, so the broker's end offsets
are exact: kafka_broker's docstring), so each micro-batch reads a known range: 100 records per
partition, 40 per micro-batch, i.e. micro-batches of 40, 40 and 20 per partition.
"""

from __future__ import annotations

import collections
import itertools
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from components.kafka_spout.translate import translator
from tests.support import kafka_broker as broker
from tests.support.kafka_broker import committed, create_topic, produce, read_topic
from tests.support.spark_runs import (
    LOCAL,
    SPARK_CONF,
    WAIT_SECS,
    drive_main,
    kill,
    load_as_committer,
    query,
    start_driver,
    wait_for,
)

kafka_broker = broker.kafka_broker  # the session's broker fixture

PARTITIONS, RECORDS, BATCH = 3, 300, 40  # 100 records a partition: 3 micro-batches
BATCHES = 3
WORDS = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta"]
_names = itertools.count()

pytestmark = pytest.mark.spark

SPLIT = """\
from multilang import BasicBolt


class Split(BasicBolt):
    # the Kafka spout's [topic, partition, offset, key, value], once per word of the value
    def process(self, tup):
        for word in (tup.values[4] or "").split():
            self.emit([*tup.values, word])


Split().run()
"""


def sentence(i: int) -> str:
    return f"{WORDS[i % 7]} {WORDS[(i * 3) % 5]} {WORDS[i % 2]} n{i % 4}"


def write_records(bootstrap: str) -> tuple[str, dict[int, int]]:
    """A fresh topic, record i (`k<i>` -> sentence(i)) in partition i % 3."""
    topic = f"spark-kafka-{os.getpid()}-{next(_names)}"
    create_topic(bootstrap, topic, partitions=PARTITIONS)
    ends: dict[int, int] = {}
    for p in range(PARTITIONS):
        records = ((f"k{i:04d}", sentence(i)) for i in range(p, RECORDS, PARTITIONS))
        ends.update(produce(bootstrap, topic, records, partition=p, one_batch_each=True))
    assert ends == {p: RECORDS // PARTITIONS for p in range(PARTITIONS)}
    return topic, ends


def make_topology(base: Path, bootstrap: str, topic: str, *, fault: str | None = None) -> Path:
    """The directory with split.py and topology.yaml; `fault`: the committer's FAULT seam."""
    base.mkdir(parents=True, exist_ok=True)
    (base / "split.py").write_text(SPLIT)
    doc = {
        "name": "spark-kafka-words",
        "config": {"host.spark.kafka.batch.max.records": BATCH},
        "spouts": {
            "reader": {
                "kafka": {
                    "bootstrap.servers": bootstrap,
                    "topics": [topic],
                    "group.id": f"{topic}-group",
                    "offset.commit.period.ms": 1000,  # no effect on Spark: a plan warning
                },
                "parallelism": 2,
            }
        },
        "bolts": {
            "split": {
                "command": ["python", "split.py"],
                "outputs": ["topic", "partition", "offset", "key", "value", "word"],
                "parallelism": 2,
                "inputs": {"reader": "shuffle"},
            },
            "store": {
                "command": ["python", "-m", "components.sqlite_committer"],
                "outputs": [],
                "inputs": {"split": "global"},
                "env": {"FAULT": fault} if fault else {},
                "config": {
                    "sqlite.committer.path": str(base / "out.db"),
                    "sqlite.committer.table": "words",
                    "sqlite.committer.audit": "audit",
                },
            },
        },
    }
    path = base / "topology.yaml"
    path.write_text(yaml.safe_dump(doc))
    return path


# ---- the driver, run as a script --------------------------------------------------------------------


def drive(spec: dict[str, Any]) -> dict[str, Any]:
    """One engine run of spec["topology"], `store` made a committer, until max_batches."""
    from host.spark.engine import SparkEngine
    from host.spark.plan import plan

    engine = SparkEngine(
        plan(load_as_committer(spec["topology"], {})),
        spec["checkpoint"],
        master=LOCAL,
        trigger_secs=0.5,
        max_batches=spec.get("max_batches"),
        max_restarts=spec.get("max_restarts", 3),
    )
    engine.settings.update(SPARK_CONF)
    engine.install_signal_handlers()
    engine.run()
    return {"committed": engine.committed, "restarts": engine.restarts}


def finish(proc: subprocess.Popen[str]) -> str:
    out = proc.communicate(timeout=WAIT_SECS * 2)[0]
    assert proc.returncode == 0, out[-5000:]
    return out


# ---- what a run left ----------------------------------------------------------------------------------


def audit(db: Path) -> list[tuple[int, int, int]]:
    return [
        (t, a, n) for t, a, n in query(db, "SELECT txid, attempt, tuples FROM audit ORDER BY txid")
    ]


def plain_spout_rows(bootstrap: str, topic: str, ends: dict[int, int]) -> list[tuple]:
    """What the topology must store: per record, the tuple the plain Kafka spout emits under
    `host local` (its default translator, string encoding: translate.py) and each word of it."""
    translate = translator("default", "string")
    rows = []
    for m in read_topic(bootstrap, topic, ends):
        values = translate(m.topic(), m.partition(), m.offset(), m.key(), m.value())
        rows.extend((*values, word) for word in values[4].split())
    return rows


def assert_exactly_once(db: Path, bootstrap: str, topic: str, ends: dict[int, int]) -> None:
    stored = query(db, "SELECT topic, partition, offset, key, value, word FROM words")
    expected = plain_spout_rows(bootstrap, topic, ends)
    assert len(stored) == len(expected), "every record's words stored once"
    assert sorted(stored) == sorted(expected), "the plain spout's tuples, each record once"
    # the word counts, against a direct count of the sentences produced
    direct = collections.Counter(w for i in range(RECORDS) for w in sentence(i).split())
    assert collections.Counter(r[5] for r in stored) == direct
    assert [a[0] for a in audit(db)] == list(range(1, BATCHES + 1)), "each txid applied once"
    group = f"{topic}-group"
    assert committed(bootstrap, group, topic, PARTITIONS) == ends, "the group at the log's end"


def words_in(bootstrap: str, topic: str, ends: dict[int, int], ranges: list[dict]) -> int:
    """How many tuples the records of the given offset ranges make."""
    inside = {(r["partition"], o) for r in ranges for o in range(r["from"], r["to"])}
    return sum(1 for row in plain_spout_rows(bootstrap, topic, ends) if (row[1], row[2]) in inside)


# ---- the tests -----------------------------------------------------------------------------------------


def test_every_record_is_counted_once_and_offsets_commit_to_the_end(tmp_path, kafka_broker):
    bs = kafka_broker.bootstrap
    topic, ends = write_records(bs)
    assert committed(bs, f"{topic}-group", topic, PARTITIONS) == dict.fromkeys(ends, -1001)
    base = tmp_path / "words"
    spec = {
        "topology": str(make_topology(base, bs, topic)),
        "checkpoint": str(base / "checkpoint"),
        "max_batches": BATCHES,
    }
    out = finish(start_driver(__file__, spec, tmp_path / "spec.json"))
    result = json.loads(out.strip().splitlines()[-1])
    assert result == {"committed": BATCHES, "restarts": 0}, out[-5000:]
    assert_exactly_once(base / "out.db", bs, topic, ends)
    # txid k read offsets [40(k-1), 40k) of each partition (the last one 20), in one attempt
    tuples = [words_in(bs, topic, ends, ranges_of(txid, ends)) for txid in (1, 2, 3)]
    assert audit(base / "out.db") == [(1, 1, tuples[0]), (2, 1, tuples[1]), (3, 1, tuples[2])]


def ranges_of(txid: int, ends: dict[int, int]) -> list[dict]:
    """The ranges micro-batch `txid` reads when every record is there before the first."""
    first = (txid - 1) * BATCH
    return [
        {"partition": p, "from": first, "to": min(first + BATCH, end)} for p, end in ends.items()
    ]


def test_a_driver_killed_mid_run_resumes_from_its_checkpoint(tmp_path, kafka_broker):
    bs = kafka_broker.bootstrap
    topic, ends = write_records(bs)
    group = f"{topic}-group"
    base = tmp_path / "kill"
    db, state = base / "out.db", base / "checkpoint" / "batches"
    spec = {
        "topology": str(make_topology(base, bs, topic, fault="before_write:2")),
        "checkpoint": str(base / "checkpoint"),
        "max_restarts": 1000,
    }
    # the first driver's committer dies in every attempt of txid 2: txid 1 commits, txid 2 is
    # read (its ranges stored) and never committed, however long the run goes on
    first = start_driver(__file__, spec, tmp_path / "first.json")
    first_ends = {p: BATCH for p in ends}
    try:
        wait_for(
            lambda: (
                [a[0] for a in audit(db)] == [1]
                and committed(bs, group, topic, PARTITIONS) == first_ends
                and all((state / "user" / str(i) / "2.json").exists() for i in (0, 1))
            ),
            first,
            "txid 1 committed, txid 2 read and failing",
            secs=WAIT_SECS * 2,
            poll=0.2,
        )
    finally:
        kill(first)  # SIGKILL: no clean-up at all
    # the precondition: txid 1 stored and committed to Kafka, txid 2 read and not committed
    assert [a[0] for a in audit(db)] == [1]
    assert (state / "coordinator" / "currtx").read_text().strip() == "2"
    assert committed(bs, group, topic, PARTITIONS) == first_ends, "txid 2 not committed to Kafka"
    stored = [json.loads((state / "user" / str(i) / "2.json").read_text()) for i in (0, 1)]
    ranges_2 = [r for task in stored for r in task.values() if r is not None]
    assert sorted((r["partition"], r["from"], r["to"]) for r in ranges_2) == [
        (p, BATCH, 2 * BATCH) for p in range(PARTITIONS)
    ]
    # the second driver, without the fault, on the same checkpoint: txid 2 again, then txid 3
    make_topology(base, bs, topic)
    second = start_driver(__file__, {**spec, "max_batches": 2}, tmp_path / "second.json")
    out = finish(second)
    assert json.loads(out.strip().splitlines()[-1])["committed"] == 2, out[-5000:]
    assert_exactly_once(db, bs, topic, ends)
    [(_, attempt, tuples)] = [a for a in audit(db) if a[0] == 2]
    assert attempt >= 2, "txid 2 is a replay"
    assert tuples == words_in(bs, topic, ends, ranges_2), "the replay read the stored ranges"


if __name__ == "__main__" and sys.argv[1:2] == ["--drive"]:
    drive_main(drive, sys.argv[2])
