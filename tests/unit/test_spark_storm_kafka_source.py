"""The older storm-kafka spout as a Kafka source of the Spark engine, without ZooKeeper, Kafka or
Spark (host/spark/kafka_source.py, kafka_commits.py; components/kafka_spout/storm_kafka_tx.py;
docs/spark.md §4.7): a Flux file's storm-kafka spout becomes its transactional form with the same
SpoutConfig, the settings without meaning per micro-batch are plan warnings, what the spout would
refuse is refused before anything starts, and each checkpoint is one topology instance."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from components.kafka_spout.storm_kafka import settings_from_conf
from components.kafka_spout.storm_kafka_tx import TOPOLOGY_ID, topology_id, tx_spout_conf
from components.kafka_spout.tx_config import NOT_FOR_BATCHES, tx_from_conf
from host.errors import TopologyError
from host.runtime.context import build_conf
from host.spark.command import spark as spark_command
from host.spark.engine import SparkEngine
from host.spark.kafka_commits import (
    INSTANCE_FILE,
    ZooKeeperCommits,
    offset_commits,
    topology_instance,
)
from host.spark.kafka_source import as_transactional, with_topology_id
from host.spark.plan import KAFKA_SOURCE, TRANSACTIONAL_SOURCE, plan
from host.topology.files import load
from host.topology.targets import SPARK

SPOUT = "kafka-spout"
TX_COMMAND = ("python", "-m", "components.kafka_spout.storm_kafka_tx")

# a storm-kafka Flux file as the public examples write them; PROPERTIES are SpoutConfig's
FLUX = """\
name: "storm-kafka-words"
components:
  - id: "stringScheme"
    className: "org.apache.storm.kafka.StringScheme"
  - id: "multiScheme"
    className: "org.apache.storm.spout.SchemeAsMultiScheme"
    constructorArgs: [{{ref: "stringScheme"}}]
  - id: "zkHosts"
    className: "org.apache.storm.kafka.ZkHosts"
    constructorArgs: ["127.0.0.1:2181/kafka"]
  - id: "spoutConfig"
    className: "org.apache.storm.kafka.SpoutConfig"
    constructorArgs: [{{ref: "zkHosts"}}, "words", "/storm-kafka", "reader"]
    properties:
      - name: "scheme"
        ref: "multiScheme"
{properties}
config:
  topology.max.spout.pending: 100
{config}
spouts:
  - id: "kafka-spout"
    className: "org.apache.storm.kafka.KafkaSpout"
    parallelism: 2
    constructorArgs: [{{ref: "spoutConfig"}}]
bolts:
  - id: "sink"
    className: "org.apache.storm.flux.wrappers.bolts.FluxShellBolt"
    constructorArgs: [["python", "sink.py"]]
streams:
  - from: "kafka-spout"
    to: "sink"
    grouping: {{type: SHUFFLE}}
"""


def write(tmp_path: Path, properties: dict[str, Any] | None = None, config: str = "") -> Path:
    lines = [
        f'      - name: "{k}"\n        value: {str(v).lower() if isinstance(v, bool) else v}'
        for k, v in (properties or {}).items()
    ]
    (tmp_path / "sink.py").write_text("")
    path = tmp_path / "topology.yaml"
    path.write_text(FLUX.format(properties="\n".join(lines), config=config))
    return path


PER_TUPLE = {
    "stateUpdateIntervalMs": 100,
    "retryInitialDelayMs": 10,
    "retryDelayMultiplier": 2.0,
    "retryDelayMaxMs": 1000,
    "retryLimit": 3,
}


def test_the_storm_kafka_spout_runs_as_its_transactional_form_with_the_same_settings(tmp_path):
    topology = load(
        write(tmp_path, {"ignoreZkOffsets": False, "maxOffsetBehind": 500}),
        target=SPARK,
    )
    assert plan(topology).stage(SPOUT).role == KAFKA_SOURCE
    mapped = as_transactional(topology, SPOUT)
    spout = mapped.component(SPOUT)
    assert spout.command == TX_COMMAND
    assert (spout.batch, spout.serializer, spout.outputs) == (
        "spout",
        "json",
        {"default": ("str",)},
    )
    assert mapped.transactional_id == "storm-kafka-words"
    again = plan(mapped)
    assert again.stage(SPOUT).role == TRANSACTIONAL_SOURCE
    assert again.tasks == plan(topology).tasks  # the same task ids, so the same contexts
    # the same SpoutConfig as the host-local spout reads, and the batch size
    local, spark = build_conf(topology, SPOUT, "r"), build_conf(mapped, SPOUT, "r")
    assert settings_from_conf(spark) == settings_from_conf(local)
    assert spark["kafka.spout.batch.max.records"] == 1000
    # the transactional spout's settings are the host-local spout's mapping (storm_kafka.py),
    # less the per-tuple ones: one topic, StringScheme as the value translator, text
    sk = settings_from_conf(local)
    tx = tx_from_conf(tx_spout_conf(spark, "b:9092"), {"componentid": SPOUT})
    plain = {k: v for k, v in sk.spout_conf("b:9092").items() if k not in NOT_FOR_BATCHES}
    assert (tx.spout.topics, tx.spout.translator, tx.spout.encoding) == (
        ("words",),
        "value",
        "string",
    )
    assert tx.spout.bootstrap_servers == plain["kafka.spout.bootstrap.servers"]
    assert tx.spout.refresh_period == sk.refresh_freq_secs
    assert tx.batch_max_records == 1000


def test_settings_without_meaning_per_micro_batch_are_plan_warnings_and_dropped(tmp_path):
    path = write(tmp_path, {**PER_TUPLE, "ignoreZkOffsets": True})
    topology = load(path, target=SPARK)
    warnings = plan(topology).stage(SPOUT).warnings
    [no_effect] = [w for w in warnings if w.startswith("no effect on Spark: ")]
    for name in PER_TUPLE:
        assert f"kafka.spoutconfig.{name}" in no_effect
    assert any(w.startswith("kafka.spoutconfig.ignoreZkOffsets: on Spark a") for w in warnings)
    config = build_conf(as_transactional(topology, SPOUT), SPOUT, "r")
    assert not {f"kafka.spoutconfig.{k}" for k in PER_TUPLE} & set(config)
    assert config["kafka.spoutconfig.ignoreZkOffsets"] is True  # it keeps its meaning
    # `--explain` shows them, exit 0, nothing started
    result = CliRunner().invoke(spark_command, [str(path), "--explain"])
    assert result.exit_code == 0, result.output
    assert "stage 1: spout kafka-spout: kafka source" in result.output
    assert "warning: no effect on Spark: kafka.spoutconfig.stateUpdateIntervalMs," in result.output
    # a spout without them has none
    assert plan(load(write(tmp_path), target=SPARK)).stage(SPOUT).warnings == ()


@pytest.mark.parametrize(
    ("config", "reason"),
    [
        (
            "  kafka.spoutconfig.startOffsetTime: 1700000000000",
            "kafka.spoutconfig.startOffsetTime must be -2 (EarliestTime) or -1 (LatestTime)",
        ),
        ("  kafka.spoutconfig.ignoreZkOffsets: yes-please", "ignoreZkOffsets has the wrong type"),
        ('  kafka.spoutconfig.zkServers: [""]', "zkServers must be a list of host names"),
    ],
)
def test_what_the_spout_would_refuse_is_refused_before_anything_starts(tmp_path, config, reason):
    """(Flux checks SpoutConfig's fields as it loads; the topology's config reaches the spout
    without that check, so the spout's own reader decides, before Spark starts.)"""
    path = write(tmp_path, config=config)
    topology = load(path, target=SPARK)
    with pytest.raises(TopologyError) as error:
        as_transactional(topology, SPOUT)
    assert (error.value.file, error.value.component) == (str(path), SPOUT)
    assert reason in error.value.problem
    checkpoint = tmp_path / "checkpoint"
    result = CliRunner().invoke(spark_command, [str(path), "--checkpoint", str(checkpoint)])
    assert result.exit_code == 2, result.output
    assert f"error: {path}: component '{SPOUT}': " in result.output
    assert reason in result.output
    assert not checkpoint.exists(), "refused before the checkpoint is made"


def test_a_checkpoint_is_one_topology_instance(tmp_path):
    first = topology_instance(str(tmp_path / "a"), "words")
    assert first.startswith("words-spark-")
    assert (tmp_path / "a" / INSTANCE_FILE).read_text().strip() == first
    assert topology_instance(str(tmp_path / "a"), "words") == first, "kept across restarts"
    assert topology_instance(str(tmp_path / "b"), "words") != first, "a new checkpoint: a new one"
    # the spout reads it from its config, else storm.id
    assert topology_id({TOPOLOGY_ID: first, "storm.id": "x-1"}) == first
    assert topology_id({"storm.id": "x-1"}) == "x-1"


def test_the_engine_runs_the_mapped_spout_and_writes_offsets_to_zookeeper(tmp_path):
    """Made without starting Spark or connecting anywhere: the plan it runs and its commits."""
    topology = load(write(tmp_path), target=SPARK)
    checkpoint = tmp_path / "checkpoint"
    engine = SparkEngine(plan(topology), str(checkpoint))
    spout = engine.plan.topology.component(SPOUT)
    assert spout.command == TX_COMMAND
    instance = (checkpoint / INSTANCE_FILE).read_text().strip()
    assert spout.config[TOPOLOGY_ID] == instance
    [commits] = engine.kafka_commits  # one per Kafka spout
    assert isinstance(commits, ZooKeeperCommits)
    assert (commits.instance, commits.sk.base_path) == (instance, "/storm-kafka/reader")
    commits.commit(1)  # no ranges stored for txid 1: nothing to write, no connection made
    assert commits._zk is None
    # the commits follow the mapped spout's command, whoever maps it
    mapped = plan(with_topology_id(as_transactional(topology, SPOUT), SPOUT, "words-spark-x"))
    chosen = offset_commits(mapped, mapped.stage(SPOUT), str(tmp_path), "r")
    assert isinstance(chosen, ZooKeeperCommits) and chosen.instance == "words-spark-x"
