"""The Parquet committer (components/parquet_committer): one file per txid, written whole or not
at all, skipped when present; its config; and the component as a real process over its pipes,
crashed at the fault points and replayed."""

from __future__ import annotations

import os

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from components.audit import content_hash
from components.parquet_committer.config import ConfigError, from_conf
from components.parquet_committer.writer import (
    HASH_KEY,
    TXID_KEY,
    part_name,
    remove_temporaries,
    write_batch,
)
from host.testing import ComponentPeer
from multilang.messages import Ack
from tests.support.batch_frames import answers, batch_context, finish, tx_tuple

FIELDS = ("word", "count")


def files(directory) -> list[str]:
    return sorted(os.listdir(directory))


def read(directory, txid: int) -> pa.Table:
    return pq.read_table(os.path.join(directory, part_name(txid)))


def test_one_file_per_txid_named_to_sort_in_txid_order(tmp_path):
    assert write_batch(str(tmp_path), 2, 1, FIELDS, [["red", 1], ["blue", 2]], {})
    assert write_batch(str(tmp_path), 10, 3, FIELDS, [["green", 5]], {})
    assert files(tmp_path) == [
        "part-00000000000000000002.parquet",
        "part-00000000000000000010.parquet",
    ]
    table = read(tmp_path, 2)
    assert table.to_pylist() == [{"word": "red", "count": 1}, {"word": "blue", "count": 2}]
    meta = table.schema.metadata
    assert meta[TXID_KEY.encode()] == b"2"
    assert meta[HASH_KEY.encode()] == content_hash([["red", 1], ["blue", 2]]).encode()
    assert pq.read_table(str(tmp_path)).num_rows == 3  # the directory reads as one dataset


def test_a_txid_whose_file_is_there_is_skipped(tmp_path):
    assert write_batch(str(tmp_path), 1, 1, FIELDS, [["red", 1]], {})
    called = []
    assert not write_batch(
        str(tmp_path), 1, 2, FIELDS, [["other", 9]], {}, before_write=lambda: called.append(1)
    )
    assert called == [] and read(tmp_path, 1).to_pylist() == [{"word": "red", "count": 1}]


def test_a_failed_write_leaves_no_file(tmp_path):
    def crash() -> None:
        raise RuntimeError("crash before the write")

    with pytest.raises(RuntimeError):
        write_batch(str(tmp_path), 1, 1, FIELDS, [["red", 1]], {}, before_write=crash)
    with pytest.raises(ValueError, match="has 1 values"):
        write_batch(str(tmp_path), 1, 1, FIELDS, [["red"]], {})
    with pytest.raises(pa.ArrowInvalid):  # a value the fixed type cannot hold
        write_batch(str(tmp_path), 1, 1, FIELDS, [["red", "x"]], {"count": pa.int64()})
    assert files(tmp_path) == []
    assert write_batch(str(tmp_path), 1, 2, FIELDS, [["red", 1]], {})


def test_an_empty_batch_is_a_file_without_rows_and_types_follow_the_sink(tmp_path):
    mixed = []
    assert write_batch(str(tmp_path), 1, 1, FIELDS, [], {})
    assert read(tmp_path, 1).num_rows == 0
    assert write_batch(
        str(tmp_path), 2, 1, FIELDS, [["a", 1], ["b", "x"]], {}, "zstd", mixed.append
    )
    assert mixed == ["count"] and read(tmp_path, 2).column("count").to_pylist() == ["1", "x"]
    assert write_batch(str(tmp_path), 3, 1, FIELDS, [["a", 1]], {"count": pa.float64()})
    assert read(tmp_path, 3).schema.field("count").type == pa.float64()


def test_temporaries_left_by_a_crash_are_removed(tmp_path):
    for name in (".part-00000000000000000004.parquet.tmp", "part-00000000000000000003.parquet"):
        (tmp_path / name).write_bytes(b"")
    (tmp_path / ".other.tmp").write_bytes(b"")
    assert remove_temporaries(str(tmp_path)) == [".part-00000000000000000004.parquet.tmp"]
    assert files(tmp_path) == [".other.tmp", "part-00000000000000000003.parquet"]


def context(tasks: int = 1):
    return {
        "componentid": "files",
        "task->component": {str(i + 1): "files" for i in range(tasks)},
        "source->stream->grouping": {"count": {"default": {"type": "SHUFFLE"}}},
        "source->stream->fields": {"count": {"default": list(FIELDS)}},
    }


def test_config(tmp_path):
    config = from_conf(
        {"parquet.committer.dir": str(tmp_path), "parquet.committer.schema": {"count": "int32"}},
        context(),
    )
    assert config.fields == FIELDS and config.types == {"count": pa.int32()}
    assert config.directory == str(tmp_path) and config.compression == "snappy"
    given = from_conf({"parquet.committer.dir": "d", "parquet.committer.fields": ["a"]}, {})
    assert given.fields == ("a",)


@pytest.mark.parametrize(
    "conf, ctx, message",
    [
        ({}, context(), "dir is required"),
        ({"parquet.committer.dir": "d"}, context(tasks=3), "runs as one task"),
        ({"parquet.committer.dir": "d", "parquet.committer.fields": "a"}, context(), "a list"),
        (
            {"parquet.committer.dir": "d", "parquet.committer.schema": {"x": "int8"}},
            context(),
            "not a column",
        ),
        (
            {"parquet.committer.dir": "d", "parquet.committer.schema": {"count": "nope"}},
            context(),
            "unknown type",
        ),
        ({"parquet.committer.dir": "d", "parquet.committer.rows": 3}, context(), "unknown setting"),
        ({"parquet.committer.dir": "d"}, {"componentid": "files"}, "no input stream"),
    ],
)
def test_config_errors_name_the_key(conf, ctx, message):
    with pytest.raises(ConfigError, match=message):
        from_conf(conf, ctx)


# ---- the component, a real process driven over its pipes ---------------------------------------

COMMITTER = ["python", "-m", "components.parquet_committer"]


def start_committer(directory, env=None) -> ComponentPeer:
    peer = ComponentPeer(COMMITTER, env=env)
    peer.handshake(
        conf={"parquet.committer.dir": str(directory)},
        context=batch_context(
            "committer",
            componentid="files",
            outputs={},
            sources={"count": {"default": list(FIELDS)}},
        ),
    )
    assert "batch/1" in peer.extensions
    return peer


def commit(peer, txid, attempt, rows) -> list[tuple[str, str]]:
    for i, values in enumerate(rows):
        tx_tuple(peer, f"{txid}-{attempt}-{i}", values, txid, attempt)
    answered = answers(peer, len(rows))
    assert answered == [("ack", f"{txid}-{attempt}-{i}") for i in range(len(rows))]
    finish(peer, f"f{txid}-{attempt}", txid, attempt)
    return answers(peer, 1)


def test_the_committer_writes_each_txid_once(tmp_path):
    out = tmp_path / "out"
    peer = start_committer(out)
    try:
        assert commit(peer, 1, 1, [["red", 1], ["blue", 2]]) == [("ack", "f1-1")]
        assert commit(peer, 1, 2, [["red", 1], ["blue", 2]]) == [("ack", "f1-2")]  # skipped
        assert commit(peer, 2, 1, []) == [("ack", "f2-1")]
    finally:
        assert peer.close() == 0
    assert files(out) == [part_name(1), part_name(2)]
    assert read(out, 1).schema.metadata[b"multilang.attempt"] == b"1"
    assert pq.read_table(str(out)).num_rows == 2


@pytest.mark.parametrize("fault, written", [("before_write:1:1", False), ("after_commit:1", True)])
def test_a_crash_at_the_fault_point_then_the_replay(tmp_path, fault, written):
    out = tmp_path / "out"
    peer = start_committer(out, env={"FAULT": fault})
    try:
        for i, values in enumerate([["red", 1], ["blue", 2]]):
            tx_tuple(peer, str(i), values, 1, 1)
        answers(peer, 2)
        finish(peer, "f1", 1, 1)
        assert peer.proc.wait(10) == 137
        assert not [m for m in peer.quiet(0.1) if isinstance(m, Ack) and m.id == "f1"]
    finally:
        peer.close()
    assert files(out) == ([part_name(1)] if written else [])
    peer = start_committer(out, env={"FAULT": fault})
    try:
        assert commit(peer, 1, 2, [["red", 1], ["blue", 2]]) == [("ack", "f1-2")]
    finally:
        assert peer.close() == 0
    assert files(out) == [part_name(1)]
    assert read(out, 1).schema.metadata[b"multilang.attempt"] == (b"1" if written else b"2")
    assert read(out, 1).num_rows == 2


def test_after_ack_the_committer_dies_at_the_next_message(tmp_path):
    out = tmp_path / "out"
    peer = start_committer(out, env={"FAULT": "after_ack:1:1"})
    try:
        assert commit(peer, 1, 1, [["red", 1]]) == [("ack", "f1-1")]
        assert peer.proc.poll() is None
        tx_tuple(peer, "x", ["blue", 1], 2)
        assert peer.proc.wait(10) == 137
    finally:
        peer.close()
    assert files(out) == [part_name(1)]
