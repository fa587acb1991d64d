"""The Kafka source's commits, made by the driver once a micro-batch has committed (docs/spark.md
§4.7): to the consumer group, as storm-kafka-client commits what is done (`KafkaCommits`), or, for
the older storm-kafka spout, to its partitions' nodes in ZooKeeper, as storm-kafka writes them
(`ZooKeeperCommits`). `offset_commits` picks the one the spout needs; the engine sees only
`OffsetCommits`.

Why the driver and not the spout's `batch_commit`: on Spark a txid's ranges are read by the
spout tasks' processes in the executors, while `batch_commit` goes to the driver's own process
per task (host/spark/engine.py), which never read them, so the transactional Kafka spout has no
ranges to commit there. The ranges are in the state directory (each task's stored `batch_meta`),
so the driver commits where they end: the same offsets, group and commit metadata
(`{"topologyId", "taskId", "threadName", "txid"}`) as the spout commits under `host local`.

A failed commit is logged and changes nothing (as in the spout): the host's state, not Kafka's
committed offsets, is where a batch starts; the next committed micro-batch commits further.
"""

from __future__ import annotations

import json
import logging
import os
import uuid
from typing import Any, Protocol

from components.files import write_atomically
from host.errors import TopologyError
from host.spark.kafka_source import STORM_KAFKA_TX_MODULE, TX_MODULE, range_ends, runs_module
from host.spark.plan import Plan, Stage
from host.spark.source import task_meta

log = logging.getLogger("host.spark")
KAFKA_TIMEOUT_SECS = 10.0  # components/kafka_spout/transactional.py's, for one request
INSTANCE_FILE = "storm-kafka-topology-id"  # in the checkpoint, beside `query` and `batches`


class OffsetCommits(Protocol):
    """Where a Kafka source's offsets go once a txid has committed. Neither method raises for a
    failed write: it is logged, and the next committed txid writes further."""

    def commit(self, txid: int) -> None: ...

    def close(self) -> None: ...


def offset_commits(plan: Plan, spout: Stage, state_root: str, run_id: str) -> OffsetCommits | None:
    """The commits a transactional Kafka spout's ranges need (a Kafka source, or one declared
    `batch: spout`): ZooKeeper's nodes for the storm-kafka spout, the group for the others;
    None for any other spout."""
    if runs_module(spout.component.command, STORM_KAFKA_TX_MODULE):
        return ZooKeeperCommits(plan, spout, state_root, run_id)
    return KafkaCommits.for_spout(plan, spout, state_root, run_id)


def topology_instance(checkpoint: str, topology_name: str) -> str:
    """The storm-kafka topology instance of a checkpoint (`<name>-spark-<random>`), made the
    first time and kept in it: the id the nodes name and ignoreZkOffsets compares, so a restart
    on the same checkpoint is the same instance and a new checkpoint a new one, as a restarted
    worker and a new `storm jar` are on Storm."""
    path = os.path.join(checkpoint, INSTANCE_FILE)
    try:
        with open(path, encoding="utf-8") as f:
            kept = f.read().strip()
        if kept:
            return kept
    except FileNotFoundError:
        pass
    os.makedirs(checkpoint, exist_ok=True)
    instance = f"{topology_name}-spark-{uuid.uuid4().hex[:12]}"
    write_atomically(path, f"{instance}\n".encode())
    return instance


class KafkaCommits:
    """Commits a committed txid's ranges to the spout's consumer group. Not thread-safe."""

    def __init__(self, plan: Plan, spout: Stage, state_root: str, run_id: str) -> None:
        from components.kafka_spout.config import ConfigError
        from components.kafka_spout.tx_config import tx_from_conf
        from host.runtime.context import build_conf

        conf = build_conf(plan.topology, spout.component, run_id)
        try:
            settings = tx_from_conf(conf, {"componentid": spout.id}).spout
        except ConfigError as exc:  # before anything starts, as the spout would when it starts
            raise TopologyError(
                f"cannot run as a Kafka source: {exc}",
                file=plan.topology.source,
                component=spout.id,
            ) from None
        self.props: dict[str, Any] = {
            "bootstrap.servers": settings.bootstrap_servers,
            "group.id": settings.group_id,
            "enable.auto.commit": False,
            **settings.consumer,
        }
        self.group = settings.group_id
        self.storm_id = str(conf.get("storm.id", ""))
        self.tasks = spout.tasks
        self.state_root = state_root
        self.committed: dict[tuple[str, int], int] = {}  # what this driver committed last
        self._consumer: Any = None  # made on the first commit: it never joins the group

    @classmethod
    def for_spout(
        cls, plan: Plan, spout: Stage, state_root: str, run_id: str
    ) -> KafkaCommits | None:
        """Commits for a transactional Kafka spout (a Kafka source, or one declared `batch:
        spout`); None for any other spout."""
        if not runs_module(spout.component.command, TX_MODULE):
            return None
        return cls(plan, spout, state_root, run_id)

    def commit(self, txid: int) -> None:
        from confluent_kafka import KafkaException, TopicPartition

        offsets: list[Any] = []
        for index, task in enumerate(self.tasks):
            ends = range_ends([task_meta(self.state_root, index, txid)])
            meta = json.dumps(
                {"topologyId": self.storm_id, "taskId": task, "threadName": "main", "txid": txid}
            )
            offsets.extend(
                TopicPartition(t, p, o, meta)
                for (t, p), o in sorted(ends.items())
                if self.committed.get((t, p)) != o
            )
        if not offsets:
            return
        if self._consumer is None:
            from confluent_kafka import Consumer

            self._consumer = Consumer(self.props)
        try:
            result = self._consumer.commit(offsets=offsets, asynchronous=False)
        except KafkaException as exc:
            log.warning(
                "kafka source: commit of txid %d to group %s failed: %s", txid, self.group, exc
            )
            return
        for tp in result or []:
            if tp.error is None:
                self.committed[(tp.topic, tp.partition)] = tp.offset
            else:
                log.warning(
                    "kafka source: commit of txid %d to group %s failed: %s",
                    txid,
                    self.group,
                    tp.error,
                )

    def close(self) -> None:
        if self._consumer is not None:
            self._consumer.close()
            self._consumer = None


class ZooKeeperCommits:
    """Writes a committed txid's range ends to the storm-kafka spout's nodes under
    `zkRoot/id`, in its JSON (components/kafka_spout/storm_kafka.py `StormKafkaZooKeeper`, the
    same writer the spout uses under `host local`), naming the checkpoint's topology instance.
    The leader in each node is read from ZkHosts at each write, as storm-kafka names the broker
    it fetched from. Not thread-safe."""

    def __init__(self, plan: Plan, spout: Stage, state_root: str, run_id: str) -> None:
        from components.kafka_spout.config import ConfigError
        from components.kafka_spout.storm_kafka import settings_from_conf
        from components.kafka_spout.storm_kafka_tx import topology_id
        from host.runtime.context import build_conf

        conf = build_conf(plan.topology, spout.component, run_id)
        try:
            self.sk = settings_from_conf(conf)
        except ConfigError as exc:
            raise TopologyError(
                f"cannot run as a Kafka source: {exc}",
                file=plan.topology.source,
                component=spout.id,
            ) from None
        self.conf = conf
        self.instance = topology_id(conf)
        self.topology_name = plan.topology.name
        self.tasks = spout.tasks
        self.state_root = state_root
        self.committed: dict[tuple[str, int], int] = {}  # what this driver wrote last
        self._zk: Any = None  # connected at the first write

    def commit(self, txid: int) -> None:
        ends: dict[tuple[str, int], int] = {}
        for index in range(len(self.tasks)):
            ends.update(range_ends([task_meta(self.state_root, index, txid)]))
        changed = {tp: o for tp, o in sorted(ends.items()) if self.committed.get(tp) != o}
        if not changed:
            return
        try:
            if self._zk is None:
                from components.kafka_spout.storm_kafka import StormKafkaZooKeeper

                self._zk = StormKafkaZooKeeper(self.sk, self.conf)
            self._zk.read_leaders()
            self._zk.write(changed, self.instance, self.topology_name)
        except Exception as exc:  # kazoo's errors, ZooKeeper unreachable, no broker list
            log.warning(
                "kafka source: writing the offsets of txid %d to ZooKeeper at %s failed: %s",
                txid,
                self.sk.base_path,
                exc,
            )
            return
        self.committed.update(changed)

    def close(self) -> None:
        if self._zk is not None:
            self._zk.close()
            self._zk = None
