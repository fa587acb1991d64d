"""A plan's bolt stages over RDDs, for one micro-batch (one transaction): docs/spark.md §4.3.

`BatchRun(plan, source_rdd, tx, committed_txid).run(sc)` builds every stage's RDD from the
source's rows, then runs two phases of Spark jobs:

1. **processing**: every stage that is not a committer nor downstream of one. What the
   commit-phase stages read from them is materialized here (persisted), so that
2. **commit**: the committers (and what they feed) run in jobs of their own, only once every
   partition of every other stage has finished the batch -- Storm's rule that a committer's
   finish comes after the whole batch is processed (docs/transactional.md §2, rule 5).

Each stage's partition i runs the component's task `tasks[i]` as a multilang subprocess
(host.spark.process_cache.shared_process; `run_bolt` with the batch's Tx for batch bolts and
committers, whose finish ends the partition). A stage read more than once is persisted and read
from the cache; everything persisted is unpersisted when the batch ends.

What travels between stages: a stage's output is `(stream, task, values, direct task or None)`;
an exchange turns one subscription's share of it into the receiver's input tuples `(source,
stream, source task, values)`, keyed by the receiving partition where it moves data, then
`partitionBy` with the identity puts key p into partition p.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any

from host.errors import RoutingError
from host.spark.component_process import ComponentProcess, Tx
from host.spark.plan import (
    BROADCAST,
    COMMITTER_ROLE,
    HASH,
    PASS_THROUGH,
    ROUND_ROBIN,
    SINGLE,
    TO_NAMED_TASK,
    Edge,
    Plan,
    Stage,
)
from host.spark.process_cache import shared_process
from host.topology.model import Topology

Output = tuple[str, int, list[Any], "int | None"]  # stream, emitting task, values, direct target
InputTuple = tuple[str, str, int, list[Any]]  # source, stream, source task, values


def identity(key: int) -> int:
    """The partition function for keys that already are partition numbers."""
    return key


# ---- one partition of one stage (runs in an executor's Python worker) ---------------------------

# per ComponentProcess (by id) in this worker: (pid, txid, attempt) of the last batch run it did
_last_batch: dict[int, tuple[int | None, int, int]] = {}


def fresh_for_batch(proc: ComponentProcess, tx: Tx) -> None:
    """A batch bolt keeps an attempt's state in its process. If this very process already ran
    this (txid, attempt) -- Spark recomputes a partition (a retried task whose earlier try got
    through the bolt, a lost cached block, a resubmitted stage) -- it would add the tuples to
    the old state, or fail them as belonging to a finished attempt: it is replaced first, and a
    new process starts the attempt from nothing. A failed run's process is already gone
    (component_process kills it), so a retry after a crash starts fresh anyway."""
    key = id(proc)
    seen = _last_batch.get(key)
    if seen is not None and proc.child is not None and seen == (proc.pid, tx.txid, tx.attempt):
        proc.kill()
    _last_batch[key] = (None, tx.txid, tx.attempt)


def run_stage_partition(
    topology: Topology,
    component: str,
    tasks: tuple[int, ...],
    batch: bool,
    tx: Tx,
    run_id: str,
    index: int,
    items: Iterable[InputTuple],
) -> Iterator[Output]:
    task = tasks[index]
    proc = shared_process(topology, component, task, run_id=run_id, committed_txid=tx.txid - 1)
    if batch:
        fresh_for_batch(proc, tx)
        emits = proc.run_bolt(items, tx=tx)
    else:
        emits = proc.run_bolt(items)
    first = True
    for e in emits:
        if first and batch:
            _last_batch[id(proc)] = (proc.pid, tx.txid, tx.attempt)
            first = False
        yield (e.stream, task, e.values, e.task)
    if batch:  # finished: this process has done the attempt
        _last_batch[id(proc)] = (proc.pid, tx.txid, tx.attempt)


def _unkeyed(pairs: Iterable[tuple[int, InputTuple]]) -> Iterator[InputTuple]:
    for _, item in pairs:
        yield item


# ---- exchanges ------------------------------------------------------------------------------------


def edge_items(edge: Edge) -> Callable[[int, Iterable[Output]], Iterator[tuple[int, InputTuple]]]:
    """`(partition index, a source partition's outputs) -> (receiving partition, input tuple)`
    for one subscription (docs/spark.md §2.2)."""
    x = edge.exchange
    source, stream, n, kind = edge.source, edge.stream, x.partitions, x.kind

    def keyed(index: int, outputs: Iterable[Output]) -> Iterator[tuple[int, InputTuple]]:
        if kind == HASH:
            partition_of = x.partitioner()
        counter = index
        for out_stream, task, values, direct in outputs:
            if out_stream != stream:
                continue
            item = (source, stream, task, values)
            if kind == TO_NAMED_TASK:
                if direct is None:
                    raise RoutingError(
                        f"{source}[{task}] emitted to stream {stream!r} without naming a task; "
                        f"{edge.target} subscribes to it with a direct grouping"
                    )
                if x.first_task <= direct < x.first_task + n:
                    yield (direct - x.first_task, item)
                continue
            if direct is not None:
                continue  # a direct emit goes only to the task it names
            if kind == PASS_THROUGH:
                yield (index, item)
            elif kind == ROUND_ROBIN:
                yield (counter % n, item)
                counter += 1
            elif kind == HASH:
                yield (partition_of(values), item)
            elif kind == SINGLE:
                yield (0, item)
            elif kind == BROADCAST:
                for p in range(n):
                    yield (p, item)
            else:
                raise AssertionError(f"unknown exchange {kind!r}")

    return keyed


def pass_through_items(edge: Edge) -> Callable[[Iterable[Output]], Iterator[InputTuple]]:
    source, stream = edge.source, edge.stream

    def items(outputs: Iterable[Output]) -> Iterator[InputTuple]:
        for out_stream, task, values, direct in outputs:
            if out_stream == stream and direct is None:
                yield (source, stream, task, values)

    return items


# ---- one micro-batch --------------------------------------------------------------------------------


class BatchRun:
    """The RDDs and jobs of one micro-batch. `source_rdd` holds the batch spout's outputs, in its
    tasks' partitions (partition i = spout task i)."""

    def __init__(self, plan: Plan, source_rdd: Any, tx: Tx, run_id: str) -> None:
        self.plan = plan
        self.tx = tx
        self.run_id = run_id
        self.outputs: dict[str, Any] = {}
        self.persisted: list[Any] = []
        self.commit_phase = _commit_phase(plan)
        self.pre_commit_terminals: list[Any] = []
        self.commit_terminals: list[Any] = []
        spout = next(s for s in plan.stages if s.component.is_spout)
        self._keep(spout, source_rdd)
        for stage in plan.stages:
            if not stage.component.is_spout:
                self._build(stage)

    def _keep(self, stage: Stage, rdd: Any) -> None:
        if stage.cached:
            rdd = rdd.persist()
            self.persisted.append(rdd)
        self.outputs[stage.id] = rdd
        if stage.readers == 0:
            phase = self.commit_terminals if stage.id in self.commit_phase else None
            (phase if phase is not None else self.pre_commit_terminals).append(rdd)

    def _build(self, stage: Stage) -> None:
        n = stage.partitions
        committing = stage.id in self.commit_phase
        only = stage.inputs[0] if len(stage.inputs) == 1 else None
        if (
            only is not None
            and not committing
            and only.exchange.kind == PASS_THROUGH
            and self.outputs[only.source].getNumPartitions() == n
        ):
            source_rdd = self.outputs[only.source]
            inputs = source_rdd.mapPartitions(pass_through_items(only), preservesPartitioning=True)
        else:
            keyed = []
            for edge in stage.inputs:
                rdd = self.outputs[edge.source].mapPartitionsWithIndex(edge_items(edge))
                if committing and edge.source not in self.commit_phase:
                    # the committer's input, complete before the commit phase begins
                    rdd = rdd.persist()
                    self.persisted.append(rdd)
                    self.pre_commit_terminals.append(rdd)
                keyed.append(rdd)
            union = keyed[0] if len(keyed) == 1 else keyed[0].context.union(keyed)
            inputs = union.partitionBy(n, identity).mapPartitions(_unkeyed)
        topology, cid, tasks = self.plan.topology, stage.id, stage.tasks
        batch, tx, run_id = stage.component.batch is not None, self.tx, self.run_id

        def run(index: int, items: Iterable[InputTuple]) -> Iterator[Output]:
            return run_stage_partition(topology, cid, tasks, batch, tx, run_id, index, items)

        self._keep(stage, inputs.mapPartitionsWithIndex(run))

    def run(self, sc: Any) -> None:
        """Phase 1, then phase 2 (each one Spark job). Raises what the jobs raise (a component
        that failed in every try Spark gave it)."""
        for terminals in (self.pre_commit_terminals, self.commit_terminals):
            if terminals:
                rdd = terminals[0] if len(terminals) == 1 else sc.union(terminals)
                rdd.foreachPartition(_drain)

    def unpersist(self) -> None:
        for rdd in self.persisted:
            rdd.unpersist(blocking=False)
        self.persisted = []


def _drain(items: Iterable[Any]) -> None:
    for _ in items:
        pass


def _commit_phase(plan: Plan) -> frozenset[str]:
    """Committers and every stage downstream of one."""
    out: set[str] = set()
    for stage in plan.stages:  # topological: sources before readers
        if stage.role == COMMITTER_ROLE or any(e.source in out for e in stage.inputs):
            out.add(stage.id)
    return frozenset(out)
