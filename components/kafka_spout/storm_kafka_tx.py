"""The older storm-kafka spout as a transactional spout: `python -m
components.kafka_spout.storm_kafka_tx`, what the Spark engine runs in place of the storm-kafka
built-in (`components.storm_builtins.storm_kafka_spout`; docs/spark.md §4.7).

The transactional Kafka spout (transactional.py: a batch is an offset range per partition, a
replay reads the same range) with storm-kafka's three differences, each taken from the storm-kafka
spout of `host local` (storm_kafka.py) rather than written again:

- the partitions are the ones ZooKeeper lists under `ZkHosts` (`_discover`);
- a partition's first batch starts where storm-kafka would start it: the offset in its node under
  `zkRoot/id`, else `startOffsetTime`, with `ignoreZkOffsets` and `maxOffsetBehind`
  (`_first_offset`);
- records become tuples by StringScheme (`string_scheme`, one field; a record without a value is
  skipped), and the commit phase writes each partition's node in storm-kafka's JSON (`commit`),
  so a topology moved between this spout, the `host local` one and Storm's resumes where it was.

Under Spark the ranges are read in the executors, so the driver writes the nodes once the
micro-batch has committed (host/spark/kafka_commits.py); this spout's own `commit` writes them
when it runs declared `batch: spout` under `host local`.

Settings: the `kafka.spoutconfig.*` keys of storm_kafka.py, `kafka.spout.batch.max.records`, and
`kafka.spoutconfig.topology.id`, the topology instance written in the nodes and compared for
`ignoreZkOffsets` (default: `storm.id`; the Spark engine sets one per checkpoint).
"""

from __future__ import annotations

import time
from typing import Any

from multilang import WARN
from multilang.batch import Tx

from .config import PREFIX as SPOUT_PREFIX
from .config import ConfigError
from .storm_kafka import (
    EARLIEST_TIME,
    PREFIX,
    StormKafkaZooKeeper,
    settings_from_conf,
    string_scheme,
)
from .transactional import TransactionalKafkaSpout
from .tx_config import BATCH_MAX_RECORDS, NOT_FOR_BATCHES
from .tx_ranges import TopicPartition, behind
from .zk_brokers import BrokerLookupError

TOPOLOGY_ID = PREFIX + "topology.id"


def topology_id(conf: dict[str, Any]) -> str:
    """The topology instance the nodes name: `kafka.spoutconfig.topology.id`, else `storm.id`."""
    return str(conf.get(TOPOLOGY_ID) or conf.get("storm.id", ""))


def tx_spout_conf(conf: dict[str, Any], bootstrap: str) -> dict[str, Any]:
    """The transactional Kafka spout's `kafka.spout.*` settings for a storm-kafka spout's
    `conf`: storm_kafka.py's mapping (`StormKafkaSettings.spout_conf`) without the per-tuple
    settings a batch spout refuses (tx_config.py), and the batch size as given."""
    sk = settings_from_conf(conf)
    rest = {k: v for k, v in conf.items() if not k.startswith(SPOUT_PREFIX)}
    mapped = {k: v for k, v in sk.spout_conf(bootstrap).items() if k not in NOT_FOR_BATCHES}
    if BATCH_MAX_RECORDS in conf:
        mapped[BATCH_MAX_RECORDS] = conf[BATCH_MAX_RECORDS]
    return {**rest, **mapped}


class TransactionalStormKafkaSpout(TransactionalKafkaSpout):
    def open(self, conf: dict[str, Any], context: dict[str, Any]) -> None:
        who = f"storm-kafka spout {self.component_id}"
        try:
            self.sk = settings_from_conf(conf)
        except ConfigError as exc:
            raise ConfigError(f"{who}: {exc}") from None
        self.zk = StormKafkaZooKeeper(self.sk, conf)
        try:
            leaders, left_out = self.zk.read_leaders()
            self._log_left_out(left_out)
            if not leaders:
                raise BrokerLookupError(
                    f"no partition of topic {self.sk.topic!r} has a registered leader under "
                    f"{self.sk.broker_zk}{self.sk.broker_zk_path}"
                )
            self.instance = topology_id(conf)
            self.topology_name = conf.get("topology.name")
            self.log(f"{who} (transactional): {self.zk.where()}")
            super().open(tx_spout_conf(conf, self.zk.bootstrap()), context)
        except BaseException:
            self.zk.close()
            raise
        self.translate = string_scheme

    def close(self) -> None:
        try:
            super().close()
        finally:
            self.zk.close()

    def _log_left_out(self, left_out: list[str]) -> None:
        for reason in left_out:
            self.log(f"storm-kafka spout: {self.sk.topic}: {reason}; left out for now", WARN)

    # ---- which partitions: ZooKeeper's list ------------------------------------------------------
    def _discover(self) -> set[TopicPartition]:
        """The partitions ZkHosts lists, read at most once a refresh period (`refreshFreqSecs`,
        storm-kafka's ZkCoordinator); on a failed read the last list stays."""
        now = time.monotonic()
        if now - self.found_at < self.settings.spout.refresh_period:
            return self.found
        try:
            leaders, left_out = self.zk.read_leaders()
        except Exception as exc:  # kazoo's errors and BrokerLookupError
            self.log(f"storm-kafka spout: reading partitions failed, keeping them: {exc}", WARN)
            return self.found
        self._log_left_out(left_out)
        self.found_at = now
        self.found = {(self.sk.topic, p) for p in leaders}
        return self.found

    # ---- where a partition starts: its node in ZooKeeper ----------------------------------------
    def _first_offset(self, tp: TopicPartition) -> int:
        low, high = self._watermarks(tp)
        at_start_time = low if self.sk.start_offset_time == EARLIEST_TIME else high
        start, warning = self.zk.start(tp[1], self.instance, lambda: at_start_time)
        if warning:
            self.log(f"storm-kafka spout: {warning}", WARN)
        where = "EarliestTime" if self.sk.start_offset_time == EARLIEST_TIME else "LatestTime"
        if start.offset is not None:
            where = f"offset {start.offset}"
        self.log(f"storm-kafka spout: {tp[0]}-{tp[1]} starts at {where}: {start.why}")
        # an offset deleted by retention since: what is left (the consumer's reset, earliest)
        return at_start_time if start.offset is None else max(low, start.offset)

    def _behind(self, topics: list[TopicPartition]) -> bool:
        """Whether some partition's end is past the offset in its node (committed batches write
        it): then a new batch may find records."""
        live = [tp for tp in topics if tp in self.found]
        try:
            ends = {tp: self._watermarks(tp)[1] for tp in live}
            stored = {tp: self.zk.stored_offset(tp[1]) for tp in live}
        except Exception:  # the broker's or kazoo's errors: cannot tell, a batch finds out
            return True
        return behind(ends, {tp: -1 if o is None else o for tp, o in stored.items()})

    # ---- the commit phase: the nodes, as storm-kafka writes them ---------------------------------
    def commit(self, tx: Tx) -> None:
        """Write where this task's ranges of `tx` end to their partitions' nodes (under `host
        local`; on Spark the driver does it, this process having read nothing)."""
        ends = self.ends.pop(tx.txid, {})
        for old in [t for t in self.ends if t < tx.txid]:
            del self.ends[old]
        changed = {tp: o for tp, o in sorted(ends.items()) if self.committed.get(tp) != o}
        if not changed:
            return
        try:
            self.zk.write(changed, self.instance, self.topology_name)
        except Exception as exc:  # kazoo's errors: the next batch writes further
            self.log(f"storm-kafka spout: writing offsets of txid {tx.txid} failed: {exc}", WARN)
            return
        self.committed.update(changed)


def main() -> None:
    TransactionalStormKafkaSpout().run()


if __name__ == "__main__":
    main()
