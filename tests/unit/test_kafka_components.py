"""The ready Kafka components as topologies declare them: the native `kafka:` block and the
builder's `kafka_spout` / `kafka_bolt` expand to the component's command, outputs and config;
bad blocks are errors naming the file, the component and the key."""

from __future__ import annotations

import pytest
import yaml

from components.kafka_bolt import bolt as kafka_bolt
from components.kafka_spout import config as spout_config
from host.errors import TopologyError
from host.topology import TopologyBuilder
from host.topology.kafka_components import BOLT_KEYS, COMMANDS, SPOUT_KEYS, spout_fields
from host.topology.model import BOLT, SPOUT
from host.topology.native import from_document


def load(text: str, tmp_path):
    return from_document(yaml.safe_load(text), file="t.yaml", base_dir=tmp_path)


def error(text: str, tmp_path) -> TopologyError:
    with pytest.raises(TopologyError) as info:
        load(text, tmp_path)
    return info.value


def test_the_host_knows_the_components_own_keys():
    # host/ names the components' settings without importing components/: they must agree
    assert {spout_config.PREFIX + k for k in SPOUT_KEYS} == set(spout_config.KNOWN_KEYS)
    assert {kafka_bolt.PREFIX + k for k in BOLT_KEYS} == set(kafka_bolt.KNOWN_KEYS)
    assert spout_fields({}) == spout_config.DEFAULT_FIELDS


BLOCKS = """
name: t
spouts:
  reader:
    kafka:
      bootstrap.servers: 127.0.0.1:9092
      topics: [sentences]
      consumer: {fetch.wait.max.ms: 10}
      consumer.fetch.min.bytes: 1
    parallelism: 2
    config: {extra: 1}
bolts:
  writer:
    kafka: {bootstrap.servers: 127.0.0.1:9092, topic: out, message.field: value}
    inputs: {reader: shuffle}
"""


def test_a_kafka_block_runs_the_ready_component_with_prefixed_settings(tmp_path):
    topology = load(BLOCKS, tmp_path)
    reader, writer = topology.components
    assert reader.command == COMMANDS[SPOUT] == ("python", "-m", "components.kafka_spout")
    assert reader.outputs == {"default": spout_config.DEFAULT_FIELDS}
    assert reader.parallelism == 2
    assert reader.config == {
        "kafka.spout.bootstrap.servers": "127.0.0.1:9092",
        "kafka.spout.topics": ["sentences"],
        "kafka.spout.consumer.fetch.wait.max.ms": 10,
        "kafka.spout.consumer.fetch.min.bytes": 1,
        "extra": 1,
    }
    assert writer.command == COMMANDS[BOLT] and writer.outputs == {"default": ()}
    assert writer.config["kafka.bolt.topic"] == "out"
    assert writer.cwd == str(tmp_path)


@pytest.mark.parametrize(
    ("translator", "extra", "fields"),
    [("value", "", ("value",)), ("json", "json.fields: [a, b]", ("a", "b"))],
)
def test_the_spout_outputs_follow_the_translator(tmp_path, translator, extra, fields):
    text = f"""
name: t
spouts:
  r:
    kafka:
      bootstrap.servers: b:1
      topic.pattern: "s.*"
      translator: {translator}
      {extra}
"""
    assert load(text, tmp_path).components[0].outputs == {"default": fields}


@pytest.mark.parametrize(
    ("body", "key", "words"),
    [
        ("kafka: {bootstrap.servers: b, topics: [t], topicz: 1}", "kafka.topicz", "unknown"),
        ("kafka: {topics: [t]}", "kafka.bootstrap.servers", "required"),
        ("kafka: {bootstrap.servers: b}", "kafka.topics", "exactly one"),
        (
            "kafka: {bootstrap.servers: b, topics: [t], topic.pattern: x}",
            "kafka.topics",
            "exactly one",
        ),
        (
            "kafka: {bootstrap.servers: b, topics: [t], translator: avro}",
            "kafka.translator",
            "one of",
        ),
        (
            "kafka: {bootstrap.servers: b, topics: [t], translator: json}",
            "kafka.json.fields",
            "needs",
        ),
        ("kafka: {bootstrap.servers: b, topics: [t], consumer: 5}", "kafka.consumer", "mapping"),
        ("kafka: [b]", "kafka", "mapping"),
        (
            "{kafka: {bootstrap.servers: b, topics: [t]}, command: [python, x.py]}",
            "kafka",
            "either",
        ),
        (
            "{kafka: {bootstrap.servers: b, topics: [t]}, config: {kafka.spout.topics: [u]}}",
            "config.kafka.spout.topics",
            "both",
        ),
        ("{kafka: {bootstrap.servers: b, topics: [t]}, outputs: [a, b]}", "outputs", "5 field"),
    ],
)
def test_a_bad_spout_block_names_the_file_component_and_key(tmp_path, body, key, words):
    if not body.startswith("{"):
        body = "{" + body + "}"
    e = error(f"name: t\nspouts:\n  reader: {body}\n", tmp_path)
    assert (e.file, e.component, e.key) == ("t.yaml", "reader", key)
    assert words in e.problem


def test_a_bad_bolt_block_names_the_key(tmp_path):
    text = """
name: t
spouts: {s: {command: [python, -c, pass], outputs: [message]}}
bolts:
  w:
    kafka: {bootstrap.servers: b, topic: t, topic.field: f}
    inputs: {s: shuffle}
"""
    e = error(text, tmp_path)
    assert (e.component, e.key) == ("w", "kafka.topic") and "exactly one" in e.problem
    e = error(text.replace("topic.field: f", "batch.size: 3"), tmp_path)
    assert e.key == "kafka.batch.size" and "producer.<librdkafka property>" in e.problem


def test_the_builder_declares_the_same_components(tmp_path):
    b = TopologyBuilder("t")
    b.kafka_spout("reader", {"bootstrap.servers": "b:1", "topics": ["s"], "translator": "value"})
    b.kafka_bolt(
        "writer", {"bootstrap.servers": "b:1", "topic": "o", "message.field": "value"}
    ).shuffle("reader")
    topology = b.build(tmp_path)
    reader = topology.components[0]
    assert reader.command == COMMANDS[SPOUT] and reader.outputs == {"default": ("value",)}
    assert reader.config["kafka.spout.translator"] == "value"
    assert topology.components[1].command == COMMANDS[BOLT]
    b = TopologyBuilder("t")
    b.kafka_spout("reader", {"bootstrap.servers": "b:1"})
    with pytest.raises(TopologyError) as info:
        b.build(tmp_path)
    assert (info.value.component, info.value.key) == ("reader", "kafka.topics")
