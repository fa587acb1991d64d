"""storm-kafka-client in Flux files: KafkaSpout (from KafkaSpoutConfig$Builder beans or the
KafkaSpoutConfig.builder factory) and KafkaBolt load as the ready Kafka components, each Java
call a `kafka.spout.*` / `kafka.bolt.*` setting; what is not emulated is one error naming it.
Realistic files: tests/unit/flux/kafka/ (the first shaped like Storm's flux-examples
kafka_spout.yaml); the run against a broker is tests/integration/test_kafka_flux.py."""

from __future__ import annotations

import logging
import textwrap
from pathlib import Path

import pytest

from host.errors import TopologyError
from host.topology import load
from host.topology.kafka_components import COMMANDS, DEFAULT_FIELDS
from host.topology.model import BOLT, SPOUT

KAFKA = Path(__file__).parent / "flux" / "kafka"
BEANS = Path(__file__).parent / "flux" / "beans"
ENV = {
    "KAFKA_IN_PATTERN": "in-.*",
    "KAFKA_BOOTSTRAP": "127.0.0.1:9092",
    "KAFKA_GROUP": "copier",
    "KAFKA_OUT": "out",
}


def test_storms_flux_example_shape_loads_as_the_ready_spout():
    t = load(KAFKA / "kafka_spout.yaml")
    spout = t.component("kafka-spout")
    assert spout.kind == SPOUT and spout.command == COMMANDS[SPOUT]
    assert spout.outputs == {"default": ("value",)}, "OnlyValueRecordTranslator's one field"
    assert spout.config == {
        "kafka.spout.bootstrap.servers": "localhost:9092",
        "kafka.spout.topics": ["sentences"],
        "kafka.spout.first.poll.offset.strategy": "EARLIEST",
        "kafka.spout.translator": "value",
        "kafka.spout.encoding": "string",
    }
    assert spout.cwd == str(KAFKA)
    assert t.component("splitsentence").inputs[0].source == "kafka-spout"


def test_every_emulated_setting_becomes_a_spout_or_bolt_key(monkeypatch, caplog):
    for name, value in ENV.items():
        monkeypatch.setenv(name, value)
    with caplog.at_level(logging.WARNING, logger="host.topology.flux"):
        t = load(KAFKA / "kafka_to_kafka.yaml", env_filter=True)
    spout, bolt = t.component("kafka-spout"), t.component("kafka-bolt")
    assert spout.parallelism == 2 and spout.outputs == {"default": DEFAULT_FIELDS}
    assert spout.config == {
        "kafka.spout.bootstrap.servers": "127.0.0.1:9092",
        "kafka.spout.topic.pattern": "in-.*",
        "kafka.spout.translator": "default",
        "kafka.spout.group.id": "copier",
        "kafka.spout.consumer.fetch.wait.max.ms": 10,
        "kafka.spout.processing.guarantee": "AT_LEAST_ONCE",
        "kafka.spout.first.poll.offset.strategy": "UNCOMMITTED_EARLIEST",
        "kafka.spout.offset.commit.period.ms": 100,
        "kafka.spout.max.uncommitted.offsets": 500,
        "kafka.spout.partition.refresh.period.ms": 1000,
        "kafka.spout.retry.initial.delay.ms": 0,
        "kafka.spout.retry.delay.period.ms": 10,
        "kafka.spout.retry.max.retries": 3,
        "kafka.spout.retry.max.delay.ms": 2000,
        "kafka.spout.tuple.tracking.enforced": True,
    }
    assert bolt.kind == BOLT and bolt.command == COMMANDS[BOLT] and bolt.outputs == {}
    assert bolt.config == {
        "kafka.bolt.bootstrap.servers": "127.0.0.1:9092",
        "kafka.bolt.producer.linger.ms": 5,
        "kafka.bolt.topic": "out",
        "kafka.bolt.key.field": "key",
        "kafka.bolt.message.field": "value",
    }
    assert any("acks=1 replaced by acks=all" in r.getMessage() for r in caplog.records)


def test_an_unknown_record_translator_is_an_error_naming_its_class():
    with pytest.raises(TopologyError) as info:
        load(BEANS / "kafka_client.yaml")
    e = info.value
    assert (e.component, e.key) == ("kafka-spout", "constructorArgs")
    assert e.problem.startswith(
        "needs bean 'kafkaConfig' (org.apache.storm.kafka.spout.KafkaSpoutConfig), built from "
        "bean 'kafkaConfigBuilder' (org.apache.storm.kafka.spout.KafkaSpoutConfig$Builder), "
        "built from bean 'valueTranslator' (com.example.storm.ValueOnlyTranslator), a Java "
        "class this host does not emulate"
    )


HEAD = """
name: k
components:
  - id: builder
    className: "org.apache.storm.kafka.spout.KafkaSpoutConfig$Builder"
    constructorArgs: ["b:1", "t"]
    {builder}
  - id: config
    className: org.apache.storm.kafka.spout.KafkaSpoutConfig
    constructorArgs: [ref: builder]
spouts:
  - id: spout
    className: org.apache.storm.kafka.spout.KafkaSpout
    constructorArgs: [ref: {spout_arg}]
bolts:
  - id: bolt
    className: org.apache.storm.kafka.bolt.KafkaBolt
    {bolt}
streams:
  - {{from: spout, to: bolt, grouping: {{type: SHUFFLE}}}}
"""
GOOD_BOLT = """configMethods:
      - {name: withProducerProperties, args: [{bootstrap.servers: "b:1"}]}
      - {name: withTopicSelector, args: [out]}"""


def flux(tmp_path: Path, builder: str = "", bolt: str = GOOD_BOLT, spout_arg: str = "config"):
    path = tmp_path / "k.yaml"
    path.write_text(HEAD.format(builder=builder, bolt=bolt, spout_arg=spout_arg))
    return path


def test_a_topic_given_as_one_string_and_the_default_bolt_mapper(tmp_path):
    t = load(flux(tmp_path))
    assert t.component("spout").config["kafka.spout.topics"] == ["t"]
    assert "kafka.bolt.message.field" not in t.component("bolt").config  # the bolt's "message"


@pytest.mark.parametrize(
    ("builder", "bolt", "spout_arg", "component", "key", "words"),
    [
        (
            "configMethods: [{name: setProcessingGuarantee, args: [EXACTLY_ONCE]}]",
            GOOD_BOLT,
            "config",
            "builder",
            "configMethods[0].args",
            "must be one of AT_LEAST_ONCE",
        ),
        (
            "configMethods: [{name: setProp, args: [enable.auto.commit, true]}]",
            GOOD_BOLT,
            "config",
            "builder",
            "configMethods[0].args",
            "setProcessingGuarantee",
        ),
        (
            "configMethods: [{name: setProp, args: [value.deserializer, com.x.AvroDeserializer]}]",
            GOOD_BOLT,
            "config",
            "builder",
            "configMethods[0].args",
            "com.x.AvroDeserializer is not emulated",
        ),
        (
            "configMethods: [{name: setStartTimeStamp, args: [5]}]",
            GOOD_BOLT,
            "config",
            "builder",
            "configMethods[0].args",
            "TIMESTAMP",
        ),
        (
            "properties: [{name: maxUncommittedOffsets, value: 0}]",
            GOOD_BOLT,
            "config",
            "builder",
            "properties[0].value",
            ">= 1",
        ),
        ("", GOOD_BOLT, "builder", "spout", "constructorArgs", "Builder bean"),
        ("", "configMethods: []", "config", "bolt", "className", "withProducerProperties"),
        (
            "",
            'configMethods: [{name: withProducerProperties, args: [{bootstrap.servers: "b:1"}]}]',
            "config",
            "bolt",
            "className",
            "withTopicSelector",
        ),
        (
            "",
            "configMethods: [{name: setFireAndForget, args: [true]}]",
            "config",
            "bolt",
            "configMethods[0].args",
            "not emulated",
        ),
    ],
)
def test_what_is_not_emulated_names_the_bean_and_the_call(
    tmp_path, builder, bolt, spout_arg, component, key, words
):
    with pytest.raises(TopologyError) as info:
        load(flux(tmp_path, builder, bolt, spout_arg))
    assert (info.value.component, info.value.key) == (component, key)
    assert words in info.value.problem


def test_the_bolt_mapper_and_a_kafka_bolt_listed_as_a_spout(tmp_path):
    path = tmp_path / "k.yaml"
    path.write_text(
        textwrap.dedent(
            """
            name: k
            spouts:
              - id: s
                className: org.apache.storm.testing.TestWordSpout
            bolts:
              - id: b
                className: org.apache.storm.kafka.bolt.KafkaBolt
                configMethods:
                  - {name: withProducerProperties, args: [{bootstrap.servers: "b:1"}]}
                  - {name: withTopicSelector, args: [out]}
                  - name: withTupleToKafkaMapper
                    args: [ref: m]
            components:
              - id: m
                className: org.apache.storm.kafka.bolt.mapper.FieldNameBasedTupleToKafkaMapper
                constructorArgs: [k, word]
            streams:
              - {from: s, to: b, grouping: {type: SHUFFLE}}
            """
        )
    )
    assert load(path).component("b").config["kafka.bolt.message.field"] == "word"
    text = path.read_text().replace(
        "className: org.apache.storm.testing.TestWordSpout",
        "className: org.apache.storm.kafka.bolt.KafkaBolt",
    )
    path.write_text(text)
    with pytest.raises(TopologyError) as info:
        load(path)
    assert info.value.component == "s" and "listed under spouts" in info.value.problem
