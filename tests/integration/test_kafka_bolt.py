"""The Kafka bolt against a real broker: Kafka spout -> Kafka bolt, topic to topic.

A tuple is acked only once the broker has its record (the spout's commits reaching the input's
end offsets prove every tuple was acked), and a delivery error fails the tuple, so the spout
replays it.
"""

from __future__ import annotations

import sys
from pathlib import Path

from components.kafka_spout.config import DEFAULT_FIELDS
from host.topology import TopologyBuilder
from tests.integration.components.spark.support import SteppedRun
from tests.support import kafka_broker as broker
from tests.support.kafka_broker import committed, create_topic, produce, read_topic

kafka_broker = broker.kafka_broker  # the session's broker fixture

SPOUT = [sys.executable, "-m", "components.kafka_spout"]
BOLT = [sys.executable, "-m", "components.kafka_bolt"]
RUN_SECS = 120


def topology(
    tmp_path: Path, bs: str, topic: str, group: str, bolt: dict, spout: dict | None = None
):
    b = TopologyBuilder(
        "kafka-bolt-test",
        config={"topology.max.spout.pending": 200, "host.restart.backoff.initial.secs": 0.1},
    )
    b.spout(
        "spout",
        SPOUT,
        outputs=list(DEFAULT_FIELDS),
        config={
            "kafka.spout.bootstrap.servers": bs,
            "kafka.spout.topics": topic,
            "kafka.spout.group.id": group,
            "kafka.spout.offset.commit.period.ms": 50,
            **(spout or {}),
        },
    )
    b.bolt(
        "sink",
        BOLT,
        outputs=[],
        parallelism=2,
        config={"kafka.bolt.bootstrap.servers": bs, "kafka.bolt.message.field": "value", **bolt},
    ).shuffle("spout")
    return b.build(tmp_path)


def test_every_tuple_is_written_then_acked(tmp_path, kafka_broker):
    bs = kafka_broker.bootstrap
    create_topic(bs, "bolt-in", partitions=2)
    create_topic(bs, "bolt-out")
    ends = produce(bs, "bolt-in", ((f"k{i}", f"v{i}") for i in range(500)))
    run = SteppedRun(topology(tmp_path, bs, "bolt-in", "bolt-g", {"kafka.bolt.topic": "bolt-out"}))
    run.start()
    try:
        run.until(
            lambda: committed(bs, "bolt-g", "bolt-in", 2) == ends, RUN_SECS, "every tuple acked"
        )
    finally:
        assert run.stop() == 0
    out = read_topic(bs, "bolt-out", {0: 500})
    assert sorted((m.key(), m.value()) for m in out) == sorted(
        (f"k{i}".encode(), f"v{i}".encode()) for i in range(500)
    )


def test_a_delivery_error_fails_the_tuple(tmp_path, kafka_broker):
    """The topic comes from the key field; every 50th record names an invalid topic, which the
    broker refuses: those tuples fail, are retried once, then skipped; the rest are written."""
    bs = kafka_broker.bootstrap
    create_topic(bs, "route-in")
    create_topic(bs, "route-out")
    keys = ["bad topic!" if i % 50 == 0 else "route-out" for i in range(200)]
    ends = produce(bs, "route-in", ((k, f"v{i}") for i, k in enumerate(keys)))
    topo = topology(
        tmp_path,
        bs,
        "route-in",
        "route-g",
        {"kafka.bolt.topic.field": "key"},
        spout={"kafka.spout.retry.max.retries": 1},
    )
    run = SteppedRun(topo).start()
    try:
        run.until(
            lambda: committed(bs, "route-g", "route-in", 1) == ends, RUN_SECS, "every tuple done"
        )
    finally:
        assert run.stop() == 0
    out = read_topic(bs, "route-out", {0: 196})
    assert sorted(m.value() for m in out) == sorted(f"v{i}".encode() for i in range(200) if i % 50)
    emits = run.ids()
    bad = [o for _t, _p, o in emits if o % 50 == 0]
    assert sorted(bad) == sorted([0, 50, 100, 150] * 2), "each bad tuple failed, retried once"
    assert len(emits) == 200 + 4
