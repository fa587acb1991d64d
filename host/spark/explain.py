"""`explain(plan, master=None) -> str`: a Plan as text, one block per stage, in the tone of `python -m host
validate` (`python -m host spark TOPOLOGY --explain`; docs/spark.md §2.6). Pure."""

from __future__ import annotations

import os

from host.spark.idle_batches import idle_batch_secs
from host.spark.plan import (
    BATCH_BOLT_ROLE,
    BROADCAST,
    COMMITTER_ROLE,
    DRIVER_SPOUT,
    HASH,
    KAFKA_SOURCE,
    PASS_THROUGH,
    PLAIN_BOLT,
    ROUND_ROBIN,
    SINGLE,
    SPARK_INPUT,
    TO_NAMED_TASK,
    TRANSACTIONAL_SOURCE,
    Edge,
    Plan,
    Stage,
)
from host.spark.session_settings import MASTER_KEY
from host.spark.shipping import AUTO, components_in, directories, is_local, ships
from host.spark.spout_mix import sources_lines
from host.topology import settings as cfg
from host.topology.flux_java import builtin_for_command
from host.topology.graph import edge_label
from host.topology.model import PARTIAL_KEY, Input, Topology
from multilang.messages import DEFAULT_STREAM

# what each role means on Spark, said once per stage
_ROLE_TEXT = {
    TRANSACTIONAL_SOURCE: (
        "its batches are the micro-batches (txid = Spark batch id + 1); a batch's metadata is "
        "its offset, so a replay emits the same tuples"
    ),
    SPARK_INPUT: (
        "its DataFrame, output directory or streaming query is read by Spark directly, no spout "
        "process: a streaming query's micro-batches are Spark's own, each staged so a replay "
        "reads the same rows (relayed for idle micro-batches or beside other spouts: see its "
        "source line); a DataFrame is staged once, then read in micro-batches of at most "
        "host.spark.batch.max.tuples rows; each complete output directory is one micro-batch"
    ),
    KAFKA_SOURCE: (
        "runs as the transactional Kafka spout (components.kafka_spout.transactional; the "
        "storm-kafka spout as components.kafka_spout.storm_kafka_tx) with the same settings and "
        "tuples: each micro-batch is a range of offsets per Kafka partition, stored before it is "
        "read, so a replay reads the same records; the offsets are committed once the "
        "micro-batch has committed (to the group; the storm-kafka spout's to its ZooKeeper nodes)"
    ),
    DRIVER_SPOUT: (
        "runs in the driver: what it emits in a trigger interval is staged as that micro-batch, "
        "acked when the batch commits, failed if it is abandoned"
    ),
    BATCH_BOLT_ROLE: "gets finish-batch at the end of its partition's batch",
    COMMITTER_ROLE: (
        "gets finish in txid order (txid = Spark batch id + 1), after every partition of its "
        "batch has finished"
    ),
    PLAIN_BOLT: "processes and acks each tuple as under `host local`",
}

# the program a command starts -> the runtime an executor needs for it
_LANGUAGES = {"python": "Python", "node": "Node", "nodejs": "Node", "bash": "bash", "sh": "sh"}


def explain(plan: Plan, master: str | None = None) -> str:
    """`master`: the command's --master, which says whether the components' directories are
    shipped (else the topology's spark.master does, else the rule is said)."""
    topology = plan.topology
    partitions = sum(s.partitions for s in plan.stages)
    where = f"{topology.source}: " if topology.source else ""
    lines = [
        f"{where}plan for topology '{topology.name}' on Spark: {len(plan.stages)} stage(s), "
        f"{partitions} partition(s)"
    ]
    if plan.transactional_id is not None:
        lines.append(
            f"  transactional id: {plan.transactional_id}: each micro-batch is one "
            "transaction, committed in txid order"
        )
    lines.extend(sources_lines(plan))  # several spouts: what a micro-batch holds, or why not
    idle = None
    spouts = [s for s in plan.stages if s.component.is_spout]
    # beside a batch spout its coordinator alone says when there is a txid, and an idle
    # micro-batch holds none; a streaming input is relayed for idle micro-batches (or beside
    # other spouts), so the stager cuts its txids, idle ones too (docs/spark.md §2.4, §4.9)
    if not any(s.role in (TRANSACTIONAL_SOURCE, KAFKA_SOURCE) for s in spouts) and any(
        s.role in (DRIVER_SPOUT, SPARK_INPUT) for s in spouts
    ):
        idle = idle_batch_secs(topology)
        if idle is not None:
            lines.append(
                f"  idle micro-batches: one after {idle:g} s with none, while the spouts emit "
                f"nothing (host.spark.idle.batch.secs), so that ticking bolts get their ticks"
            )
    no_txid = False  # beside a batch spout idle micro-batches hold no txid (source.py, staging.py)
    if any(s.role in (TRANSACTIONAL_SOURCE, KAFKA_SOURCE) for s in spouts):
        idle = idle_batch_secs(topology)
        no_txid = idle is not None
        if idle is not None:
            lines.append(
                f"  idle micro-batches: one after {idle:g} s with none, while a batch spout's "
                "coordinator opens no batch (host.spark.idle.batch.secs); one holds no txid, so "
                "only the plain bolts run in it, for their ticks, and the txids after it run "
                "behind Spark's batch ids"
            )
    lines.extend(_shipping_lines(topology, master or topology.config.get(MASTER_KEY)))
    for number, stage in enumerate(plan.stages, 1):
        batch = no_txid and stage.component.batch is not None
        lines.extend(_stage_lines(number, stage, None if batch else idle))
    return "\n".join(lines) + "\n"


def _shipping_lines(topology: Topology, master: object) -> list[str]:
    """Where the executors find the components' directories (host/spark/shipping.py, docs/spark.md
    §6.1); without a master named, `auto` is said as a rule."""
    dirs = directories(topology)
    if not dirs:
        return []
    setting = cfg.settings_for(topology).spark_ship
    named = "; ".join(f"{d} ({', '.join(components_in(topology, d))})" for d in dirs)
    why = f"{cfg.SPARK_SHIP}: {_yaml(setting)}"
    if setting == AUTO and isinstance(master, str):
        shipped = ships(topology, master)
        why += f", master {master}"
    elif setting == AUTO:
        return [
            f"  component directories: {named}: shipped to the executors as archives when the "
            f"master is not local ({why})"
        ]
    else:
        shipped = bool(setting)
    if shipped:
        when = "shipped to the executors as archives"
    elif isinstance(master, str) and is_local(master):
        when = "not shipped: the executors run on this host"
    else:
        when = "not shipped: every executor host needs them at these paths"
    return [f"  component directories: {named}: {when} ({why})"]


def _yaml(value: str | bool) -> str:
    return str(value).lower() if isinstance(value, bool) else value


def _stage_lines(number: int, stage: Stage, idle: float | None) -> list[str]:
    c = stage.component
    kind = "spout" if c.is_spout else "bolt"
    member = " in the batch group" if stage.in_batch_group and not c.is_spout else ""
    lines = [
        f"  stage {number}: {kind} {c.id}: {stage.role}{member}",
        f"    runs: {_runs(c.command)}",
        f"    partitions: {stage.partitions} = {_tasks(stage.tasks)}",
        f"    role: {_ROLE_TEXT[stage.role]}",
    ]
    if stage.tick_freq is not None:
        lines.append(f"    ticks: {_ticks(stage.tick_freq, idle)}")
    if stage.inputs:
        union = f" (a union of {len(stage.inputs)})" if stage.union else ""
        lines.append(f"    inputs{union}:")
        lines.extend(f"      {_input(e)}" for e in stage.inputs)
    # a stream without fields that nobody reads (a sink's `outputs: []`) is not worth a line
    outputs = {s: edges for s, edges in stage.outputs.items() if edges or c.outputs[s]}
    if outputs:
        cached = f" (cached: read {stage.readers} times, computed once)" if stage.cached else ""
        lines.append(f"    outputs{cached}:")
        for stream, edges in outputs.items():
            lines.extend(f"      {line}" for line in _output(stream, c.outputs[stream], edges))
    lines.extend(f"    warning: {w}" for w in stage.warnings)
    return lines


def _runs(command: tuple[str, ...]) -> str:
    builtin = builtin_for_command(command)
    text = " ".join(command)
    if builtin is not None:
        return f"{text} ({builtin.short_name}, built-in; Python)"
    program = os.path.basename(command[0]) if command else ""
    language = _LANGUAGES.get(program) or ("Python" if program.startswith("python") else None)
    return f"{text} ({language})" if language else text


def _ticks(freq: int, idle: float | None) -> str:
    # what host/spark/ticks.py gives: its clock runs only while a partition runs
    between = (
        f"between micro-batches, an idle one after {idle:g} s brings the end one"
        if idle is not None
        else "none between micro-batches"
    )
    return (
        f"every {freq} s while its partition's input is written, and one at the end of that "
        f"input, before the partition waits for its last acks (topology.tick.tuple.freq.secs = "
        f"{freq}); {between}"
    )


def _tasks(tasks: tuple[int, ...]) -> str:
    return f"task {tasks[0]}" if len(tasks) == 1 else "tasks " + ", ".join(map(str, tasks))


def _stream(stream: str, fields: tuple[str, ...]) -> str:
    return f"{stream} [{', '.join(fields)}]"


def _input(edge: Edge) -> str:
    grouping = edge_label(Input(edge.source, DEFAULT_STREAM, edge.grouping))
    return f"{edge.source} {_stream(edge.stream, edge.fields)}, {grouping}: {_exchange(edge)}"


def _output(stream: str, fields: tuple[str, ...], edges: tuple[Edge, ...]) -> list[str]:
    if not edges:
        return [f"{_stream(stream, fields)} -> nobody subscribes: dropped"]
    return [f"{_stream(stream, fields)} -> {e.target} ({e.exchange.kind})" for e in edges]


def _exchange(edge: Edge) -> str:
    x = edge.exchange
    n = f"{x.partitions} partition" + ("" if x.partitions == 1 else "s")
    if x.kind == PASS_THROUGH:
        return "no exchange (partition i feeds partition i)"
    if x.kind == ROUND_ROBIN:
        return f"round-robin repartition into {n}"
    if x.kind == HASH:
        on = ", ".join(f"{f} (field {i})" for f, i in zip(x.fields, x.field_indices, strict=True))
        text = f"hash partitioning on {on} into {n}, the local router's hash"
        if edge.grouping.type == PARTIAL_KEY:
            text += " (its first candidate: no balancing between two)"
        return text
    if x.kind == SINGLE:
        return f"all to partition 0 (task {x.first_task}) of {n}"
    if x.kind == BROADCAST:
        return f"a copy to each of {n}"
    if x.kind == TO_NAMED_TASK:
        return f"to the partition of the task the emitter names, of {n}"
    raise AssertionError(f"unknown exchange {x.kind!r}")
