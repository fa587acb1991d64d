"""The protocol side of the Kafka spout: assignment, polling, emitting, acks, fails, commits.

Everything runs on the multilang loop's thread (librdkafka's own threads fetch in the
background), and `next_tuple` never blocks on the broker: polls use a zero timeout. The rules
are storm-kafka-client's (`KafkaSpout`), written down in docs/kafka.md; the offset bookkeeping is
in offsets.py and the retry schedule in retry.py.
"""

from __future__ import annotations

import json
import time
from collections import deque
from typing import Any

from confluent_kafka import (
    OFFSET_BEGINNING,
    OFFSET_END,
    Consumer,
    KafkaError,
    KafkaException,
    Producer,
    TopicPartition,
)

from multilang import WARN, Spout

from .config import (
    AT_LEAST_ONCE,
    AT_MOST_ONCE,
    EARLIEST,
    LATEST,
    NO_GUARANTEE,
    UNCOMMITTED_EARLIEST,
    ConfigError,
    SpoutConfig,
    check_outputs,
    from_conf,
)
from .offsets import PartitionOffsets
from .retry import MessageId, RetrySchedule
from .translate import TranslateError, translator

Partition = tuple[str, int]
KAFKA_TIMEOUT_SECS = 10.0  # one metadata, committed-offsets or commit request
DEAD_LETTER_RETRY_SECS = 1.0  # a dead-letter write that failed is tried again after this


def task_share(context: dict, task_id: int | None) -> tuple[int, int]:
    """(index of this task among its component's tasks, number of tasks): the manual
    partitioner's input, as Storm's TopologyContext gives it."""
    # msgpack's reduced context has no componentid, only task->component (docs/protocol.md §11)
    component = context.get("componentid") or context.get("task->component", {}).get(str(task_id))
    tasks = sorted(int(t) for t, c in context.get("task->component", {}).items() if c == component)
    if task_id is None or task_id not in tasks:
        return 0, 1
    return tasks.index(task_id), len(tasks)


def share(partitions: list[Partition], index: int, count: int) -> list[Partition]:
    """storm-kafka-client's RoundRobinManualPartitioner: of all matching partitions sorted by
    (topic, partition), task `index` of `count` takes every count-th one from `index`."""
    return sorted(partitions)[index::count]


class KafkaSpout(Spout):
    """See docs/kafka.md for what it does and how it is configured.

    storm_kafka.py's subclass (the older storm-kafka spout: partitions and offsets in ZooKeeper)
    overrides `_refresh`, `_start_offsets` and `_commit_offsets`, and calls `_reassign`: keep
    their names and contracts."""

    def initialize(self, conf: dict, context: dict) -> None:
        try:
            self.cfg: SpoutConfig = from_conf(conf, context)
        except ConfigError as exc:
            raise ConfigError(f"kafka spout {self.component_id}: {exc}") from None
        cfg = self.cfg
        check_outputs(cfg, context, f"kafka spout {self.component_id}")
        self.index, self.count = task_share(context, self.task_id)
        self.metadata = json.dumps(
            {"topologyId": conf.get("storm.id", ""), "taskId": self.task_id, "threadName": "main"}
        )
        self.storm_id = conf.get("storm.id", "")
        # raw bytes only where the pipe carries them: msgpack (client_base.py's `serializer`)
        self.translate = translator(
            cfg.translator, cfg.encoding, cfg.json_fields, raw_bytes=self.serializer == "msgpack"
        )
        self.at_least_once = cfg.guarantee == AT_LEAST_ONCE
        self.keep_raw = cfg.dead_letter_topic is not None
        props: dict[str, Any] = {
            "bootstrap.servers": cfg.bootstrap_servers,
            "group.id": cfg.group_id,
            "enable.auto.commit": False,
            "enable.auto.offset.store": False,
            # storm-kafka-client's defaults for an out-of-range offset, per guarantee
            "auto.offset.reset": "latest" if cfg.guarantee == AT_MOST_ONCE else "earliest",
            "enable.partition.eof": False,
        }
        props.update(cfg.consumer)
        self.consumer = Consumer(props)
        self.producer: Producer | None = None  # the dead-letter topic's, made when first needed
        self.offsets: dict[
            Partition, PartitionOffsets
        ] = {}  # at-least-once: per assigned partition
        self.assigned: set[Partition] = set()
        self.positions: dict[Partition, int] = {}  # next offset to poll, for position commits
        self.inflight: dict[MessageId, tuple] = {}  # emitted, not done: (values, key, value)
        self.retry = RetrySchedule(cfg.backoff, time.monotonic)
        self.buffer: deque = deque()  # polled, not emitted yet
        self.paused: set[Partition] = set()
        now = time.monotonic()
        self.next_refresh = now  # the first next_tuple (or activate) assigns
        self.next_commit = now + cfg.commit_period
        self.dead_lettered = 0
        self.skipped = 0

    # ---- protocol hooks -------------------------------------------------------------------------
    def activate(self) -> None:
        self._refresh()

    def next_tuple(self) -> None:
        now = time.monotonic()
        if now >= self.next_refresh:
            self._refresh()
        if now >= self.next_commit and self.cfg.guarantee != AT_MOST_ONCE:
            self.next_commit = now + self.cfg.commit_period
            self._commit()
        budget = self.cfg.records_per_next
        if self.at_least_once and len(self.retry):
            emit = self.emit
            for msg_id in self.retry.ready(budget):
                entry = self.inflight.get(msg_id)
                if entry is not None:
                    emit(entry[0], id=list(msg_id))
                    budget -= 1
        if budget > 0 and not self.buffer and self.assigned:
            self._poll(budget)
        if budget > 0 and self.buffer:
            self._emit_buffered(budget)

    def ack(self, msg_id: Any) -> None:
        try:
            topic, partition, offset = msg_id
            key = (topic, partition, offset)
        except (TypeError, ValueError):
            return  # not an id we emit
        if self.inflight.pop(key, None) is None:
            return  # not ours any more (revoked partition, a restart) or a duplicate
        if self.retry.failures:
            self.retry.forget(key)
        offsets = self.offsets.get((topic, partition))
        if offsets is not None:
            offsets.done(offset)

    def fail(self, msg_id: Any) -> None:
        try:
            topic, partition, offset = msg_id
            key = (topic, partition, offset)
        except (TypeError, ValueError):
            return
        entry = self.inflight.get(key)
        if entry is None or not self.at_least_once:
            return
        if key in self.retry:
            return  # a second fail for an id already waiting to be retried
        if self.retry.failed(key):
            return
        self._give_up(key, entry)

    def deactivate(self) -> None:
        self._commit()

    def close(self) -> None:
        try:
            self._commit()
        finally:
            self.consumer.close()
            if self.producer is not None:
                self.producer.flush(KAFKA_TIMEOUT_SECS)

    # ---- assignment -----------------------------------------------------------------------------
    def _refresh(self) -> None:
        """Assign this task's share of the matching partitions (storm-kafka-client assigns
        partitions itself rather than joining a consumer group, and refreshes the list on a
        period, so new partitions and topics are picked up)."""
        self.next_refresh = time.monotonic() + self.cfg.refresh_period
        try:
            metadata = self.consumer.list_topics(timeout=KAFKA_TIMEOUT_SECS)
        except KafkaException as exc:
            self.log(f"kafka spout: listing topics failed, keeping the assignment: {exc}", WARN)
            return
        found: list[Partition] = []
        for name, topic in metadata.topics.items():
            if topic.error is not None or name.startswith("__") or not self.cfg.matches(name):
                continue
            found.extend((name, p) for p in topic.partitions)
        mine = set(share(found, self.index, self.count))
        if mine != self.assigned:
            self._reassign(mine)

    def _reassign(self, mine: set[Partition]) -> None:
        revoked = self.assigned - mine
        added = mine - self.assigned
        if revoked:
            if self.at_least_once:
                self._commit(revoked)  # what is done so far is kept, the rest is re-read
            self.consumer.incremental_unassign([TopicPartition(t, p) for t, p in revoked])
            self._forget(revoked)
        if added:
            starts = self._start_offsets(sorted(added))
            self.consumer.incremental_assign(
                [TopicPartition(t, p, starts[(t, p)]) for t, p in sorted(added)]
            )
            for tp in added:
                start = starts[tp]
                if self.at_least_once:
                    self.offsets[tp] = PartitionOffsets(start if start >= 0 else None)
                if start >= 0:
                    self.positions[tp] = start
        self.assigned = mine
        self.log(
            f"kafka spout task {self.task_id}: assigned {sorted(mine)}"
            + (f", revoked {sorted(revoked)}" if revoked else "")
        )

    def _forget(self, revoked: set[Partition]) -> None:
        """A revoked partition's pending tuples no longer count: their acks and fails are
        ignored, and whoever gets the partition re-reads from its committed offset."""
        for tp in revoked:
            self.offsets.pop(tp, None)
            self.positions.pop(tp, None)
            self.paused.discard(tp)
        for msg_id in [m for m in self.inflight if (m[0], m[1]) in revoked]:
            del self.inflight[msg_id]
        self.retry.retain_partitions(self.assigned - revoked)
        self.buffer = deque(m for m in self.buffer if (m.topic(), m.partition()) not in revoked)

    def _start_offsets(self, added: list[Partition]) -> dict[Partition, int]:
        """Where to start reading each new partition: the first-poll strategy applies unless the
        committed offset was written by this topology run (storm-kafka-client's rule: EARLIEST
        and LATEST rewind only on a new deployment, never when a task restarts)."""
        strategy = self.cfg.first_poll
        committed = self.consumer.committed(
            [TopicPartition(t, p) for t, p in added], timeout=KAFKA_TIMEOUT_SECS
        )
        starts: dict[Partition, int] = {}
        for tp in committed:
            key = (tp.topic, tp.partition)
            if tp.offset >= 0:
                if self._committed_by_this_run(tp.metadata):
                    starts[key] = tp.offset
                elif strategy == EARLIEST:
                    starts[key] = OFFSET_BEGINNING
                elif strategy == LATEST:
                    starts[key] = OFFSET_END
                else:
                    starts[key] = tp.offset
            elif strategy in (EARLIEST, UNCOMMITTED_EARLIEST):
                starts[key] = OFFSET_BEGINNING
            else:
                starts[key] = OFFSET_END
        return starts

    def _committed_by_this_run(self, metadata: str | None) -> bool:
        if not metadata or not self.storm_id:
            return False
        try:
            return bool(json.loads(metadata).get("topologyId") == self.storm_id)
        except (ValueError, AttributeError):
            return False  # written by something else than this spout

    # ---- polling and emitting -------------------------------------------------------------------
    def _poll(self, budget: int) -> None:
        if self.at_least_once:
            self._apply_bound()
            if len(self.paused) == len(self.assigned):
                return
        messages = self.consumer.consume(budget, 0)
        if not messages:
            return
        polled: dict[Partition, int] = {}
        for m in messages:
            err = m.error()
            if err is not None:
                if err.code() != KafkaError._PARTITION_EOF:
                    self.log(f"kafka spout: consumer error: {err}", WARN)
                continue
            self.buffer.append(m)
            polled[(str(m.topic()), int(m.partition() or 0))] = int(m.offset() or 0) + 1
        if self.cfg.guarantee == AT_MOST_ONCE and polled:
            # committed before anything is emitted: a crash from here on loses, never repeats
            self._commit_offsets(polled)

    def _apply_bound(self) -> None:
        """max.uncommitted.offsets: a partition with that many offsets emitted and not committed
        is paused (no more records fetched for it) until commits bring it below."""
        limit = self.cfg.max_uncommitted
        pause, resume = [], []
        for tp, offsets in self.offsets.items():
            full = offsets.uncommitted >= limit
            if full and tp not in self.paused:
                pause.append(tp)
            elif not full and tp in self.paused:
                resume.append(tp)
        if pause:
            self._pause(pause)
        if resume:
            # resume from the next offset to track: librdkafka may have dropped what it had
            # fetched ahead when the partition was paused
            for t, p in resume:
                self.consumer.seek(TopicPartition(t, p, self.offsets[(t, p)].latest + 1))
            self.consumer.resume([TopicPartition(t, p) for t, p in resume])
            self.paused.difference_update(resume)
            self.log(f"kafka spout task {self.task_id}: resumed {sorted(resume)}")

    def _pause(self, partitions: list[Partition]) -> None:
        # logged (INFO) because a paused partition is what an operator sees as a stalled spout
        self.consumer.pause([TopicPartition(t, p) for t, p in partitions])
        self.paused.update(partitions)
        self.log(
            f"kafka spout task {self.task_id}: paused {sorted(partitions)}: "
            f"max.uncommitted.offsets ({self.cfg.max_uncommitted}) reached"
        )

    def _emit_buffered(self, budget: int) -> None:
        buffer, offsets_of, inflight = self.buffer, self.offsets, self.inflight
        translate, emit, at_least_once = self.translate, self.emit, self.at_least_once
        tracked_ids = self.cfg.tracking_enforced
        keep_raw = self.keep_raw
        limit = self.cfg.max_uncommitted
        while buffer and budget > 0:
            m = buffer.popleft()
            topic, partition, offset = m.topic(), m.partition(), m.offset()
            tp = (topic, partition)
            if tp not in self.assigned:
                continue
            offsets = offsets_of.get(tp)
            if offsets is not None:
                if offset <= offsets.latest:
                    continue  # tracked already (a fetch that overlapped a seek)
                if offsets.uncommitted >= limit:
                    # over the bound: dropped and paused; the resume seeks back to it
                    if tp not in self.paused:
                        self._pause([tp])
                    continue
            key, value = m.key(), m.value()
            try:
                values = translate(topic, partition, offset, key, value)
            except TranslateError as exc:
                self.log(f"kafka spout: skipping {topic}-{partition}@{offset}: {exc}", WARN)
                if offsets is not None:
                    offsets.track(offset)
                    offsets.done(offset)
                continue
            budget -= 1
            if at_least_once:
                assert offsets is not None  # every assigned partition has one
                offsets.track(offset)
                inflight[(topic, partition, offset)] = (
                    (values, key, value) if keep_raw else (values, None, None)
                )
                emit(values, id=[topic, partition, offset])
            else:
                self.positions[tp] = offset + 1
                emit(values, id=[topic, partition, offset] if tracked_ids else None)

    # ---- giving up on a record ------------------------------------------------------------------
    def _give_up(self, msg_id: MessageId, entry: tuple) -> None:
        """The retry limit is spent: write the record to the dead-letter topic (or log it) and
        count it done, so the partition can commit past it."""
        topic, partition, offset = msg_id
        failures = self.cfg.backoff.max_retries + 1
        where = f"{topic}-{partition}@{offset}"
        dead = self.cfg.dead_letter_topic
        if dead is not None:
            error = self._dead_letter(dead, msg_id, entry, failures)
            if error is not None:
                self.log(
                    f"kafka spout: dead-letter write of {where} failed ({error}); retrying", WARN
                )
                self.retry.later(msg_id, DEAD_LETTER_RETRY_SECS)
                return
            self.dead_lettered += 1
            self.log(f"kafka spout: {where} failed {failures} times, written to {dead}", WARN)
        else:
            self.skipped += 1
            self.log(f"kafka spout: {where} failed {failures} times, skipped", WARN)
        del self.inflight[msg_id]
        offsets = self.offsets.get((topic, partition))
        if offsets is not None:
            offsets.done(offset)

    def _dead_letter(self, dead: str, msg_id: MessageId, entry: tuple, failures: int) -> str | None:
        """Write the original record to the dead-letter topic and wait for the broker's
        acknowledgement; the error text, or None once written."""
        if self.producer is None:
            self.producer = Producer(
                {"bootstrap.servers": self.cfg.bootstrap_servers, "acks": "all", "linger.ms": 0}
            )
        topic, partition, offset = msg_id
        _values, key, value = entry
        errors: list[str] = []
        self.producer.produce(
            dead,
            key=key,
            value=value,
            headers=[
                ("storm.kafka.topic", topic.encode()),
                ("storm.kafka.partition", str(partition).encode()),
                ("storm.kafka.offset", str(offset).encode()),
                ("storm.kafka.failures", str(failures).encode()),
            ],
            on_delivery=lambda err, _msg: errors.append(str(err)) if err is not None else None,
        )
        if self.producer.flush(KAFKA_TIMEOUT_SECS) > 0:
            return "not acknowledged in time"
        return errors[0] if errors else None

    # ---- commits --------------------------------------------------------------------------------
    def _commit(self, only: set[Partition] | None = None) -> None:
        if self.cfg.guarantee == NO_GUARANTEE:
            positions = {tp: o for tp, o in self.positions.items() if only is None or tp in only}
            self._commit_offsets(positions, asynchronous=True)
            return
        if not self.at_least_once:
            return
        ready: dict[Partition, int] = {}
        for tp, offsets in self.offsets.items():
            if only is not None and tp not in only:
                continue
            offset = offsets.next_commit()
            if offset is not None:
                ready[tp] = offset
        if ready and self._commit_offsets(ready):
            for tp, offset in ready.items():
                self.offsets[tp].commit(offset)

    def _commit_offsets(self, offsets: dict[Partition, int], asynchronous: bool = False) -> bool:
        if not offsets:
            return True
        partitions = [TopicPartition(t, p, o, self.metadata) for (t, p), o in offsets.items()]
        try:
            if asynchronous:
                self.consumer.commit(offsets=partitions, asynchronous=True)
                return True
            result = self.consumer.commit(offsets=partitions, asynchronous=False)
        except KafkaException as exc:
            self.log(f"kafka spout: commit failed, will try again: {exc}", WARN)
            return False
        errors = [tp for tp in result if tp.error is not None]
        if errors:
            self.log(f"kafka spout: commit failed, will try again: {errors[0].error}", WARN)
            return False
        return True


def main() -> None:
    KafkaSpout().run()
