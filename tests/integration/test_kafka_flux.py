"""A storm-kafka-client Flux file, unmodified, against a real broker (Tansu): the KafkaSpout
reads two topics through a Pattern bean and the KafkaBolt writes every record to a third; the
topics, group and bootstrap servers come from the environment (`${ENV-...}`, Flux's -e).
tests/unit/test_flux_kafka.py checks what the file loads into."""

from __future__ import annotations

from pathlib import Path

from host.topology import load
from tests.integration.components.spark.support import SteppedRun
from tests.support import kafka_broker as broker
from tests.support.kafka_broker import committed, create_topic, produce, read_topic

kafka_broker = broker.kafka_broker  # the session's broker fixture

FLUX_FILE = (
    Path(__file__).resolve().parent.parent / "unit" / "flux" / "kafka" / "kafka_to_kafka.yaml"
)
RUN_SECS = 120


def test_a_storm_kafka_client_flux_file_copies_two_topics_into_one(kafka_broker, monkeypatch):
    bs = kafka_broker.bootstrap
    inputs = ["fluxin-a", "fluxin-b"]
    for topic in inputs:
        create_topic(bs, topic, partitions=2)
    create_topic(bs, "fluxout")
    ends = {
        topic: produce(bs, topic, ((f"{topic}-{i}", f"v{i}") for i in range(300)))
        for topic in inputs
    }
    for name, value in {
        "KAFKA_BOOTSTRAP": bs,
        "KAFKA_IN_PATTERN": "fluxin-.*",
        "KAFKA_GROUP": "flux-copier",
        "KAFKA_OUT": "fluxout",
    }.items():
        monkeypatch.setenv(name, value)
    topology = load(FLUX_FILE, env_filter=True)
    assert topology.component("kafka-spout").parallelism == 2

    def all_committed() -> bool:
        return all(committed(bs, "flux-copier", t, 2) == ends[t] for t in inputs)

    run = SteppedRun(topology, spout="kafka-spout").start()
    try:
        run.until(all_committed, RUN_SECS, "the group committed both topics to their ends")
    finally:
        assert run.stop() == 0
    out = read_topic(bs, "fluxout", {0: 600})
    written = {(m.key(), m.value()) for m in out}
    assert written == {
        (f"{t}-{i}".encode(), f"v{i}".encode()) for t in inputs for i in range(300)
    }, "every record copied, key and value (FieldNameBasedTupleToKafkaMapper(key, value))"
