"""A plan's bolt stages over RDDs, for one micro-batch (one transaction): docs/spark.md §4.3.

`BatchRun(plan, source_rdd, tx, run_id).run(sc)` builds every stage's RDD from the source's
rows, then runs the batch in two phases:

1. **processing**: every stage that is not a committer nor downstream of one, in one Spark job.
   What the commit-phase stages read from them comes out of that job complete, so that
2. **commit**: the committers (and what they feed) run only once every partition of every other
   stage has finished the batch -- Storm's rule that a committer's finish comes after the whole
   batch is processed (docs/transactional.md §2, rule 5).

Where every commit-phase stage has one partition (a committer's usual shape: `global`, or
parallelism 1), the processing job *collects* their input to the driver, and the commit phase
runs there, on one long-lived thread (`_driver_thread`), with no Spark job at all: a micro-batch
is one Spark job. Otherwise the commit-phase inputs are persisted in the processing job and the
commit phase is a second job over them.

Each stage's partition i runs the component's task `tasks[i]` as a multilang subprocess
(host.spark.process_cache.shared_process; `run_bolt_rows` with the batch's Tx for batch bolts and
committers, whose finish ends the partition). A stage read more than once is persisted and read
from the cache; everything persisted is unpersisted when the batch ends.

What travels between stages are *chunks*, never an object per tuple: a stage's output is
`(stream, task, [values, ...], direct task or None)` per run of consecutive emits (as
`run_bolt_rows` reads them); an exchange turns one subscription's share of it into the
receiver's input chunks `(source, stream, source task, [values, ...])`, keyed by the receiving
partition where it moves data (one key per chunk: the tuples of a chunk are split by receiving
partition first), then `partitionBy` with the identity puts key p into partition p. Shuffles,
caches and the collect therefore pickle a few large lists, not a tuple per word.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
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
from host.spark.source_rows import Chunk, source_chunks
from host.topology.model import Topology

InputChunk = tuple[str, str, int, list[list[Any]]]  # source, stream, source task, [values...]


def identity(key: int) -> int:
    """The partition function for keys that already are partition numbers."""
    return key


# ---- one partition of one stage (runs in an executor's Python worker, or the driver) ----------

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


def _tuples(chunks: Iterable[InputChunk]) -> Iterator[tuple[str, str, int, list[Any]]]:
    for source, stream, task, values in chunks:
        for v in values:
            yield (source, stream, task, v)


def run_stage_partition(
    topology: Topology,
    component: str,
    tasks: tuple[int, ...],
    batch: bool,
    tx: Tx,
    run_id: str,
    index: int,
    chunks: Iterable[InputChunk],
    idle: bool = False,
) -> Iterator[Chunk]:
    """Task `index` of a stage over its input chunks, as chunks of its emits. `idle`: an idle
    micro-batch that holds no txid (host/spark/idle_batches.py `idle_offset`; `tx` is then the
    next txid to commit, attempt 0): a batch component has no batch to work on and does not run."""
    if idle and batch:
        _drain(chunks)
        return
    task = tasks[index]
    proc = shared_process(topology, component, task, run_id=run_id, committed_txid=tx.txid - 1)
    if batch:
        fresh_for_batch(proc, tx)
        rows = proc.run_bolt_rows(_tuples(chunks), tx=tx)
    else:
        rows = proc.run_bolt_rows(_tuples(chunks))
    first = True
    for r in rows:
        if first and batch:
            _last_batch[id(proc)] = (proc.pid, tx.txid, tx.attempt)
            first = False
        yield (r.stream, task, r.values, r.task)
    if batch:  # finished: this process has done the attempt
        _last_batch[id(proc)] = (proc.pid, tx.txid, tx.attempt)


def _unkeyed(pairs: Iterable[tuple[int, InputChunk]]) -> Iterator[InputChunk]:
    for _, item in pairs:
        yield item


# ---- exchanges ------------------------------------------------------------------------------------


def edge_items(
    edge: Edge,
) -> Callable[[int, Iterable[Chunk]], Iterator[tuple[int, InputChunk]]]:
    """`(partition index, a source partition's chunks) -> (receiving partition, input chunk)`
    for one subscription (docs/spark.md §2.2). Tuples keep their order per receiving partition."""
    x = edge.exchange
    source, stream, n, kind = edge.source, edge.stream, x.partitions, x.kind

    def keyed(index: int, outputs: Iterable[Chunk]) -> Iterator[tuple[int, InputChunk]]:
        if kind == HASH:
            partition_of = x.partitioner()
        counter = index
        for out_stream, task, values, direct in outputs:
            if out_stream != stream:
                continue
            if kind == TO_NAMED_TASK:
                if direct is None:
                    raise RoutingError(
                        f"{source}[{task}] emitted to stream {stream!r} without naming a task; "
                        f"{edge.target} subscribes to it with a direct grouping"
                    )
                if x.first_task <= direct < x.first_task + n:
                    yield (direct - x.first_task, (source, stream, task, values))
                continue
            if direct is not None:
                continue  # a direct emit goes only to the task it names
            if kind == PASS_THROUGH:
                yield (index, (source, stream, task, values))
            elif kind == SINGLE:
                yield (0, (source, stream, task, values))
            elif kind == BROADCAST:
                for p in range(n):
                    yield (p, (source, stream, task, values))
            elif kind == ROUND_ROBIN or kind == HASH:
                buckets: list[list[list[Any]]] = [[] for _ in range(n)]
                if kind == HASH:
                    for v in values:
                        buckets[partition_of(v)].append(v)
                else:
                    for v in values:
                        buckets[counter % n].append(v)
                        counter += 1
                for p, bucket in enumerate(buckets):
                    if bucket:
                        yield (p, (source, stream, task, bucket))
            else:
                raise AssertionError(f"unknown exchange {kind!r}")

    return keyed


def pass_through_items(edge: Edge) -> Callable[[Iterable[Chunk]], Iterator[InputChunk]]:
    source, stream = edge.source, edge.stream

    def items(outputs: Iterable[Chunk]) -> Iterator[InputChunk]:
        for out_stream, task, values, direct in outputs:
            if out_stream == stream and direct is None:
                yield (source, stream, task, values)

    return items


# ---- the driver's commit phase --------------------------------------------------------------------

_driver_pool: ThreadPoolExecutor | None = None


def _driver_thread() -> ThreadPoolExecutor:
    """One thread that lives as long as the driver: the commit phase's processes are started
    from it, and a process's parent-death signal fires when the *thread* that started it ends
    (host/spark/process_cache.py), which a py4j callback thread (foreachBatch's) may do between
    micro-batches."""
    global _driver_pool
    if _driver_pool is None:
        _driver_pool = ThreadPoolExecutor(1, thread_name_prefix="multilang-commit")
    return _driver_pool


# ---- one micro-batch --------------------------------------------------------------------------------


class BatchRun:
    """The RDDs and jobs of one micro-batch. `source_rdd` holds the source's rows
    (host/spark/source_rows.py), in the spout tasks' partitions (partition i = spout task i;
    with several spouts, every task of every spout, the row's task telling whose)."""

    def __init__(
        self, plan: Plan, source_rdd: Any, tx: Tx, run_id: str, idle: bool = False
    ) -> None:
        self.plan = plan
        self.tx = tx
        self.idle = idle  # no txid: the batch components' partitions do not run
        self.run_id = run_id
        self.outputs: dict[str, Any] = {}
        self.persisted: list[Any] = []
        self.commit_phase = _commit_phase(plan)
        commit_stages = [s for s in plan.stages if s.id in self.commit_phase]
        # the commit phase in the driver: every stage of it one partition (see the docstring)
        self.in_driver = bool(commit_stages) and all(s.partitions == 1 for s in commit_stages)
        self.pre_commit_terminals: list[Any] = []
        self.commit_terminals: list[Any] = []
        self.driver_inputs: list[tuple[tuple[str, int], Any]] = []  # (stage, input #), keyed RDD
        self._sources(source_rdd)
        for stage in plan.stages:
            if stage.component.is_spout:
                continue
            if self.in_driver and stage.id in self.commit_phase:
                self._driver_inputs(stage)
            else:
                self._build(stage)

    def _sources(self, source_rdd: Any) -> None:
        """Each spout stage's output from the source's rows. Several spouts (plain spouts staged
        together, docs/spark.md §4.9) share one source: its chunks are computed once (persisted)
        and each spout takes the chunks of its own tasks (task ids are unique in a topology, and
        a chunk holds one task's rows). A spout's result then has the source's partition count,
        not its own: only pass-through and round-robin exchanges (shuffle, none,
        local_or_shuffle: any task will do) use a source partition's index, so routing stays
        that of `host local`."""
        spouts = [s for s in self.plan.stages if s.component.is_spout]
        chunks = source_rdd.mapPartitions(source_chunks, preservesPartitioning=True)
        if len(spouts) == 1:
            self._keep(spouts[0], chunks)
            return
        chunks = chunks.persist()
        self.persisted.append(chunks)
        for spout in spouts:
            self._keep(spout, chunks.filter(_of_tasks(frozenset(spout.tasks))))

    def _keep(self, stage: Stage, rdd: Any) -> None:
        if stage.cached:
            rdd = rdd.persist()
            self.persisted.append(rdd)
        self.outputs[stage.id] = rdd
        if stage.readers == 0:
            phase = self.commit_terminals if stage.id in self.commit_phase else None
            (phase if phase is not None else self.pre_commit_terminals).append(rdd)

    def _driver_inputs(self, stage: Stage) -> None:
        for i, edge in enumerate(stage.inputs):
            if edge.source not in self.commit_phase:
                rdd = self.outputs[edge.source].mapPartitionsWithIndex(edge_items(edge))
                self.driver_inputs.append(((stage.id, i), rdd))

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
        batch, tx, run_id, idle = stage.component.batch is not None, self.tx, self.run_id, self.idle

        def run(index: int, items: Iterable[InputChunk]) -> Iterator[Chunk]:
            return run_stage_partition(topology, cid, tasks, batch, tx, run_id, index, items, idle)

        self._keep(stage, inputs.mapPartitionsWithIndex(run))

    def run(self, sc: Any) -> None:
        """The processing job, then the commit phase (in the driver, or a second job). Raises
        what the jobs raise (a component that failed in every try Spark gave it)."""
        if self.in_driver:
            collected = self._processing_and_collect(sc)
            _driver_thread().submit(self._commit_in_driver, collected).result()
            return
        for terminals in (self.pre_commit_terminals, self.commit_terminals):
            if terminals:
                rdd = terminals[0] if len(terminals) == 1 else sc.union(terminals)
                rdd.foreachPartition(_drain)

    def _processing_and_collect(self, sc: Any) -> dict[tuple[str, int], list[InputChunk]]:
        """One job: every processing-phase terminal drained, the commit phase's input chunks
        collected to the driver (by stage and input)."""
        parts = [t.mapPartitions(_nothing) for t in self.pre_commit_terminals]
        for key, rdd in self.driver_inputs:
            parts.append(rdd.map(lambda kv, key=key: (key, kv[1])))
        collected: dict[tuple[str, int], list[InputChunk]] = {}
        if not parts:
            return collected
        rdd = parts[0] if len(parts) == 1 else sc.union(parts)
        for key, chunk in rdd.collect():
            collected.setdefault(tuple(key), []).append(chunk)
        return collected

    def _commit_in_driver(self, collected: dict[tuple[str, int], list[InputChunk]]) -> None:
        """The commit-phase stages in topological order, each partition 0 of one, here."""
        outputs: dict[str, list[Chunk]] = {}
        tx, run_id, topology = self.tx, self.run_id, self.plan.topology
        for stage in self.plan.stages:
            if stage.id not in self.commit_phase:
                continue
            chunks: list[InputChunk] = []
            for i, edge in enumerate(stage.inputs):
                if edge.source in self.commit_phase:
                    chunks.extend(c for _, c in edge_items(edge)(0, outputs[edge.source]))
                else:
                    chunks.extend(collected.get((stage.id, i), []))
            batch = stage.component.batch is not None
            out = run_stage_partition(
                topology, stage.id, stage.tasks, batch, tx, run_id, 0, chunks, self.idle
            )
            if stage.readers:
                outputs[stage.id] = list(out)
            else:
                _drain(out)

    def unpersist(self) -> None:
        for rdd in self.persisted:
            rdd.unpersist(blocking=False)
        self.persisted = []


def _of_tasks(tasks: frozenset[int]) -> Callable[[Chunk], bool]:
    def keep(chunk: Chunk) -> bool:
        return chunk[1] in tasks

    return keep


def _drain(items: Iterable[Any]) -> None:
    for _ in items:
        pass


def _nothing(items: Iterable[Any]) -> Iterator[Any]:
    for _ in items:
        pass
    return iter(())


def _commit_phase(plan: Plan) -> frozenset[str]:
    """Committers and every stage downstream of one."""
    out: set[str] = set()
    for stage in plan.stages:  # topological: sources before readers
        if stage.role == COMMITTER_ROLE or any(e.source in out for e in stage.inputs):
            out.add(stage.id)
    return frozenset(out)
