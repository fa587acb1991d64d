"""Arrow record batches -> rows of JSON values, the types of Spark's SQL made plain JSON.

| Spark / Arrow type                         | tuple value                                         |
|--------------------------------------------|-----------------------------------------------------|
| null (any type)                            | `null`                                              |
| boolean, byte/short/int/long               | JSON boolean / integer (a long stays exact)         |
| float, double                              | number; NaN, Infinity, -Infinity as the strings     |
|                                            | `"NaN"`, `"Infinity"`, `"-Infinity"` (as Spark's    |
|                                            | `to_json` writes them; JSON has no such numbers)    |
| string                                     | string                                              |
| decimal(p, s)                              | string in plain notation with `s` decimals, e.g.    |
|                                            | `"12.50"` (a float would lose digits)               |
| date                                       | `"YYYY-MM-DD"`                                      |
| timestamp (Spark's TIMESTAMP, UTC instant) | ISO-8601 with offset: `"2024-05-01T12:30:00+00:00"` |
|                                            | (microseconds when non-zero: `...:00.250000+00:00`) |
| timestamp_ntz (no time zone)               | ISO-8601 without offset: `"2024-05-01T12:30:00"`    |
| binary                                     | base64 (standard alphabet, padded)                  |
| day-time interval (duration)               | number of seconds (float)                           |
| array                                      | list, elements converted by these rules             |
| struct                                     | object keyed by field name, values converted        |
| map                                        | object; keys turned into strings                    |

The work is per column: a column of a type that JSON already holds (strings, integers, booleans,
finite floats) is copied with one `to_pylist()`, and only the others pay a Python call per value.
"""

from __future__ import annotations

import base64
import datetime
import decimal
import math
from collections.abc import Callable, Sequence
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.types as pat

Converter = Callable[[Any], Any]


def _float_value(v: float) -> Any:
    if math.isfinite(v):
        return v
    if v != v:
        return "NaN"
    return "Infinity" if v > 0 else "-Infinity"


def _decimal_value(v: decimal.Decimal) -> str:
    return format(v, "f")  # never exponent notation: "1E+2" would surprise every consumer


def _binary_value(v: bytes) -> str:
    return base64.b64encode(v).decode("ascii")


def _iso(v: datetime.date | datetime.time) -> str:
    return v.isoformat()


def _seconds(v: datetime.timedelta) -> float:
    return v.total_seconds()


def converter(arrow_type: pa.DataType) -> Converter | None:
    """The per-value conversion for a column of `arrow_type`, None when `to_pylist()` already
    gives JSON values. Values passed to a converter are never None."""
    if pat.is_dictionary(arrow_type):
        return converter(arrow_type.value_type)
    if pat.is_floating(arrow_type):
        return _float_value
    if pat.is_decimal(arrow_type):
        return _decimal_value
    if (
        pat.is_binary(arrow_type)
        or pat.is_large_binary(arrow_type)
        or pat.is_fixed_size_binary(arrow_type)
    ):
        return _binary_value
    if pat.is_timestamp(arrow_type) or pat.is_date(arrow_type) or pat.is_time(arrow_type):
        return _iso
    if pat.is_duration(arrow_type):
        return _seconds
    if pat.is_map(arrow_type):
        return _map_converter(arrow_type)
    if (
        pat.is_list(arrow_type)
        or pat.is_large_list(arrow_type)
        or pat.is_fixed_size_list(arrow_type)
    ):
        inner = converter(arrow_type.value_type)
        if inner is None:
            return None
        return lambda v: [None if x is None else inner(x) for x in v]
    if pat.is_struct(arrow_type):
        return _struct_converter(arrow_type)
    return None


def _map_converter(arrow_type: pa.MapType) -> Converter:
    key_conv = converter(arrow_type.key_type)
    item_conv = converter(arrow_type.item_type)

    def convert(pairs):
        out = {}
        for k, v in pairs:  # to_pylist() gives a map as a list of (key, value) pairs
            key = key_conv(k) if key_conv else k
            out[key if isinstance(key, str) else str(key)] = (
                None if v is None else (item_conv(v) if item_conv else v)
            )
        return out

    return convert


def _struct_converter(arrow_type: pa.StructType) -> Converter | None:
    fields = [
        (arrow_type.field(i).name, converter(arrow_type.field(i).type))
        for i in range(arrow_type.num_fields)
    ]
    if all(conv is None for _, conv in fields):
        return None
    active = [(name, conv) for name, conv in fields if conv is not None]

    def convert(v: dict) -> dict:
        out = dict(v)
        for name, conv in active:
            x = out.get(name)
            if x is not None:
                out[name] = conv(x)
        return out

    return convert


def _column_values(column: pa.Array, conv: Converter | None) -> list:
    values = column.to_pylist()
    if conv is None:
        return values
    if conv is _float_value:
        # finite floats are JSON already: skip the per-value call unless the column needs it
        if column.null_count == len(column) or pc.all(pc.is_finite(column)).as_py() in (True, None):
            return values
    return [None if v is None else conv(v) for v in values]


class RowConverter:
    """Turns record batches of one schema into rows (lists) of JSON values, columns in the order
    of `fields`. Columns missing from a batch are all-null (JSON sources leave out null fields)."""

    def __init__(self, fields: Sequence[str]):
        self.fields = list(fields)
        self._converters: dict[tuple[str, pa.DataType], Converter | None] = {}

    def _converter(self, name: str, arrow_type: pa.DataType) -> Converter | None:
        key = (name, arrow_type)
        if key not in self._converters:
            self._converters[key] = converter(arrow_type)
        return self._converters[key]

    def rows(self, batch: pa.RecordBatch | pa.Table) -> list[list]:
        n = batch.num_rows
        if n == 0:
            return []
        names = batch.schema.names
        columns = []
        for name in self.fields:
            if name in names:
                column = batch.column(names.index(name))
                if isinstance(column, pa.ChunkedArray):
                    column = column.combine_chunks()
                columns.append(_column_values(column, self._converter(name, column.type)))
            else:
                columns.append([None] * n)
        if len(columns) == 1:
            return [[v] for v in columns[0]]
        return list(map(list, zip(*columns)))


def convert_value(value: Any, arrow_type: pa.DataType) -> Any:
    """One value (as `to_pylist()` gives it) of `arrow_type`, converted: for tests and tools."""
    if value is None:
        return None
    conv = converter(arrow_type)
    return value if conv is None else conv(value)
