"""What the sources share: the items a source hands to the protocol loop (`Chunk`, `End`, `Fatal`,
through the bounded `Handoff`), and reading Spark's output with pyarrow: a directory of part files
is a `Segment`, staged with a manifest, read in record batches and converted column by column
(`feed`). No thread is started here; the sources (sources.py) own those.
"""

from __future__ import annotations

import json
import os
import queue
import threading
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq

from multilang import INFO

from .config import SpoutConfig
from .convert import RowConverter

if TYPE_CHECKING:  # pyspark is imported when a session starts: it is slow to import
    from pyspark.sql import DataFrame

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


def listing(fs: pafs.FileSystem, path: str) -> list[pafs.FileInfo]:
    try:
        return fs.get_file_info(pafs.FileSelector(path, allow_not_found=True))
    except (FileNotFoundError, NotADirectoryError):
        return []


def exists(fs: pafs.FileSystem, path: str) -> bool:
    return fs.get_file_info(path).type != pafs.FileType.NotFound


def part_files(fs: pafs.FileSystem, directory: str) -> list[str]:
    """Spark's data files in an output directory, in name order: `part-*`, without checksums
    and hidden files."""
    names = sorted(
        info.base_name
        for info in listing(fs, directory)
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
    if exists(fs, path):  # another attempt finished first: keep one copy
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


def record_batches(
    segment: Segment, fields: list[str], batch_rows: int
) -> Iterator[pa.RecordBatch]:
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
    for batch in record_batches(segment, converter.fields, batch_rows):
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
