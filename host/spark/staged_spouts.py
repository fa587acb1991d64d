"""A plain spout (storm.js, pystorm, our clients: any spout without `batch:`) on Spark, the
driver's side: run in the driver, what it emits staged durably as micro-batches (docs/spark.md,
"Plain spouts on Spark"), which host/spark/staged_source.py hands to Spark.

    staged = StagedSpouts(plan, spout_stages, checkpoint, state_root, trigger_secs=1.0)
    staged.start()                       # recovers the staging, starts the spout tasks
    spark.readStream.format(STAGED_SOURCE_NAME).options(**staged.options()).load()
    ...
    staged.committed(txid)               # in foreachBatch, once the txid is committed
    staged.close()                       # fails what was never staged; ends the spout tasks

One thread per spout task -- every task of every plain spout of the topology, which are staged
together (docs/spark.md §4.9) -- drives its process (host/spark/spout_process.py: `next`, `ack`,
`fail`, lock-step unless the library pipelines); what the tasks emit is buffered, and a stager
thread cuts the buffer into batches: once a trigger interval has passed since the last cut, or
`host.spark.batch.max.tuples` tuples are buffered. A batch for txid T is written to
`<checkpoint>/staged/<T>/` -- one file per spout task (partition i = task i) and a manifest, each
fsynced, in a temporary directory renamed into place (host/spark/staging.py) -- and only then is
T's metadata stored (attempt 0) so that the source's offset can move to T. At most one batch is
staged ahead of the one running (T + 1 while T runs). When bolts tick, an idle (empty) batch is
staged once their shortest period has passed with no batch (`idle_batch_secs`), so that their
ticks go on while no spout emits.

Beside transactional sources (`batch: spout`s, Kafka spouts, docs/spark.md §4.9) their
coordinators number the batches: once a trigger interval (or as soon as a batch's worth of tuples
waits), the stager asks each for T's metadata (host/spark/batch_opener.py), stored as each
answers; once every one has, what the plain spouts emitted is cut and staged as their share of T,
even when it is nothing (or when there is no plain spout: several transactional sources alone are
opened by the stager too). While a coordinator is not ready there is no T, and the others' batch
and the plain spouts' tuples wait for it; when bolts tick, an idle micro-batch that holds no txid
is asked for then (`request_idle`; docs/spark.md §2.4), once their shortest period has passed
with no batch staged, committed or idle. With one such source its metadata is T's own and is
stored before the staging; with several, each keeps its own (`source_root`) and T's metadata
names them, stored after the staging as a plain batch's is. A Spark spout's DataFrame or
directory input (host/spark/spark_input_opener.py) is opened with them but never holds a txid
back: its share is its next files or none; beside plain spouts alone, its new files make a txid
as buffered tuples do.

Outcomes, as Storm's acker would give them: the message ids of a batch are acked to the spout
(in the driver, by the process that emitted them) when the txid is committed, and its staging is
deleted. Staged-but-uncommitted batches survive a stop or a dead driver and are replayed first on
the next start (their ids died with their processes: nothing to ack then). Tuples that were
emitted but never staged when the run stops are failed to the spout: their batch is dropped for
good, and replaying them is the spout's job (docs/protocol.md §5.7).
"""

from __future__ import annotations

import logging
import os
import shutil
import threading
import time
from collections.abc import Sequence
from typing import Any

from host.batch.store import BatchStore
from host.errors import TopologyError
from host.spark.batch_opener import BatchOpener
from host.spark.batch_shares import fair_shares, max_batch_tuples
from host.spark.component_process import ComponentFailed
from host.spark.idle_batches import idle_batch_due, idle_batch_secs
from host.spark.plan import Plan, Stage
from host.spark.source import meta_record
from host.spark.spark_input_opener import SparkInputOpener
from host.spark.spout_process import SpoutProcess
from host.spark.staging import (
    STAGED_SUBDIR,
    TMP_PREFIX,
    clear_idle_requests,
    delete_staged,
    encode_row,
    id_key,
    request_idle,
    staged_task_ids,
    staged_txids,
    write_staged,
)
from host.topology.component_config import component_settings
from multilang.messages import Emit

log = logging.getLogger("host.spark")

AHEAD = 1  # batches staged beyond the lowest uncommitted txid
PUMP_WAIT_SECS = 0.05  # a task thread's longest read before it looks at its queue again
STAGER_WAIT_SECS = 0.05
CLOSE_GRACE_SECS = 2.0


Tagged = tuple[int, Emit]  # (process generation, emit)


class _Task:
    """What the stager and a task thread share about one spout task (under StagedSpouts.lock)."""

    def __init__(self, index: int, spout: Stage, task: int, max_pending: int | None) -> None:
        self.index = index  # its partition of the source: its place among every spout's tasks
        self.spout = spout  # the spout it is a task of
        self.task = task
        self.max_pending = max_pending  # its spout's topology.max.spout.pending
        self.buffer: list[Tagged] = []  # emitted, not yet staged
        self.outcomes: list[tuple[int, str, Any]] = []  # (generation, "ack" | "fail", id) to write
        self.pending = 0  # its reliable tuples buffered or staged, not yet acked or failed
        self.generation = 0  # its live process's; 0 while none runs
        self.thread: threading.Thread | None = None


class StagedSpouts:
    """The driver's side of the plain spouts on Spark: their tasks' processes, the staging, the
    outcomes (see the module's docstring). `start`, `committed` and `close` are called by the
    engine; the rest runs in threads of its own. `spouts`: every plain spout of the topology
    (one or more), staged together: a micro-batch holds what any of their tasks emitted."""

    def __init__(
        self,
        plan: Plan,
        spouts: Sequence[Stage],
        checkpoint: str,
        state_root: str,
        *,
        trigger_secs: float = 1.0,
        run_id: str = "spark",
        openers: Sequence[BatchOpener | SparkInputOpener] = (),
    ) -> None:
        self.topology = plan.topology
        # the transactional sources beside the plain spouts (host/spark/batch_opener.py): each
        # txid is one batch of each, opened before the plain spouts' share is cut
        self.openers = tuple(openers)
        # one source keeping its state in the state directory: its metadata is the txid's own
        self.shared_root = len(self.openers) == 1 and self.openers[0].root == state_root
        self.failure: BaseException | None = None  # what ended the stager; the engine stops
        self.spouts = tuple(spouts)
        # for the log
        self.name = ", ".join([s.id for s in self.spouts] + [o.spout for o in self.openers])
        self.staged_root = os.path.join(checkpoint, STAGED_SUBDIR)
        self.state_root = state_root
        self.trigger_secs = trigger_secs
        self.run_id = run_id
        self.max_tuples = max_batch_tuples(plan.topology)
        self.idle_secs = idle_batch_secs(plan.topology)
        self.last_batch = time.monotonic()  # when a batch was last staged or committed
        self.lock = threading.Condition()
        every = [(spout, task) for spout in self.spouts for task in spout.tasks]
        self.tasks = [
            _Task(i, spout, task, self._max_pending(spout)) for i, (spout, task) in enumerate(every)
        ]
        self.task_ids = tuple(t.task for t in self.tasks)  # the source's partitions, in order
        # a task's share of a full batch
        self.fair_share = -(-self.max_tuples // max(1, len(self.tasks)))
        self.currtx = 1  # the lowest txid not committed
        self.next_txid = 1  # the next txid to stage
        # txid -> its reliable tuples: (task index, generation, message id)
        self.staged_ids: dict[int, list[tuple[int, int, Any]]] = {}
        # (spout, message id) staged by an earlier run and not yet committed -> their txid: a
        # spout that replays them after a restart (its own durable record says they were never
        # acked) is not staged again; the re-emit is acked when that txid commits. Keyed by the
        # spout too: two spouts may use the same ids
        self.replayed: dict[tuple[str, str], int] = {}
        self.deduplicated = 0
        self.stopping = False  # no more `next`s nor staging
        self.closing = False  # task threads: drain their outcomes, then end their processes
        self.acked = self.failed = 0
        self.staged_batches = 0
        self._stager: threading.Thread | None = None

    def _max_pending(self, spout: Stage) -> int | None:
        return component_settings(self.topology, spout.component).max_spout_pending

    def options(self) -> dict[str, str]:
        """What `readStream.format(STAGED_SOURCE_NAME)` takes."""
        return {"state": self.state_root, "staged": self.staged_root}

    # -- start -----------------------------------------------------------------------------------
    def start(self) -> None:
        """Recover the staging left by an earlier run, then start the spout tasks and the
        stager (before the query starts)."""
        self._recover()
        for t in self.tasks:
            t.thread = threading.Thread(
                target=self._run_task, args=(t,), name=f"spout {t.spout.id}[{t.task}]"
            )
            t.thread.daemon = True
            t.thread.start()
        self._stager = threading.Thread(target=self._run_stager, name="stager", daemon=True)
        self._stager.start()

    def _recover(self) -> None:
        os.makedirs(self.staged_root, exist_ok=True)
        for name in os.listdir(self.staged_root):
            if name.startswith(TMP_PREFIX):  # a driver killed while staging: never handed over
                shutil.rmtree(os.path.join(self.staged_root, name), ignore_errors=True)
        clear_idle_requests(self.staged_root)  # asked for by a run that is gone
        store = BatchStore(self.state_root)
        self.currtx = store.currtx()
        expected = self.currtx
        spout_of = {t.task: t.spout.id for t in self.tasks}
        for txid in staged_txids(self.staged_root):
            if txid < self.currtx:  # committed; the driver died before deleting it
                delete_staged(self.staged_root, txid)
                continue
            if txid != expected:
                raise TopologyError(
                    f"the staged batches in {self.staged_root} skip txid {expected} (found "
                    f"{txid}): the staging and the batch state disagree; keep the checkpoint "
                    "directory whole, or start afresh"
                )
            if meta_record(self.state_root, txid) is None:  # died between staging and meta
                if self.shared_root:  # its opener stores the metadata before the staging
                    raise TopologyError(
                        f"txid {txid} is staged in {self.staged_root} with no batch metadata "
                        "for the transactional source: the staging was written by a topology "
                        "without it; start from a new checkpoint"
                    )
                store.put_meta(txid, self._batch_meta(), 0)  # every source opened it before
            for task, key in staged_task_ids(self.staged_root, txid):
                # a task the topology no longer has: its spout's ids cannot come back
                self.replayed[(spout_of.get(task, ""), key)] = txid
            log.info("txid %d: staged by an earlier run, replayed from %s", txid, self.staged_root)
            expected += 1
        self.next_txid = expected

    # -- the engine's calls ----------------------------------------------------------------------
    def committed(self, txid: int) -> None:
        """txid is committed: ack its tuples to the spout (the processes that emitted them),
        delete its staging, let the stager go on."""
        with self.lock:
            for index, generation, msg_id in self.staged_ids.pop(txid, ()):
                task = self.tasks[index]
                task.outcomes.append((generation, "ack", msg_id))
                task.pending -= 1
                self.acked += 1
            self.currtx = max(self.currtx, txid + 1)
            self.last_batch = time.monotonic()
            if self.replayed:
                self.replayed = {k: t for k, t in self.replayed.items() if t > txid}
            self.lock.notify_all()
        delete_staged(self.staged_root, txid)

    def idle_ran(self) -> None:
        """An idle micro-batch with no txid is running (engine.py `_idle_batch`): its request
        is done with, and the next one is a period from now."""
        with self.lock:
            clear_idle_requests(self.staged_root)
            self.last_batch = time.monotonic()

    def close(self) -> None:
        """Stop staging; fail what was emitted and never staged (its batch is dropped for
        good); let the task threads write their outcomes and end their processes. Staged
        batches stay on disk, to be replayed first by the next run."""
        with self.lock:
            self.stopping = True
            self.lock.notify_all()
        if self._stager is not None:
            self._stager.join()
        with self.lock:
            for t in self.tasks:
                self._fail_buffer(t)
            self.closing = True
            self.lock.notify_all()
        for t in self.tasks:
            if t.thread is not None:
                t.thread.join(CLOSE_GRACE_SECS * 4)

    def _fail_buffer(self, t: _Task) -> None:
        """Fail the reliable tuples in t's buffer (under the lock)."""
        for generation, m in t.buffer:
            if m.id is not None:
                t.outcomes.append((generation, "fail", m.id))
                t.pending -= 1
                self.failed += 1
        t.buffer = []

    # -- a spout task's thread -------------------------------------------------------------------
    def _wants_next(self, t: _Task) -> bool:
        """Under the lock. A task below its fair share of a batch may go on when the others
        have filled one: otherwise a fast spout keeps a slower one out of batch after batch
        (seen with a Python and a Node spout). So at most about twice max_tuples are buffered."""
        if self.stopping:
            return False
        full = sum(len(x.buffer) for x in self.tasks) >= self.max_tuples
        if full and len(t.buffer) >= self.fair_share:
            return False
        return t.max_pending is None or t.pending < t.max_pending

    def _run_task(self, t: _Task) -> None:
        """Drive task t's process until closing; restart it (with a back-off) when it breaks.
        The process is started in this thread: its parent-death signal is tied to it."""
        proc = SpoutProcess(self.topology, t.spout.id, t.task, run_id=self.run_id)
        settings = component_settings(self.topology, t.spout.component)
        backoff = settings.restart_backoff_initial_secs
        try:
            while True:
                with self.lock:
                    closing = self.closing
                    if proc.child is None and not closing:
                        t.generation = 0
                if closing and (proc.child is None or not self._task_busy(t, proc)):
                    return
                if proc.child is None:
                    try:
                        proc.start()
                    except ComponentFailed as exc:
                        log.error("%s", exc)
                        with self.lock:
                            self.lock.wait(backoff)
                        backoff = min(backoff * 2, settings.restart_backoff_max_secs)
                        continue
                    with self.lock:
                        t.generation = proc.generation
                self._pump_task(t, proc)
        except ComponentFailed as exc:
            log.error("%s", exc)
        finally:
            if proc.child is not None:
                proc.close(CLOSE_GRACE_SECS)

    def _task_busy(self, t: _Task, proc: SpoutProcess) -> bool:
        with self.lock:
            return bool(t.outcomes) or not proc.idle

    def _pump_task(self, t: _Task, proc: SpoutProcess) -> None:
        with self.lock:
            outcomes, t.outcomes = t.outcomes, []
            want = self._wants_next(t)
        for generation, command, msg_id in outcomes:
            if generation == proc.generation:  # an older process's ids mean nothing to this one
                (proc.ack if command == "ack" else proc.fail)(msg_id)
        try:
            emits = proc.pump(want, PUMP_WAIT_SECS)
        except ComponentFailed as exc:
            log.error("%s; restarting it (its unstaged tuples are lost with it)", exc)
            proc.kill()
            self._lost_process(t, proc.generation)
            return
        if emits:
            generation = proc.generation
            reliable = sum(1 for m in emits if m.id is not None)
            with self.lock:
                t.pending += reliable
                if self.replayed:
                    emits = self._not_staged_before(t, generation, emits)
                t.buffer.extend((generation, m) for m in emits)
                if self.stopping:  # emitted by `next`s in flight at the stop: never staged
                    self._fail_buffer(t)
                self.lock.notify_all()

    def _not_staged_before(self, t: _Task, generation: int, emits: list[Emit]) -> list[Emit]:
        """The emits whose message id no staged-but-uncommitted batch of an earlier run holds;
        the others are acked when that batch commits (under the lock)."""
        out = []
        for m in emits:
            try:
                key = None if m.id is None else (t.spout.id, id_key(m.id))
                txid = None if key is None else self.replayed.pop(key, None)
            except (TypeError, ValueError):  # an id JSON cannot hold was never staged
                txid = None
            if txid is None:
                out.append(m)
            else:
                self.staged_ids.setdefault(txid, []).append((t.index, generation, m.id))
                self.deduplicated += 1
        return out

    def _lost_process(self, t: _Task, generation: int) -> None:
        """t's process died: its unstaged tuples can be neither staged as acked-later nor
        failed (docs/protocol.md §5.7), and its staged ones are acked to nobody."""
        with self.lock:
            kept = [(g, m) for g, m in t.buffer if g != generation]
            t.pending -= sum(1 for g, m in t.buffer if g == generation and m.id is not None)
            t.buffer = kept
            t.generation = 0

    # -- the stager ------------------------------------------------------------------------------
    def _run_stager(self) -> None:
        try:
            self._stager_loop()
        except BaseException as exc:  # the engine ends the run with it (engine.py `_await`)
            log.error("%s: the stager stopped: %s", self.name, exc)
            with self.lock:
                self.failure = exc
        finally:
            for opener in self.openers:
                opener.close()

    def _stager_loop(self) -> None:
        last_cut = time.monotonic()
        openers = self.openers
        # the coordinators say when there is a txid; a Spark spout's input only adds its files
        # to each (host/spark/spark_input_opener.py), or makes one of its own beside plain spouts
        inputs = [o for o in openers if isinstance(o, SparkInputOpener)]
        numbering = [o for o in openers if not isinstance(o, SparkInputOpener)]
        ready = True  # the coordinator's last answer: a full buffer asks again only if it was
        while True:
            look = False  # whether the inputs' new files alone may make a txid
            with self.lock:
                if self.stopping:
                    return
                now = time.monotonic()
                buffered = sum(len(t.buffer) for t in self.tasks)
                allowed = self.next_txid <= self.currtx + AHEAD
                if not numbering:
                    due = buffered >= self.max_tuples or (
                        buffered > 0 and now - last_cut >= self.trigger_secs
                    )
                    in_flight = self.next_txid - self.currtx  # staged, not yet committed
                    idle = idle_batch_due(now, self.last_batch, self.idle_secs, buffered, in_flight)
                    look = bool(inputs) and allowed and now - last_cut >= self.trigger_secs
                else:  # the sources' coordinators decide, asked once a trigger interval
                    due = (ready and buffered >= self.max_tuples) or (
                        now - last_cut >= self.trigger_secs
                    )
                    idle = False
                    # no txid while a coordinator is not ready: a ticking bolt gets an idle
                    # micro-batch that holds none (the plain spouts' tuples wait on)
                    in_flight = self.next_txid - self.currtx
                    if not ready and idle_batch_due(
                        now, self.last_batch, self.idle_secs, 0, in_flight
                    ):
                        request_idle(self.staged_root, self.next_txid - 1)
                        self.last_batch = now
                        log.debug(
                            "%s: an idle micro-batch asked for, for the bolts' ticks", self.name
                        )
                if not (allowed and (due or idle or look)):
                    self.lock.wait(STAGER_WAIT_SECS)
                    continue
                txid = self.next_txid
                if not openers:
                    cut = self._cut()
            last_cut = time.monotonic()
            if look and not (due or idle) and not any(o.has_new(txid) for o in inputs):
                continue  # no spout has anything: no txid this trigger interval
            if openers:
                # each stores its metadata once ready; those stored are not asked again
                ready = all([o.open(txid) for o in openers])
                if not ready:  # the plain spouts' tuples wait for the sources' next batch
                    continue
                with self.lock:
                    cut = self._cut()
            if idle:
                log.debug("%s: txid %d staged idle, for the bolts' ticks", self.name, txid)
            self._stage(txid, cut)

    def _batch_meta(self) -> dict[str, Any]:
        """A staged txid's metadata in the state directory (its sources keep their own)."""
        meta: dict[str, Any] = {"staged": True}
        if self.openers:
            meta["sources"] = [o.spout for o in self.openers]
        return meta

    def _cut(self) -> list[list[Tagged]]:
        """Up to max_tuples buffered tuples, each task's oldest, shared fairly between the tasks
        (`fair_shares`; under the lock)."""
        shares = fair_shares([len(t.buffer) for t in self.tasks], self.max_tuples)
        cut = []
        for t, n in zip(self.tasks, shares, strict=True):
            share, t.buffer = t.buffer[:n], t.buffer[n:]
            cut.append(share)
        return cut

    def _stage(self, txid: int, cut: list[list[Tagged]]) -> None:
        try:
            rows = [[encode_row(m) for _, m in share] for share in cut]
            write_staged(self.staged_root, txid, self.task_ids, rows)
            if not self.shared_root:  # else its opener stored the source's metadata first
                BatchStore(self.state_root).put_meta(txid, self._batch_meta(), 0)
        except (OSError, TypeError) as exc:
            log.error(
                "%s: txid %d could not be staged (%s); its %d tuple(s) are failed",
                self.name,
                txid,
                exc,
                sum(len(s) for s in cut),
            )
            delete_staged(self.staged_root, txid)
            with self.lock:
                for t, share in zip(self.tasks, cut, strict=True):
                    saved, t.buffer = t.buffer, share
                    self._fail_buffer(t)
                    t.buffer = saved
                self.lock.wait(1.0)  # a full disk is not fixed by trying at once
            return
        ids = [
            (index, generation, m.id)
            for index, share in enumerate(cut)
            for generation, m in share
            if m.id is not None
        ]
        clear_idle_requests(self.staged_root)  # a txid came before the idle micro-batch ran
        with self.lock:
            self.staged_ids[txid] = ids
            self.next_txid = txid + 1
            self.staged_batches += 1
            self.last_batch = time.monotonic()
        log.debug("txid %d staged: %d tuple(s)", txid, sum(len(s) for s in cut))
