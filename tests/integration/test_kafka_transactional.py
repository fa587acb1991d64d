"""The transactional Kafka spout (components/kafka_spout/transactional.py) through the real host
and the real broker (Tansu, tests/support/kafka_broker.py): a topic of 3 partitions holding N
uniquely keyed records, the spout with 2 tasks, and the SQLite committer (one row per tuple, an
audit row per txid). Every test checks the exact invariant: each record is a row exactly once,
each txid was applied once, and the group's committed offsets reached the end of every partition.
All records are written before the topology starts, so every batch reads a known range.
"""

from __future__ import annotations

import itertools
import json
import sqlite3
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from components.audit import content_hash
from host.runtime.supervisor import Supervisor
from host.topology.model import Topology
from host.topology.native import from_document
from tests.support import kafka_broker as broker
from tests.support.kafka_broker import committed, create_topic, produce

kafka_broker = broker.kafka_broker  # the session's broker fixture

TX = Path(__file__).parent / "components" / "python" / "tx"
PARTITIONS, RECORDS, BATCH = 3, 300, 20  # 100 records a partition: 5 full batches each
FIELDS = ["topic", "partition", "offset", "key", "value"]
RUN_SECS = 50.0
_names = itertools.count()


def write_records(bootstrap: str) -> tuple[str, dict[int, int]]:
    """A fresh topic with RECORDS records `k<i>` -> `v<i>`, record i in partition i % 3; a batch
    per record, so the broker's end offsets are exact (the module docstring of kafka_broker)."""
    topic = f"tx-{next(_names)}"
    create_topic(bootstrap, topic, partitions=PARTITIONS)
    ends: dict[int, int] = {}
    for p in range(PARTITIONS):
        records = ((f"k{i:04d}", f"v{i}") for i in range(p, RECORDS, PARTITIONS))
        ends.update(produce(bootstrap, topic, records, partition=p, one_batch_each=True))
    assert sum(ends.values()) == RECORDS and len(ends) == PARTITIONS
    return topic, ends


def topology(
    tmp: Path,
    bootstrap: str,
    topic: str,
    *,
    relay_env: dict[str, str] | None = None,
    store_env: dict[str, str] | None = None,
    grace_secs: float = 5,
) -> Topology:
    """spout (2 tasks) [-> relay batch bolt (2 tasks)] -> SQLite committer."""
    py = sys.executable
    bolts: dict[str, Any] = {}
    feed = "spout"
    if relay_env is not None:
        bolts["relay"] = {
            "command": [py, str(TX / "relay_batch_bolt.py")],
            "outputs": FIELDS,
            "batch": "bolt",
            "parallelism": 2,
            "inputs": {"spout": "shuffle"},
            "env": {"LOG": str(tmp / "relay.log"), **relay_env},
        }
        feed = "relay"
    bolts["store"] = {
        "command": [py, "-m", "components.sqlite_committer"],
        "batch": "committer",
        "inputs": {feed: "global"},
        "env": store_env or {},
        "config": {
            "sqlite.committer.path": str(tmp / "out.db"),
            "sqlite.committer.table": "records",
            "sqlite.committer.audit": "audit",
        },
    }
    return from_document(
        {
            "name": "kafka-tx",
            "transactional": {"id": "kafka-tx"},
            "config": {
                "topology.max.spout.pending": 3,
                "host.state.dir": str(tmp / "state"),
                "host.restart.backoff.initial.secs": 0.1,
                "host.shutdown.grace.secs": grace_secs,
            },
            "spouts": {
                "spout": {
                    "command": [py, "-m", "components.kafka_spout.transactional"],
                    "outputs": FIELDS,
                    "batch": "spout",
                    "parallelism": 2,
                    "config": {
                        "kafka.spout.bootstrap.servers": bootstrap,
                        "kafka.spout.topics": [topic],
                        "kafka.spout.group.id": f"{topic}-group",
                        "kafka.spout.batch.max.records": BATCH,
                    },
                }
            },
            "bolts": bolts,
        }
    )


def run(topo: Topology, done: Callable[[Supervisor], bool]) -> Supervisor:
    """Run until `done` holds, then stop gracefully; fails the test if it never holds."""
    sup = Supervisor(topo)
    sup.start()
    deadline = time.monotonic() + RUN_SECS
    try:
        while sup.step(0.05):
            if sup.stop_reason is None and (done(sup) or sup.failure):
                sup.request_stop("the test has what it waited for")
            assert time.monotonic() < deadline, f"not done within {RUN_SECS}s: {sup.snapshot()}"
    finally:
        sup.finish()
    return sup


def query(tmp: Path, sql: str) -> list[tuple]:
    db = tmp / "out.db"
    if not db.exists():
        return []
    with sqlite3.connect(db, timeout=10) as conn:
        try:
            return conn.execute(sql).fetchall()
        except sqlite3.OperationalError:  # the committer has not created its tables yet
            return []


def all_stored(tmp: Path, bootstrap: str, topic: str, ends: dict[int, int]):
    """Every record is a row, and the group committed the end of every partition (each spout
    task commits in `batch_commit`, before the host records the txid as committed)."""

    def check(sup: Supervisor) -> bool:
        rows = query(tmp, "SELECT COUNT(*) FROM records")
        return (
            bool(rows)
            and rows[0][0] >= RECORDS
            and committed(bootstrap, f"{topic}-group", topic, PARTITIONS) == ends
        )

    return check


def assert_exactly_once(tmp: Path, bootstrap: str, topic: str, ends: dict[int, int]) -> list:
    rows = query(tmp, "SELECT topic, partition, offset, key, value FROM records")
    assert len(rows) == RECORDS, "each record stored once"
    assert {r[3]: r[4] for r in rows} == {f"k{i:04d}": f"v{i}" for i in range(RECORDS)}
    assert {(r[1], r[2]) for r in rows} == {(p, o) for p, end in ends.items() for o in range(end)}
    assert {r[0] for r in rows} == {topic}
    audit = query(tmp, "SELECT txid, attempt, tuples, content_hash FROM audit ORDER BY txid")
    assert [a[0] for a in audit] == list(range(1, len(audit) + 1)), "each txid applied once"
    assert sum(a[2] for a in audit) == RECORDS
    assert committed(bootstrap, f"{topic}-group", topic, PARTITIONS) == ends
    return audit


def test_every_record_is_stored_exactly_once(tmp_path: Path, kafka_broker) -> None:
    bs = kafka_broker.bootstrap
    topic, ends = write_records(bs)
    sup = run(topology(tmp_path, bs, topic), all_stored(tmp_path, bs, topic, ends))
    assert sup.failure is None
    audit = assert_exactly_once(tmp_path, bs, topic, ends)
    # 5 batches of BATCH records per partition, read in txid order: txids 1..5 are full
    assert [a[2] for a in audit[:5]] == [BATCH * PARTITIONS] * 5
    assert all(a[1] == 1 for a in audit)  # nothing failed: no replay


def test_a_replayed_batch_emits_the_same_tuples(tmp_path: Path, kafka_broker) -> None:
    bs = kafka_broker.bootstrap
    topic, ends = write_records(bs)
    topo = topology(tmp_path, bs, topic, relay_env={"FAULT": "finish:2:1"})
    sup = run(topo, all_stored(tmp_path, bs, topic, ends))
    assert sup.snapshot()["batches"]["replays"] >= 1
    audit = assert_exactly_once(tmp_path, bs, topic, ends)
    seen: dict[tuple[int, int], list] = {}
    for line in (tmp_path / "relay.log").read_text().splitlines():
        txid, attempt, values = json.loads(line)
        seen.setdefault((txid, attempt), []).append(values)
    first, again = seen[(2, 1)], seen.get((2, 2), [])
    assert len(first) == BATCH * PARTITIONS, "the failed attempt had its whole batch"
    assert sorted(map(json.dumps, again)) == sorted(map(json.dumps, first)), "identical replay"
    [(_, attempt, tuples, digest)] = [a for a in audit if a[0] == 2]
    assert (attempt, tuples, digest) == (2, len(first), content_hash(first))


def test_a_restarted_host_resumes_from_its_state(tmp_path: Path, kafka_broker) -> None:
    bs = kafka_broker.bootstrap
    topic, ends = write_records(bs)
    state = tmp_path / "state/transactional/kafka-tx"

    # first run: the committer dies at every attempt of txid 3, so the host is stopped with
    # txid 3 (and maybe later ones) emitted and never applied
    def stuck_at_3(sup: Supervisor) -> bool:
        batches = sup.path.batches
        assert batches is not None
        c = batches.coordinator
        return c.committed_txid == 2 and c.aborted_count >= 1

    first = topology(tmp_path, bs, topic, store_env={"FAULT": "before_write:3"}, grace_secs=0)
    sup = run(first, lambda s: s.path.batches is not None and stuck_at_3(s))
    assert sup.path.batches is not None and sup.path.batches.coordinator.committed_txid == 2
    assert (state / "coordinator/currtx").read_text() == "3"
    assert [r[0] for r in query(tmp_path, "SELECT txid FROM audit")] == [1, 2]
    assert query(tmp_path, "SELECT COUNT(*) FROM records") == [(2 * BATCH * PARTITIONS,)]
    stored_3 = [json.loads(f.read_text()) for f in sorted(state.glob("user/*/3.json"))]
    ranges_3 = [m for task in stored_3 for m in task.values() if m is not None]
    assert len(ranges_3) == PARTITIONS, "txid 3's ranges were stored when it was emitted"
    assert all(m["from"] == 2 * BATCH and m["to"] == 3 * BATCH for m in ranges_3)

    # second run on the same state: txid 3 is replayed from its stored ranges, then the rest
    run(topology(tmp_path, bs, topic), all_stored(tmp_path, bs, topic, ends))
    audit = assert_exactly_once(tmp_path, bs, topic, ends)
    [(_, attempt, tuples, _digest)] = [a for a in audit if a[0] == 3]
    assert attempt >= 2 and tuples == BATCH * PARTITIONS
