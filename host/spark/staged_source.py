"""The plain spouts' staged micro-batches as a Spark Structured Streaming source, through
PySpark's Python data source API (docs/spark.md §4.6, §4.9). The driver stages the batches
(host/spark/staged_spouts.py); this module only reads them, in the layout of
host/spark/staging.py.

    spark.dataSource.register(StagedSpoutSource)
    spark.readStream.format(STAGED_SOURCE_NAME).options(**staged.options()).load()

The offset is `{"txid": T}`, as for the transactional source (host/spark/source.py).
`latestOffset` hands over T + 1 once it is staged; `read` runs in an executor and reads the staged
file of its task. A replay (a retried task, a re-run micro-batch, a restarted query or driver)
reads the same files: the spout is never asked again.

Beside transactional sources (docs/spark.md §4.9: the options then carry the topology and, as
`sources`, each batch spout with the directory of its batch state, host/spark/batch_opener.py) a
txid's partitions are those spouts' tasks, whose reads are their `batch_emit`s
(`read_spout_partition`), then the plain spouts' staged files. A Spark spout's DataFrame or
directory input beside them (`inputs`: the spout, the directory of its state and its settings,
host/spark/spark_input_opener.py) adds a partition per file of its share of the txid, read with
the spout's own reading (host/spark/spark_input_source.py `read_files`).

PySpark pickles these classes by reference to this module, and the executors import it: it
imports none of the driver's side (no stager, no plan).
"""

from __future__ import annotations

import base64
import json
import pickle
from collections.abc import Iterator, Sequence
from typing import Any

from pyspark.sql.datasource import DataSource, DataSourceStreamReader, InputPartition

from host.errors import TopologyError
from host.runtime.context import assign_tasks
from host.spark.idle_batches import idle_offset
from host.spark.shared_checkpoint import unshared_reason
from host.spark.source import (
    SpoutPartition,
    initial_offset,
    meta_record,
    read_spout_partition,
    topology_of,
)
from host.spark.source_rows import SCHEMA
from host.spark.spark_input import InputSpec
from host.spark.spark_input_source import read_files
from host.spark.staging import idle_requested, read_manifest, read_rows

STAGED_SOURCE_NAME = "multilang_staged_spout"


def sources_option(sources: Sequence[tuple[str, str]]) -> str:
    """The `sources` option: (batch spout, the directory of its batch state) of each."""
    return json.dumps([list(s) for s in sources])


class SourcePartition(SpoutPartition):
    """Task `index` (task id `task`) of batch spout `spout`, whose state is under `root`."""

    def __init__(self, txid: int, index: int, task: int, spout: str, root: str) -> None:
        super().__init__(txid, index, task)
        self.spout = spout
        self.root = root


class InputFilePartition(InputPartition):
    """One file of Spark spout input `input` (its place in the `inputs` option) in txid."""

    def __init__(self, txid: int, input: int, path: str) -> None:
        super().__init__((txid, input, path))
        self.txid = txid
        self.input = input
        self.path = path


class StagedPartition(InputPartition):
    """Spout task `index` (task id `task`) of the staged txid `txid`."""

    def __init__(self, txid: int, index: int, task: int) -> None:
        super().__init__((txid, index))
        self.txid = txid
        self.index = index
        self.task = task


class StagedSpoutSource(DataSource):
    @classmethod
    def name(cls) -> str:
        return STAGED_SOURCE_NAME

    def schema(self) -> str:
        return SCHEMA

    def streamReader(self, schema: Any) -> DataSourceStreamReader:
        return StagedSpoutReader(self.options)


class StagedSpoutReader(DataSourceStreamReader):
    def __init__(self, options: Any) -> None:
        self.root = str(options["state"])
        self.staged = str(options["staged"])
        # the transactional sources beside the plain spouts: (spout, state directory, tasks)
        self.sources: list[tuple[str, str, tuple[int, ...]]] = []
        self.topology = None
        if options.get("sources"):
            self.topology = topology_of(options)
            tasks = assign_tasks(self.topology)
            self.sources = [
                (str(spout), str(root), tuple(tasks.tasks_of(spout)))
                for spout, root in json.loads(options["sources"])
            ]
        # the Spark spouts' inputs beside the others: (spout, state directory, settings)
        self.inputs: list[tuple[str, str, InputSpec]] = [
            (str(spout), str(root), pickle.loads(base64.b64decode(spec)))
            for spout, root, spec in json.loads(options.get("inputs") or "[]")
        ]

    def initialOffset(self) -> dict[str, int]:
        return initial_offset(self.root)

    def latestOffset(self, start: dict[str, int], limit: Any) -> dict[str, int]:
        """T + 1 once it is staged and its metadata stored (the driver's stager writes both, in
        that order); else an idle micro-batch with no txid if the stager asked for one beside
        batch spouts (host/spark/staging.py `request_idle`); else the offset stays and Spark runs
        no micro-batch."""
        txid = int(start["txid"]) + 1
        if meta_record(self.root, txid) is not None and read_manifest(self.staged, txid):
            return {"txid": txid}
        if idle_requested(self.staged, txid - 1):
            return idle_offset(start)
        return start

    def partitions(self, start: dict[str, int], end: dict[str, int]) -> Sequence[InputPartition]:
        first, last = int(start["txid"]), int(end["txid"])
        if last == first:
            return []
        if last != first + 1:
            raise TopologyError(
                f"a micro-batch from txid {first} to {last}: each micro-batch must be exactly "
                "one txid (was the checkpoint written by another source?)"
            )
        manifest = read_manifest(self.staged, last)
        if manifest is None:
            # committed and deleted: the engine skips it without reading (engine.py, step 1)
            return []
        sources: list[InputPartition] = [
            SourcePartition(last, i, task, spout, root)
            for spout, root, tasks in self.sources
            for i, task in enumerate(tasks)
        ]
        for i, (spout, root, _) in enumerate(self.inputs):
            record = meta_record(root, last)
            if record is None:
                raise TopologyError(
                    f"no stored share of txid {last} for the input of Spark spout {spout!r} in "
                    f"{root}: the stager stores it before it stages the txid"
                )
            sources.extend(InputFilePartition(last, i, f) for f in record["meta"]["files"])
        staged = [StagedPartition(last, i, task) for i, task in enumerate(manifest["tasks"])]
        return sources + staged

    def read(self, partition: InputPartition) -> Iterator[tuple[Any, ...]]:
        p = partition
        if isinstance(p, SourcePartition):
            assert self.topology is not None
            return read_spout_partition(self.topology, p.spout, p.root, p)
        if isinstance(p, InputFilePartition):
            _, root, spec = self.inputs[p.input]
            record = meta_record(root, p.txid)
            if record is None:
                raise TopologyError(
                    f"no stored share of txid {p.txid} in {root}{unshared_reason(root)}"
                )
            return read_files(spec, record["meta"], [p.path])
        assert isinstance(p, StagedPartition)
        return read_rows(self.staged, p.txid, p.index, p.task)

    def commit(self, end: dict[str, int]) -> None:
        """Nothing: the engine commits a txid (and acks it to the spout) before Spark records
        the micro-batch as done."""
