"""multilang/_json_values.c (`codec.quick_values_json`): the values' JSON of an emit, byte for byte
what the general path (`codec.dumps`, ujson then the stdlib) writes, for the values it takes; None
for every other value, so that the general path decides."""

from __future__ import annotations

import json
import os
import sys

import pytest
from hypothesis import given
from hypothesis import strategies as st

from multilang import client_io, codec

pure = os.environ.get("MULTILANG_PURE_PYTHON", "") not in ("", "0")
quick = codec.quick_values_json
needs_c = pytest.mark.skipif(quick is None, reason="multilang._speedups is not built")

INT64 = st.integers(min_value=-(2**63), max_value=2**63 - 1)
# every code point but the surrogates (a str holding one is not UTF-8: None, tested apart)
TEXT = st.text(st.characters(exclude_categories=("Cs",)), max_size=300)
PLAIN = st.one_of(TEXT, INT64, st.booleans(), st.none())


def general(values: list) -> bytes:
    return codec.dumps(values).encode()


@pytest.mark.skipif(pure, reason="MULTILANG_PURE_PYTHON is set")
def test_the_c_encoder_is_built_here():
    assert quick is not None


@needs_c
@given(st.lists(PLAIN, max_size=12))
def test_writes_what_the_general_path_writes(values):
    assert quick is not None
    out = quick(values)
    assert out == general(values)
    # and what the stdlib writes: the bytes do not depend on which library is installed
    assert out == json.dumps(values, ensure_ascii=False, separators=(",", ":")).encode()
    assert json.loads(out) == values


@needs_c
def test_escapes_as_ujson_does():
    assert quick is not None
    s = 'a"b\\c/\n\r\t\b\f\x00\x01\x1f\x7f\u2028é😀'
    assert quick([s]) == general([s])
    assert (
        quick([s])
        == b'["a\\"b\\\\c/\\n\\r\\t\\b\\f\\u0000\\u0001\\u001f\x7f\xe2\x80\xa8\xc3\xa9\xf0\x9f\x98\x80"]'
    )


@needs_c
def test_long_values_grow_the_buffer():
    assert quick is not None
    values = ["\x01" * 5000, "x" * 100_000, *range(1000)]  # far past the 512 bytes kept inline
    assert quick(values) == general(values)


@needs_c
@pytest.mark.parametrize(
    "values",
    [
        [1.5],
        [2**63],
        [-(2**63) - 1],
        [["nested"]],
        [{"a": 1}],
        [b"bytes"],
        ["\ud800"],  # a lone surrogate: not UTF-8
        ["ok", 1, 2.5],  # a value it does not take after ones it does: no half output
        [type("Sub", (str,), {})("a str subclass")],
        ("a", "tuple"),
        "a string",
        None,
    ],
)
def test_leaves_every_other_value_to_the_general_path(values):
    assert quick is not None
    assert quick(values) is None


@needs_c
def test_keeps_no_reference():
    assert quick is not None
    word, big = "a word of its own", 10**6 + 7
    before = sys.getrefcount(word), sys.getrefcount(big)
    for _ in range(1000):
        quick([word, big])
        quick([word, big, 1.5])  # the None path too
    assert (sys.getrefcount(word), sys.getrefcount(big)) == before


@needs_c
@given(st.lists(PLAIN, max_size=6), st.sampled_from([client_io._EMIT_END, b',"anchors":["7"]}']))
def test_the_client_writes_the_same_emit_frame_either_way(values, end):
    with_c = client_io._emit_frame(values, end)
    saved = client_io.quick_values_json
    client_io.quick_values_json = None
    try:
        without = client_io._emit_frame(values, end)
    finally:
        client_io.quick_values_json = saved
    assert with_c == without
