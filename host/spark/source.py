"""A transactional batch spout as a Spark Structured Streaming source, through PySpark's Python data
source API (`pyspark.sql.datasource`; docs/spark.md §4.2).

The offset is the txid: `{"txid": T}` means "every txid up to T has been handed to Spark". Each
micro-batch covers exactly one txid, so Spark batch id B reads txid B + 1:

* `latestOffset(start)` runs in Spark's driver-side Python worker for the query. For txid
  T + 1 it asks the spout's coordinator task (task index 0) for the batch's metadata
  (`batch_init` with the metadata of T as `prev_meta`) and stores it durably (fsynced) *before*
  returning the offset, so every later read of that txid -- a Spark retry, a restarted query --
  reads the stored metadata, never asks again. Metadata already stored for T + 1 (the driver died
  after storing it) is used as it is. A spout that is not ready leaves the offset where it was,
  and Spark runs no micro-batch; unless a ticking bolt wants an idle micro-batch
  (host/spark/idle_batches.py): then, once the period has passed since the last micro-batch
  ended, the offset becomes `{"txid": T, "idle": k}`, a micro-batch that holds no txid (a txid
  is always one of the spout's batches) and runs the plain bolts' partitions for their ticks.
* `partitions(start, end)` gives one partition per spout task for txid `end`; none for an idle
  micro-batch.
* `read(partition)` runs in an executor: that spout task's `batch_emit` for the txid with the
  stored metadata, the attempt number the driver stored for this run of the micro-batch, the
  task's own stored metadata of the txid (a replay) and of the txid before. Its emits become
  rows of runs of tuples (host/spark/source_rows.py); the task's `batch_meta` is stored
  (fsynced) once its `sync` came, under the state directory's `user/<index>/<txid>.json`.

The state directory has host local's layout (host/batch/store.py, docs/transactional.md §3):
executors write to it, so on a real cluster it must be a shared file system path, as Spark's own
checkpoint location must be.
"""

from __future__ import annotations

import base64
import json
import os
import pickle
import time
from collections.abc import Iterator, Sequence
from typing import Any

from pyspark.sql.datasource import (
    DataSource,
    DataSourceStreamReader,
    InputPartition,
)

from components.files import write_atomically
from host.batch.store import BatchStore
from host.errors import TopologyError
from host.runtime.context import assign_tasks
from host.spark.batch_spout_process import NO_META, BatchSpoutProcess, shared_spout
from host.spark.component_process import Tx
from host.spark.idle_batches import IDLE_KEY, idle_batch_due, idle_batch_secs, idle_offset
from host.spark.shared_checkpoint import unshared_reason
from host.spark.source_rows import SCHEMA, row_values_text, source_rows
from host.topology.model import Topology

SOURCE_NAME = "multilang_batch_spout"


def source_options(topology: Topology, spout: str, state_root: str) -> dict[str, str]:
    """The options `readStream.format(SOURCE_NAME)` takes: the topology travels pickled (a
    frozen dataclass, equal after the round trip, so host.spark.process_cache's keys agree)."""
    return {"topology": topology_option(topology), "spout": spout, "state": state_root}


def topology_option(topology: Topology) -> str:
    """The topology as a source's option: pickled, base64 (`topology_of` reads it)."""
    return base64.b64encode(pickle.dumps(topology)).decode("ascii")


def topology_of(options: Any) -> Topology:
    topology: Topology = pickle.loads(base64.b64decode(options["topology"]))
    return topology


# ---- the state directory, read and written as host/batch/store.py lays it out -------------------


def _read_json(path: str, default: Any = None) -> Any:
    try:
        with open(path, "rb") as f:
            return json.loads(f.read())
    except FileNotFoundError:
        return default


def meta_record(root: str, txid: int) -> dict[str, Any] | None:
    """`{"meta": …, "attempt": n}` stored for `txid`, or None."""
    record: dict[str, Any] | None = _read_json(
        os.path.join(root, "coordinator", "meta", f"{txid}.json")
    )
    return record


def currtx(root: str) -> int:
    """The lowest txid not committed yet."""
    return int(_read_json(os.path.join(root, "coordinator", "currtx"), 1))


def task_meta(root: str, index: int, txid: int) -> Any:
    return _read_json(os.path.join(root, "user", str(index), f"{txid}.json"))


def put_task_meta(root: str, index: int, txid: int, meta: Any) -> None:
    """As BatchStore.put_task_meta, with a temporary file of its own: two executors may write
    the same txid's file at once (a retried task and a straggler), with the same content."""
    directory = os.path.join(root, "user", str(index))
    os.makedirs(directory, exist_ok=True)
    data = json.dumps(meta, separators=(",", ":")).encode("utf-8")
    write_atomically(os.path.join(directory, f"{txid}.json"), data)


def initial_offset(root: str) -> dict[str, int]:
    """Every txid source's `initialOffset`: a new query (no Spark checkpoint yet) has handed
    over txid 0. A state directory with committed txids belongs to another query (its
    checkpoint lost or not passed): refused rather than read from txid 1 again."""
    committed = currtx(root) - 1
    if committed > 0:
        raise TopologyError(
            f"the batch state in {root} has txids up to {committed} committed, but Spark's "
            "checkpoint of this query is new: they must be kept together (the same "
            "--checkpoint directory), or both started afresh"
        )
    return {"txid": 0}


# ---- the data source ----------------------------------------------------------------------------


class SpoutPartition(InputPartition):
    """Spout task `index` (task id `task`) of txid `txid`."""

    def __init__(self, txid: int, index: int, task: int) -> None:
        super().__init__((txid, index))
        self.txid = txid
        self.index = index
        self.task = task


class BatchSpoutSource(DataSource):
    @classmethod
    def name(cls) -> str:
        return SOURCE_NAME

    def schema(self) -> str:
        return SCHEMA

    def streamReader(self, schema: Any) -> DataSourceStreamReader:
        return BatchSpoutReader(self.options)


class BatchSpoutReader(DataSourceStreamReader):
    def __init__(self, options: Any) -> None:
        self.topology = topology_of(options)
        self.spout = str(options["spout"])
        self.root = str(options["state"])
        self.tasks = assign_tasks(self.topology).tasks_of(self.spout)
        self._coordinator: BatchSpoutProcess | None = None  # made on first use (driver side)
        self.idle_secs = idle_batch_secs(self.topology)
        # when the last micro-batch ended (or the query started): Spark asks for the next offset
        # only once the micro-batch before has run and committed, so a new `start` marks its end
        self._clock = time.monotonic
        self._last_batch = 0.0
        self._ended: tuple[int, int] | None = None

    def initialOffset(self) -> dict[str, int]:
        return initial_offset(self.root)

    def latestOffset(self, start: dict[str, int], limit: Any) -> dict[str, int]:
        txid = int(start["txid"]) + 1
        now = self._clock()
        ended = (txid - 1, int(start.get(IDLE_KEY, 0)))
        if ended != self._ended:  # the micro-batch up to `start` has ended since the last call
            self._ended, self._last_batch = ended, now
        if meta_record(self.root, txid) is not None:
            return {"txid": txid}  # stored before a restart: that batch, never a new one
        coordinator = self._coordinator
        if coordinator is None:
            coordinator = self._coordinator = BatchSpoutProcess(
                self.topology, self.spout, self.tasks[0], committed_txid=currtx(self.root) - 1
            )
        if open_txid(self.root, self.spout, coordinator, txid):
            return {"txid": txid}
        if idle_batch_due(now, self._last_batch, self.idle_secs, 0, 0):
            return idle_offset(start)  # not ready, and a ticking bolt waits: no txid, ticks
        return start  # not ready: no micro-batch this trigger

    def partitions(self, start: dict[str, int], end: dict[str, int]) -> Sequence[InputPartition]:
        first, last = int(start["txid"]), int(end["txid"])
        if last == first:
            return []
        if last != first + 1:
            raise TopologyError(
                f"a micro-batch from txid {first} to {last}: each micro-batch must be exactly "
                "one txid (was the checkpoint written by another source?)"
            )
        return [SpoutPartition(last, i, task) for i, task in enumerate(self.tasks)]

    def read(self, partition: InputPartition) -> Iterator[tuple[Any, ...]]:
        assert isinstance(partition, SpoutPartition)
        return read_spout_partition(self.topology, self.spout, self.root, partition)

    def commit(self, end: dict[str, int]) -> None:
        """Nothing: the engine commits a txid itself (committers, then `batch_commit`, then
        `currtx`) before Spark records the micro-batch as done."""

    def stop(self) -> None:
        if self._coordinator is not None:
            self._coordinator.close()
            self._coordinator = None


def open_txid(root: str, spout: str, coordinator: BatchSpoutProcess, txid: int) -> bool:
    """Store txid's batch metadata (attempt 0: opened, never run; the driver counts runs from
    there, engine.py) as the batch spout's coordinator gives it for the metadata of the txid
    before; metadata stored already (a driver that died after storing it) is kept, never asked
    for again. False when the coordinator is not ready: no batch yet. The transactional source's
    `latestOffset` and, beside plain spouts, the stager (host/spark/batch_opener.py) call it."""
    if meta_record(root, txid) is not None:
        return True
    prev = meta_record(root, txid - 1) if txid > 1 else None
    answer = coordinator.init(txid, None if prev is None else prev.get("meta"))
    if answer is None:
        return False
    if answer.txid is not None and answer.txid != txid:
        raise TopologyError(
            f"batch spout {spout!r} numbered batch {txid} as {answer.txid}: a spout that "
            "numbers its own batches does not run on the Spark engine (its micro-batch ids are "
            "the txids)"
        )
    BatchStore(root).put_meta(txid, answer.meta, 0)
    return True


def read_spout_partition(
    topology: Topology, spout: str, root: str, p: SpoutPartition
) -> Iterator[tuple[Any, ...]]:
    """One spout task's share of a txid, as rows (executor side)."""
    record = meta_record(root, p.txid)
    if record is None:
        raise TopologyError(
            f"no stored metadata for txid {p.txid} in {root}{unshared_reason(root)}"
        )
    attempt = int(record.get("attempt", 0))
    if attempt < 1:
        raise TopologyError(f"txid {p.txid} is read before the driver counted its attempt")
    committed = currtx(root) - 1
    stored = task_meta(root, p.index, p.txid)
    prev = task_meta(root, p.index, p.txid - 1)
    proc = shared_spout(topology, spout, p.task, committed_txid=committed)
    emits = proc.emit(
        Tx(p.txid, attempt), record.get("meta"), stored, prev, committed, replay=attempt > 1
    )
    yield from source_rows(
        p.index, p.task, ((m.stream, row_values_text(m.values), m.task) for m in emits)
    )
    if proc.reported is not NO_META:
        put_task_meta(root, p.index, p.txid, proc.reported)
