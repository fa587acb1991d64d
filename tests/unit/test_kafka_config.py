"""The Kafka spout's and bolt's settings and the record translators (pure code)."""

from __future__ import annotations

import base64

import pytest

from components.kafka_bolt.bolt import ConfigError as BoltConfigError
from components.kafka_bolt.bolt import from_conf as bolt_conf
from components.kafka_bolt.bolt import to_bytes
from components.kafka_spout.config import ConfigError, from_conf
from components.kafka_spout.translate import TranslateError, translator

BASE = {"kafka.spout.bootstrap.servers": "127.0.0.1:9092", "kafka.spout.topics": "a, b"}
CONTEXT = {"componentid": "reader"}


def test_defaults_are_storm_kafka_clients():
    cfg = from_conf({**BASE, "topology.name": "wc"}, CONTEXT)
    assert cfg.topics == ("a", "b") and cfg.group_id == "wc-reader"
    assert (cfg.first_poll, cfg.guarantee) == ("UNCOMMITTED_EARLIEST", "AT_LEAST_ONCE")
    assert (cfg.commit_period, cfg.max_uncommitted, cfg.refresh_period) == (30.0, 10_000_000, 2.0)
    assert (cfg.backoff.initial_delay, cfg.backoff.delay_period) == (0.0, 0.002)
    assert (cfg.backoff.max_retries, cfg.backoff.max_delay) == (-1, 10.0)
    assert cfg.fields == ("topic", "partition", "offset", "key", "value")


@pytest.mark.parametrize(
    "extra, message",
    [
        ({"kafka.spout.topic.pattern": "x.*"}, "exactly one of"),
        ({"kafka.spout.first.poll.offset.strategy": "NEWEST"}, "first.poll.offset.strategy"),
        ({"kafka.spout.processing.guarantee": "EXACTLY_ONCE"}, "processing.guarantee"),
        ({"kafka.spout.max.uncommitted.offsets": 0}, "max.uncommitted.offsets must be >= 1"),
        ({"kafka.spout.consumer.enable.auto.commit": True}, "enable.auto.commit"),
        ({"kafka.spout.translator": "json"}, "json.fields"),
        ({"kafka.spout.topcs": "a"}, "unknown setting kafka.spout.topcs"),
    ],
)
def test_bad_settings_name_the_key(extra, message):
    with pytest.raises(ConfigError, match=message):
        from_conf({**BASE, **extra}, CONTEXT)


def test_consumer_properties_pass_through():
    cfg = from_conf({**BASE, "kafka.spout.consumer.fetch.wait.max.ms": 10}, CONTEXT)
    assert cfg.consumer == {"fetch.wait.max.ms": 10}


def test_translators():
    default = translator("default", "string")
    assert default("t", 1, 5, b"k", b"v\xff") == ["t", 1, 5, "k", "v\ufffd"]
    assert translator("value", "bytes")("t", 1, 5, None, b"\x00\x01") == [
        base64.b64encode(b"\x00\x01").decode()
    ]
    as_json = translator("json", "string", ("id", "name"))
    assert as_json("t", 0, 0, None, b'{"id": 3}') == [3, None]
    with pytest.raises(TranslateError):
        as_json("t", 0, 0, None, b"[1]")


def test_bolt_settings():
    cfg = bolt_conf({"kafka.bolt.bootstrap.servers": "h:1", "kafka.bolt.topic": "out"})
    assert (cfg.key_field, cfg.message_field, cfg.topic) == ("key", "message", "out")
    with pytest.raises(BoltConfigError, match="exactly one of"):
        bolt_conf({"kafka.bolt.bootstrap.servers": "h:1"})
    with pytest.raises(BoltConfigError, match="acks must be all"):
        bolt_conf(
            {
                "kafka.bolt.bootstrap.servers": "h:1",
                "kafka.bolt.topic": "out",
                "kafka.bolt.producer.acks": 1,
            }
        )
    assert (to_bytes("é"), to_bytes(None), to_bytes({"a": 1})) == ("é".encode(), None, b'{"a":1}')
