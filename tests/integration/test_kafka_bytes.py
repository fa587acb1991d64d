"""Raw bytes from Kafka to Kafka against the real broker (tests/support/kafka_broker.py).

Records whose keys and values are not UTF-8 are read by the Kafka spout with `encoding: bytes`
under `serializer: msgpack` (raw bytes, docs/kafka.md), go through a msgpack bolt on our Python
client, which records what it got and passes the tuple on, and are written to another topic by
the Kafka bolt with `encoding: bytes` (under JSON: the host hands it base64 text, which it
decodes). The bytes read back must equal the originals.
"""

from __future__ import annotations

import base64
import json
import sys
from pathlib import Path

from components.kafka_spout.config import DEFAULT_FIELDS
from host.topology import TopologyBuilder
from tests.integration.components.spark.support import SteppedRun
from tests.support import kafka_broker as broker
from tests.support.kafka_broker import committed, create_topic, produce, read_topic

kafka_broker = broker.kafka_broker  # the session's broker fixture

SPOUT = [sys.executable, "-m", "components.kafka_spout"]
KAFKA_BOLT = [sys.executable, "-m", "components.kafka_bolt"]
CHECK_BOLT = [
    sys.executable,
    str(Path(__file__).resolve().parent / "components" / "msgpack" / "bytes_bolt.py"),
]
RUN_SECS = 120


def key(i: int) -> bytes:
    return bytes([0xFF, i % 256, 0x80]) + b"k%d" % i


def value(i: int) -> bytes:
    return b"\x00\xc3\x28" + bytes(range(256))[i % 256 :] + b"v%d" % i


def test_binary_records_go_from_topic_to_topic_as_bytes(tmp_path, kafka_broker):
    n = 100
    bs = kafka_broker.bootstrap
    create_topic(bs, "bytes-in")
    create_topic(bs, "bytes-out")
    originals = [(key(i), value(i)) for i in range(n)]
    with_invalid_utf8 = [k for k, _ in originals] + [v for _, v in originals]
    for data in with_invalid_utf8:  # the precondition: none of it is text
        try:
            data.decode("utf-8")
        except UnicodeDecodeError:
            continue
        raise AssertionError(f"{data!r} is valid UTF-8")
    ends = produce(bs, "bytes-in", originals)
    assert ends == {0: n}

    b = TopologyBuilder(
        "kafka-bytes",
        config={"topology.max.spout.pending": 50, "host.shutdown.grace.secs": 10},
    )
    b.spout(
        "spout",
        SPOUT,
        outputs=list(DEFAULT_FIELDS),
        serializer="msgpack",
        config={
            "kafka.spout.bootstrap.servers": bs,
            "kafka.spout.topics": ["bytes-in"],
            "kafka.spout.group.id": "bytes-g",
            "kafka.spout.encoding": "bytes",
            "kafka.spout.offset.commit.period.ms": 50,
        },
    )
    b.bolt(
        "check",
        [*CHECK_BOLT, str(tmp_path / "check"), "relay"],
        outputs=list(DEFAULT_FIELDS),
        serializer="msgpack",
    ).shuffle("spout")
    b.bolt(
        "writer",
        KAFKA_BOLT,
        outputs=[],
        config={
            "kafka.bolt.bootstrap.servers": bs,
            "kafka.bolt.topic": "bytes-out",
            "kafka.bolt.key.field": "key",
            "kafka.bolt.message.field": "value",
            "kafka.bolt.encoding": "bytes",
        },
    ).shuffle("check")
    run = SteppedRun(b.build(tmp_path)).start()
    try:
        run.until(lambda: committed(bs, "bytes-g", "bytes-in", 1) == ends, RUN_SECS, "all acked")
    finally:
        assert run.stop() == 0

    # the spout emitted raw bytes (as the host read them from its msgpack)
    assert sorted((v[3], v[4]) for _s, _id, v in run.emits) == sorted(originals)
    # the msgpack bolt got bytes equal to what was produced
    got = [json.loads(line) for line in (tmp_path / "check").read_text().splitlines()]
    assert {r["serializer"] for r in got} == {"msgpack"}
    seen = sorted((r["values"][3], r["values"][4]) for r in got)
    assert seen == sorted(
        (["bytes", base64.b64encode(k).decode()], ["bytes", base64.b64encode(v).decode()])
        for k, v in originals
    )
    # and the Kafka bolt wrote those bytes back
    out = read_topic(bs, "bytes-out", {0: n})
    assert sorted((m.key(), m.value()) for m in out) == sorted(originals)
