"""The Spark engine for transactional topologies: a Plan run as a PySpark Structured Streaming
query, each micro-batch one transaction (docs/spark.md §4).

    engine = SparkEngine(plan, checkpoint_dir, master="local[*]")
    code = engine.run()          # until --max-batches commits, a stop(), or a failure

The batch spout is the query's source (host/spark/source.py: the txid is the offset); plain
spouts, and batch spouts beside them or beside each other, are one staged source whose txids the
driver opens (host/spark/staged_spouts.py, docs/spark.md §4.6, §4.9). Each micro-batch runs in
`foreachBatch` on the driver:

1. txid = the micro-batch's end offset (offset_log.py: Spark batch id + 1, or the batch id
   after an empty first micro-batch). A txid the state has committed (the driver died after our
   commit and before Spark's) is skipped; a txid beyond the next to commit is an error. An idle
   offset (host/spark/idle_batches.py `idle_offset`) holds no txid: the plain bolts' partitions
   run for their ticks, and nothing is stored or committed.
2. The txid's attempt number is its stored count + 1, written (fsynced) before any of its
   tuples is read: restarts and retries of the micro-batch keep counting up.
3. The bolt stages run over RDDs (host/spark/stages.py): processing, then the commit phase.
4. Every batch spout task gets `batch_commit` (driver side), then `currtx` moves past the txid
   (host/spark/batch_sources.py keeps each batch spout's own state in step), the Kafka offsets
   and the plain spouts' acks follow. Only then does `foreachBatch` return and Spark record the
   micro-batch as done.

`foreachBatch` raising stops a Spark query (Spark does not retry the micro-batch by itself): the
engine starts the query again from its checkpoint, up to `max_restarts` times in a row, and the
micro-batch is run again with the next attempt number. A committer that stores the txid with its
state (docs/transactional.md §7) makes the re-run harmless.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import signal
import tempfile
import threading
import time
from collections.abc import Callable
from types import FrameType
from typing import Any

from host.batch.store import BatchStore
from host.errors import HostError, TopologyError
from host.spark import process_cache
from host.spark.batch_opener import BatchOpener
from host.spark.batch_sources import BatchStates, with_kafka_as_batch_spouts
from host.spark.batch_spout_process import BatchSpoutProcess, close_spouts
from host.spark.component_process import Tx
from host.spark.idle_batches import is_idle_offset
from host.spark.kafka_commits import offset_commits
from host.spark.offset_log import end_offset, txid_of
from host.spark.plan import (
    DRIVER_SPOUT,
    SPARK_INPUT,
    TRANSACTIONAL_SOURCE,
    Plan,
    Stage,
)
from host.spark.quiet_stop import QUIET_AT_START, stop_query_quietly
from host.spark.session_settings import (
    MASTER_KEY,
    check_driver_python,
    check_pyspark,
    spark_settings,
)
from host.spark.shared_checkpoint import check_executors_see, probes_executors, write_token
from host.spark.shipping import Packed, pack_directories, ships
from host.spark.source import (
    SOURCE_NAME,
    BatchSpoutSource,
    meta_record,
    source_options,
    topology_option,
)
from host.spark.spark_calls import bounded, first_line, set_log_levels
from host.spark.spark_input_opener import SparkInputOpener
from host.spark.spark_input_source import SparkInput
from host.spark.spout_mix import check_sources, relayed
from host.spark.staged_source import STAGED_SOURCE_NAME, StagedSpoutSource, sources_option
from host.spark.staged_spouts import StagedSpouts
from host.spark.stages import BatchRun
from host.spark.stream_relay import check_checkpoint
from host.topology import settings as cfg
from host.topology.setting_checks import directory_path

log = logging.getLogger("host.spark")

STATE_SUBDIR = "batches"  # <checkpoint>/batches: the transactional state (host local's layout)
QUERY_SUBDIR = "query"  # <checkpoint>/query: Spark's own checkpoint of the query
POLL_SECS = 0.2


class EngineFailed(HostError):
    """The query failed more times in a row than the engine restarts it."""


# ---- what runs on Spark ----------------------------------------------------------------------------


def check_supported(plan: Plan) -> Stage:
    """The plan's first spout that is not a plain spout (a batch spout, which opens the txids),
    else its first, once its spouts are known to run together (one spout of any kind, or plain,
    transactional and Kafka spouts together: host/spark/spout_mix.py, docs/spark.md §2.3, §4.9);
    TopologyError for a mix that does not."""
    spouts = check_sources(plan)
    return next((s for s in spouts if s.role != DRIVER_SPOUT), spouts[0])


STOP_WAIT_SECS = 30.0  # the longest a stop waits for Spark's own query.stop() / spark.stop()


def default_checkpoint(plan: Plan) -> str:
    """<host.state.dir>/spark/<topology.transactional.id>."""
    name = plan.transactional_id or plan.topology.name  # a plain spout's topology: its name
    return os.path.join(cfg.state_dir(plan.topology), "spark", name)


# ---- the engine -----------------------------------------------------------------------------------


class SparkEngine:
    def __init__(
        self,
        plan: Plan,
        checkpoint: str,
        *,
        master: str | None = None,
        trigger_secs: float = 1.0,
        max_batches: int | None = None,
        max_restarts: int = 3,
        spark: Any = None,
        echo: Callable[[str], None] = print,
    ) -> None:
        check_supported(plan)
        try:  # a URL refused, before anything is made of it (docs/spark.md §6.1)
            self.checkpoint = directory_path(checkpoint, "--checkpoint")
        except ValueError as exc:
            raise TopologyError(str(exc)) from None
        # a Kafka spout runs as the transactional Kafka spout (§4.7)
        plan = with_kafka_as_batch_spouts(plan, self.checkpoint)
        self.spout = check_supported(plan)
        self.plan = plan
        # one spout, or plain spouts staged together beside any batch spouts (§4.9)
        self.spouts = check_sources(plan)
        plain = [s for s in self.spouts if s.role == DRIVER_SPOUT]
        self.batch_spouts = [s for s in self.spouts if s.role == TRANSACTIONAL_SOURCE]
        self.state_root = os.path.join(self.checkpoint, STATE_SUBDIR)
        self.states = BatchStates(self.state_root, self.batch_spouts)
        self.query_dir = os.path.join(self.checkpoint, QUERY_SUBDIR)
        self.settings = spark_settings(plan, master)
        check_driver_python(self.settings)
        self.trigger_secs = trigger_secs
        self.max_batches = max_batches
        self.max_restarts = max_restarts
        self.spark = spark
        self.echo = echo
        self.run_id = f"{plan.topology.name}-spark"
        # one path per driver process: Spark refuses an archive name added again from another
        # path, which a session reused by a second run in this process would do
        self.ship_dir = os.path.join(
            tempfile.gettempdir(), f"multilang-ship-{os.getuid()}-{os.getpid()}"
        )
        self.job_group = f"multilang-{plan.transactional_id}-{os.getpid()}"
        self.committed = 0  # micro-batches committed by this engine
        self.skipped = 0
        self.idle_batches = 0  # idle micro-batches of a transactional source (no txid)
        self.restarts = 0
        self.batch_secs: list[float] = []
        self.token = ""  # this run's token in the checkpoint (host/spark/shared_checkpoint.py)
        self._stop = threading.Event()
        self._commit_spouts: dict[str, list[BatchSpoutProcess]] = {}
        # a Spark spout's input beside other spouts, or a streaming one relayed for the ticks: a
        # share of each txid (host/spark/spark_input_opener.py, host/spark/stream_relay.py)
        relay = relayed(plan)
        self.inputs = [
            SparkInputOpener(
                plan.topology, s.id, self.checkpoint, self.state_root, trigger_secs=trigger_secs
            )
            for s in self.spouts
            if s.role == SPARK_INPUT and (len(self.spouts) > 1 or s.id in relay)
        ]
        # a plain spout runs in this driver, its micro-batches staged (host/spark/staged_spouts.py),
        # beside batch spouts as its share of their batches, which the stager opens together
        # (host/spark/batch_opener.py), as it does for several batch spouts alone
        openers: list[BatchOpener | SparkInputOpener] = [
            BatchOpener(plan.topology, s.id, self.states.roots[s.id], self.run_id, max_restarts)
            for s in self.batch_spouts
        ]
        openers += self.inputs
        self.staged = (
            StagedSpouts(
                plan,
                plain,
                self.checkpoint,
                self.state_root,
                trigger_secs=trigger_secs,
                run_id=self.run_id,
                openers=openers,
            )
            if plain or len(openers) > 1 or self.inputs
            else None
        )
        # Kafka's group or storm-kafka's nodes in ZooKeeper (host/spark/kafka_commits.py)
        self.kafka_commits = [
            c
            for s in self.batch_spouts
            if (c := offset_commits(plan, s, self.states.roots[s.id], self.run_id)) is not None
        ]
        # the Spark spout's input, read by Spark itself (host/spark/spark_input_source.py, §4.8)
        self.spark_input = (
            SparkInput(plan.topology, self.spout.id, self.checkpoint, self.state_root)
            if self.spout.role == SPARK_INPUT and not self.inputs
            else None
        )

    # -- control ---------------------------------------------------------------------------------
    def stop(self) -> None:
        """Ask the query to stop (thread- and signal-safe); an unfinished micro-batch is run again
        next time."""
        self._stop.set()

    @property
    def stopping(self) -> bool:
        return self._stop.is_set()

    def install_signal_handlers(self) -> None:
        """SIGINT and SIGTERM stop the query cleanly (main thread only)."""

        def handler(signum: int, frame: FrameType | None) -> None:
            self.echo(f"{signal.Signals(signum).name}: stopping")
            self.stop()

        signal.signal(signal.SIGINT, handler)
        signal.signal(signal.SIGTERM, handler)

    # -- the run ---------------------------------------------------------------------------------
    def run(self) -> int:
        """Run until max_batches commits or a stop; 0, or raises EngineFailed."""
        check_pyspark()
        # packed first, so that a directory too big to ship ends the run before anything is
        # created
        packed = self._pack_directories()
        own_session = self.spark is None
        try:
            self._prepare_state()
            if own_session:
                from components.spark_spout.session import start_session

                name = f"multilang {self.plan.topology.name}"
                self.spark = start_session(self.settings, name)
            self._run_session(self.spark, packed, own_session)
        finally:
            # a session given to us serves the archives to its executors while it lives
            if packed and own_session:
                shutil.rmtree(self.ship_dir, ignore_errors=True)
        return 0

    def _prepare_state(self) -> None:
        check_checkpoint(self.plan, self.checkpoint, self.query_dir)
        os.makedirs(self.state_root, exist_ok=True)
        self.token = write_token(self.checkpoint)
        if self.batch_spouts:  # the tasks whose batch metadata is stored: the batch spouts'
            self.states.prepare()
        else:
            spouts = self.spouts
            BatchStore(self.state_root).check_parallelism(
                ", ".join(s.id for s in spouts), sum(s.partitions for s in spouts)
            )

    def _run_session(self, spark: Any, packed: list[Packed], own_session: bool) -> None:
        set_log_levels(spark, QUIET_AT_START)
        try:
            for p in packed:
                spark.sparkContext.addArchive(p.archive)
            if probes_executors(self.settings[MASTER_KEY]):  # docs/spark.md §6.1
                check_executors_see(
                    spark.sparkContext,
                    self.checkpoint,
                    self.token,
                    self.job_group,
                    lambda: self.stopping,
                    POLL_SECS,
                    self.echo,
                )
                if self.stopping:
                    return
            if self.spark_input is not None:
                self.spark_input.register(spark)
            else:
                spark.dataSource.register(
                    BatchSpoutSource if self.staged is None else StagedSpoutSource
                )
            committed = BatchStore(self.state_root).currtx() - 1
            for spark_input in self.inputs:
                spark_input.prepare(spark, committed)
            if self.staged is not None:
                self.staged.start()
            self._run_queries()
        finally:
            self._close_processes()
            if own_session:
                bounded(spark.stop, STOP_WAIT_SECS, "stopping Spark", self.echo)

    def _pack_directories(self) -> list[Packed]:
        """The component directories as archives for the executors, when they are shipped
        (host/spark/shipping.py, docs/spark.md §6.1)."""
        topology = self.plan.topology
        if not ships(topology, self.settings[MASTER_KEY]):
            return []
        skip = [self.checkpoint, cfg.state_dir(topology)]
        return pack_directories(topology, self.ship_dir, skip, self.echo)

    def _run_queries(self) -> None:
        in_a_row = 0
        while not self.stopping:
            query = self._start_query()
            committed_before = self.committed
            error = self._await(query)
            if error is None or self.stopping:
                return
            in_a_row = 0 if self.committed > committed_before else in_a_row + 1
            if in_a_row > self.max_restarts:
                raise EngineFailed(
                    f"the query failed {in_a_row} times in a row (--max-restarts "
                    f"{self.max_restarts}); the last error: {first_line(error)}"
                )
            self.restarts += 1
            self.echo(
                f"the query failed: {first_line(error)}; restarting it from its checkpoint "
                f"({in_a_row} of {self.max_restarts})"
            )

    def _start_query(self) -> Any:
        if self.spark_input is not None:
            return self._write(self.spark_input.stream(self.spark))
        if self.staged is None:
            options = source_options(self.plan.topology, self.spout.id, self.state_root)
        else:  # the batch spouts' tasks too, each spout's state where it keeps it
            options = self.staged.options()
            if self.batch_spouts:
                options["topology"] = topology_option(self.plan.topology)
                options["sources"] = sources_option(list(self.states.roots.items()))
            if self.inputs:
                options["inputs"] = json.dumps([i.option() for i in self.inputs])
        name = SOURCE_NAME if self.staged is None else STAGED_SOURCE_NAME
        return self._write(self.spark.readStream.format(name).options(**options).load())

    def _write(self, df: Any) -> Any:
        return (
            df.writeStream.foreachBatch(self._foreach_batch)
            .option("checkpointLocation", self.query_dir)
            .trigger(processingTime=f"{self.trigger_secs:g} seconds")
            .start()
        )

    def _await(self, query: Any) -> BaseException | None:
        """Wait until the query ends or a stop is asked for; the query's error, if it failed."""
        from pyspark.errors import StreamingQueryException

        try:
            while not self.stopping and query.isActive and self._stager_failure() is None:
                query.awaitTermination(POLL_SECS)
        except StreamingQueryException:
            pass
        failure = self._stager_failure()
        if failure is not None:
            self.stop()
        if self.stopping:
            self.spark.sparkContext.cancelJobGroup(self.job_group)
            # Spark's query.stop() can hang when it interrupts a running micro-batch (seen once in
            # five stops, with a StackOverflowError in its interrupt check): bounded, so a stop
            # always ends the command; the unfinished micro-batch runs again next time
            bounded(query.stop, STOP_WAIT_SECS, "stopping the query", self.echo)
            if failure is not None:
                raise EngineFailed(f"the stager stopped: {first_line(failure)}")
            return None
        error: BaseException | None = query.exception()
        return error

    # -- one micro-batch -------------------------------------------------------------------------
    def _foreach_batch(self, df: Any, batch_id: int) -> None:
        if self.stopping:
            stop_query_quietly(self.spark)
        started = time.monotonic()
        store = BatchStore(self.state_root)  # fresh: executors write task metadata under it
        currtx = store.currtx()
        streaming = self.spark_input is not None and self.spark_input.streaming  # B + 1, Spark's
        offset = None if streaming else end_offset(self.query_dir, int(batch_id))
        if offset is not None and is_idle_offset(offset):
            self._idle_batch(df, int(batch_id), currtx)
            return
        txid = int(batch_id) + 1 if offset is None else txid_of(offset)
        if txid is None:
            self.echo(f"Spark batch {batch_id}: the source had nothing yet, no txid")
            return
        if txid < currtx:  # committed by us, not yet recorded by Spark when the driver stopped
            self.skipped += 1
            self.echo(f"txid {txid}: committed before (Spark batch {batch_id}), skipped")
            return
        if txid > currtx:
            raise TopologyError(
                f"Spark runs batch {batch_id} (txid {txid}) while txid {currtx} is not "
                f"committed in {self.state_root}: the state and the query's checkpoint "
                "disagree (keep them together under one --checkpoint)"
            )
        if self.spark_input is not None:
            record = self.spark_input.record(txid, int(batch_id))
        else:
            record = meta_record(self.state_root, txid)
        if record is None:
            raise TopologyError(f"no stored metadata for txid {txid} in {self.state_root}")
        tx = Tx(txid, int(record.get("attempt", 0)) + 1)
        store.put_meta(txid, record.get("meta"), tx.attempt)  # before any tuple is read
        self.states.attempt(txid, tx.attempt)
        rows = df.rdd if self.spark_input is None else self.spark_input.rows(df, int(batch_id))
        self._run_stages(df, rows, tx, f"txid {tx.txid} attempt {tx.attempt}")
        for spout in self.batch_spouts:
            for process in self._spout_processes(spout, txid - 1):
                process.commit(tx)
        store.committed(txid)
        self.states.committed(txid)
        for spark_input in self.inputs:
            spark_input.committed(txid)
        for commits in self.kafka_commits:  # the offsets follow the committed txid (§4.7)
            commits.commit(txid)
        if self.staged is not None:
            self.staged.committed(txid)  # acks its tuples to the spout, deletes its staging
        if self.spark_input is not None:
            self.spark_input.committed(txid)  # deletes its micro-batches' staging
        secs = time.monotonic() - started
        self.batch_secs.append(secs)
        self.committed += 1
        self.echo(f"txid {txid} committed (attempt {tx.attempt}, {secs:.2f}s)")
        if self.max_batches is not None and self.committed >= self.max_batches:
            self.stop()

    def _run_stages(self, df: Any, rows: Any, tx: Tx, what: str, idle: bool = False) -> None:
        """The bolt stages of one micro-batch over `rows`, in a job group named `what` (so that
        a stop cancels its jobs); then a stop asked for meanwhile ends the query."""
        sc = df.sparkSession.sparkContext
        sc.setJobGroup(self.job_group, what, interruptOnCancel=True)
        run = BatchRun(self.plan, rows, tx, self.run_id, idle=idle)
        try:
            run.run(sc)
        finally:
            run.unpersist()
        if self.stopping:
            stop_query_quietly(self.spark)

    def _idle_batch(self, df: Any, batch_id: int, currtx: int) -> None:
        """An idle micro-batch (host/spark/idle_batches.py, staging.py `request_idle`): no txid,
        no attempt counted, no batch bolt or committer run, nothing committed; the plain bolts'
        partitions run over no input for their end ticks (§2.4). Replayed as it was if the driver
        dies in it."""
        started = time.monotonic()
        if self.staged is not None:  # asked for by the stager beside batch spouts: done with
            self.staged.idle_ran()
        self._run_stages(df, df.rdd, Tx(currtx, 0), f"idle micro-batch {batch_id}", idle=True)
        self.idle_batches += 1
        secs = time.monotonic() - started
        self.echo(f"Spark batch {batch_id}: idle, no txid (the bolts' ticks; {secs:.2f}s)")

    def _stager_failure(self) -> BaseException | None:
        """What stopped the stager of the plain spouts and the batch spouts beside them (a
        batch spout that numbers its own batches, a staging it cannot recover), or None."""
        return None if self.staged is None else self.staged.failure

    def _spout_processes(self, spout: Stage, committed_txid: int) -> list[BatchSpoutProcess]:
        """The driver's own process per task of batch spout `spout`, for `batch_commit`."""
        processes = self._commit_spouts.get(spout.id)
        if processes is None:
            processes = self._commit_spouts[spout.id] = [
                BatchSpoutProcess(
                    self.plan.topology,
                    spout.id,
                    task,
                    committed_txid=committed_txid,
                    run_id=self.run_id,
                )
                for task in spout.tasks
            ]
        return processes

    def _close_processes(self) -> None:
        for commits in self.kafka_commits:
            commits.close()
        if self.staged is not None:
            self.staged.close()
        for processes in self._commit_spouts.values():
            for process in processes:
                process.close()
        self._commit_spouts = {}
        close_spouts()
        process_cache.close_all()
