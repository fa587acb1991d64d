"""The built-in LogInfoBolt's line: Storm's `TupleImpl.toString`, with the values as Java writes
them (`components/storm_builtins/java_text.py`). Doubles are checked against Java's own output,
recorded in tests/unit/java/double_tostring.txt, and for every double by property."""

from __future__ import annotations

import math
import re
import struct
from decimal import Decimal
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from components.storm_builtins.java_text import java_double, java_string
from components.storm_builtins.log_info_bolt import describe
from multilang.client_io import Tuple

GOLDEN = Path(__file__).parent / "java" / "double_tostring.txt"


def java_doubles() -> list[tuple[float, str]]:
    pairs = []
    for line in GOLDEN.read_text().splitlines():
        if line.startswith("#"):
            continue
        bits, text = line.split(" ", 1)
        pairs.append((struct.unpack("<d", struct.pack("<Q", int(bits, 16)))[0], text))
    return pairs


def test_doubles_print_as_java_prints_them():
    pairs = java_doubles()
    assert len(pairs) > 700
    wrong = [(x, text, java_double(x)) for x, text in pairs if java_double(x) != text]
    assert wrong == []


@pytest.mark.parametrize(
    "value, text",
    [
        (1.0, "1.0"),
        (1e10, "1.0E10"),
        (0.001, "0.001"),
        (1e-4, "1.0E-4"),
        (1234567.0, "1234567.0"),
        (12345678.0, "1.2345678E7"),
        (-2.5, "-2.5"),
        (5e-324, "4.9E-324"),  # two digits are closer than the shortest one
        (2e23, "2.0E23"),
    ],
)
def test_double_examples(value, text):
    assert java_double(value) == text


JAVA_DOUBLE = re.compile(r"-?(\d+\.\d+|\d\.\d+E-?\d+)|NaN|-?Infinity")


@given(st.floats(allow_nan=False, allow_infinity=False))
def test_every_double_reads_back_in_java_notation(x):
    text = java_double(x)
    assert JAVA_DOUBLE.fullmatch(text)
    assert float(text) == x and math.copysign(1, float(text)) == math.copysign(1, x)
    # plain notation exactly for 10^-3 <= |decimal| < 10^7, else computerized scientific
    value = abs(Decimal(text))
    assert ("E" not in text) == (value == 0 or Decimal("0.001") <= value < Decimal(10) ** 7)
    # no more digits than the shortest that reads back, but for Java's two-digit choice
    mantissa = text.lstrip("-").split("E")[0].replace(".", "").strip("0")
    shortest = repr(abs(x)).split("e")[0].replace(".", "").strip("0")
    assert len(mantissa) <= max(2, len(shortest))


@pytest.mark.parametrize(
    "values, text",
    [
        (["the", 1], "[the, 1]"),
        ([None], "[null]"),
        ([True, False], "[true, false]"),
        ([{"a": 1, "b": [2, 3]}], "[{a=1, b=[2, 3]}]"),
        (["a", ["b", "c"]], "[a, [b, c]]"),
        ([[], {}], "[[], {}]"),
        ([1.0, -0.0, 2**70], "[1.0, -0.0, 1180591620717411303424]"),
        (["with, comma", " spaced "], "[with, comma,  spaced ]"),  # Java adds no quotes either
        ([b"raw \xff"], "[raw \\xff]"),
    ],
)
def test_values_print_as_a_java_list(values, text):
    assert java_string(values) == text


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=20,
)


@given(st.lists(json_values, max_size=6))
def test_a_list_is_bracketed_and_its_scalars_appear_as_java_writes_them(values):
    text = java_string(values)
    assert text.startswith("[") and text.endswith("]")
    for value in values:
        if value is None or isinstance(value, (bool, int, float)):
            assert java_string(value) in text


def test_the_line_has_the_shape_of_storms_tuple_to_string():
    tup = Tuple("-4811058262934738203", "count", "default", 5, ["the", 1.5, None])
    assert describe(tup) == (
        "source: count:5, stream: default, id: -4811058262934738203, [the, 1.5, null] "
        "PROC_START_TIME(sampled): null EXEC_START_TIME(sampled): null"
    )
