"""The older storm-kafka spout's Flux beans (host/topology/flux_storm_kafka.py): ZkHosts,
SpoutConfig, StringScheme, SchemeAsMultiScheme and OffsetRequest's factories become the
`kafka.spoutconfig.*` config of the built-in spout, which the component reads back
(components/kafka_spout/storm_kafka.py); what it cannot honour is one error naming the key."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from components.kafka_spout.config import from_conf
from components.kafka_spout.storm_kafka import StormKafkaSettings, settings_from_conf
from host.errors import TopologyError
from host.topology import load

BEANS = Path(__file__).parent / "flux" / "beans"


def test_the_fixture_becomes_the_built_in_spout_with_its_spout_config():
    t = load(BEANS / "storm_kafka.yaml")
    spout = t.component("events")
    assert spout.kind == "spout"
    assert spout.command == ("python", "-m", "components.storm_builtins.storm_kafka_spout")
    assert spout.outputs == {"default": ("str",)}  # StringScheme's field
    assert spout.config == {
        "kafka.spoutconfig.hosts.brokerZkStr": "zk1:2181,zk2:2181/kafka",
        "kafka.spoutconfig.hosts.brokerZkPath": "/brokers",
        "kafka.spoutconfig.hosts.refreshFreqSecs": 60,
        "kafka.spoutconfig.topic": "events",
        "kafka.spoutconfig.zkRoot": "/kafka-offsets",
        "kafka.spoutconfig.id": "event-reader",
        "kafka.spoutconfig.scheme": "StringScheme",
        "kafka.spoutconfig.startOffsetTime": -2,
        "kafka.spoutconfig.ignoreZkOffsets": True,
    }


def test_the_component_reads_what_the_loader_writes():
    config = load(BEANS / "storm_kafka.yaml").component("events").config
    settings = settings_from_conf(config)
    assert settings == StormKafkaSettings(
        broker_zk="zk1:2181,zk2:2181/kafka",
        topic="events",
        zk_root="/kafka-offsets",
        spout_id="event-reader",
        ignore_zk_offsets=True,
    )
    # and what it gives spout.py is a valid kafka.spout.* configuration
    spout = from_conf(settings.spout_conf("127.0.0.1:9092"), {"componentid": "events"})
    assert spout.topics == ("events",) and spout.fields == ("value",)
    assert spout.commit_period == 2.0  # stateUpdateIntervalMs
    assert spout.refresh_period == 60.0  # ZkHosts.refreshFreqSecs


# ---- variants of the file -----------------------------------------------------------------------

FILE = """\
name: reader
components:
  - id: scheme
    className: org.apache.storm.kafka.StringScheme
  - id: multi
    className: org.apache.storm.spout.SchemeAsMultiScheme
    constructorArgs: [{ref: scheme}]
  - id: hosts
    className: org.apache.storm.kafka.ZkHosts
    constructorArgs: ["zk:2181"]
  - id: latest
    className: kafka.api.OffsetRequest
    factory: LatestTime
  - id: config
    className: org.apache.storm.kafka.SpoutConfig
    constructorArgs: [{ref: hosts}, events, /offsets, reader]
    properties:
      - {name: scheme, ref: multi}
%(properties)s
spouts:
  - id: kafka
    className: org.apache.storm.kafka.KafkaSpout
    constructorArgs: [{ref: config}]
bolts:
  - id: log
    className: org.apache.storm.flux.wrappers.bolts.LogInfoBolt
streams:
  - {from: kafka, to: log, grouping: {type: SHUFFLE}}
"""


def flux(tmp_path: Path, properties: str = "", replace: tuple[str, str] | None = None) -> Path:
    text = FILE % {"properties": textwrap.indent(textwrap.dedent(properties), "      ")}
    if replace:
        assert replace[0] in text
        text = text.replace(*replace)
    path = tmp_path / "topology.yaml"
    path.write_text(text)
    return path


def spout_config(tmp_path: Path, **kw) -> dict:
    return dict(load(flux(tmp_path, **kw)).component("kafka").config)


def test_latest_time_and_the_fields_the_spout_uses(tmp_path):
    config = spout_config(
        tmp_path,
        properties="""\
        - {name: startOffsetTime, ref: latest}
        - {name: zkServers, value: [zk-a, zk-b]}
        - {name: zkPort, value: 2182}
        - {name: stateUpdateIntervalMs, value: 500}
        - {name: retryLimit, value: 3}
        - {name: fetchSizeBytes, value: 2097152}
        """,
    )
    assert config["kafka.spoutconfig.startOffsetTime"] == -1
    assert config["kafka.spoutconfig.zkServers"] == ["zk-a", "zk-b"]
    assert config["kafka.spoutconfig.zkPort"] == 2182
    assert config["kafka.spoutconfig.stateUpdateIntervalMs"] == 500
    assert config["kafka.spoutconfig.retryLimit"] == 3
    assert "kafka.spoutconfig.fetchSizeBytes" not in config  # accepted, no effect here
    settings = settings_from_conf(config)
    assert settings.zk_servers == ("zk-a", "zk-b") and settings.start_offset_time == -1


def test_the_client_id_constructor_and_a_broker_path(tmp_path):
    config = spout_config(
        tmp_path,
        replace=(
            'constructorArgs: ["zk:2181"]\n  - id: latest',
            'constructorArgs: ["zk:2181/kafka", /kafka/brokers]\n'
            "    properties: [{name: refreshFreqSecs, value: 5}]\n  - id: latest",
        ),
    )
    assert config["kafka.spoutconfig.hosts.brokerZkPath"] == "/kafka/brokers"
    assert config["kafka.spoutconfig.hosts.refreshFreqSecs"] == 5
    config = spout_config(
        tmp_path,
        replace=(
            "[{ref: hosts}, events, /offsets, reader]",
            "[{ref: hosts}, events, my-client, /offsets, reader]",
        ),
    )
    assert config["kafka.spoutconfig.clientId"] == "my-client"


@pytest.mark.parametrize(
    "kw, component, key, problem",
    [
        (
            {"replace": ("      - {name: scheme, ref: multi}\n", "")},
            "kafka",
            "constructorArgs",
            "the SpoutConfig has no scheme: storm-kafka's default (RawMultiScheme) emits raw bytes",
        ),
        (
            {"properties": "- {name: startOffsetTime, value: 1700000000000}"},
            "config",
            "properties[1].value",
            "a timestamp is not emulated",
        ),
        (
            {"properties": "- {name: outputStreamId, value: events}"},
            "config",
            "properties[1].value",
            "emits on the default stream only",
        ),
        (
            {"properties": "- {name: topic, value: other}"},
            "config",
            "properties[1].name",
            "SpoutConfig has no property 'topic' settable from Flux",
        ),
        (
            {"replace": ("/offsets, reader]", "offsets, reader]")},
            "kafka",
            "constructorArgs",
            "zkRoot must start with '/'",
        ),
        (
            {"replace": ("factory: LatestTime", "factory: CurrentVersion")},
            "latest",
            "factory",
            "OffsetRequest has no static factory method 'CurrentVersion'",
        ),
        (
            {"properties": "- {name: ignoreZkOffsets, value: yes please}"},
            "config",
            "properties[1].value",
            "ignoreZkOffsets must be true or false",
        ),
    ],
)
def test_what_the_spout_cannot_honour_is_an_error_naming_the_key(
    tmp_path, kw, component, key, problem
):
    with pytest.raises(TopologyError) as info:
        load(flux(tmp_path, **kw))
    error = info.value
    assert (error.component, error.key) == (component, key) and problem in error.problem, error


def test_static_hosts_is_named_as_the_bean_the_spout_cannot_be_built_from(tmp_path):
    path = flux(
        tmp_path,
        replace=(
            'className: org.apache.storm.kafka.ZkHosts\n    constructorArgs: ["zk:2181"]',
            "className: org.apache.storm.kafka.StaticHosts\n    constructorArgs: [{ref: scheme}]",
        ),
    )
    with pytest.raises(TopologyError) as info:
        load(path)
    assert info.value.component == "kafka" and info.value.key == "constructorArgs"
    assert (
        "needs bean 'config' (org.apache.storm.kafka.SpoutConfig), built from bean 'hosts' "
        "(org.apache.storm.kafka.StaticHosts)" in info.value.problem
    )
