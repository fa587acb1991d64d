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
from host.topology.flux_java import BUILTINS_PACKAGE
from host.topology.flux_storm_kafka import STORM_KAFKA_MODULE
from host.topology.model import BATCH_SPOUT, TRANSACTIONAL_ID, Component, Topology

PLAIN_MODULE = "components.kafka_spout"
TX_MODULE = "components.kafka_spout.transactional"
STORM_KAFKA_BUILTIN = f"{BUILTINS_PACKAGE}.{STORM_KAFKA_MODULE}"
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


def _spout_settings(topology: Topology, c: Component) -> dict[str, Any]:
    """The `kafka.spout.*` keys the spout reads: the topology's config under the component's."""
    conf = cfg.effective_config(topology, c)
    return {k: v for k, v in conf.items() if k.startswith(PREFIX)}


def warnings(topology: Topology, c: Component) -> tuple[str, ...]:
    """The plan's warnings for a Kafka source: the settings that do nothing on Spark. Never
    raises (the refusals are `as_transactional`'s, when the engine starts)."""
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


def as_transactional(topology: Topology, spout_id: str) -> Topology:
    """The topology with its plain Kafka spout replaced by the transactional Kafka spout with the
    same settings: its command, `batch: spout`, `kafka.spout.batch.max.records` from
    `host.spark.kafka.batch.max.records`, the no-effect settings removed, and a transactional id
    (the topology's name) when it has none. TopologyError, naming the file and the spout, for
    what the Kafka source cannot run, and for settings the spout itself would refuse."""
    c = topology.component(spout_id)

    def refuse(reason: str) -> TopologyError:
        return TopologyError(reason, file=topology.source, component=c.id)

    if runs_module(c.command, STORM_KAFKA_BUILTIN):
        raise refuse(
            "is the storm-kafka spout (ZkHosts, SpoutConfig), which keeps its partitions and "
            "offsets in ZooKeeper: the Kafka source of the Spark engine runs only "
            f"`{PLAIN_MODULE}` (storm-kafka-client's) yet (docs/spark.md §5); run the "
            "topology with `host local`"
        )
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
    records = cfg.settings_for(topology).spark_kafka_batch_max_records
    dropped = frozenset((*NO_EFFECT, GUARANTEE))
    spout = dataclasses.replace(
        c,
        command=(c.command[0], "-m", TX_MODULE, *c.command[3:]),
        batch=BATCH_SPOUT,
        serializer="json",  # a batch spout speaks JSON; values are the same (no bytes: above)
        config={
            **{k: v for k, v in c.config.items() if k not in dropped},
            BATCH_MAX_RECORDS: records,
        },
    )
    config = {k: v for k, v in topology.config.items() if k not in dropped}
    config.setdefault(TRANSACTIONAL_ID, topology.name)
    components = tuple(spout if x.id == c.id else x for x in topology.components)
    mapped = dataclasses.replace(topology, components=components, config=config)
    _check_settings(mapped, spout, refuse)
    return mapped


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
