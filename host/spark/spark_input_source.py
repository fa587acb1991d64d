"""The Spark spout's input as the engine's query source (docs/spark.md §4.8; the rules are
host/spark/spark_input.py's, pure).

    spark_input = SparkInput(topology, spout_id, checkpoint, state_root)   # refuses bad settings
    spark_input.register(spark)                   # the file-backed data source
    df = spark_input.stream(spark)                # the query's source
    record = spark_input.record(txid, batch_id)   # in foreachBatch: its stored metadata
    rows = spark_input.rows(df, batch_id)         # its rows (host/spark/source_rows.py)
    spark_input.committed(txid)                   # after the commit: stagings not read again

- **streaming**: the spout's job's streaming DataFrame, its output fields selected, is the
  query's source: Spark's own offsets, in the query's checkpoint, decide each micro-batch.
  Before the query starts, the streaming relations of the DataFrame's analyzed plan are looked
  at (`streaming_relations`, through py4j) and a source Spark cannot replay is refused
  (spark_input.py `not_replayable`: the socket source). In
  `foreachBatch` the micro-batch is staged as the transactional spout stages it
  (components/spark_spout/segments.py `stage`: parquet under `<checkpoint>/input/batch-<B>/`,
  a manifest, a rename) and read back in the executors with the spout's own reading and
  RowConverter. Why not Arrow batches straight from Spark (`mapInArrow`): PySpark requires
  pandas for it, and the parquet round trip is what gives the spout's values (timestamps as UTC
  instants); the staging also makes a replay read the same rows whatever the source. The engine
  stores `{"spark_batch_id": B}` as the txid's metadata when the micro-batch starts.
- **dataframe** and **directory**: a Python data source (`pyspark.sql.datasource`) whose offset is
  `{"txid": T}`, as host/spark/source.py's. `latestOffset` (Spark's driver-side Python worker)
  picks the files of txid T + 1 and stores them (fsynced) as its metadata before returning the
  offset; `read` (an executor) reads one file with the spout's own pyarrow reading and
  RowConverter, so a value is exactly the one the spout emits under `host local`. The DataFrame
  is staged once, by the driver, under `<checkpoint>/input/<fingerprint>/` (`stage` again)
  before the query starts.

Rows are `(index, task, stream, values as compact JSON, direct task)`, the engine's source rows:
index 0 and the spout's one task, the default stream. Executors read the stagings and the
directories with ordinary file calls: on a real cluster `--checkpoint` must be a shared path, as
for the other sources (docs/spark.md §6.1).
"""

from __future__ import annotations

import base64
import os
import pickle
import shutil
import sys
import time
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

import pyarrow.fs as pafs
from pyspark.sql.datasource import DataSource, DataSourceStreamReader, InputPartition

from components.spark_spout.convert import RowConverter
from components.spark_spout.segments import (
    SUCCESS,
    exists,
    filesystem,
    format_of,
    listing,
    open_segment,
    part_files,
    record_batches,
    stage,
    staged,
)
from components.spark_spout.session import call_job, load_callable
from host.batch.store import BatchStore
from host.errors import TopologyError
from host.spark.idle_batches import idle_batch_due, idle_batch_secs
from host.spark.shared_checkpoint import unshared_reason
from host.spark.source import initial_offset, meta_record
from host.spark.source_rows import SCHEMA, SourceRow, row_values_text, source_rows
from host.spark.spark_input import (
    DATAFRAME,
    DIRECTORY,
    STREAMING,
    InputSpec,
    StreamingRelation,
    dataframe_batch,
    idle_meta,
    input_spec,
    next_directory,
    not_replayable,
)
from host.topology import settings as cfg
from host.topology.model import Topology
from multilang.messages import DEFAULT_STREAM

SPARK_INPUT_SOURCE_NAME = "multilang_spark_input"
INPUT_SUBDIR = "input"  # <checkpoint>/input/<fingerprint>/: the staged DataFrame
BATCH_PREFIX = "batch-"  # <checkpoint>/input/batch-<B>/: streaming micro-batch B, staged


# ---- rows: the spout's own reading and conversion --------------------------------------------


def read_files(spec: InputSpec, meta: dict[str, Any], files: Sequence[str]) -> Iterator[SourceRow]:
    """The source rows of `files` (one micro-batch's share), read and converted as the spout
    does."""
    c = spec.cfg
    converter = RowConverter(c.fields)
    for path in files:
        fs, local = filesystem(path)
        if meta["input"] == DATAFRAME:  # the staged copy: parquet, its fields only
            segment = open_segment(path, fs, [local], "parquet", c)
        else:
            segment = open_segment(path, fs, [local], format_of(local, c.format), c)
        for batch in record_batches(segment, converter.fields, c.batch_rows):
            tuples = ((DEFAULT_STREAM, row_values_text(v), None) for v in converter.rows(batch))
            yield from source_rows(0, spec.task, tuples)


def next_meta(spec: InputSpec, staging: str, prev: Any, max_rows: int) -> dict[str, Any] | None:
    """The metadata of the micro-batch after `prev` (the last one's, None before the first):
    the staged DataFrame's next files, or the next complete output directory; None when there
    is nothing new."""
    if spec.source == DATAFRAME:
        manifest = staged(staging)
        if manifest is None:
            raise TopologyError(f"the staged DataFrame at {staging} is gone")
        meta: dict[str, Any] | None = dataframe_batch(manifest, staging, prev, max_rows)
        return meta
    return _next_directory(spec, prev)


def _next_directory(spec: InputSpec, prev: Any) -> dict[str, Any] | None:
    path = spec.cfg.path
    assert path is not None  # the directory source requires it (config.from_conf)
    fs, root = filesystem(path)
    single = exists(fs, f"{root}/{SUCCESS}") or bool(part_files(fs, root))
    if single:  # one output directory: one micro-batch, then nothing more
        names = [os.path.basename(root)]
        complete = {names[0]: exists(fs, f"{root}/{SUCCESS}")}
    else:  # a parent: its subdirectories, as the spout lists them (sources.DirectorySource)
        names = [
            info.base_name
            for info in listing(fs, root)
            if info.type == pafs.FileType.Directory and not info.base_name.startswith(("_", "."))
        ]
        complete = {n: exists(fs, f"{root}/{n}/{SUCCESS}") for n in names}
    prev_name = prev.get("name") if isinstance(prev, dict) else None
    name = next_directory(names, complete, prev_name)
    if name is None:
        return None
    directory = root if single else f"{root}/{name}"
    files = part_files(fs, directory)
    uri = path if single else f"{path.rstrip('/')}/{name}"
    return {
        "input": DIRECTORY,
        "name": name,
        "directory": uri,
        "files": [f"{uri}/{p.rsplit('/', 1)[1]}" for p in files],
    }


# ---- the streaming input's sources --------------------------------------------------------------


def streaming_relations(df: Any) -> list[StreamingRelation]:
    """The streaming sources `df` reads, from its analyzed logical plan (from Spark 4.1 the
    unanalyzed plan holds them unresolved, `NamedStreamingRelation`). Analysis names each
    source's provider without starting it: a socket source has not connected yet. [] for a
    DataFrame without a JVM plan (Spark Connect's): nothing to classify."""
    jdf = getattr(df, "_jdf", None)
    if jdf is None:
        return []
    out = []
    pending = [jdf.queryExecution().analyzed()]
    while pending:
        node = pending.pop()
        kind = node.getClass().getSimpleName()
        if kind == "StreamingRelationV2":  # a table provider (socket, rate, kafka, Python, ...)
            provider = node.source()  # an Option: empty for a catalog's table
            owner = provider.get() if provider.isDefined() else node.table()
            out.append(StreamingRelation(str(node.sourceName()), owner.getClass().getName()))
        elif kind == "StreamingRelation":  # a v1 source: the file formats, a StreamSourceProvider
            provider = node.dataSource().providingClass().getName()
            out.append(StreamingRelation(str(node.sourceName()), str(provider)))
        children = node.children()
        pending.extend(children.apply(i) for i in range(children.size()))
    return out


# ---- the data source (dataframe, directory) ---------------------------------------------------------


def source_options(
    spec: InputSpec, state_root: str, staging: str | None, max_rows: int, idle_secs: float | None
) -> dict[str, str]:
    return {
        "spec": base64.b64encode(pickle.dumps(spec)).decode("ascii"),
        "state": state_root,
        "staging": staging or "",
        "max_rows": str(max_rows),
        "idle_secs": "" if idle_secs is None else repr(idle_secs),
    }


class FilesPartition(InputPartition):
    def __init__(self, txid: int, files: list[str]) -> None:
        super().__init__((txid, tuple(files)))
        self.txid = txid
        self.files = files


class SparkInputSource(DataSource):
    @classmethod
    def name(cls) -> str:
        return SPARK_INPUT_SOURCE_NAME

    def schema(self) -> str:
        return SCHEMA

    def streamReader(self, schema: Any) -> DataSourceStreamReader:
        return SparkInputReader(self.options)


class SparkInputReader(DataSourceStreamReader):
    def __init__(self, options: Any) -> None:
        self.spec: InputSpec = pickle.loads(base64.b64decode(options["spec"]))
        self.root = str(options["state"])
        self.staging = str(options["staging"])
        self.max_rows = int(options["max_rows"])
        idle = str(options.get("idle_secs", ""))
        self.idle_secs = float(idle) if idle else None
        # when the last micro-batch ended (or the query started), for idle micro-batches: Spark
        # asks for the next offset only once the micro-batch before has run and committed
        self._clock = time.monotonic
        self._last_batch = 0.0
        self._ended: int | None = None  # the txid the last call started from

    def initialOffset(self) -> dict[str, int]:
        return initial_offset(self.root)

    def latestOffset(self, start: dict[str, int], limit: Any) -> dict[str, int]:
        last = int(start["txid"])
        txid = last + 1
        now = self._clock()
        if last != self._ended:  # txid `last` has ended since the last call
            self._ended, self._last_batch = last, now
        if meta_record(self.root, txid) is not None:
            return {"txid": txid}  # chosen before a restart: those files, never others
        record = meta_record(self.root, last) if last > 0 else None
        prev = None if record is None else record.get("meta")
        meta = next_meta(self.spec, self.staging, prev, self.max_rows)
        if meta is None:  # nothing new: no micro-batch this trigger, unless the bolts' ticks
            if not idle_batch_due(now, self._last_batch, self.idle_secs, 0, 0):  # want one
                return start
            meta = idle_meta(prev, self.spec.source)
        BatchStore(self.root).put_meta(txid, meta, 0)  # before Spark sees the offset
        return {"txid": txid}

    def partitions(self, start: dict[str, int], end: dict[str, int]) -> Sequence[InputPartition]:
        first, last = int(start["txid"]), int(end["txid"])
        if last == first:
            return []
        if last != first + 1:
            raise TopologyError(
                f"a micro-batch from txid {first} to {last}: each micro-batch must be exactly "
                "one txid (was the checkpoint written by another source?)"
            )
        record = meta_record(self.root, last)
        if record is None:  # committed and cleaned up: the engine skips it without reading
            return []
        files = list(record["meta"]["files"])
        # a file per partition, read in parallel; an empty directory still makes the txid
        return [FilesPartition(last, [f]) for f in files] or [FilesPartition(last, [])]

    def read(self, partition: InputPartition) -> Iterator[tuple[Any, ...]]:
        assert isinstance(partition, FilesPartition)
        record = meta_record(self.root, partition.txid)
        if record is None:
            raise TopologyError(
                f"no stored metadata for txid {partition.txid} in {self.root}"
                + unshared_reason(self.root)
            )
        return read_files(self.spec, record["meta"], partition.files)

    def commit(self, end: dict[str, int]) -> None:
        """Nothing: the engine commits the txid before Spark records the micro-batch."""


# ---- the driver's side ---------------------------------------------------------------------------


class SparkInput:
    """A Spark spout's input as the engine's source (see the module's docstring). Made before
    anything starts: the spout's settings are checked then (a TopologyError names them)."""

    def __init__(self, topology: Topology, spout: str, checkpoint: str, state_root: str) -> None:
        self.spec = input_spec(topology, spout)
        self.file = topology.source
        self.state_root = state_root
        self.max_rows = cfg.settings_for(topology).spark_batch_max_tuples
        self.idle_secs = idle_batch_secs(topology)
        fingerprint = self.spec.cfg.fingerprint()
        self.staging = os.path.join(checkpoint, INPUT_SUBDIR, fingerprint)

    @property
    def streaming(self) -> bool:
        return self.spec.source == STREAMING

    def register(self, spark: Any) -> None:
        if not self.streaming:
            spark.dataSource.register(SparkInputSource)

    def stream(self, spark: Any) -> Any:
        """The query's source DataFrame, rows in the engine's SCHEMA."""
        if self.streaming:  # its micro-batches come to `rows` as they are
            df = self._job(spark, streaming=True)
            self._check_replayable(df)
            return df.select(*self.spec.cfg.fields)
        staging = self.stage_dataframe(spark)
        options = source_options(self.spec, self.state_root, staging, self.max_rows, self.idle_secs)
        return spark.readStream.format(SPARK_INPUT_SOURCE_NAME).options(**options).load()

    def stage_dataframe(self, spark: Any) -> str | None:
        """A DataFrame input's staging, written now unless it is there (staged once: a restart
        reads the same copy); None for the other inputs."""
        if self.spec.source != DATAFRAME:
            return None
        if staged(self.staging) is None:
            df = self._job(spark, streaming=False)
            meta = {"fingerprint": self.spec.cfg.fingerprint()}
            stage(df, self.staging, list(self.spec.cfg.fields), meta)
        return self.staging

    def record(self, txid: int, batch_id: int) -> dict[str, Any] | None:
        """txid's stored metadata; for a streaming input, stored now on its first run (Spark's
        offset log holds what it reads, the metadata counts the attempts)."""
        record = meta_record(self.state_root, txid)
        if record is None and self.streaming:
            BatchStore(self.state_root).put_meta(txid, {"spark_batch_id": batch_id}, 0)
            record = meta_record(self.state_root, txid)
        return record

    def rows(self, df: Any, batch_id: int) -> Any:
        """Micro-batch `batch_id`'s rows, as an RDD of the engine's source rows. A streaming
        micro-batch is staged first, as the spout stages it (segments.stage: parquet, a
        manifest, a rename), and read back in the executors with the spout's own reading: the
        same values as under `host local`, and a replay of the micro-batch (a retried task, a
        restarted query or driver) reads the staging, never the source again."""
        if not self.streaming:
            return df.rdd
        uri = self._batch_staging(batch_id)
        manifest = staged(uri)
        if manifest is None:
            manifest = stage(df, uri, list(self.spec.cfg.fields), {"batch": batch_id})
        files = [f"{uri}/{entry['name']}" for entry in manifest["files"]]
        spec, meta = self.spec, {"input": DATAFRAME}

        def read(paths: Iterable[str]) -> Iterator[tuple[Any, ...]]:
            return read_files(spec, meta, list(paths))

        sc = df.sparkSession.sparkContext
        return sc.parallelize(files, max(1, len(files))).mapPartitions(read)

    def committed(self, txid: int) -> None:
        """txid is committed: the stagings of micro-batches up to it are not read again."""
        if not self.streaming:
            return
        root = os.path.dirname(self._batch_staging(0))
        for name in os.listdir(root) if os.path.isdir(root) else ():
            number = name.removeprefix(BATCH_PREFIX)
            if name.startswith(BATCH_PREFIX) and number.isdigit() and int(number) + 1 <= txid:
                shutil.rmtree(os.path.join(root, name), ignore_errors=True)

    def _batch_staging(self, batch_id: int) -> str:
        return os.path.join(os.path.dirname(self.staging), f"{BATCH_PREFIX}{batch_id}")

    def _check_replayable(self, df: Any) -> None:
        """Refuses a streaming DataFrame that reads a source Spark cannot replay (docs/spark.md
        §4.8): the engine stages a micro-batch only once Spark runs it, and one Spark planned
        before a driver died is read again from the source by its checkpointed offsets."""
        refused = not_replayable(streaming_relations(df))
        if not refused:
            return
        names = ", ".join(f"{r.name} ({r.provider})" for r, _ in refused)
        reasons = "; ".join(dict.fromkeys(reason for _, reason in refused))
        raise TopologyError(
            f"spark.spout.job {self.spec.cfg.job} reads a streaming source Spark cannot replay: "
            f"{names}. {reasons}. Refused on Spark, where each micro-batch is a transaction "
            "that must read the same rows when it is replayed; have the data written to files "
            "or Kafka and read those instead",
            file=self.file,
            component=self.spec.spout,
        )

    def _job(self, spark: Any, *, streaming: bool) -> Any:
        """The spout's DataFrame (its job, SQL or path), its output fields checked."""
        c, spec = self.spec.cfg, self.spec
        if c.job:
            if spec.cwd not in sys.path:  # the job's module sits next to the topology
                sys.path.insert(0, spec.cwd)
            df = call_job(load_callable(c.job), spark, spec.conf)
            what = f"spark.spout.job {c.job}"
        elif c.sql:
            df, what = spark.sql(c.sql), "spark.spout.sql"
        else:
            options = {k: str(v) for k, v in c.read_options.items()}
            df = spark.read.format(c.format or "parquet").options(**options).load(c.path)
            what = f"spark.spout.path {c.path}"
        if bool(getattr(df, "isStreaming", False)) != streaming:
            want = "a streaming" if streaming else "a batch"
            raise TopologyError(
                f"{what} did not give {want} DataFrame", file=self.file, component=spec.spout
            )
        missing = [f for f in c.fields if f not in df.columns]
        if missing:
            raise TopologyError(
                f"{what}: the DataFrame has no column(s) {', '.join(missing)} (its columns: "
                f"{', '.join(df.columns)}); the spout's output fields must be its columns",
                file=self.file,
                component=spec.spout,
            )
        return df
