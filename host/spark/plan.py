"""`plan(topology) -> Plan`: a topology as Spark stages (docs/spark.md §2). Pure: no pyspark, no
I/O; the engine turns a Plan into DataFrames and jobs, `host.spark.explain` into text.

One stage per component, in a topological order. A component with parallelism N is a stage of N
partitions, partition i being its i-th task under `host local` (`assign_tasks`), so a component
sees the same task ids and context on both runtimes. Every subscription becomes an exchange: how
the source stage's result is repartitioned for the receiving stage (docs/spark.md §2.2).

What cannot run on Spark is refused here, before anything starts, as a TopologyError naming the
file and the component (docs/spark.md §2.5).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from host.errors import RoutingError, TopologyError
from host.runtime.context import TaskMap, assign_tasks
from host.runtime.router import key_extractor, stable_hash
from host.spark import kafka_source, spark_input
from host.topology.batch_group import batch_group, find_cycle
from host.topology.component_config import tick_freq
from host.topology.flux_java import BUILTINS_PACKAGE
from host.topology.flux_storm_kafka import STORM_KAFKA_MODULE
from host.topology.kafka_components import SPOUT_MODULE as KAFKA_SPOUT_MODULE
from host.topology.model import (
    ALL,
    BATCH_BOLT,
    BATCH_SPOUT,
    COMMITTER,
    DIRECT,
    FIELDS,
    GLOBAL,
    LOCAL_OR_SHUFFLE,
    NONE,
    PARTIAL_KEY,
    SHUFFLE,
    Component,
    Grouping,
    Topology,
)

# ---- what a stage is ----------------------------------------------------------------------------

# Sources: what a spout becomes (docs/spark.md §2.3)
TRANSACTIONAL_SOURCE = "transactional source"  # `batch: spout`: its batches are micro-batches
SPARK_INPUT = "spark input"  # components/spark_spout: its DataFrame / directory / query plugs in
KAFKA_SOURCE = "kafka source"  # components/kafka_spout or the storm-kafka built-in
DRIVER_SPOUT = "driver-staged plain spout"  # any other spout: run in the driver, staged per batch
SOURCE_KINDS = (TRANSACTIONAL_SOURCE, SPARK_INPUT, KAFKA_SOURCE, DRIVER_SPOUT)

# Bolts: what their partition does at the end of a micro-batch (docs/spark.md §2.4)
BATCH_BOLT_ROLE = "batch bolt"  # finish-batch at the end of its partition's batch
COMMITTER_ROLE = "committer"  # finish in the commit phase, in txid order
PLAIN_BOLT = "plain bolt"  # processes and acks; keeps nothing between micro-batches
BOLT_ROLES = (BATCH_BOLT_ROLE, COMMITTER_ROLE, PLAIN_BOLT)

# The modules whose spouts are recognised by their command (`python -m MODULE`, any interpreter
# name), as host.topology.flux_java recognises its built-ins by command
SPARK_SPOUT_MODULE = "components.spark_spout"
KAFKA_SPOUT_MODULES = (KAFKA_SPOUT_MODULE, f"{BUILTINS_PACKAGE}.{STORM_KAFKA_MODULE}")

# ---- exchanges ----------------------------------------------------------------------------------

PASS_THROUGH = "pass-through"  # no exchange: partition i of the source feeds partition i
ROUND_ROBIN = "round-robin"  # a round-robin repartition into the receiver's partition count
HASH = "hash"  # the local router's fields hash of some field positions
SINGLE = "single"  # everything to partition 0, the lowest task
BROADCAST = "broadcast"  # a copy to every partition
TO_NAMED_TASK = "direct"  # the partition of the task the emitter named
EXCHANGE_KINDS = (PASS_THROUGH, ROUND_ROBIN, HASH, SINGLE, BROADCAST, TO_NAMED_TASK)

STATE_WARNING = (
    "state is not kept between micro-batches: a plain bolt's memory may start empty at any "
    "batch (another executor, a retried task); keep state in a committer"
)


@dataclass(frozen=True)
class Exchange:
    """How one subscription's tuples reach the receiving stage's partitions."""

    kind: str  # one of EXCHANGE_KINDS
    partitions: int  # the receiving stage's
    fields: tuple[str, ...] = ()  # HASH: the grouping's fields ...
    field_indices: tuple[int, ...] = ()  # ... and their positions in the source stream
    first_task: int = 1  # the receiving stage's partition 0 (direct emits name task ids)

    def partitioner(self) -> Callable[[list], int]:
        """`values -> partition` for a HASH exchange: the local router's fields hash
        (host/runtime/router.py, `_fields`), so a key lands on the same task index under `host
        spark` as under `host local`. Build it once per partition of work: it is a closure."""
        if self.kind != HASH:
            raise ValueError(f"a {self.kind} exchange has no partitioner")
        key_of = key_extractor(self.field_indices)
        n = self.partitions

        def partition(values: list) -> int:
            return stable_hash(key_of(values)) % n

        return partition

    def direct_partition(self, task: int) -> int:
        """The partition of the task a direct emit names; RoutingError for a task that is not
        one of the receiving stage's (the router's check for the same emit)."""
        if self.kind != TO_NAMED_TASK:
            raise ValueError(f"a {self.kind} exchange takes no direct emits")
        partition = task - self.first_task
        if not 0 <= partition < self.partitions:
            raise RoutingError(
                f"direct emit to task {task}, which is not one of tasks "
                f"{self.first_task}..{self.first_task + self.partitions - 1} of the receiver"
            )
        return partition


@dataclass(frozen=True)
class Edge:
    """One subscription: `target` receives `source`'s `stream` through `exchange`."""

    source: str
    stream: str
    fields: tuple[str, ...]  # the stream's declared fields
    target: str
    grouping: Grouping
    exchange: Exchange


@dataclass(frozen=True)
class Stage:
    component: Component
    tasks: tuple[int, ...]  # partition i runs task tasks[i], the ids `host local` gives
    role: str  # a SOURCE_KINDS entry for a spout, a BOLT_ROLES entry for a bolt
    in_batch_group: bool  # downstream of the batch spout (or it): one transaction per batch
    inputs: tuple[Edge, ...]  # in the component's input order; several are a union
    outputs: dict[str, tuple[Edge, ...]]  # every declared stream -> who reads it (() dropped)
    warnings: tuple[str, ...]
    # a bolt's `topology.tick.tuple.freq.secs` (None: no ticks): on Spark its ticks come while
    # a partition's input is written, plus one at its end (host/spark/ticks.py, docs §2.4)
    tick_freq: int | None = None

    @property
    def id(self) -> str:
        return self.component.id

    @property
    def partitions(self) -> int:
        return len(self.tasks)

    @property
    def readers(self) -> int:
        """How many subscriptions read this stage's result."""
        return sum(len(edges) for edges in self.outputs.values())

    @property
    def cached(self) -> bool:
        """Read more than once (several streams, several subscribers): computed once, cached,
        and each reader takes its stream from the cached result (a component's process runs
        once per partition and batch, whatever reads its output)."""
        return self.readers > 1

    @property
    def union(self) -> bool:
        return len(self.inputs) > 1


@dataclass(frozen=True)
class Plan:
    topology: Topology
    tasks: TaskMap  # `assign_tasks(topology)`, the same numbering as `host local`
    stages: tuple[Stage, ...]  # topological: a stage comes after every stage it reads

    def stage(self, component_id: str) -> Stage:
        for s in self.stages:
            if s.id == component_id:
                return s
        raise KeyError(component_id)

    @property
    def transactional_id(self) -> str | None:
        return self.topology.transactional_id


# ---- planning -----------------------------------------------------------------------------------


def plan(topology: Topology) -> Plan:
    """The topology as stages. Raises TopologyError for what cannot run on Spark (docs/spark.md
    §2.5)."""
    _refuse_unmappable(topology)
    tasks = assign_tasks(topology)
    members = frozenset(batch_group(topology))
    edges = _edges(topology, tasks)
    stages = tuple(_stage(topology, tasks, c, members, edges) for c in _topological_order(topology))
    return Plan(topology, tasks, stages)


def _refuse_unmappable(topology: Topology) -> None:
    for c in topology.components:
        if c.in_host is not None:
            raise TopologyError(
                f"is a DRPC part ({c.in_host}): DRPC requests are served by the local host's "
                "DRPC server, which does not run on Spark; run this topology with `host local`",
                file=topology.source,
                component=c.id,
            )
    cycle = find_cycle(topology, tuple(c.id for c in topology.components))
    if cycle is not None:
        raise TopologyError(
            f"is on a cycle ({' -> '.join(cycle)}): a Spark stage reads only stages computed "
            "before it, so a topology on Spark must have no cycle",
            file=topology.source,
            component=cycle[0],
        )


def _topological_order(topology: Topology) -> list[Component]:
    """Every component after those it reads; ties in the topology's component order, so the
    order is stable. The topology has no cycle (checked before)."""
    placed: set[str] = set()
    order: list[Component] = []
    waiting = list(topology.components)
    while waiting:
        ready = next(c for c in waiting if all(i.source in placed for i in c.inputs))
        waiting.remove(ready)
        placed.add(ready.id)
        order.append(ready)
    return order


def _edges(topology: Topology, tasks: TaskMap) -> list[Edge]:
    out = []
    for c in topology.components:
        for inp in c.inputs:
            source = topology.component(inp.source)
            fields = source.outputs[inp.stream]
            exchange = _exchange(inp.grouping, fields, source, tasks.tasks_of(c.id))
            out.append(Edge(inp.source, inp.stream, fields, c.id, inp.grouping, exchange))
    return out


def _exchange(
    grouping: Grouping, fields: tuple[str, ...], source: Component, targets: tuple[int, ...]
) -> Exchange:
    n = len(targets)
    first = targets[0]
    if grouping.type in (SHUFFLE, NONE, LOCAL_OR_SHUFFLE):
        # Any task will do. With as many partitions on both sides, partition i feeds partition i
        # and nothing moves; otherwise a round-robin repartition gives the receiver its own
        # parallelism (Spark keeps the source's partition count through a narrow dependency).
        kind = PASS_THROUGH if source.parallelism == n else ROUND_ROBIN
        return Exchange(kind, n, first_task=first)
    if grouping.type in (FIELDS, PARTIAL_KEY):
        # partial_key: the first of the router's two candidates (`stable_hash(key)`), a fixed
        # choice: Spark partitions share no load counts, and a replay must route identically
        indices = tuple(fields.index(f) for f in grouping.fields)
        return Exchange(HASH, n, grouping.fields, indices, first_task=first)
    if grouping.type == GLOBAL:
        return Exchange(SINGLE, n, first_task=first)
    if grouping.type == ALL:
        return Exchange(BROADCAST, n, first_task=first)
    if grouping.type == DIRECT:
        return Exchange(TO_NAMED_TASK, n, first_task=first)
    raise AssertionError(f"unknown grouping {grouping.type!r}")  # the loader validated it


def _stage(
    topology: Topology,
    tasks: TaskMap,
    c: Component,
    members: frozenset[str],
    edges: list[Edge],
) -> Stage:
    inputs = tuple(e for e in edges if e.target == c.id)
    outputs = {
        stream: tuple(e for e in edges if e.source == c.id and e.stream == stream)
        for stream in c.outputs
    }
    role = _source_kind(c) if c.is_spout else _bolt_role(c)
    return Stage(
        component=c,
        tasks=tasks.tasks_of(c.id),
        role=role,
        in_batch_group=c.id in members,
        inputs=inputs,
        outputs=outputs,
        warnings=_warnings(topology, c, role),
        tick_freq=tick_freq(topology, c),
    )


def _source_kind(c: Component) -> str:
    # The Spark spout first: declared `batch: spout` (spark.spout.transactional) its batches are
    # already Spark micro-batches, and its input plugs in directly either way
    if kafka_source.runs_module(c.command, SPARK_SPOUT_MODULE):
        return SPARK_INPUT
    if c.batch == BATCH_SPOUT:
        return TRANSACTIONAL_SOURCE
    if any(kafka_source.runs_module(c.command, m) for m in KAFKA_SPOUT_MODULES):
        return KAFKA_SOURCE
    return DRIVER_SPOUT


def _bolt_role(c: Component) -> str:
    if c.batch == COMMITTER:
        return COMMITTER_ROLE
    if c.batch == BATCH_BOLT:
        return BATCH_BOLT_ROLE
    return PLAIN_BOLT


def _warnings(topology: Topology, c: Component, role: str) -> tuple[str, ...]:
    out = []
    # Every plain bolt, not only those fed by fields: nothing tells a counting bolt from a
    # stateless one, and a global- or shuffle-fed bolt may keep totals too (examples/wordcount's
    # report). A batch bolt's state is per batch by contract, a committer's is stored.
    if role == PLAIN_BOLT:
        out.append(STATE_WARNING)
    if role == KAFKA_SOURCE:  # its settings that do nothing on Spark (docs/spark.md §4.7)
        out.extend(kafka_source.warnings(topology, c))
    if role == SPARK_INPUT:  # its settings that do nothing on Spark (docs/spark.md §4.8)
        out.extend(spark_input.warnings(topology, c.id))
    return tuple(out)
