"""The transactional Kafka spout: `python -m components.kafka_spout.transactional`, declared
`batch: spout` in a transactional topology (docs/kafka.md, "The transactional spout";
docs/transactional.md §5, `PartitionedTransactionalSpout`).

Each Kafka partition is a partition of the spout (partition p is emitted by task p % tasks, with
assign() and seek(), never a group rebalance). A partition's metadata of a batch is an offset range
(tx_ranges.py): a new batch reads up to `batch.max.records` records from where the previous one
ended (or from the first-poll strategy's offset, for a partition with no batch yet), a replay reads
exactly the stored range again, so it emits the same tuples. In the commit phase (`batch_commit`)
each task commits its partitions' offsets to the consumer group, so Kafka's tools show progress;
where a batch starts is always the host's stored metadata, never Kafka's committed offsets.

Records become tuples as in the Kafka spout (translate.py, config.py's settings). Batch components
speak JSON, so `encoding: bytes` gives base64 text.
"""

from __future__ import annotations

import json
import time
from typing import Any

from confluent_kafka import Consumer, KafkaError, KafkaException, Message
from confluent_kafka import TopicPartition as KafkaPartition

from multilang import DEBUG, WARN
from multilang.batch import PartitionedTransactionalSpout, Tx
from multilang.batch_messages import BatchEmit

from .config import EARLIEST, LATEST, UNCOMMITTED_EARLIEST, ConfigError, check_outputs
from .translate import TranslateError, translator
from .tx_config import TxSpoutConfig, tx_from_conf
from .tx_ranges import (
    Meta,
    NewRange,
    ReplayError,
    ReplayRange,
    TopicPartition,
    behind,
    layout,
    range_meta,
)

KAFKA_TIMEOUT_SECS = 10.0  # one request to the broker; a read that gets nothing for this long
WAIT_SECS = 0.1  # one blocking poll while a read waits for records
BULK = 1000  # records taken from librdkafka's queue at once
GONE = (KafkaError.UNKNOWN_TOPIC_OR_PART, KafkaError._UNKNOWN_PARTITION, KafkaError._UNKNOWN_TOPIC)


class TransactionalKafkaSpout(PartitionedTransactionalSpout):
    def open(self, conf: dict[str, Any], context: dict[str, Any]) -> None:
        who = f"transactional kafka spout {self.component_id}"
        try:
            self.settings: TxSpoutConfig = tx_from_conf(conf, context)
            check_outputs(self.settings.spout, context, who)
        except ConfigError as exc:
            raise ConfigError(f"{who}: {exc}") from None
        cfg = self.settings.spout
        self.translate = translator(cfg.translator, cfg.encoding, cfg.json_fields)
        props: dict[str, Any] = {
            "bootstrap.servers": cfg.bootstrap_servers,
            "group.id": cfg.group_id,
            "enable.auto.commit": False,
            "enable.auto.offset.store": False,
            "enable.partition.eof": True,  # a read of a new batch stops at the partition's end
            "auto.offset.reset": "earliest",  # a range whose start was deleted reads what is left
            "fetch.wait.max.ms": 10,  # the fetch that finds the end answers at once
        }
        props.update(cfg.consumer)
        self.consumer = Consumer(props)
        self.commit_meta = {
            "topologyId": conf.get("storm.id", ""),
            "taskId": self.task_id,
            "threadName": "main",
        }
        self.layout: list[TopicPartition] = []  # partition number -> Kafka partition
        self.ends: dict[int, dict[TopicPartition, int]] = {}  # txid -> where its ranges end
        self.committed: dict[TopicPartition, int] = {}  # what this process committed last
        self.found: set[TopicPartition] = set()  # the matching partitions, as last listed
        self.found_at = float("-inf")
        self.ready_at = float("-inf")  # when the coordinator last proposed a batch
        self.log(
            f"{who}: task {self.task_index} of {self.task_count}, batches of up to "
            f"{self.settings.batch_max_records} records per partition",
            DEBUG,
        )

    def close(self) -> None:
        self.consumer.close()

    # ---- task 0: the coordinator ---------------------------------------------------------------
    def partitions(self) -> int:
        return len(layout([], self._discover()))

    def _coordinate(self, txid: int, prev_meta: Any) -> Any:
        previous = prev_meta.get("topics", []) if type(prev_meta) is dict else []
        topics = layout(previous, self._discover())
        if not self._ready(topics, len(previous)):
            return None  # not ready: the host asks again after a back-off
        return {"partitions": len(topics), "topics": [[t, p] for t, p in topics]}

    def _ready(self, topics: list[TopicPartition], previous: int) -> bool:
        """Whether a batch may find records: the first batch of this process, a new partition,
        a partition whose end is past the group's committed offset (batch_commit commits them),
        or a refresh period without a batch (the end offsets a broker reports may lag)."""
        now = time.monotonic()
        ready = (
            len(topics) != previous
            or now - self.ready_at >= self.settings.spout.refresh_period
            or self._behind(topics)
        )
        if ready:
            self.ready_at = now
        return ready

    def _behind(self, topics: list[TopicPartition]) -> bool:
        live = [tp for tp in topics if tp in self.found]
        try:
            ends = {tp: self._watermarks(tp)[1] for tp in live}
            got = self.consumer.committed(
                [KafkaPartition(t, p) for t, p in live], timeout=KAFKA_TIMEOUT_SECS
            )
        except KafkaException:
            return True  # cannot tell: a batch finds out
        return behind(ends, {(tp.topic, tp.partition): tp.offset for tp in got})

    def _discover(self) -> set[TopicPartition]:
        """The partitions of the matching topics, listed at most once a refresh period."""
        now = time.monotonic()
        if now - self.found_at < self.settings.spout.refresh_period:
            return self.found
        try:
            metadata = self.consumer.list_topics(timeout=KAFKA_TIMEOUT_SECS)
        except KafkaException as exc:
            self.log(f"kafka spout: listing topics failed, keeping the last list: {exc}", WARN)
            return self.found
        self.found_at = now
        self.found = {
            (name, p)
            for name, topic in metadata.topics.items()
            if topic.error is None
            and not name.startswith("__")
            and self.settings.spout.matches(name)
            for p in topic.partitions
        }
        return self.found

    # ---- every task: emitting ------------------------------------------------------------------
    def _emit_batch(self, msg: BatchEmit) -> Any:
        topics = msg.meta.get("topics") if type(msg.meta) is dict else None
        if type(topics) is not list:
            raise ValueError(f"batch metadata without its `topics` list: {msg.meta!r}")
        self.layout = [(str(t), int(p)) for t, p in topics]
        self.ends[msg.tx.txid] = {}
        return super()._emit_batch(msg)

    def emit_new(self, tx: Tx, partition: int, last_meta: Meta | None) -> Meta | None:
        tp = self.layout[partition]
        if last_meta is not None and (last_meta["topic"], last_meta["partition"]) != tp:
            raise ReplayError(f"partition {partition} was {last_meta!r} and is now {tp}")
        if not self._exists(tp):  # gone (or not visible yet): nothing to read
            if last_meta is None:
                return None  # its first batch is still to come: the strategy applies then
            start = int(last_meta["to"])
            return range_meta(tp[0], tp[1], start, start, 0)
        start = self._first_offset(tp) if last_meta is None else int(last_meta["to"])
        scan = NewRange(start, self.settings.batch_max_records)
        if not self._scan_partition(tp, start, scan):
            self.log(f"kafka spout: {tp[0]}-{tp[1]}: no end of partition in time", WARN)
        self.ends[tx.txid][tp] = scan.to
        return range_meta(tp[0], tp[1], start, scan.to, scan.records)

    def emit_again(self, tx: Tx, partition: int, meta: Meta | None) -> None:
        if meta is None:
            return  # the partition was not there: nothing was emitted
        tp = (str(meta["topic"]), int(meta["partition"]))
        first, to = int(meta["from"]), int(meta["to"])
        scan = ReplayRange(first, to)
        if not self._scan_partition(tp, first, scan):
            raise ReplayError(  # fatal: a batch emitted in part would be taken for the whole
                f"{tp[0]}-{tp[1]}: could not read [{first}, {to}) again within "
                f"{KAFKA_TIMEOUT_SECS:g}s"
            )
        if scan.records != meta.get("records", scan.records):
            self.log(
                f"kafka spout: {tp[0]}-{tp[1]} [{first}, {to}) held {meta['records']} records "
                f"and now {scan.records} (deleted by retention or compaction since)",
                WARN,
            )
        self.ends[tx.txid][tp] = to

    def _first_offset(self, tp: TopicPartition) -> int:
        """Where a partition's first batch starts (storm-kafka-client's FirstPollOffsetStrategy:
        the UNCOMMITTED ones resume at the group's committed offset when it has one)."""
        strategy = self.settings.spout.first_poll
        low, high = self._watermarks(tp)
        if strategy not in (EARLIEST, LATEST):
            [got] = self.consumer.committed(
                [KafkaPartition(tp[0], tp[1])], timeout=KAFKA_TIMEOUT_SECS
            )
            if got.offset >= 0:
                return max(low, int(got.offset))
        return low if strategy in (EARLIEST, UNCOMMITTED_EARLIEST) else high

    def _watermarks(self, tp: TopicPartition) -> tuple[int, int]:
        low, high = self.consumer.get_watermark_offsets(
            KafkaPartition(tp[0], tp[1]), timeout=KAFKA_TIMEOUT_SECS, cached=False
        )
        return int(low), int(high)

    def _exists(self, tp: TopicPartition) -> bool:
        return tp in self.found or tp in self._discover()

    def _scan_partition(self, tp: TopicPartition, start: int, scan: NewRange | ReplayRange) -> bool:
        """Read `tp` from `start`, emitting the records `scan` keeps, until it is done (True) or
        nothing came for KAFKA_TIMEOUT_SECS (False)."""
        if scan.done:
            return True
        topic, partition = tp
        consumer, translate, emit, log = self.consumer, self.translate, self.emit, self.log
        consumer.assign([KafkaPartition(topic, partition, start)])
        deadline = time.monotonic() + KAFKA_TIMEOUT_SECS
        while not scan.done:
            messages: list[Message] = consumer.consume(BULK, 0)
            if not messages:
                if time.monotonic() >= deadline:
                    return False
                one = consumer.poll(WAIT_SECS)
                if one is None:
                    continue
                messages = [one]
            deadline = time.monotonic() + KAFKA_TIMEOUT_SECS
            for m in messages:
                err = m.error()
                if m.topic() != topic or m.partition() != partition:
                    if err is not None and err.code() != KafkaError._PARTITION_EOF:
                        log(f"kafka spout: consumer error: {err}", WARN)
                    continue
                offset = int(m.offset() or 0)
                if err is not None:
                    if err.code() == KafkaError._PARTITION_EOF:
                        scan.end(offset)
                    elif err.code() in GONE:
                        raise ReplayError(f"{topic}-{partition}: {err}")
                    else:
                        log(f"kafka spout: consumer error on {topic}-{partition}: {err}", WARN)
                elif scan.offer(offset):
                    key, value = m.key(), m.value()
                    try:
                        values = translate(topic, partition, offset, key, value)
                    except TranslateError as exc:
                        log(f"kafka spout: skipping {topic}-{partition}@{offset}: {exc}", WARN)
                        continue
                    emit(values)
                if scan.done:
                    break
        return True

    # ---- every task: the commit phase ----------------------------------------------------------
    def commit(self, tx: Tx) -> None:
        """Commit where this task's ranges of `tx` end to the consumer group (for Kafka's tools
        and the UNCOMMITTED_* strategies of a new state; never read back by this spout)."""
        ends = self.ends.pop(tx.txid, {})
        for old in [t for t in self.ends if t < tx.txid]:
            del self.ends[old]
        meta = json.dumps({**self.commit_meta, "txid": tx.txid})
        offsets = [
            KafkaPartition(t, p, o, meta)
            for (t, p), o in sorted(ends.items())
            if self.committed.get((t, p)) != o
        ]
        if not offsets:
            return
        try:
            result = self.consumer.commit(offsets=offsets, asynchronous=False)
        except KafkaException as exc:
            self.log(f"kafka spout: commit of txid {tx.txid} failed: {exc}", WARN)
            return
        for tp in result or []:
            if tp.error is None:
                self.committed[(tp.topic, tp.partition)] = tp.offset
            else:
                self.log(f"kafka spout: commit of txid {tx.txid} failed: {tp.error}", WARN)


def main() -> None:
    TransactionalKafkaSpout().run()


if __name__ == "__main__":
    main()
