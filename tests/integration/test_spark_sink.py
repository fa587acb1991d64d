"""The Parquet sink bolt, a real process driven over its pipes: files rolled every N tuples and at
tick tuples, acks only once the file is in place, failed writes failed, and Spark reads it all."""

from __future__ import annotations

import os
import shutil
import time

import pyarrow.parquet as pq
import pytest

from host.testing import ComponentPeer, make_context
from multilang.messages import Ack, Error, Fail, Log
from tests.integration.components.spark.support import spark_session

pytestmark = pytest.mark.spark

SINK = ["python", "-m", "components.parquet_sink"]


def start_sink(out, rows: int = 3, **conf) -> ComponentPeer:
    peer = ComponentPeer(SINK)
    peer.handshake(
        conf={
            "parquet.sink.dir": str(out),
            "parquet.sink.rows": rows,
            "host.bolt.max.in.flight": 100,
            **conf,
        },
        context=make_context(
            componentid="sink", outputs={}, sources={"count": {"default": ["word", "count"]}}
        ),
    )
    return peer


def data_files(out) -> list[str]:
    return sorted(n for n in os.listdir(out) if n.endswith(".parquet"))


def read_acks(peer: ComponentPeer, n: int, out) -> list[str]:
    """The ids of the next `n` acks; at each ack the file holding it must already be in place
    (no temporary file left)."""
    acked = []
    while len(acked) < n:
        m = peer.read()
        if isinstance(m, Ack):
            assert data_files(out) and not [f for f in os.listdir(out) if f.endswith(".tmp")]
            acked.append(m.id)
        else:
            assert isinstance(m, Log), m
    return acked


def test_rolls_every_n_tuples_and_at_ticks_and_acks_after_the_file_is_in_place(tmp_path):
    out = tmp_path / "out"
    peer = start_sink(out, rows=3)
    try:
        for i, word in enumerate(["apple", "pear", "plum", "fig", "kiwi"]):
            peer.tuple(str(100 + i), [word, i + 1], comp="count")
        assert read_acks(peer, 3, out) == ["100", "101", "102"]
        assert len(data_files(out)) == 1
        assert not [m for m in peer.quiet(0.2) if isinstance(m, Ack)], "2 tuples wait for a roll"
        peer.tick()
        assert read_acks(peer, 3, out) == ["103", "104", "tick-1"]  # the tick is acked too
        assert len(data_files(out)) == 2
    finally:
        assert peer.close() == 0
    table = pq.read_table(out)
    assert table.column_names == ["word", "count"]
    assert sorted(zip(*table.to_pydict().values())) == sorted(
        [("apple", 1), ("pear", 2), ("plum", 3), ("fig", 4), ("kiwi", 5)]
    )
    # and Spark reads the directory as it is
    spark_rows = spark_session().read.parquet(str(out)).orderBy("count").collect()
    assert [(r["word"], r["count"]) for r in spark_rows][:2] == [("apple", 1), ("pear", 2)]


def test_a_failed_write_fails_the_tuples_and_the_sink_keeps_going(tmp_path):
    out = tmp_path / "out"
    peer = start_sink(out, rows=2)
    try:
        # the sink makes the directory in `initialize`, after its pid reply: wait for it, so that
        # it is not made again after we remove it
        deadline = time.monotonic() + 30
        while not out.exists() and time.monotonic() < deadline:
            time.sleep(0.01)
        shutil.rmtree(out)  # the directory vanishes: the write fails
        peer.tuple("1", ["a", 1], comp="count")
        peer.tuple("2", ["b", 2], comp="count")
        messages = peer.read_until(Fail) + peer.read_until(Fail)
        assert [m.id for m in messages if isinstance(m, Fail)] == ["1", "2"]
        assert any(isinstance(m, Error) and "will be replayed" in m.msg for m in messages)
        out.mkdir()
        peer.tuple("3", ["c", 3], comp="count")
        peer.tuple("4", ["d", 4], comp="count")
        assert read_acks(peer, 2, out) == ["3", "4"]
    finally:
        assert peer.close() == 0


def test_buffered_tuples_are_neither_written_nor_acked_when_the_sink_dies(tmp_path):
    out = tmp_path / "out"
    peer = start_sink(out, rows=10)
    peer.tuple("1", ["a", 1], comp="count")
    assert not peer.quiet(0.2)
    peer.kill_group()
    assert peer.close() != 0
    assert os.listdir(out) == []  # nothing half-written; the unacked tuple is replayed upstream


def test_mixed_types_are_written_as_strings_and_a_schema_fixes_types(tmp_path):
    out = tmp_path / "out"
    peer = start_sink(out, rows=2, **{"parquet.sink.schema": {"count": "double"}})
    try:
        peer.tuple("1", [{"k": 1}, 1], comp="count")
        peer.tuple("2", ["plain", 2], comp="count")
        read_acks(peer, 2, out)
    finally:
        assert peer.close() == 0
    table = pq.read_table(out)
    assert table.to_pydict() == {"word": ['{"k": 1}', "plain"], "count": [1.0, 2.0]}
