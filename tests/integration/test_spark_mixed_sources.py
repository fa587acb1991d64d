"""Plain spouts beside Kafka spouts on the Spark engine (docs/spark.md §4.9): the Kafka sources'
coordinators open each txid together (host/spark/batch_opener.py), and what the plain spout
emitted is staged into it, so one micro-batch is one transaction over all of them.

The topology file: the Python ledger spout of tests/integration/test_spark_several_spouts.py (two
tasks, ids 0..n-1, acks written to its ledger with the txid it finds stored), left out where a
test says so, and one or two plain Kafka spouts (`kafka:` blocks, two tasks each: `kafka` and
`kafka2`), each on a topic of its own of 3 partitions whose records are all written before the
driver starts, 40 records a partition per micro-batch. A Python `tag` bolt (two tasks, shuffle
from every spout) emits `[source, id, text]` (a record's id: partition * 100,000 + offset, its
text the value); that file's committer stores, per txid in one SQLite transaction, those rows,
skipping a txid it already has. The driver is that file's, run from this one (`--drive`,
`local[2]`), until every id and every record is stored.
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

from tests.integration.test_spark_kafka_source import sentence, write_records
from tests.integration.test_spark_several_spouts import (
    PY_SPOUT,
    STORE,
    audit,
    crash_and_kill,
    drive,
    ledger,
    ledger_config,
    result_of,
    stop,
    stored,
    tag_and_store,
)
from tests.support import kafka_broker as broker
from tests.support.kafka_broker import committed
from tests.support.spark_runs import ROOT, drive_main, kill, start_driver, wait_for

kafka_broker = broker.kafka_broker  # the session's broker fixture

pytestmark = pytest.mark.spark

PARTITIONS, BATCH = 3, 40  # write_records: 100 records a partition
PER_PARTITION = 100_000

TAG = """\
from multilang import BasicBolt


class Tag(BasicBolt):
    # the Kafka spout's [topic, partition, offset, key, value]; the ledger spout's [id, text]
    def process(self, tup):
        if tup.component.startswith("kafka"):
            _, partition, offset, _, value = tup.values
            self.emit([tup.component, partition * 100_000 + offset, value])
        else:
            i, text = tup.values
            self.emit([tup.component, i, text])


Tag().run()
"""


def kafka_spout(bootstrap: str, topic: str) -> dict[str, Any]:
    return {
        "kafka": {"bootstrap.servers": bootstrap, "topics": [topic], "group.id": f"{topic}-group"},
        "parallelism": 2,
    }


def make_topology(
    base: Path,
    bootstrap: str,
    topics: dict[str, str],
    ids: int,
    *,
    env: dict[str, str] | None = None,
) -> Path:
    """`topics`: Kafka spout id -> its topic; the ledger spout `py` emits `ids` ids (0: it is
    left out)."""
    base.mkdir(parents=True, exist_ok=True)
    (base / "py_spout.py").write_text(PY_SPOUT)
    (base / "tag.py").write_text(TAG)
    (base / "store.py").write_text(STORE)
    spouts = {spout: kafka_spout(bootstrap, topic) for spout, topic in topics.items()}
    if ids:
        spouts["py"] = {
            "command": ["python", "py_spout.py"],
            "outputs": ["id", "text"],
            "parallelism": 2,
            "config": ledger_config(base, "py", ids),
        }
    doc = {
        "name": "mixed-sources",
        "config": {
            "test.db": str(base / "out.db"),
            "topology.max.spout.pending": 100_000,
            "host.spark.kafka.batch.max.records": BATCH,
        },
        "spouts": spouts,
        "bolts": tag_and_store(spouts, env),
    }
    path = base / "topology.yaml"
    path.write_text(yaml.safe_dump(doc))
    return path


def topics_written(bootstrap: str, spouts: tuple[str, ...]) -> dict[str, tuple[str, dict]]:
    """Kafka spout -> (a fresh topic with every record written, its end offsets)."""
    return {spout: write_records(bootstrap) for spout in spouts}


def expected(ends: dict[str, dict[int, int]], ids: int) -> list[tuple[str, int, str]]:
    """(source, id, text) of every tuple; `ends`: Kafka spout -> its topic's end offsets. Record i
    of a topic is at offset i // 3 of partition i % 3."""
    records = [
        (spout, p * PER_PARTITION + o, sentence(p + PARTITIONS * o))
        for spout, topic_ends in ends.items()
        for p, end in topic_ends.items()
        for o in range(end)
    ]
    return records + [("py", i, f"py sentence {i}") for i in range(ids)]


def check_each_once(
    db: Path, ends: dict[str, dict[int, int]], ids: int
) -> list[tuple[str, int, str, int]]:
    """Every record and every id stored once, with its own text; txids 1..n, each once."""
    rows = stored(db)
    keys = collections.Counter((s, i) for s, i, _, _ in rows)
    assert not [k for k, n in keys.items() if n > 1], "stored twice"
    assert sorted((s, i, t) for s, i, t, _ in rows) == sorted(expected(ends, ids))
    assert sorted(audit(db)) == list(range(1, max(x for *_, x in rows) + 1))
    return rows


def check_py_acks(base: Path, ids: int) -> None:
    """Each id acked once to the plain spout, and only once its txid had stored it."""
    acks, _ = ledger(base, "py")
    assert sorted(i for i, _ in acks) == list(range(ids))
    assert all(txid != "None" for _, txid in acks), [a for a in acks if a[1] == "None"]


def check_groups(bootstrap: str, topics: dict[str, tuple[str, dict]]) -> None:
    """Each Kafka spout's group committed to its topic's end."""
    for topic, ends in topics.values():
        assert committed(bootstrap, f"{topic}-group", topic, PARTITIONS) == ends, topic


def all_done(base: Path, bootstrap: str, topics: dict[str, tuple[str, dict]], ids: int) -> bool:
    """Every record and id stored, the ids acked, and every group committed to its topic's end:
    a txid's acks and Kafka commits come after its committer stored it, and a stop asked for
    between the two leaves that txid uncommitted (replayed by the next run), rightly."""
    records = sum(sum(e.values()) for _, e in topics.values())
    return (
        len(stored(base / "out.db")) >= records + ids
        and len(ledger(base, "py")[0]) >= ids
        and all(
            committed(bootstrap, f"{topic}-group", topic, PARTITIONS) == ends
            for topic, ends in topics.values()
        )
    )


def kafka_ranges(state: Path, txid: int) -> set[tuple[int, int]]:
    """(partition, offset) of every record in txid's ranges, as the spout tasks stored them
    (`state`: the directory of the spout's batch state)."""
    out: set[tuple[int, int]] = set()
    for task in (state / "user").iterdir():
        meta = json.loads((task / f"{txid}.json").read_text())
        for r in meta.values():
            if r is not None:
                out.update((r["partition"], o) for o in range(r["from"], r["to"]))
    return out


def run_until_done(
    tmp_path: Path,
    base: Path,
    topology: Path,
    bootstrap: str,
    topics: dict[str, tuple[str, dict]],
    ids: int,
    *,
    max_tuples: int = 150,
    name: str = "spec.json",
) -> str:
    """One driver run on `base`'s checkpoint until every record and id is stored (and the ids
    acked), stopped cleanly; its output."""
    checkpoint = str(base / "checkpoint")
    spec = {"topology": str(topology), "checkpoint": checkpoint, "max_tuples": max_tuples}
    proc = start_driver(__file__, spec, tmp_path / name)
    try:
        wait_for(
            lambda: all_done(base, bootstrap, topics, ids),
            proc,
            "every record and id stored, ids acked, offsets committed",
        )
    except BaseException:
        kill(proc)
        raise
    return stop(proc)


def kafka_per_txid(rows: list[tuple[str, int, str, int]]) -> collections.Counter:
    """(Kafka spout, txid, partition) -> records stored."""
    return collections.Counter(
        (s, x, i // PER_PARTITION) for s, i, _, x in rows if s.startswith("kafka")
    )


# ---- the tests -----------------------------------------------------------------------------------------


def run_mixed(
    tmp_path: Path, bootstrap: str, kafka_spouts: tuple[str, ...], ids: int
) -> tuple[Path, list[tuple[str, int, str, int]]]:
    """Kafka spouts `kafka_spouts` on fresh topics beside the ledger spout (`ids` ids), run
    until everything is stored: every record and id once, the ids acked after their commit,
    each group at its topic's end, no txid with more than a batch of a Kafka partition. The
    run's directory and the stored rows."""
    topics = topics_written(bootstrap, kafka_spouts)
    ends = {spout: e for spout, (_, e) in topics.items()}
    base = tmp_path / "run"
    topology = make_topology(base, bootstrap, {s: t for s, (t, _) in topics.items()}, ids)
    result = result_of(run_until_done(tmp_path, base, topology, bootstrap, topics, ids))
    assert (result["restarts"], result["acked"]) == (0, ids)
    rows = check_each_once(base / "out.db", ends, ids)
    check_py_acks(base, ids)
    check_groups(bootstrap, topics)
    # each txid is one batch of each Kafka source: at most 40 records a partition
    assert max(kafka_per_txid(rows).values()) <= BATCH
    return base, rows


def test_a_plain_and_a_kafka_spout_share_each_micro_batch_and_commit_each_tuple_once(
    tmp_path: Path, kafka_broker: Any
) -> None:
    base, rows = run_mixed(tmp_path, kafka_broker.bootstrap, ("kafka",), 300)
    # the plain spout's tuples at most host.spark.batch.max.tuples a micro-batch
    assert max(collections.Counter(x for s, *_, x in rows if s == "py").values()) <= 150
    # the one Kafka source keeps its state in the state directory, as it does alone
    assert not (base / "checkpoint" / "batches" / "sources").exists()


def test_two_kafka_spouts_and_a_plain_spout_each_keep_their_own_state(
    tmp_path: Path, kafka_broker: Any
) -> None:
    base, _ = run_mixed(tmp_path, kafka_broker.bootstrap, ("kafka", "kafka2"), 300)
    # each spout's batch state in its own directory, committed as far as the state directory
    state = base / "checkpoint" / "batches"
    currtx = (state / "coordinator" / "currtx").read_text().strip()
    for spout in ("kafka", "kafka2"):
        own = state / "sources" / spout
        assert (own / "coordinator" / "currtx").read_text().strip() == currtx
        assert sorted(p.name for p in (own / "user").iterdir()) == ["0", "1"]
    assert not (state / "user").exists() or not any((state / "user").iterdir())


def test_driver_killed_with_a_mixed_batch_staged_replays_it_whole(
    tmp_path: Path, kafka_broker: Any
) -> None:
    bs = kafka_broker.bootstrap
    topics = topics_written(bs, ("kafka",))
    ends = {spout: e for spout, (_, e) in topics.items()}
    ids = 1_000
    base = tmp_path / "kill"
    db, checkpoint = base / "out.db", base / "checkpoint"
    state = checkpoint / "batches"
    names = {s: t for s, (t, _) in topics.items()}
    # the first run's committer dies on the first txid after 1 that holds tuples of both spouts,
    # on every attempt: that txid stays staged (and its Kafka ranges stored) however long it runs
    faulty = make_topology(base, bs, names, ids, env={"CRASH_ON_MIXED_BATCH": "py,kafka"})

    def acked() -> bool:  # the plain spout's acks caught up with what is stored of it
        return len(ledger(base, "py")[0]) == sum(1 for r in stored(db) if r[0] == "py")

    txid, staged = crash_and_kill(tmp_path, faulty, checkpoint, acked)
    # the precondition: txid is staged with tuples of the plain spout, its Kafka ranges stored
    # (by the executors that read it), none of it stored
    assert staged and {s for s, _ in staged} == {"py"}
    ranges = kafka_ranges(state, txid)
    assert ranges, "the crashing txid holds Kafka records"
    assert not set(staged) & {(s, i) for s, i, _, _ in stored(db)}
    # the restart: txid comes back whole, the same Kafka ranges and the staged plain tuples
    make_topology(base, bs, names, ids)  # the committer without its fault
    out = run_until_done(
        tmp_path, base, faulty, bs, topics, ids, max_tuples=200, name="second.json"
    )
    assert f"txid {txid}: staged by an earlier run, replayed" in out
    rows = check_each_once(db, ends, ids)
    again = [(s, i) for s, i, _, x in rows if x == txid]
    assert sorted(k for k in again if k[0] == "py") == sorted(staged)
    assert {divmod(i, PER_PARTITION) for s, i in again if s == "kafka"} == ranges
    assert audit(db)[txid] > 1  # a later attempt than the ones that crashed
    check_py_acks(base, ids)
    check_groups(bs, topics)


def test_two_kafka_spouts_alone_resume_a_killed_driver_with_the_same_ranges(
    tmp_path: Path, kafka_broker: Any
) -> None:
    bs = kafka_broker.bootstrap
    topics = topics_written(bs, ("kafka", "kafka2"))
    ends = {spout: e for spout, (_, e) in topics.items()}
    base = tmp_path / "kill2"
    db, checkpoint = base / "out.db", base / "checkpoint"
    sources = checkpoint / "batches" / "sources"
    names = {s: t for s, (t, _) in topics.items()}
    faulty = make_topology(base, bs, names, 0, env={"CRASH_ON_MIXED_BATCH": "kafka,kafka2"})
    txid, staged = crash_and_kill(tmp_path, faulty, checkpoint, lambda: True)
    assert staged == []  # no plain spout: the stager opens the txids, with nothing of its own
    ranges = {spout: kafka_ranges(sources / spout, txid) for spout in names}
    assert all(ranges.values()), "the crashing txid holds records of both spouts"
    make_topology(base, bs, names, 0)
    run_until_done(tmp_path, base, faulty, bs, topics, 0, max_tuples=200, name="second.json")
    rows = check_each_once(db, ends, 0)
    for spout in names:
        again = {divmod(i, PER_PARTITION) for s, i, _, x in rows if s == spout and x == txid}
        assert again == ranges[spout], spout
    assert audit(db)[txid] > 1
    check_groups(bs, topics)


if __name__ == "__main__" and sys.argv[1:2] == ["--drive"]:
    os.chdir(ROOT)
    drive_main(drive, sys.argv[2])
