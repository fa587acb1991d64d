"""The three sources: background threads that turn Spark output into chunks of JSON rows.

A source never touches the protocol. It runs on its own thread (and, for Structured Streaming,
on Spark's foreachBatch thread) and hands `Chunk`s to the protocol loop through `Handoff`, a
bounded queue: when the loop is not taking rows (max.spout.pending reached, slow bolts), `put`
blocks and the source stops reading, so at most `read.ahead` chunks of `batch.rows` rows are
held. Log lines go through an unbounded queue the loop drains; a fatal problem is a `Fatal`
item. Every wait checks `Handoff.stopping`, so a source ends promptly when the spout closes.

Rows are read with pyarrow (record batches, converted column by column), never row by row
through Py4J: Spark writes (the DataFrame source's staging, each micro-batch), pyarrow reads.
"""

from __future__ import annotations

import json
import os
import queue
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq

from multilang import INFO, WARN

from .checkpoint import Checkpoint, order_of
from .config import SpoutConfig
from .convert import RowConverter
from .session import call_job, load_callable, start_session

if TYPE_CHECKING:  # pyspark is imported when a session starts: it is slow to import
    from pyspark.sql import DataFrame, SparkSession

MANIFEST = "_MANIFEST.json"
SUCCESS = "_SUCCESS"


class Stopped(Exception):
    """The spout is closing: the source gives up what it was doing."""


class SourceError(Exception):
    """A problem with the user's data or job that retrying will not fix."""


@dataclass(eq=False)
class Segment:
    """Rows with a stable order: a staged file, an output directory's part file, a
    micro-batch. `rows` is known before the first chunk is handed over."""

    key: str
    rows: int
    files: list[str]
    fs: pafs.FileSystem
    fmt: str = "parquet"
    table: pa.Table | None = None  # json / csv: read whole to count the rows
    # streaming: set by the protocol loop once every row is done and checkpointed
    done: threading.Event = field(default_factory=threading.Event)


@dataclass(eq=False)
class Chunk:
    segment: Segment
    start: int  # offset of rows[0] within the segment
    rows: list[list]


@dataclass(eq=False)
class End:
    """The source has no more segments (the DataFrame source, or one output directory)."""


@dataclass(eq=False)
class Fatal:
    message: str


class Handoff:
    """The bounded queue from a source thread to the protocol loop, plus log lines."""

    def __init__(self, capacity: int):
        self.items: queue.Queue = queue.Queue(maxsize=capacity)
        self.logs: queue.SimpleQueue = queue.SimpleQueue()
        self.stopping = threading.Event()

    def put(self, item: Any) -> None:
        while True:
            if self.stopping.is_set():
                raise Stopped()
            try:
                self.items.put(item, timeout=0.1)
                return
            except queue.Full:
                continue

    def take(self) -> Any | None:
        try:
            return self.items.get_nowait()
        except queue.Empty:
            return None

    def log(self, message: str, level: int = INFO) -> None:
        self.logs.put((message, level))

    def sleep(self, secs: float) -> None:
        if self.stopping.wait(secs):
            raise Stopped()


# ---- files --------------------------------------------------------------------------------------


def filesystem(uri: str) -> tuple[pafs.FileSystem, str]:
    """pyarrow's file system for a local path or a URI (hdfs://, s3://, ... when pyarrow has it)."""
    return pafs.FileSystem.from_uri(uri if "://" in uri else os.path.abspath(uri))


def _listing(fs: pafs.FileSystem, path: str) -> list[pafs.FileInfo]:
    try:
        return fs.get_file_info(pafs.FileSelector(path, allow_not_found=True))
    except (FileNotFoundError, NotADirectoryError):
        return []


def _exists(fs: pafs.FileSystem, path: str) -> bool:
    return fs.get_file_info(path).type != pafs.FileType.NotFound


def part_files(fs: pafs.FileSystem, directory: str) -> list[str]:
    """Spark's data files in an output directory, in name order: `part-*`, without checksums
    and hidden files."""
    names = sorted(
        info.base_name
        for info in _listing(fs, directory)
        if info.type == pafs.FileType.File
        and info.base_name.startswith("part-")
        and not info.base_name.endswith(".crc")
    )
    return [f"{directory}/{name}" for name in names]


def format_of(path: str, configured: str | None) -> str:
    if configured:
        return configured
    name = os.path.basename(path).lower()
    for suffix in (".gz", ".bz2", ".zst", ".lz4"):
        name = name.removesuffix(suffix)
    for fmt in ("parquet", "json", "csv"):
        if name.endswith("." + fmt):
            return fmt
    raise SourceError(
        f"cannot tell the format of {path}: set spark.spout.format (parquet, json or csv)"
    )


def _write_manifest(fs: pafs.FileSystem, directory: str, doc: dict) -> None:
    with fs.open_output_stream(f"{directory}/{MANIFEST}") as out:
        out.write(json.dumps(doc, indent=1).encode())


def _read_manifest(fs: pafs.FileSystem, directory: str) -> dict | None:
    try:
        with fs.open_input_stream(f"{directory}/{MANIFEST}") as fh:
            return json.loads(fh.read())
    except (FileNotFoundError, OSError, ValueError):
        return None


def stage(df: DataFrame, uri: str, fields: list[str], meta: dict) -> dict:
    """Write `df` (its `fields`, in order) to parquet at `uri`, atomically: into a temporary
    sibling, then a manifest listing the part files and their row counts, then a rename. The
    manifest is what makes a staged directory complete; its file order is the row order."""
    fs, path = filesystem(uri)
    parent = os.path.dirname(path)
    fs.create_dir(parent, recursive=True)
    tmp_name = f"_tmp-{uuid.uuid4().hex[:12]}"
    tmp_path = f"{parent}/{tmp_name}"
    tmp_uri = f"{uri.rstrip('/').rsplit('/', 1)[0]}/{tmp_name}"  # tmp_path, as Spark names it
    df.select(*fields).write.mode("errorifexists").parquet(tmp_uri)
    files = []
    for file_path in part_files(fs, tmp_path):
        with fs.open_input_file(file_path) as fh:
            rows = pq.ParquetFile(fh).metadata.num_rows
        files.append({"name": os.path.basename(file_path), "rows": rows})
    manifest = {
        **meta,
        "fields": list(fields),
        "files": files,
        "rows": sum(f["rows"] for f in files),
    }
    _write_manifest(fs, tmp_path, manifest)
    if _exists(fs, path):  # another attempt finished first: keep one copy
        fs.delete_dir(tmp_path)
    else:
        fs.move(tmp_path, path)
    return manifest


def staged(uri: str) -> dict | None:
    """The manifest of a complete staged directory, None when there is none."""
    fs, path = filesystem(uri)
    return _read_manifest(fs, path)


# ---- reading segments ---------------------------------------------------------------------------


def _read_table(fs: pafs.FileSystem, path: str, fmt: str, cfg: SpoutConfig) -> pa.Table:
    import pyarrow.csv as pcsv
    import pyarrow.json as pjson

    with fs.open_input_stream(path, compression="detect") as stream:
        if fmt == "json":
            return pjson.read_json(stream)
        if fmt == "csv":
            columns = list(cfg.csv_columns or cfg.fields)
            read = pcsv.ReadOptions(column_names=None if cfg.csv_header else columns)
            convert = pcsv.ConvertOptions(
                strings_can_be_null=True, quoted_strings_can_be_null=False
            )
            return pcsv.read_csv(stream, read_options=read, convert_options=convert)
    raise SourceError(f"unsupported format {fmt!r} for {path}")


def open_segment(
    key: str, fs: pafs.FileSystem, files: list[str], fmt: str, cfg: SpoutConfig
) -> Segment:
    """A segment over `files` (read in this order), with its row count."""
    if fmt == "parquet":
        rows = 0
        for path in files:
            with fs.open_input_file(path) as fh:
                meta = pq.ParquetFile(fh).metadata
                rows += meta.num_rows
                _check_columns(
                    meta.schema.to_arrow_schema().names, cfg.fields, path, allow_missing=False
                )
        return Segment(key, rows, files, fs, fmt)
    tables = [_read_table(fs, path, fmt, cfg) for path in files]
    for path, table in zip(files, tables):
        _check_columns(table.schema.names, cfg.fields, path, allow_missing=fmt == "json")
    table = tables[0] if len(tables) == 1 else pa.concat_tables(tables, promote_options="default")
    return Segment(key, table.num_rows, files, fs, fmt, table=table)


def _check_columns(names: list[str], fields: Sequence[str], path: str, allow_missing: bool) -> None:
    if allow_missing:  # Spark's JSON writer leaves out null fields: a missing column is nulls
        return
    missing = [f for f in fields if f not in names]
    if missing:
        raise SourceError(
            f"{path} has no column(s) {', '.join(missing)} (its columns: "
            f"{', '.join(names)}); the spout's output fields must be columns of "
            f"the data"
        )


def _batches(segment: Segment, fields: list[str], batch_rows: int) -> Iterator[pa.RecordBatch]:
    if segment.table is not None:
        yield from segment.table.to_batches(max_chunksize=batch_rows)
        return
    for path in segment.files:
        with segment.fs.open_input_file(path) as fh:
            parquet = pq.ParquetFile(fh, coerce_int96_timestamp_unit="us")
            int96 = _int96_columns(parquet, fields)
            for batch in parquet.iter_batches(batch_size=batch_rows, columns=fields):
                yield _as_utc(batch, int96) if int96 else batch


def _int96_columns(parquet: pq.ParquetFile, fields: list[str]) -> set[str]:
    """Top-level columns holding INT96 values, Spark's default for TIMESTAMP: UTC instants that
    Arrow reads without a time zone."""
    schema = parquet.metadata.schema
    return {
        schema.column(i).path.split(".")[0]
        for i in range(len(schema))
        if schema.column(i).physical_type == "INT96"
    } & set(fields)


def _utc_type(t: pa.DataType) -> pa.DataType:
    """`t` with every zone-less timestamp in it made a UTC timestamp."""
    if pa.types.is_timestamp(t):
        return pa.timestamp("us", tz="UTC") if t.tz is None else t
    if pa.types.is_struct(t):
        return pa.struct([f.with_type(_utc_type(f.type)) for f in t])
    if pa.types.is_map(t):
        return pa.map_(_utc_type(t.key_type), _utc_type(t.item_type))
    if pa.types.is_list(t):
        return pa.list_(t.value_field.with_type(_utc_type(t.value_type)))
    if pa.types.is_large_list(t):
        return pa.large_list(t.value_field.with_type(_utc_type(t.value_type)))
    return t


def _as_utc(batch: pa.RecordBatch, names: set[str]) -> pa.RecordBatch:
    columns = list(batch.columns)
    for i, name in enumerate(batch.schema.names):
        if name in names:
            columns[i] = columns[i].cast(_utc_type(columns[i].type))
    return pa.RecordBatch.from_arrays(columns, names=batch.schema.names)


def feed(handoff: Handoff, segment: Segment, converter: RowConverter, batch_rows: int) -> None:
    """Hand every row of `segment` to the protocol loop, in chunks of at most `batch_rows`."""
    if segment.rows == 0:
        handoff.put(Chunk(segment, 0, []))
        return
    offset = 0
    for batch in _batches(segment, converter.fields, batch_rows):
        if batch.num_rows == 0:
            continue
        rows = converter.rows(batch)
        handoff.put(Chunk(segment, offset, rows))
        offset += len(rows)
    segment.table = None  # the rows are in the chunks now
    if offset != segment.rows:
        raise SourceError(
            f"segment {segment.key}: read {offset} rows, expected "
            f"{segment.rows}; did the files change after they were complete?"
        )


# ---- the sources --------------------------------------------------------------------------------


class Source:
    """Base: runs `produce` on a daemon thread; any exception becomes a Fatal for the loop."""

    name = "source"

    def __init__(
        self,
        cfg: SpoutConfig,
        conf: Mapping,
        checkpoint: Checkpoint,
        handoff: Handoff,
        app_name: str,
    ):
        self.cfg = cfg
        self.conf = conf
        self.checkpoint = checkpoint
        self.handoff = handoff
        self.app_name = app_name
        self.converter = RowConverter(cfg.fields)
        self.spark: SparkSession | None = None
        self.thread = threading.Thread(
            target=self._run, name=f"spark-spout-{self.name}", daemon=True
        )

    def start(self) -> None:
        self.thread.start()

    def _run(self) -> None:
        try:
            self.produce()
        except Stopped:
            pass
        except SourceError as exc:
            self._fatal(str(exc))
        except Exception as exc:  # the user's job, Spark, the file system
            if self.handoff.stopping.is_set():
                return
            import traceback

            self._fatal(f"the {self.name} source failed: {exc}\n{traceback.format_exc()}")

    def _fatal(self, message: str) -> None:
        try:
            self.handoff.items.put(Fatal(message), timeout=5)
        except queue.Full:  # the loop is not taking items: it will not read this either
            self.handoff.log(message, WARN)

    def produce(self) -> None:
        raise NotImplementedError

    def covered(self, key: str) -> bool:
        """Every row of this segment is done according to the checkpoint we started from."""
        wm = self.checkpoint.watermark
        return wm is not None and order_of(key) <= order_of(wm)

    def start_spark(self) -> SparkSession:
        started = time.monotonic()
        spark = self.spark = start_session(self.cfg.spark, self.app_name, self.cfg.log_level)
        self.handoff.log(
            f"Spark {spark.version} ready in {time.monotonic() - started:.1f}s "
            f"(master {spark.sparkContext.master})"
        )
        return spark

    def stop(self, timeout: float = 5.0) -> None:
        """Called by the protocol loop at close: stop Spark, within `timeout` seconds."""
        self.handoff.stopping.set()
        if self.spark is not None:
            stopper = threading.Thread(target=stop_spark, args=(self.spark,), daemon=True)
            stopper.start()
            stopper.join(timeout)


def stop_spark(spark: SparkSession) -> None:
    """Stop the session and let the JVM go: it exits when its stdin (a pipe from us) closes."""
    try:
        spark.stop()
    except Exception:
        pass
    try:
        from pyspark import SparkContext

        gateway = SparkContext._gateway
        proc = getattr(gateway, "proc", None)
        if gateway is not None and proc is not None:
            gateway.shutdown()
            proc.stdin.close()
            proc.wait(timeout=10)
            SparkContext._gateway = None
            SparkContext._jvm = None
    except Exception:
        pass


class DataFrameSource(Source):
    """The user's DataFrame (a job, SQL or a path), staged once as parquet, then read back."""

    name = "dataframe"

    def staging_uri(self) -> str:
        return f"{self.cfg.staging_dir.rstrip('/')}/{self.cfg.fingerprint()}"

    def produce(self) -> None:
        uri = self.staging_uri()
        manifest = staged(uri)
        if manifest is None:
            manifest = self.materialise(uri)
            if self.spark is not None:  # the rows are on disk: Spark's memory is not needed
                stop_spark(self.spark)
                self.spark = None
        else:
            self.handoff.log(
                f"resuming from the staged DataFrame at {uri} ({manifest['rows']} rows)"
            )
        fs, path = filesystem(uri)
        for i, entry in enumerate(manifest["files"]):
            key = f"part-{i:05d}"
            if self.covered(key):
                continue
            segment = Segment(key, int(entry["rows"]), [f"{path}/{entry['name']}"], fs)
            feed(self.handoff, segment, self.converter, self.cfg.batch_rows)
        self.handoff.put(End())

    def dataframe(self, spark):
        cfg = self.cfg
        if cfg.job:
            df = call_job(load_callable(cfg.job), spark, self.conf)
            what = f"spark.spout.job {cfg.job}"
        elif cfg.sql:
            df = spark.sql(cfg.sql)
            what = "spark.spout.sql"
        else:
            df = (
                spark.read.format(cfg.format or "parquet")
                .options(**{k: str(v) for k, v in cfg.read_options.items()})
                .load(cfg.path)
            )
            what = f"spark.spout.path {cfg.path}"
        if getattr(df, "isStreaming", False):
            raise SourceError(
                f"{what} gave a streaming DataFrame: use spark.spout.source: streaming for it"
            )
        return df, what

    def materialise(self, uri: str) -> dict:
        spark = self.start_spark()
        df, what = self.dataframe(spark)
        missing = [f for f in self.cfg.fields if f not in df.columns]
        if missing:
            raise SourceError(
                f"{what}: the DataFrame has no column(s) {', '.join(missing)} "
                f"(its columns: {', '.join(df.columns)}); the spout's output "
                f"fields must be columns of the DataFrame"
            )
        started = time.monotonic()
        manifest = stage(
            df, uri, list(self.cfg.fields), {"fingerprint": self.cfg.fingerprint(), "source": what}
        )
        self.handoff.log(
            f"staged {manifest['rows']} rows in {len(manifest['files'])} file(s) "
            f"at {uri} in {time.monotonic() - started:.1f}s"
        )
        return manifest


class DirectorySource(Source):
    """Output directories of Spark jobs: each one read when its `_SUCCESS` marker appears; a
    parent's subdirectories one after the other in name order, for as long as the spout runs."""

    name = "directory"

    def produce(self) -> None:
        assert self.cfg.path is not None  # config.from_conf requires it for this source
        fs, root = filesystem(self.cfg.path)
        single = self._is_output(fs, root)
        done: set[str] = set()
        waiting_for: str | None = None
        while True:
            dirs = [root] if single else self._subdirs(fs, root)
            for directory in dirs:
                name = os.path.basename(directory)
                if name in done:
                    continue
                if not _exists(fs, f"{directory}/{SUCCESS}"):
                    if waiting_for != name:
                        self.handoff.log(f"waiting for {directory}/{SUCCESS}")
                        waiting_for = name
                    break  # name order: later directories wait for this one
                self._read_directory(fs, directory, name)
                done.add(name)
            else:
                if single:
                    self.handoff.put(End())
                    return
            self.handoff.sleep(self.cfg.poll_secs)

    @staticmethod
    def _is_output(fs: pafs.FileSystem, path: str) -> bool:
        return _exists(fs, f"{path}/{SUCCESS}") or bool(part_files(fs, path))

    @staticmethod
    def _subdirs(fs: pafs.FileSystem, root: str) -> list[str]:
        names = [
            info.base_name
            for info in _listing(fs, root)
            if info.type == pafs.FileType.Directory and not info.base_name.startswith(("_", "."))
        ]
        return [f"{root}/{name}" for name in sorted(names, key=order_of)]

    def _read_directory(self, fs: pafs.FileSystem, directory: str, name: str) -> None:
        files = part_files(fs, directory)
        fed = 0
        for i, path in enumerate(files):
            key = f"{name}/part-{i:05d}"
            if self.covered(key):
                continue
            segment = open_segment(key, fs, [path], format_of(path, self.cfg.format), self.cfg)
            feed(self.handoff, segment, self.converter, self.cfg.batch_rows)
            fed += segment.rows
        if fed:
            self.handoff.log(f"read {directory}: {len(files)} file(s), {fed} rows")


class StreamingSource(Source):
    """A Structured Streaming query run with foreachBatch: each micro-batch is staged, fed, and
    the batch function returns only when all its rows are done, so Spark commits the batch to
    its checkpoint only after the topology processed it."""

    name = "streaming"

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.query = None

    def produce(self) -> None:
        spark = self.start_spark()
        cfg = self.cfg
        assert cfg.job is not None  # config.from_conf requires it for this source
        sdf = call_job(load_callable(cfg.job), spark, self.conf)
        if not getattr(sdf, "isStreaming", False):
            raise SourceError(
                f"spark.spout.job {cfg.job} did not return a streaming DataFrame "
                f"(spark.readStream...): use spark.spout.source: dataframe for a "
                f"batch DataFrame"
            )
        missing = [f for f in cfg.fields if f not in sdf.columns]
        if missing:
            raise SourceError(
                f"spark.spout.job {cfg.job}: the streaming DataFrame has no "
                f"column(s) {', '.join(missing)} (its columns: "
                f"{', '.join(sdf.columns)})"
            )
        writer = (
            sdf.select(*cfg.fields)
            .writeStream.foreachBatch(self._batch)
            .option("checkpointLocation", cfg.streaming_checkpoint)
        )
        if cfg.trigger_secs:
            writer = writer.trigger(processingTime=f"{cfg.trigger_secs:g} seconds")
        if self.handoff.stopping.is_set():
            raise Stopped()
        self.query = writer.start()
        self.handoff.log(
            f"streaming query {self.query.id} started (Spark checkpoint {cfg.streaming_checkpoint})"
        )
        self.query.awaitTermination()
        if not self.handoff.stopping.is_set():
            self.handoff.log("the streaming query ended", WARN)
            self.handoff.put(End())

    def _batch(self, df: DataFrame, batch_id: int) -> None:
        """Runs on Spark's thread. Raises (and so fails the batch, which Spark retries after a
        restart) when the spout is closing."""
        handoff = self.handoff
        if handoff.stopping.is_set():
            raise Stopped("the spout is closing")
        key = f"batch-{batch_id}"
        if self.covered(key):
            return  # done before a restart; Spark had not committed it yet
        uri = f"{self.cfg.staging_dir.rstrip('/')}/{key}"
        manifest = staged(uri)
        if manifest is None:  # a replayed batch keeps its first staging: same rows, same ids
            manifest = stage(df, uri, list(self.cfg.fields), {"batch": batch_id})
        fs, path = filesystem(uri)
        segment = Segment(
            key, int(manifest["rows"]), [f"{path}/{f['name']}" for f in manifest["files"]], fs
        )
        feed(handoff, segment, self.converter, self.cfg.batch_rows)
        while not segment.done.wait(0.1):
            if handoff.stopping.is_set():
                raise Stopped("the spout is closing")
        fs.delete_dir(path)

    def stop(self, timeout: float = 5.0) -> None:
        self.handoff.stopping.set()
        query = self.query
        if query is not None:
            stopper = threading.Thread(target=_quietly, args=(query.stop,), daemon=True)
            stopper.start()
            stopper.join(timeout / 2)
        super().stop(timeout / 2)


def _quietly(fn: Callable[[], Any]) -> None:
    try:
        fn()
    except Exception:
        pass


SOURCES = {"dataframe": DataFrameSource, "directory": DirectorySource, "streaming": StreamingSource}
