"""host/spark/source_rows.py: a spout task's tuples as a few rows, and back as the same tuples in
the same order, each with its stream and direct target."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from host.spark.source_rows import ROW_TUPLES, row_values_text, source_chunks, source_rows

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner),
    max_leaves=6,
)
tuples = st.lists(
    st.tuples(
        st.sampled_from(["default", "other"]),
        st.lists(json_values, max_size=3),
        st.sampled_from([None, 4]),
    ),
    max_size=80,
)


def _flatten(chunks):
    return [(stream, values, direct) for stream, _, vs, direct in chunks for values in vs]


@given(tuples, st.integers(1, 5), st.integers(2, 200))
def test_tuples_come_back_in_order_with_their_stream_and_target(items, max_tuples, max_chars):
    texts = ((s, row_values_text(v), d) for s, v, d in items)
    rows = list(source_rows(2, 7, texts, max_tuples, max_chars))  # small limits: many cuts
    assert all(r[0] == 2 and r[1] == 7 for r in rows)
    chunks = list(source_chunks(rows))
    assert all(task == 7 and vs for _, task, vs, _ in chunks)
    assert _flatten(chunks) == [(s, v, d) for s, v, d in items]
    assert len(chunks) == len(rows)
    for _, _, vs, _ in chunks:
        assert len(vs) <= max_tuples
        # a row is cut once its text reaches the bound: all but its last tuple stay under it
        assert sum(len(row_values_text(v)) for v in vs[:-1]) < max_chars


def test_a_run_of_one_stream_is_one_row_and_a_change_of_stream_or_target_cuts_it():
    items = [("default", "[1]", None)] * 3 + [("other", "[2]", None), ("other", "[3]", 5)]
    rows = list(source_rows(0, 1, items))
    assert rows == [
        (0, 1, "default", "[[1],[1],[1]]", None),
        (0, 1, "other", "[[2]]", None),
        (0, 1, "other", "[[3]]", 5),
    ]


def test_rows_hold_at_most_row_tuples():
    n = ROW_TUPLES * 2 + 1
    rows = list(source_rows(0, 1, (("default", f"[{i}]", None) for i in range(n))))
    assert [len(json.loads(r[3])) for r in rows] == [ROW_TUPLES, ROW_TUPLES, 1]


def test_no_tuples_no_rows():
    assert list(source_rows(0, 1, [])) == []


@given(
    st.lists(
        st.one_of(
            st.text(),  # lone surrogates included: a spout's JSON may carry "\ud800"
            st.integers(min_value=-(2**70), max_value=2**70),
            st.floats(allow_nan=False),
            st.booleans(),
            st.none(),
            st.lists(st.text(max_size=5), max_size=3),
        ),
        max_size=8,
    )
)
def test_a_rows_values_text_reads_back_and_is_always_utf8(values):
    text = row_values_text(values)
    text.encode("utf-8")  # what Arrow does with the column: never fails
    assert json.loads(text) == values


def test_values_json_cannot_hold_are_refused_saying_why():
    # a msgpack spout's bin values, or any object: under host local a JSON bolt gets bytes as
    # base64 text, but a row's values are JSON and a msgpack bolt on Spark would not get bytes
    for values in ([b"\x00\x01"], [object()], ["ok", {1, 2}]):
        with pytest.raises(TypeError, match="JSON cannot hold .*as JSON rows"):
            row_values_text(values)
