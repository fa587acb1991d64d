"""Type conversion of the Spark spout (components/spark_spout/convert.py documents the rules).

First the rules on Arrow arrays directly, then end to end: a DataFrame of every Spark SQL type,
written by real Spark (in this process) as parquet (with Spark's default INT96 timestamps too)
and as JSON, read by a real spout process (directory source), its emitted values compared
with the documented JSON.
"""

from __future__ import annotations

import datetime
import decimal
import json
import math
import time

import pyarrow as pa
import pytest

from components.spark_spout.convert import RowConverter, convert_value
from host.testing import ComponentPeer, make_context
from multilang.messages import Emit, Sync
from tests.integration.components.spark.support import HERE, spark_session

pytestmark = pytest.mark.spark

UTC = datetime.UTC


# ---- the rules, on Arrow arrays -----------------------------------------------------------------


@pytest.mark.parametrize(
    "value,arrow_type,expected",
    [
        (None, pa.int64(), None),
        (2**62 + 1, pa.int64(), 2**62 + 1),
        (1.5, pa.float64(), 1.5),
        (float("nan"), pa.float64(), "NaN"),
        (float("inf"), pa.float32(), "Infinity"),
        (float("-inf"), pa.float64(), "-Infinity"),
        (decimal.Decimal("12.50"), pa.decimal128(10, 2), "12.50"),
        (decimal.Decimal("100"), pa.decimal128(10, 0), "100"),
        (decimal.Decimal("-0.000001"), pa.decimal128(20, 6), "-0.000001"),
        (b"\x00\xffhi", pa.binary(), "AP9oaQ=="),
        (datetime.date(2024, 5, 1), pa.date32(), "2024-05-01"),
        (
            datetime.datetime(2024, 5, 1, 12, 30, 0, 250000, tzinfo=UTC),
            pa.timestamp("us", "UTC"),
            "2024-05-01T12:30:00.250000+00:00",
        ),
        (datetime.datetime(2024, 5, 1, 12, 30), pa.timestamp("us"), "2024-05-01T12:30:00"),
        (datetime.timedelta(seconds=90, microseconds=500000), pa.duration("us"), 90.5),
        ([decimal.Decimal("1.5"), None], pa.list_(pa.decimal128(5, 1)), ["1.5", None]),
        (
            {"a": 1, "b": b"x"},
            pa.struct([("a", pa.int32()), ("b", pa.binary())]),
            {"a": 1, "b": "eA=="},
        ),
        (
            [("k", float("nan")), ("j", None)],
            pa.map_(pa.string(), pa.float64()),
            {"k": "NaN", "j": None},
        ),
        ([(1, "one")], pa.map_(pa.int32(), pa.string()), {"1": "one"}),
    ],
)
def test_value_conversion(value, arrow_type, expected):
    assert convert_value(value, arrow_type) == expected


def test_rows_follow_the_declared_fields_and_missing_columns_are_null():
    batch = pa.record_batch({"b": ["x", None], "a": [1.0, float("nan")]})
    rows = RowConverter(["a", "b", "c"]).rows(batch)
    assert rows == [[1.0, "x", None], ["NaN", None, None]]
    json.dumps(rows)  # plain JSON: no NaN numbers, no bytes, no datetimes


# ---- end to end: real Spark writes, the spout reads and emits -----------------------------------

FIELDS = [
    "b",
    "i8",
    "i16",
    "i32",
    "i64",
    "f32",
    "f64",
    "dec",
    "s",
    "d",
    "ts",
    "ntz",
    "bin",
    "arr",
    "st",
    "m",
]
EVERY_TYPE_SQL = """
SELECT true AS b, CAST(1 AS TINYINT) AS i8, CAST(2 AS SMALLINT) AS i16, 3 AS i32,
       9007199254740993L AS i64, CAST('NaN' AS FLOAT) AS f32, CAST('-Infinity' AS DOUBLE) AS f64,
       CAST(12.5 AS DECIMAL(10, 2)) AS dec, 'héllo "w"' AS s, DATE'2024-05-01' AS d,
       TIMESTAMP'2024-05-01T12:30:00.25Z' AS ts, TIMESTAMP_NTZ'2024-05-01 12:30:00' AS ntz,
       X'00FF6869' AS bin, array(CAST(1.5 AS DECIMAL(5, 1)), NULL) AS arr,
       named_struct('n', 1, 't', TIMESTAMP'2024-01-02T03:04:05Z') AS st,
       map('x', 1.5D, 'y', CAST('Infinity' AS DOUBLE)) AS m
"""
EXPECTED = [
    [
        True,
        1,
        2,
        3,
        9007199254740993,
        "NaN",
        "-Infinity",
        "12.50",
        'héllo "w"',
        "2024-05-01",
        "2024-05-01T12:30:00.250000+00:00",
        "2024-05-01T12:30:00",
        "AP9oaQ==",
        ["1.5", None],
        {"n": 1, "t": "2024-01-02T03:04:05+00:00"},
        {"x": 1.5, "y": "Infinity"},
    ],
    [None] * len(FIELDS),
]


@pytest.fixture(scope="module")
def every_type(tmp_path_factory):
    spark = spark_session()
    df = spark.sql(EVERY_TYPE_SQL)
    from pyspark.sql.types import StructField, StructType

    nullable = StructType([StructField(f.name, f.dataType, True) for f in df.schema.fields])
    df = df.union(spark.createDataFrame([[None] * len(FIELDS)], nullable)).coalesce(1)
    root = tmp_path_factory.mktemp("types")
    df.write.parquet(str(root / "micros"))  # the spout's session default: TIMESTAMP_MICROS
    previous = spark.conf.get("spark.sql.parquet.outputTimestampType")
    spark.conf.set("spark.sql.parquet.outputTimestampType", "INT96")  # Spark's own default
    try:
        df.write.parquet(str(root / "int96"))
    finally:
        spark.conf.set("spark.sql.parquet.outputTimestampType", previous)
    return root


def emitted_rows(tmp_path, path: str, fields: list[str], n: int) -> list[list]:
    """Run the spout over one output directory; the values of its first `n` emits (acked)."""
    peer = ComponentPeer(["python", "-m", "components.spark_spout"], cwd=str(HERE))
    try:
        peer.handshake(
            conf={
                "spark.spout.source": "directory",
                "spark.spout.path": path,
                "spark.spout.checkpoint.dir": str(tmp_path / "ck"),
            },
            context=make_context(componentid="typed", outputs={"default": fields}, sources={}),
        )
        peer.command("activate")
        peer.read_until(Sync)
        emits: list[Emit] = []
        deadline = time.monotonic() + 60
        while len(emits) < n and time.monotonic() < deadline:
            # files are read on the spout's own thread: ask until they are (by time, not by a
            # count of `next`s, which a busy machine can use up before the thread has read)
            peer.command("next")
            got = [m for m in peer.read_until(Sync) if isinstance(m, Emit)]
            emits += got
            if not got:
                time.sleep(0.02)
        for e in emits:
            peer.command("ack", e.id)
            peer.read_until(Sync)
    finally:
        assert peer.close() == 0
    return [e.values for e in emits]


@pytest.mark.parametrize("variant", ["micros", "int96"])
def test_every_spark_type_becomes_the_documented_json(tmp_path, every_type, variant):
    rows = emitted_rows(tmp_path, str(every_type / variant), FIELDS, 2)
    assert rows == EXPECTED
    assert not any(isinstance(v, float) and not math.isfinite(v) for row in rows for v in row)
