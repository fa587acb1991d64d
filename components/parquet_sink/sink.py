"""The Parquet sink bolt (see the package docstring)."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Mapping
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from components.files import fsync_dir
from multilang import DEBUG, WARN, Bolt, Tuple

PREFIX = "parquet.sink."
DEFAULT_ROWS = 10_000


class SinkConfigError(ValueError):
    """A bad or missing `parquet.sink.*` setting."""


def input_fields(context: Mapping) -> list[str]:
    """The fields of the streams this bolt subscribes to; they must agree."""
    fields_by_source = context.get("source->stream->fields") or {}
    subscribed = context.get("source->stream->grouping") or {}
    found: dict[tuple, list[str]] = {}
    for source, streams in subscribed.items():
        for stream in streams:
            fields = (fields_by_source.get(source) or {}).get(stream)
            if fields is not None:
                found[(source, stream)] = list(fields)
    if not found:
        raise SinkConfigError(
            "the parquet sink has no input stream with declared fields: "
            "subscribe it to a component (inputs:) or set parquet.sink.fields"
        )
    distinct = {tuple(f) for f in found.values()}
    if len(distinct) > 1:
        detail = "; ".join(f"{s}/{st}: {f}" for (s, st), f in found.items())
        raise SinkConfigError(
            f"the input streams declare different fields ({detail}): one file "
            f"has one set of columns; set parquet.sink.fields"
        )
    return list(distinct.pop())


def _schema_types(conf: Mapping, fields: list[str]) -> dict[str, pa.DataType]:
    raw = conf.get(PREFIX + "schema") or {}
    if not isinstance(raw, dict):
        raise SinkConfigError(f"{PREFIX}schema must map field names to pyarrow type names")
    types = {}
    for name, type_name in raw.items():
        if name not in fields:
            raise SinkConfigError(
                f"{PREFIX}schema names {name!r}, which is not a column ({', '.join(fields)})"
            )
        try:
            types[name] = pa.type_for_alias(str(type_name))
        except (ValueError, KeyError):
            raise SinkConfigError(
                f"{PREFIX}schema: unknown type {type_name!r} for {name!r} "
                f"(pyarrow names: string, int64, double, bool, ...)"
            ) from None
    return types


class ParquetSink(Bolt):
    def initialize(self, conf: dict, context: dict) -> None:
        directory = conf.get(PREFIX + "dir")
        if not directory or not isinstance(directory, str):
            raise SinkConfigError(f"{PREFIX}dir is required: the directory to write files to")
        self.directory = os.path.abspath(directory)
        os.makedirs(self.directory, exist_ok=True)
        fields = conf.get(PREFIX + "fields")
        self.fields: list[str] = list(fields) if fields else input_fields(context)
        self.types = _schema_types(conf, self.fields)
        rows = int(conf.get(PREFIX + "rows", DEFAULT_ROWS))
        if rows < 1:
            raise SinkConfigError(f"{PREFIX}rows must be >= 1, got {rows}")
        host_cap = conf.get("host.bolt.max.in.flight")
        self.roll_rows = min(rows, int(host_cap)) if host_cap else rows
        self.compression = str(conf.get(PREFIX + "compression", "snappy"))
        self.buffer: list[Tuple] = []
        self.seq = 0
        self.files = 0
        self.warned: set[str] = set()

    def process(self, tup: Tuple) -> None:
        self.buffer.append(tup)
        if len(self.buffer) >= self.roll_rows:
            self.roll()

    def process_tick(self, tup: Tuple) -> None:
        if self.buffer:
            self.roll()

    def roll(self) -> None:
        """Write the buffer as one file, then ack its tuples (fail them if the write fails)."""
        batch, self.buffer = self.buffer, []
        try:
            path = self._write(batch)
        except Exception as exc:
            self.error(
                f"parquet sink: writing {len(batch)} tuples to {self.directory} failed: "
                f"{exc}; the tuples are failed and will be replayed"
            )
            for tup in batch:
                self.fail(tup)
            return
        self.files += 1
        self.log(f"wrote {len(batch)} rows to {os.path.basename(path)}", DEBUG)
        for tup in batch:
            self.ack(tup)

    def _write(self, batch: list[Tuple]) -> str:
        table = self._table(batch)
        name = f"part-{self.task_id or 0:05d}-{time.time_ns()}-{self.seq:06d}.parquet"
        self.seq += 1
        final = os.path.join(self.directory, name)
        tmp = os.path.join(self.directory, f".{name}.tmp")
        try:
            with open(tmp, "wb") as fh:
                pq.write_table(table, fh, compression=self.compression)
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(tmp, final)
        except BaseException:
            try:
                os.unlink(tmp)
            except OSError:
                pass
            raise
        fsync_dir(self.directory)
        return final

    def _table(self, batch: list[Tuple]) -> pa.Table:
        n = len(self.fields)
        columns: list[list] = [[] for _ in range(n)]
        for tup in batch:
            values = tup.values
            if len(values) != n:
                raise ValueError(
                    f"tuple {tup.id} from {tup.component}/{tup.stream} has "
                    f"{len(values)} values, the files have {n} columns "
                    f"({', '.join(self.fields)})"
                )
            for i in range(n):
                columns[i].append(values[i])
        return pa.table(
            {name: self._array(name, values) for name, values in zip(self.fields, columns)}
        )

    def _array(self, name: str, values: list) -> pa.Array:
        wanted = self.types.get(name)
        if wanted is not None:
            return pa.array(values, type=wanted)
        try:
            array = pa.array(values)
        except (pa.ArrowInvalid, pa.ArrowTypeError):
            if name not in self.warned:
                self.warned.add(name)
                self.log(
                    f"column {name!r} mixes value types: written as strings (set "
                    f"{PREFIX}schema to fix its type)",
                    WARN,
                )
            return pa.array(
                [
                    None
                    if v is None
                    else v
                    if isinstance(v, str)
                    else json.dumps(v, ensure_ascii=False)
                    for v in values
                ],
                pa.string(),
            )
        if pa.types.is_null(array.type):  # Spark reads no all-null column type
            return array.cast(pa.string())
        return array


def main() -> Any:
    ParquetSink().run()
