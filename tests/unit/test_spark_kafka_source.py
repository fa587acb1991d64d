"""The Kafka source of the Spark engine, without Kafka or Spark (host/spark/kafka_source.py;
docs/spark.md §4.7): a plain Kafka spout becomes the transactional Kafka spout with the same
settings, the settings that do nothing on Spark are plan warnings, and what the source cannot
run is refused before anything starts, naming the file and the spout."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from components.kafka_spout.config import from_conf
from components.kafka_spout.translate import translator
from components.kafka_spout.tx_config import tx_from_conf
from host.errors import TopologyError
from host.runtime.context import build_conf
from host.spark.command import spark as spark_command
from host.spark.engine import check_supported
from host.spark.kafka_source import as_transactional, range_ends
from host.spark.plan import KAFKA_SOURCE, TRANSACTIONAL_SOURCE, plan
from host.topology.files import load
from host.topology.model import Topology

SPOUT = "reader"


def write(tmp_path: Path, spout: dict[str, Any], config: dict[str, Any] | None = None) -> Path:
    """reader (the given spout) -> count (a plain bolt), as a topology file."""
    doc = {
        "name": "kafka-words",
        "config": config or {},
        "spouts": {SPOUT: {**spout, "parallelism": 2}},
        "bolts": {
            "count": {
                "command": ["python", "count.py"],
                "outputs": [],
                "inputs": {SPOUT: "shuffle"},
            }
        },
    }
    (tmp_path / "count.py").write_text("")
    path = tmp_path / "topology.yaml"
    path.write_text(yaml.safe_dump(doc))
    return path


def kafka_block(**settings: Any) -> dict[str, Any]:
    return {"kafka": {"bootstrap.servers": "127.0.0.1:9092", "topics": ["words"], **settings}}


def test_a_kafka_block_runs_as_the_transactional_spout_with_the_same_settings(tmp_path):
    topology = load(
        write(
            tmp_path,
            kafka_block(
                translator="value", **{"first.poll.offset.strategy": "EARLIEST"}, consumer={"a": 1}
            ),
            {"host.spark.kafka.batch.max.records": 40},
        )
    )
    assert plan(topology).stage(SPOUT).role == KAFKA_SOURCE
    mapped = as_transactional(topology, SPOUT)
    spout = mapped.component(SPOUT)
    assert spout.command == ("python", "-m", "components.kafka_spout.transactional")
    assert (spout.batch, spout.serializer, spout.outputs) == (
        "spout",
        "json",
        {"default": ("value",)},
    )
    assert mapped.transactional_id == "kafka-words"  # the checkpoint's default name, as before
    again = plan(mapped)
    assert again.stage(SPOUT).role == TRANSACTIONAL_SOURCE
    assert check_supported(again).id == SPOUT
    assert again.tasks == plan(topology).tasks  # the same task ids, so the same contexts
    # the same group, strategy, translator and consumer properties as the plain spout reads
    context = {"componentid": SPOUT}
    plain = from_conf(build_conf(topology, SPOUT, "r"), context)
    tx = tx_from_conf(build_conf(mapped, SPOUT, "r"), context)
    assert tx.spout == plain
    assert tx.batch_max_records == 40


def test_the_batch_size_defaults_to_1000_and_a_transactional_id_is_kept(tmp_path):
    topology = load(write(tmp_path, kafka_block()))
    mapped = as_transactional(topology, SPOUT)
    assert mapped.component(SPOUT).config["kafka.spout.batch.max.records"] == 1000
    # (a topology file with a transactional id needs a batch spout; a built one may have it)
    named = dataclasses.replace(topology, config={"topology.transactional.id": "mine"})
    assert as_transactional(named, SPOUT).transactional_id == "mine"


def test_per_tuple_settings_are_dropped_and_shown_as_plan_warnings(tmp_path):
    per_tuple = {
        "offset.commit.period.ms": 50,
        "max.uncommitted.offsets": 10,
        "records.per.next": 5,
        "retry.max.retries": 3,
        "processing.guarantee": "NO_GUARANTEE",
    }
    topology = load(write(tmp_path, kafka_block(**per_tuple)))
    warnings = plan(topology).stage(SPOUT).warnings
    assert any(
        w.startswith("no effect on Spark: kafka.spout.offset.commit.period.ms, ")
        and "kafka.spout.retry.max.retries" in w
        for w in warnings
    ), warnings
    assert any("NO_GUARANTEE" in w for w in warnings), warnings
    config = as_transactional(topology, SPOUT).component(SPOUT).config
    assert not {f"kafka.spout.{k}" for k in per_tuple} & set(config)
    # a spout without them has no such warning
    assert plan(load(write(tmp_path, kafka_block()))).stage(SPOUT).warnings == ()


def test_the_tuples_are_the_plain_spouts_translation(tmp_path):
    """Both spouts build their translator from the same settings with translate.py (the
    transactional one without raw bytes: a batch spout speaks JSON, and msgpack with bytes is
    refused below), so the values agree record for record."""
    for settings in ({}, {"translator": "value"}, {"encoding": "bytes"}):
        topology = load(write(tmp_path, kafka_block(**settings)))
        context = {"componentid": SPOUT}
        plain = from_conf(build_conf(topology, SPOUT, "r"), context)
        tx = tx_from_conf(build_conf(as_transactional(topology, SPOUT), SPOUT, "r"), context).spout
        record = ("words", 1, 7, b"k\xff", b"v")
        assert translator(tx.translator, tx.encoding, tx.json_fields)(*record) == translator(
            plain.translator, plain.encoding, plain.json_fields, raw_bytes=False
        )(*record)


@pytest.mark.parametrize(
    ("spout", "reason"),
    [
        (kafka_block(**{"processing.guarantee": "at_most_once"}), "is AT_MOST_ONCE"),
        (kafka_block(**{"dead.letter.topic": "dead"}), "kafka.spout.dead.letter.topic is set"),
        ({**kafka_block(encoding="bytes"), "serializer": "msgpack"}, "bytes under"),
        (
            kafka_block(**{"first.poll.offset.strategy": "SOMETIMES"}),
            "cannot run as a Kafka source: kafka.spout.first.poll.offset.strategy must be one of",
        ),
        (
            {
                "command": ["python", "-m", "components.storm_builtins.storm_kafka_spout"],
                "outputs": ["str"],
            },
            # runs as a Kafka source now (test_spark_storm_kafka_source.py): what its own
            # settings reader refuses is refused before anything starts
            "cannot run as a Kafka source: kafka.spoutconfig.hosts.brokerZkStr is required",
        ),
    ],
)
def test_what_the_kafka_source_cannot_run_is_refused_naming_file_and_spout(tmp_path, spout, reason):
    path = write(tmp_path, spout)
    topology = load(path)
    with pytest.raises(TopologyError) as error:
        as_transactional(topology, SPOUT)
    assert (error.value.file, error.value.component) == (str(path), SPOUT)
    assert reason in error.value.problem
    # the command refuses it the same way, exit 2, before Spark or anything else starts
    checkpoint = tmp_path / "checkpoint"
    result = CliRunner().invoke(spark_command, [str(path), "--checkpoint", str(checkpoint)])
    assert result.exit_code == 2, result.output
    assert f"error: {path}: component '{SPOUT}': " in result.output
    assert reason in result.output
    assert not checkpoint.exists()


def test_a_bad_batch_size_is_refused_naming_the_key(tmp_path):
    topology = load(write(tmp_path, kafka_block()))
    for bad in (0, "10", 1.5, True):
        config = {**topology.config, "host.spark.kafka.batch.max.records": bad}
        with pytest.raises(TopologyError, match="host.spark.kafka.batch.max.records"):
            as_transactional(Topology(topology.name, topology.components, config), SPOUT)


def test_range_ends_are_where_each_partitions_range_ends():
    metas = [
        {"0": {"topic": "t", "partition": 0, "from": 0, "to": 40, "records": 40}, "2": None},
        {"1": {"topic": "t", "partition": 1, "from": 40, "to": 55, "records": 15}},
        None,  # a task that reported nothing
    ]
    assert range_ends(metas) == {("t", 0): 40, ("t", 1): 55}
