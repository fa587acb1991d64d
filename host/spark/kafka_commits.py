"""The Kafka source's commits to the consumer group, made by the driver once a micro-batch has
committed (docs/spark.md §4.7), as storm-kafka-client commits what is done.

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
from typing import Any

from host.errors import TopologyError
from host.spark.kafka_source import TX_MODULE, range_ends, runs_module
from host.spark.plan import Plan, Stage
from host.spark.source import task_meta

log = logging.getLogger("host.spark")
KAFKA_TIMEOUT_SECS = 10.0  # components/kafka_spout/transactional.py's, for one request


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
