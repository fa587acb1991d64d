"""The pure parts of the storm-kafka spout: where offsets are kept and what storm-kafka writes
there (components/kafka_spout/zk_offsets.py), where a partition starts, how brokers are read
from Kafka's ZooKeeper registration (zk_brokers.py), and the settings (storm_kafka.py)."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from components.kafka_spout.config import ConfigError
from components.kafka_spout.retry import Backoff
from components.kafka_spout.storm_kafka import settings_from_conf, string_scheme
from components.kafka_spout.translate import TranslateError
from components.kafka_spout.zk_brokers import BrokerLookupError, broker_address, leader_of
from components.kafka_spout.zk_offsets import (
    Stored,
    offset_record,
    offsets_ensemble,
    parse_record,
    partition_path,
    start_offset,
)

# ---- the ensemble -------------------------------------------------------------------------------


def test_spout_config_servers_and_port_come_first():
    e = offsets_ensemble(
        ["zk-a", "zk-b"], 2182, {"storm.zookeeper.servers": ["s"], "storm.zookeeper.port": 1}, "k"
    )
    assert e.connect == "zk-a:2182,zk-b:2182"
    assert e.source == "SpoutConfig.zkServers, SpoutConfig.zkPort"


def test_servers_and_port_fall_back_separately_as_in_kafka_spout_open():
    conf = {"storm.zookeeper.servers": ["s1", "s2"], "storm.zookeeper.port": 2000}
    assert offsets_ensemble(None, None, conf, "k:1").connect == "s1:2000,s2:2000"
    assert offsets_ensemble(["a"], None, conf, "k:1").connect == "a:2000"
    assert offsets_ensemble(None, 3000, conf, "k:1").connect == "s1:3000,s2:3000"
    e = offsets_ensemble(["a"], None, {}, "k:1")
    assert e.connect == "a:2181" and e.source.endswith("Storm's default port 2181")


def test_without_either_the_zkhosts_ensemble_without_its_chroot():
    e = offsets_ensemble(None, None, {}, "zk1:2181,zk2:2181/kafka")
    assert e.connect == "zk1:2181,zk2:2181"
    assert e.source.startswith("the ZkHosts ensemble")


# ---- the node -----------------------------------------------------------------------------------


def test_the_record_is_storm_kafkas_json_byte_for_byte():
    data = offset_record(
        offset=42,
        partition=3,
        topic="events",
        broker=("kafka-1", 9092),
        storm_id="reader-7-1700000000",
        topology_name="reader",
    )
    assert data == (
        b'{"topology":{"id":"reader-7-1700000000","name":"reader"},"offset":42,"partition":3,'
        b'"broker":{"host":"kafka-1","port":9092},"topic":"events"}'
    )
    assert parse_record(data) == Stored("reader-7-1700000000", 42)
    assert partition_path("/kafka-offsets/reader", 3) == "/kafka-offsets/reader/partition_3"


@pytest.mark.parametrize(
    "data",
    [None, b"", b"not json", b"[]", b'{"offset": 5}', b'{"topology": {"id": "t"}}',
     b'{"topology": {"id": 1}, "offset": 5}', b'{"topology": {"id": "t"}, "offset": "5"}',
     b'{"topology": {"id": "t"}, "offset": true}', b"\xff"],
)  # fmt: skip
def test_a_node_that_is_not_storm_kafkas_json_is_no_offset(data):
    assert parse_record(data) is None


@given(st.binary(max_size=80))
def test_any_node_content_parses_or_is_none(data):
    assert parse_record(data) is None or isinstance(parse_record(data), Stored)


# ---- where a partition starts (PartitionManager's constructor) ----------------------------------


def test_start_offset_follows_partition_manager():
    same, other = Stored("run-2", 100), Stored("run-1", 100)
    assert start_offset(None, storm_id="run-2", ignore_zk_offsets=False).offset is None
    assert start_offset(same, storm_id="run-2", ignore_zk_offsets=True).offset == 100
    assert start_offset(other, storm_id="run-2", ignore_zk_offsets=False).offset == 100
    # ignoreZkOffsets: only an offset stored by another topology instance is ignored
    ignored = start_offset(other, storm_id="run-2", ignore_zk_offsets=True)
    assert ignored.offset is None and "run-1" in ignored.why
    # storm-kafka resets an offset <= 0 to startOffsetTime
    assert start_offset(Stored("run-1", 0), storm_id="x", ignore_zk_offsets=False).offset is None
    # maxOffsetBehind, against the offset at startOffsetTime
    behind = dict(storm_id="x", ignore_zk_offsets=False, max_offset_behind=50)
    assert start_offset(other, current=150, **behind).offset == 100
    assert start_offset(other, current=151, **behind).offset is None


# ---- brokers ------------------------------------------------------------------------------------


def test_leader_and_broker_as_kafka_registers_them():
    state = b'{"controller_epoch":4,"isr":[1,0],"leader":1,"leader_epoch":1,"version":1}'
    assert leader_of(state) == 1
    assert leader_of(b'{"leader":-1,"isr":[]}') is None
    broker = json.dumps(
        {"host": "kafka-1", "port": 9092, "jmx_port": -1, "version": 4,
         "endpoints": ["PLAINTEXT://kafka-1:9092"]}
    ).encode()  # fmt: skip
    assert broker_address(broker) == ("kafka-1", 9092)


def test_a_broker_with_only_named_listeners_is_found_through_its_endpoints():
    broker = b'{"host":null,"port":-1,"endpoints":["INTERNAL://10.0.0.5:9093"],"version":4}'
    assert broker_address(broker) == ("10.0.0.5", 9093)


@pytest.mark.parametrize("data", [b"{}", b"[1]", b"nope", b'{"host":null,"port":-1}'])
def test_an_unreadable_registration_is_a_lookup_error(data):
    with pytest.raises(BrokerLookupError):
        broker_address(data)
    with pytest.raises(BrokerLookupError):
        leader_of(data)


# ---- settings -----------------------------------------------------------------------------------

BASE = {
    "kafka.spoutconfig.hosts.brokerZkStr": "zk:2181",
    "kafka.spoutconfig.topic": "t",
    "kafka.spoutconfig.zkRoot": "/r",
    "kafka.spoutconfig.id": "i",
}


@pytest.mark.parametrize(
    "extra, problem",
    [
        ({"kafka.spoutconfig.topic": None}, "kafka.spoutconfig.topic is required"),
        ({"kafka.spoutconfig.scheme": "RawScheme"}, "only StringScheme is emulated"),
        ({"kafka.spoutconfig.startOffsetTime": 5}, "must be -2 (EarliestTime) or -1"),
        ({"kafka.spoutconfig.ignoreZkOffsets": "yes"}, "ignoreZkOffsets has the wrong type"),
        ({"kafka.spoutconfig.zkPort": True}, "zkPort has the wrong type"),
        ({"kafka.spoutconfig.zkServers": ["a", ""]}, "zkServers must be a list of host names"),
        ({"kafka.spoutconfig.zkRoot": "offsets"}, "make no ZooKeeper path: 'offsets/i'"),
    ],
)
def test_bad_settings_name_the_key(extra, problem):
    conf = {**BASE, **extra}
    if extra.get("kafka.spoutconfig.topic", "") is None:
        del conf["kafka.spoutconfig.topic"]
    with pytest.raises(ConfigError) as info:
        settings_from_conf(conf)
    assert problem in str(info.value)


def retry_of(**fields) -> Backoff:
    conf = {**BASE, **{f"kafka.spoutconfig.{k}": v for k, v in fields.items()}}
    spout = settings_from_conf(conf).spout_conf("b:1")
    return Backoff(
        initial_delay=spout["kafka.spout.retry.initial.delay.ms"] / 1000,
        delay_period=spout["kafka.spout.retry.delay.period.ms"] / 1000,
        max_retries=spout["kafka.spout.retry.max.retries"],
        max_delay=spout["kafka.spout.retry.max.delay.ms"] / 1000,
    )


def test_retries_as_exponential_backoff_msg_retry_manager():
    # its defaults: no delay, for ever
    default = retry_of()
    assert [default.delay(n) for n in (1, 2, 5)] == [0, 0, 0] and not default.gives_up(10**6)
    # multiplier 1: the initial delay every time
    constant = retry_of(retryInitialDelayMs=300)
    assert [constant.delay(n) for n in (1, 2, 5)] == [0.3, 0.3, 0.3]
    # multiplier 2: initial * 2^(n-1), capped by retryDelayMaxMs
    doubling = retry_of(retryInitialDelayMs=100, retryDelayMultiplier=2, retryDelayMaxMs=500)
    assert [doubling.delay(n) for n in (1, 2, 3, 4)] == [0.1, 0.2, 0.4, 0.5]
    # retryLimit n: n retries, the record is given up at failure n + 1; 0 or -1: for ever
    limited = retry_of(retryLimit=2)
    assert not limited.gives_up(2) and limited.gives_up(3)
    assert not retry_of(retryLimit=0).gives_up(10**6)


def test_string_scheme_is_the_value_as_utf8_and_skips_a_tombstone():
    assert string_scheme("t", 0, 1, b"k", "héllo".encode()) == ["héllo"]
    assert string_scheme("t", 0, 1, None, b"\xffok") == ["\ufffdok"]  # as Java's new String
    with pytest.raises(TranslateError):
        string_scheme("t", 0, 1, b"k", None)
