"""The Parquet sink bolt (see the package docstring)."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Mapping
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from components.files import fsync_dir
from components.streams import subscribed_fields
from multilang import DEBUG, WARN, Bolt, Tuple

PREFIX = "parquet.sink."
DEFAULT_ROWS = 10_000


class SinkConfigError(ValueError):
    """A bad or missing `parquet.sink.*` setting."""


def input_fields(context: Mapping) -> list[str]:
    """The fields of the streams this bolt subscribes to; they must agree."""
    return subscribed_fields(context, "the parquet sink", PREFIX + "fields", SinkConfigError)


def schema_types(conf: Mapping, fields: list[str], prefix: str = PREFIX) -> dict[str, pa.DataType]:
    """`<prefix>schema`: {field: pyarrow type name} as pyarrow types."""
    raw = conf.get(prefix + "schema") or {}
    if not isinstance(raw, dict):
        raise SinkConfigError(f"{prefix}schema must map field names to pyarrow type names")
    types = {}
    for name, type_name in raw.items():
        if name not in fields:
            raise SinkConfigError(
                f"{prefix}schema names {name!r}, which is not a column ({', '.join(fields)})"
            )
        try:
            types[name] = pa.type_for_alias(str(type_name))
        except (ValueError, KeyError):
            raise SinkConfigError(
                f"{prefix}schema: unknown type {type_name!r} for {name!r} "
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
        self.types = schema_types(conf, self.fields)
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
        write_table_atomically(table, final, self.compression)
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
        return build_table(self.fields, columns, self.types, self._mixed)

    def _mixed(self, name: str) -> None:
        if name not in self.warned:
            self.warned.add(name)
            self.log(
                f"column {name!r} mixes value types: written as strings (set "
                f"{PREFIX}schema to fix its type)",
                WARN,
            )


def build_table(
    fields: list[str],
    columns: list[list],
    types: Mapping[str, pa.DataType],
    on_mixed: Callable[[str], None],
) -> pa.Table:
    """A table of the given columns (values by field), typed as the package docstring says;
    `on_mixed(name)` is told of each column written as strings because its types differ."""
    return pa.table(
        {
            name: column_array(name, values, types.get(name), on_mixed)
            for name, values in zip(fields, columns)
        }
    )


def column_array(
    name: str, values: list, wanted: pa.DataType | None, on_mixed: Callable[[str], None]
) -> pa.Array:
    if wanted is not None:
        return pa.array(values, type=wanted)
    try:
        array = pa.array(values)
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        on_mixed(name)
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


def write_table_atomically(table: pa.Table, final: str, compression: str) -> None:
    """Write `.<name>.tmp` beside `final` (hidden from Spark by its leading dot), fsync it,
    rename it to `final`, fsync the directory: the file is there whole or not at all."""
    directory, name = os.path.split(final)
    tmp = os.path.join(directory, f".{name}.tmp")
    try:
        with open(tmp, "wb") as fh:
            pq.write_table(table, fh, compression=compression)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, final)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    fsync_dir(directory)


def main() -> Any:
    ParquetSink().run()
