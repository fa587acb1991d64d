"""The older storm-kafka spout as a Kafka source of the Spark engine (host/spark/kafka_source.py,
kafka_commits.py, components/kafka_spout/storm_kafka_tx.py; docs/spark.md §4.7) against the real
broker (Tansu, tests/support/kafka_broker.py) registered in a real ZooKeeper
(tests/support/zookeeper.py) the way Kafka registers itself, on real local Spark (`local[2]`).

The topology is a Flux file written for storm-kafka (ZkHosts, SpoutConfig, StringScheme,
OffsetRequest.EarliestTime) whose spout feeds the SQLite committer (`store`, `insert`: a row per
tuple, and an audit row per txid). Flux has no `batch:`, so the driver (this file run as a
script) loads the file and makes `store` a committer, as test_spark_kafka_source.py does.

Records are written before each driver starts (a batch per record, so the broker's end offsets
are exact: kafka_broker's docstring), and ZooKeeper's nodes are set up by the test, so each
micro-batch's range is known in advance: at most 25 records per partition per micro-batch.
"""

from __future__ import annotations

import itertools
import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.support import kafka_broker as broker
from tests.support import zookeeper as zk
from tests.support.kafka_broker import create_topic, produce
from tests.support.spark_runs import (
    LOCAL,
    SPARK_CONF,
    WAIT_SECS,
    drive_main,
    kill,
    load_as_committer,
    query,
    run_host_local_until,
    start_driver,
    wait_for,
)
from tests.support.zookeeper import register_broker, register_topic

kafka_broker = broker.kafka_broker  # the session's fixtures
zookeeper = zk.zookeeper

pytestmark = pytest.mark.spark

PARTITIONS, BATCH = 2, 25
NAME = "storm-kafka-spark"
SINK = Path(__file__).resolve().parent.parent / "support" / "storm_kafka_sink.py"
INSTANCE_FILE = "storm-kafka-topology-id"  # host/spark/kafka_commits.py's, in the checkpoint
_names = itertools.count()

FLUX = """\
name: "{name}"

components:
  - id: "stringScheme"
    className: "org.apache.storm.kafka.StringScheme"
  - id: "stringMultiScheme"
    className: "org.apache.storm.spout.SchemeAsMultiScheme"
    constructorArgs:
      - ref: "stringScheme"
  - id: "zkHosts"
    className: "org.apache.storm.kafka.ZkHosts"
    constructorArgs:
      - "{zk_hosts}"
  - id: "startFrom"
    className: "kafka.api.OffsetRequest"
    factory: "EarliestTime"
  - id: "spoutConfig"
    className: "org.apache.storm.kafka.SpoutConfig"
    constructorArgs:
      - ref: "zkHosts"
      - "{topic}"
      - "{zk_root}"
      - "reader"
    properties:
      - name: "scheme"
        ref: "stringMultiScheme"
      - name: "startOffsetTime"
        ref: "startFrom"
      - name: "stateUpdateIntervalMs"
        value: 100
      - name: "ignoreZkOffsets"
        value: {ignore}

config:
  host.spark.kafka.batch.max.records: {batch}
  topology.message.timeout.secs: 60
  host.shutdown.grace.secs: 10

spouts:
  - id: "kafka-spout"
    className: "org.apache.storm.kafka.KafkaSpout"
    parallelism: 2
    constructorArgs:
      - ref: "spoutConfig"

bolts:
{bolt}

streams:
  - name: "kafka --> {bolt_id}"
    from: "kafka-spout"
    to: "{bolt_id}"
    grouping:
      type: {grouping}
"""

STORE = """\
  - id: "store"
    className: "org.apache.storm.flux.wrappers.bolts.FluxShellBolt"
    constructorArgs:
      - ["python", "-m", "components.sqlite_committer"]
    parallelism: 1"""

SINK_BOLT = """\
  - id: "sink"
    className: "org.apache.storm.flux.wrappers.bolts.FluxShellBolt"
    constructorArgs:
      - ["python", "storm_kafka_sink.py"]
      - ["line"]
    parallelism: 1"""


class Case:
    """One test's topic (registered under its own chroot), zkRoot and ZooKeeper client."""

    def __init__(self, base: Path, bootstrap: str, zookeeper: zk.ZooKeeper) -> None:
        n = f"{os.getpid()}-{next(_names)}"
        self.base = base
        self.bootstrap = bootstrap
        self.topic = f"spark-sk-{n}"
        self.chroot = f"/kafka-spark-{n}"
        self.zk_root = f"/storm-kafka-spark-{n}"
        self.zookeeper = zookeeper
        self.client = zookeeper.client()
        create_topic(bootstrap, self.topic, partitions=PARTITIONS)
        self.host, port = bootstrap.rsplit(":", 1)
        self.port = int(port)
        register_broker(self.client, 0, self.host, self.port, chroot=self.chroot)
        register_topic(self.client, self.topic, PARTITIONS, chroot=self.chroot)

    def flux(self, bolt: str, bolt_id: str, grouping: str, ignore: bool = False) -> str:
        return FLUX.format(
            ignore="true" if ignore else "false",
            name=NAME,
            zk_hosts=f"{self.zookeeper.connect}{self.chroot}",
            topic=self.topic,
            zk_root=self.zk_root,
            batch=BATCH,
            bolt=bolt,
            bolt_id=bolt_id,
            grouping=grouping,
        )

    def spark_file(self, ignore_zk_offsets: bool = False) -> Path:
        path = self.base / "spark" / "topology.yaml"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(self.flux(STORE, "store", "GLOBAL", ignore_zk_offsets))
        return path

    def local_file(self) -> Path:
        """The same spout (same zkRoot and id) feeding storm_kafka_sink.py, for `host local`."""
        path = self.base / "local" / "topology.yaml"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(self.flux(SINK_BOLT, "sink", "SHUFFLE"))
        (path.parent / "storm_kafka_sink.py").write_text(SINK.read_text())
        return path

    def produce(self, first: dict[int, int], count: int) -> dict[int, int]:
        """`count` records more in each partition, record i of partition p valued `p<p>-<i>`,
        from offset first[p]; returns the partitions' end offsets."""
        ends: dict[int, int] = {}
        for p in range(PARTITIONS):
            values = ((None, value(p, i)) for i in range(first[p], first[p] + count))
            ends.update(
                produce(self.bootstrap, self.topic, values, partition=p, one_batch_each=True)
            )
        return ends

    def node(self, partition: int) -> bytes | None:
        path = f"{self.zk_root}/reader/partition_{partition}"
        return self.client.get(path)[0] if self.client.exists(path) else None

    def offsets(self) -> dict[int, int | None]:
        return {
            p: (json.loads(data)["offset"] if (data := self.node(p)) else None)
            for p in range(PARTITIONS)
        }

    def storm_kafka_node(self, partition: int, offset: int, instance: str) -> bytes:
        """A node as storm-kafka's PartitionManager.commit writes it (json-simple: compact, its
        keys in this order), written out here rather than with our own zk_offsets.py."""
        return json.dumps(
            {
                "topology": {"id": instance, "name": NAME},
                "offset": offset,
                "partition": partition,
                "broker": {"host": self.host, "port": self.port},
                "topic": self.topic,
            },
            separators=(",", ":"),
        ).encode()

    def close(self) -> None:
        self.client.stop()
        self.client.close()


def value(partition: int, i: int) -> str:
    return f"p{partition}-{i:03d}"


def values(ranges: dict[int, tuple[int, int]]) -> list[str]:
    """The values of the records in `ranges` (partition -> [from, to)), sorted."""
    return sorted(value(p, i) for p, (lo, hi) in ranges.items() for i in range(lo, hi))


@pytest.fixture
def case(tmp_path, kafka_broker, zookeeper):
    c = Case(tmp_path, kafka_broker.bootstrap, zookeeper)
    yield c
    c.close()


# ---- the driver, run as a script --------------------------------------------------------------------


def drive(spec: dict[str, Any]) -> dict[str, Any]:
    """One engine run of spec["topology"], `store` made a committer writing to spec["db"] (with
    the committer's FAULT seam spec["fault"], if any), until spec["max_batches"]."""
    import dataclasses

    from host.spark.engine import SparkEngine
    from host.spark.plan import plan

    config = {
        "sqlite.committer.path": spec["db"],
        "sqlite.committer.table": "lines",
        "sqlite.committer.audit": "audit",
    }
    topology = load_as_committer(spec["topology"], config)
    if spec.get("fault"):
        topology = dataclasses.replace(
            topology,
            components=tuple(
                dataclasses.replace(c, env={**c.env, "FAULT": spec["fault"]})
                if c.id == "store"
                else c
                for c in topology.components
            ),
        )
    engine = SparkEngine(
        plan(topology),
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


def run_driver(spec: dict[str, Any], path: Path, restarts: int = 0) -> None:
    proc = start_driver(__file__, spec, path)
    out = proc.communicate(timeout=WAIT_SECS * 2)[0]
    assert proc.returncode == 0, out[-5000:]
    result = json.loads(out.strip().splitlines()[-1])
    assert result == {"committed": spec["max_batches"], "restarts": restarts}, out[-5000:]


# ---- what a run left --------------------------------------------------------------------------------


def stored(db: Path) -> list[str]:
    return sorted(v for (v,) in query(db, "SELECT str FROM lines"))


def audit(db: Path) -> list[tuple[int, int, int]]:
    return [
        (t, a, n) for t, a, n in query(db, "SELECT txid, attempt, tuples FROM audit ORDER BY txid")
    ]


# ---- the test -----------------------------------------------------------------------------------------


def test_offsets_start_from_and_end_in_zookeeper_as_storm_kafka_keeps_them(tmp_path, case):
    # Storm's storm-kafka (another topology instance) stopped at offset 10 of partition 0 and
    # never read partition 1: a node for partition 0 only
    storm_instance = f"{NAME}-7-1700000000"
    case.client.create(
        f"{case.zk_root}/reader/partition_0",
        case.storm_kafka_node(0, 10, storm_instance),
        makepath=True,
    )
    ends = case.produce({0: 0, 1: 0}, 60)
    assert ends == {0: 60, 1: 60}
    assert case.offsets() == {0: 10, 1: None}

    # the first run: partition 0 from its node (offset 10), partition 1 from EarliestTime; 25
    # records a partition a micro-batch: [10, 35) [35, 60) [60, 60) and [0, 25) [25, 50) [50, 60)
    spark_file = case.spark_file()
    first_checkpoint, first_db = tmp_path / "checkpoint-1", tmp_path / "first.db"
    spec = {
        "topology": str(spark_file),
        "checkpoint": str(first_checkpoint),
        "db": str(first_db),
        "max_batches": 3,
    }
    run_driver(spec, tmp_path / "first.json")
    assert stored(first_db) == values({0: (10, 60), 1: (0, 60)}), "every record once"
    assert audit(first_db) == [(1, 1, 50), (2, 1, 50), (3, 1, 10)], "the ranges, one attempt each"
    # ZooKeeper holds the ends, in storm-kafka's node and JSON, naming the checkpoint's instance
    first_instance = (first_checkpoint / INSTANCE_FILE).read_text().strip()
    assert first_instance.startswith(f"{NAME}-spark-")
    for p in range(PARTITIONS):
        assert case.node(p) == case.storm_kafka_node(p, 60, first_instance)

    # records added; the same file run again on a new checkpoint (a new deployment, whose state
    # knows nothing): it resumes from ZooKeeper, nothing read again and nothing skipped
    ends = case.produce(ends, 20)
    assert ends == {0: 80, 1: 80}
    second_checkpoint, second_db = tmp_path / "checkpoint-2", tmp_path / "second.db"
    second = {**spec, "checkpoint": str(second_checkpoint), "db": str(second_db), "max_batches": 1}
    run_driver(second, tmp_path / "second.json")
    assert stored(second_db) == values({0: (60, 80), 1: (60, 80)})
    assert audit(second_db) == [(1, 1, 40)]
    second_instance = (second_checkpoint / INSTANCE_FILE).read_text().strip()
    assert second_instance != first_instance
    for p in range(PARTITIONS):
        assert case.node(p) == case.storm_kafka_node(p, 80, second_instance)

    # and the same spout under `host local` (storm_kafka.py) resumes where Spark stopped
    ends = case.produce(ends, 10)
    local_file = case.local_file()
    received = local_file.parent / "received"

    def lines() -> list[str]:
        return sorted(received.read_text().splitlines()) if received.exists() else []

    want = values({0: (80, 90), 1: (80, 90)})
    done = run_host_local_until(
        local_file,
        tmp_path / "local-state",
        lambda: lines() == want and case.offsets() == ends,
    )
    assert done.returncode == 0, done.stdout[-5000:]
    assert lines() == want, "only the records after Spark's offsets"


def test_zookeeper_holds_only_committed_micro_batches_and_a_restart_replays_its_ranges(
    tmp_path, case
):
    ends = case.produce({0: 0, 1: 0}, 60)
    assert case.offsets() == {0: None, 1: None}
    checkpoint, db = tmp_path / "checkpoint", tmp_path / "out.db"
    state = checkpoint / "batches"
    spec = {
        "topology": str(case.spark_file()),
        "checkpoint": str(checkpoint),
        "db": str(db),
        "fault": "before_write:2",
        "max_restarts": 1000,
    }
    # the first driver's committer dies in every attempt of txid 2: txid 1 commits, txid 2 is
    # read (its ranges stored) and never committed, however long the run goes on
    first = start_driver(__file__, spec, tmp_path / "first.json")
    try:
        wait_for(
            lambda: (
                [a[0] for a in audit(db)] == [1]
                and case.offsets() == {0: BATCH, 1: BATCH}
                and all((state / "user" / str(i) / "2.json").exists() for i in (0, 1))
            ),
            first,
            "txid 1 committed, txid 2 read and failing",
            secs=WAIT_SECS * 2,
            poll=0.2,
        )
    finally:
        kill(first)  # SIGKILL: no clean-up at all
    # the precondition: txid 1 stored and written to ZooKeeper, txid 2 read and not committed
    assert [a[0] for a in audit(db)] == [1]
    assert (state / "coordinator" / "currtx").read_text().strip() == "2"
    assert case.offsets() == {0: BATCH, 1: BATCH}, "txid 2 not written to ZooKeeper"
    # the second driver, without the fault, on the same checkpoint: txid 2's stored ranges
    # again (not ZooKeeper's offsets: the checkpoint decides), then txid 3
    run_driver({**spec, "fault": None, "max_batches": 2}, tmp_path / "second.json")
    assert stored(db) == values({0: (0, 60), 1: (0, 60)}), "every record once"
    assert [(t, n) for t, _, n in audit(db)] == [(1, 50), (2, 50), (3, 20)]
    assert audit(db)[1][1] >= 2, "txid 2 is a replay"
    instance = (checkpoint / INSTANCE_FILE).read_text().strip()
    assert [case.node(p) for p in range(PARTITIONS)] == [
        case.storm_kafka_node(p, end, instance) for p, end in ends.items()
    ]


def two_spouts_flux(cases: dict[str, Case]) -> str:
    """A Flux file with one storm-kafka spout per case (spout id -> case), each with its own
    ZkHosts (the case's chroot), topic and zkRoot, all into `store` (GLOBAL)."""
    configs, spouts, streams = [], [], []
    for spout, c in cases.items():
        configs.append(
            f"""\
  - id: "zkHosts-{spout}"
    className: "org.apache.storm.kafka.ZkHosts"
    constructorArgs:
      - "{c.zookeeper.connect}{c.chroot}"
  - id: "spoutConfig-{spout}"
    className: "org.apache.storm.kafka.SpoutConfig"
    constructorArgs:
      - ref: "zkHosts-{spout}"
      - "{c.topic}"
      - "{c.zk_root}"
      - "reader"
    properties:
      - name: "scheme"
        ref: "stringMultiScheme"
"""
        )
        spouts.append(
            f"""\
  - id: "{spout}"
    className: "org.apache.storm.kafka.KafkaSpout"
    parallelism: 2
    constructorArgs:
      - ref: "spoutConfig-{spout}"
"""
        )
        streams.append(
            f"""\
  - name: "{spout} --> store"
    from: "{spout}"
    to: "store"
    grouping:
      type: GLOBAL
"""
        )
    return f"""\
name: "{NAME}"

components:
  - id: "stringScheme"
    className: "org.apache.storm.kafka.StringScheme"
  - id: "stringMultiScheme"
    className: "org.apache.storm.spout.SchemeAsMultiScheme"
    constructorArgs:
      - ref: "stringScheme"
{"".join(configs)}
config:
  host.spark.kafka.batch.max.records: {BATCH}

spouts:
{"".join(spouts)}
bolts:
{STORE}

streams:
{"".join(streams)}"""


def test_two_storm_kafka_spouts_each_keep_their_state_and_their_nodes(
    tmp_path, kafka_broker, zookeeper
):
    """Two storm-kafka spouts in one topology (docs/spark.md §4.9): each micro-batch one batch of
    each, each spout's batch state in a directory of its own, and its ends written to its own
    nodes once the micro-batch has committed."""
    cases = {
        "lines-a": Case(tmp_path / "a", kafka_broker.bootstrap, zookeeper),
        "lines-b": Case(tmp_path / "b", kafka_broker.bootstrap, zookeeper),
    }
    try:
        # 25 records a partition a micro-batch: a's [0, 25) [25, 30), b's [0, 25) [25, 40)
        ends = {"lines-a": cases["lines-a"].produce({0: 0, 1: 0}, 30)}
        ends["lines-b"] = cases["lines-b"].produce({0: 0, 1: 0}, 40)
        assert all(c.offsets() == {0: None, 1: None} for c in cases.values())
        flux = tmp_path / "topology.yaml"
        flux.write_text(two_spouts_flux(cases))
        checkpoint, db = tmp_path / "checkpoint", tmp_path / "out.db"
        spec = {
            "topology": str(flux),
            "checkpoint": str(checkpoint),
            "db": str(db),
            "max_batches": 2,
        }
        run_driver(spec, tmp_path / "spec.json")
        # the two topics' values are alike ("p0-000"...): every record once is the multiset
        want = values({0: (0, 30), 1: (0, 30)}) + values({0: (0, 40), 1: (0, 40)})
        assert stored(db) == sorted(want), "every record of both topics once"
        assert audit(db) == [(1, 1, 100), (2, 1, 40)], "each txid one batch of each spout"
        instance = (checkpoint / INSTANCE_FILE).read_text().strip()
        for spout, c in cases.items():
            assert [c.node(p) for p in range(PARTITIONS)] == [
                c.storm_kafka_node(p, end, instance) for p, end in ends[spout].items()
            ], spout
            own = checkpoint / "batches" / "sources" / spout
            assert (own / "coordinator" / "currtx").read_text().strip() == "3"
    finally:
        for c in cases.values():
            c.close()


def test_ignore_zk_offsets_ignores_another_instances_offsets_on_a_new_checkpoint(tmp_path, case):
    """storm-kafka's ignoreZkOffsets: offsets another topology instance stored are ignored (a
    Spark checkpoint is one instance), so the run starts at startOffsetTime (EarliestTime)."""
    case.client.create(
        f"{case.zk_root}/reader/partition_0",
        case.storm_kafka_node(0, 10, f"{NAME}-7-1700000000"),
        makepath=True,
    )
    ends = case.produce({0: 0, 1: 0}, 20)
    assert case.offsets() == {0: 10, 1: None}
    db = tmp_path / "out.db"
    spec = {
        "topology": str(case.spark_file(ignore_zk_offsets=True)),
        "checkpoint": str(tmp_path / "checkpoint"),
        "db": str(db),
        "max_batches": 1,
    }
    run_driver(spec, tmp_path / "run.json")
    assert stored(db) == values({0: (0, 20), 1: (0, 20)}), "partition 0 from EarliestTime too"
    instance = (tmp_path / "checkpoint" / INSTANCE_FILE).read_text().strip()
    assert [case.node(p) for p in range(PARTITIONS)] == [
        case.storm_kafka_node(p, end, instance) for p, end in ends.items()
    ]


if __name__ == "__main__" and sys.argv[1:2] == ["--drive"]:
    drive_main(drive, sys.argv[2])
