"""The Kafka source of the Spark engine (docs/spark.md §4.7): a plain Kafka spout
(`python -m components.kafka_spout`, a `kafka:` block) runs on Spark as our *transactional* Kafka
spout (`components/kafka_spout/transactional.py`) with the same settings, so each micro-batch is
a range of offsets per partition and a replay reads exactly the same records.

Why a mapping and not a source of its own: the transactional spout already has the offset logic
(the first-poll strategies, the group's commits, the ranges stored as the batch's metadata,
`tx_ranges.py`) and the plain spout's record-to-tuple translation (`translate.py`), and the engine
already runs it as a transactional source (host/spark/source.py). What the plain spout does per
tuple (acks, retries, periodic commits) has no meaning when the unit of work is a micro-batch
replayed whole, so those settings are dropped with a warning, and the two whose promise a replay
would break are refused (AT_MOST_ONCE, a dead-letter topic).

The older storm-kafka spout (`components.storm_builtins.storm_kafka_spout`, ZkHosts and
SpoutConfig) runs the same way as its transactional form (`components/kafka_spout/
storm_kafka_tx.py`): partitions from ZooKeeper, the first offsets from its nodes under
`zkRoot/id`, StringScheme's tuples, and the nodes written once a micro-batch has committed.

Pure: no Kafka, no Spark. The driver's commits to Kafka are host/spark/kafka_commits.py.
tests/unit/test_spark_kafka_source.py checks it.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Iterable, Mapping
from typing import Any

from host.errors import TopologyError
from host.runtime.context import build_conf
from host.topology import settings as cfg
from host.topology.component_config import effective_config
from host.topology.flux_java import BUILTINS_PACKAGE
from host.topology.flux_storm_kafka import STORM_KAFKA_MODULE
from host.topology.model import BATCH_SPOUT, TRANSACTIONAL_ID, Component, Topology

PLAIN_MODULE = "components.kafka_spout"
TX_MODULE = "components.kafka_spout.transactional"
STORM_KAFKA_BUILTIN = f"{BUILTINS_PACKAGE}.{STORM_KAFKA_MODULE}"
STORM_KAFKA_TX_MODULE = "components.kafka_spout.storm_kafka_tx"
SK_PREFIX = "kafka.spoutconfig."  # host/topology/flux_storm_kafka.py's, storm_kafka.py's
SK_TOPOLOGY_ID = SK_PREFIX + "topology.id"  # storm_kafka_tx.py's
PREFIX = "kafka.spout."  # components/kafka_spout/config.py's
BATCH_MAX_RECORDS = PREFIX + "batch.max.records"  # components/kafka_spout/tx_config.py's

# The plain spout's settings that shape its per-tuple work (docs/kafka.md, "Spout settings"): on
# Spark a micro-batch is committed or replayed whole, and offsets are committed with it
NO_EFFECT = tuple(
    PREFIX + k
    for k in (
        "offset.commit.period.ms",
        "max.uncommitted.offsets",
        "records.per.next",
        "tuple.tracking.enforced",
        "retry.initial.delay.ms",
        "retry.delay.period.ms",
        "retry.max.retries",
        "retry.max.delay.ms",
    )
)
# storm-kafka's SpoutConfig fields of the same kind: the periodic offset writes and the retries of
# one failed tuple (storm_kafka.py maps them onto the settings above)
SK_NO_EFFECT = tuple(
    SK_PREFIX + k
    for k in (
        "stateUpdateIntervalMs",
        "retryInitialDelayMs",
        "retryDelayMultiplier",
        "retryDelayMaxMs",
        "retryLimit",
    )
)
GUARANTEE = PREFIX + "processing.guarantee"
DEAD_LETTER = PREFIX + "dead.letter.topic"
ENCODING = PREFIX + "encoding"
AT_LEAST_ONCE, AT_MOST_ONCE, NO_GUARANTEE = "AT_LEAST_ONCE", "AT_MOST_ONCE", "NO_GUARANTEE"


def runs_module(command: Iterable[str], module: str) -> bool:
    """`python -m MODULE ...` with any interpreter name (python, python3, a path to one)."""
    argv = tuple(command)
    return (
        len(argv) >= 3
        and os.path.basename(argv[0]).startswith("python")
        and argv[1] == "-m"
        and argv[2] == module
    )


def _spout_settings(topology: Topology, c: Component, prefix: str = PREFIX) -> dict[str, Any]:
    """The `kafka.spout.*` keys the spout reads (or another prefix's): the topology's config
    under the component's."""
    conf = effective_config(topology, c)
    return {k: v for k, v in conf.items() if k.startswith(prefix)}


def is_storm_kafka(c: Component) -> bool:
    """The older storm-kafka spout (Flux's `org.apache.storm.kafka.KafkaSpout`)."""
    return runs_module(c.command, STORM_KAFKA_BUILTIN)


def warnings(topology: Topology, c: Component) -> tuple[str, ...]:
    """The plan's warnings for a Kafka source: the settings that do nothing on Spark. Never
    raises (the refusals are `as_transactional`'s, when the engine starts)."""
    if is_storm_kafka(c):
        return _storm_kafka_warnings(topology, c)
    if not runs_module(c.command, PLAIN_MODULE):
        return ()
    settings = _spout_settings(topology, c)
    out = []
    ignored = [k for k in NO_EFFECT if k in settings]
    if ignored:
        out.append(
            f"no effect on Spark: {', '.join(ignored)}: a micro-batch is replayed whole until it "
            "commits, and offsets are committed to Kafka when it has"
        )
    if str(settings.get(GUARANTEE, AT_LEAST_ONCE)).upper() == NO_GUARANTEE:
        out.append(
            f"{GUARANTEE} NO_GUARANTEE: on Spark each record is processed in exactly one "
            "committed micro-batch (a failed one is replayed whole)"
        )
    return tuple(out)


def _storm_kafka_warnings(topology: Topology, c: Component) -> tuple[str, ...]:
    settings = _spout_settings(topology, c, SK_PREFIX)
    out = []
    ignored = [k for k in SK_NO_EFFECT if k in settings]
    if ignored:
        out.append(
            f"no effect on Spark: {', '.join(ignored)}: a micro-batch is replayed whole until it "
            "commits (a failing record is not given up on: the query fails after --max-restarts), "
            "and the offsets are written to ZooKeeper when it has"
        )
    if settings.get(SK_PREFIX + "ignoreZkOffsets") is True:
        out.append(
            f"{SK_PREFIX}ignoreZkOffsets: on Spark a topology instance is a checkpoint: offsets "
            "another checkpoint, a `host local` run or Storm wrote are ignored when a new "
            "checkpoint starts; a restarted run on the same checkpoint resumes from it"
        )
    return tuple(out)


def as_transactional(topology: Topology, spout_id: str) -> Topology:
    """The topology with its plain Kafka spout replaced by the transactional Kafka spout with the
    same settings (the storm-kafka spout by its transactional form, storm_kafka_tx.py): its
    command, `batch: spout`, `kafka.spout.batch.max.records` from
    `host.spark.kafka.batch.max.records`, the no-effect settings removed, and a transactional id
    (the topology's name) when it has none. TopologyError, naming the file and the spout, for
    what the Kafka source cannot run, and for settings the spout itself would refuse."""
    c = topology.component(spout_id)

    def refuse(reason: str) -> TopologyError:
        return TopologyError(reason, file=topology.source, component=c.id)

    if is_storm_kafka(c):
        return _storm_kafka_as_transactional(topology, c, refuse)
    if not runs_module(c.command, PLAIN_MODULE):
        raise refuse(f"is not a `python -m {PLAIN_MODULE}` spout")
    settings = _spout_settings(topology, c)
    guarantee = str(settings.get(GUARANTEE, AT_LEAST_ONCE)).upper()
    if guarantee == AT_MOST_ONCE:
        raise refuse(
            f"{GUARANTEE} is AT_MOST_ONCE: on Spark a failed micro-batch is read again from "
            "Kafka, which that guarantee forbids; use AT_LEAST_ONCE (the default) or run the "
            "topology with `host local`"
        )
    if settings.get(DEAD_LETTER):
        raise refuse(
            f"{DEAD_LETTER} is set: on Spark a tuple is never failed alone (a failure fails the "
            "micro-batch, which is replayed whole), so nothing would reach that topic; remove "
            "it or run the topology with `host local`"
        )
    if str(settings.get(ENCODING, "string")).lower() == "bytes" and c.serializer == "msgpack":
        raise refuse(
            f"{ENCODING} is bytes under `serializer: msgpack`: its tuples carry raw bytes, and "
            "the Spark engine's rows carry JSON (base64 text instead); use the JSON serializer, "
            "whose tuples are base64 text on both runtimes"
        )
    # a batch spout speaks JSON; values are the same (no bytes: above)
    mapped = _as_batch_spout(topology, c, TX_MODULE, frozenset((*NO_EFFECT, GUARANTEE)))
    _check_settings(mapped, mapped.component(c.id), refuse)
    return mapped


def _as_batch_spout(
    topology: Topology, c: Component, module: str, dropped: frozenset[str]
) -> Topology:
    """`topology` with spout `c` run as `python -m module`, `batch: spout` speaking JSON, the
    `dropped` keys left out (of its config and the topology's), the batch size from
    `host.spark.kafka.batch.max.records`, and a transactional id (the topology's name) when it
    has none."""
    records = cfg.settings_for(topology).spark_kafka_batch_max_records
    spout = dataclasses.replace(
        c,
        command=(c.command[0], "-m", module, *c.command[3:]),
        batch=BATCH_SPOUT,
        serializer="json",
        config={
            **{k: v for k, v in c.config.items() if k not in dropped},
            BATCH_MAX_RECORDS: records,
        },
    )
    config = {k: v for k, v in topology.config.items() if k not in dropped}
    config.setdefault(TRANSACTIONAL_ID, topology.name)
    components = tuple(spout if x.id == c.id else x for x in topology.components)
    return dataclasses.replace(topology, components=components, config=config)


def _storm_kafka_as_transactional(topology: Topology, c: Component, refuse: Any) -> Topology:
    """The storm-kafka spout as its transactional form (storm_kafka_tx.py), its SpoutConfig as
    it is but for the per-tuple fields. storm-kafka has no setting whose promise a replayed
    micro-batch breaks (it is always at-least-once, with no dead-letter topic), so only what the
    spout itself would refuse is refused."""
    # StringScheme's values are text: the same under JSON
    mapped = _as_batch_spout(topology, c, STORM_KAFKA_TX_MODULE, frozenset(SK_NO_EFFECT))
    _check_storm_kafka_settings(mapped, mapped.component(c.id), refuse)
    return mapped


def _check_storm_kafka_settings(topology: Topology, spout: Component, refuse: Any) -> None:
    """What storm_kafka_tx.py checks when it starts (before it asks ZooKeeper anything)."""
    from components.kafka_spout.config import ConfigError, check_outputs
    from components.kafka_spout.storm_kafka_tx import tx_spout_conf
    from components.kafka_spout.tx_config import tx_from_conf

    conf = build_conf(topology, spout, "check")
    context = {
        "componentid": spout.id,
        "stream->outputfields": {s: list(f) for s, f in spout.outputs.items()},
    }
    try:
        # the brokers come from ZooKeeper when it runs; any address stands in for them here
        tx = tx_from_conf(tx_spout_conf(conf, "brokers-from-zookeeper:9092"), context)
        check_outputs(tx.spout, context, "the spout")
    except ConfigError as exc:
        raise refuse(f"cannot run as a Kafka source: {exc}") from None


def with_topology_id(topology: Topology, spout_id: str, instance: str) -> Topology:
    """The mapped storm-kafka spout with the topology instance its nodes name (and compare for
    ignoreZkOffsets): one per checkpoint, so a new checkpoint is a new deployment, as a new
    `storm jar` is on Storm (host/spark/kafka_commits.py `topology_instance`)."""
    components = tuple(
        dataclasses.replace(x, config={**x.config, SK_TOPOLOGY_ID: instance})
        if x.id == spout_id
        else x
        for x in topology.components
    )
    return dataclasses.replace(topology, components=components)


def _check_settings(topology: Topology, spout: Component, refuse: Any) -> None:
    """What the transactional spout checks when it starts, checked now: a bad value is refused
    before Spark starts, not when a Python worker first runs the spout."""
    from components.kafka_spout.config import ConfigError, check_outputs
    from components.kafka_spout.tx_config import tx_from_conf

    conf = build_conf(topology, spout, "check")
    context = {
        "componentid": spout.id,
        "stream->outputfields": {s: list(f) for s, f in spout.outputs.items()},
    }
    try:
        check_outputs(tx_from_conf(conf, context).spout, context, "the Kafka spout")
    except ConfigError as exc:
        raise refuse(f"cannot run as a Kafka source: {exc}") from None


def range_ends(task_metas: Iterable[Any]) -> dict[tuple[str, int], int]:
    """Where a txid's ranges end, per Kafka partition, from its spout tasks' stored metadata
    (`{str(partition number): {"topic", "partition", "from", "to", "records"} or null}`,
    components/kafka_spout/tx_ranges.py `range_meta`): the offsets to commit to the group once
    the txid has committed. A partition that had no batch yet (null) is left out."""
    ends: dict[tuple[str, int], int] = {}
    for meta in task_metas:
        if not isinstance(meta, Mapping):
            continue
        for r in meta.values():
            if isinstance(r, Mapping) and {"topic", "partition", "to"} <= r.keys():
                ends[(str(r["topic"]), int(r["partition"]))] = int(r["to"])
    return ends
