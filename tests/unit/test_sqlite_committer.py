"""The SQLite committer's pure part (components/sqlite_committer): one transaction per batch on
a real SQLite file, replays of an applied txid skipped, both modes, the audit table, the config
and the fault seam's parsing."""

from __future__ import annotations

import hashlib
import sqlite3

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from components.audit import content_hash
from components.fault_seam import Fault, from_env, parse
from components.sqlite_committer.config import ConfigError, from_conf
from components.sqlite_committer.store import (
    INSERT,
    UPSERT_ADD,
    Layout,
    SqliteStore,
    StoreError,
)
from host.testing import ComponentPeer
from multilang.messages import Ack
from tests.support.batch_frames import answers, batch_context, finish, tx_tuple

COUNTS = Layout("counts", UPSERT_ADD, ("word", "count"), ("word",), ("count",), audit="audit")
ROWS = Layout("rows", INSERT, ("id", "text", "extra"), audit="audit")


def rows_of(path, sql):
    db = sqlite3.connect(path)
    try:
        return db.execute(sql).fetchall()
    finally:
        db.close()


def test_upsert_add_sums_values_per_key_and_records_the_txid(tmp_path):
    path = str(tmp_path / "db.sqlite")
    store = SqliteStore(path, COUNTS)
    assert store.last_txid() == 0
    assert store.commit(1, 1, [["red", 1], ["blue", 2], ["red", 3]])
    assert store.commit(2, 1, [["red", 10], ["green", 1]])
    store.close()
    assert dict(rows_of(path, "SELECT word, count FROM counts")) == {
        "red": 14,
        "blue": 2,
        "green": 1,
    }
    assert rows_of(path, "SELECT name, last_txid FROM committer_state") == [("counts", 2)]


def test_a_replayed_or_older_txid_is_skipped_whole(tmp_path):
    path = str(tmp_path / "db.sqlite")
    store = SqliteStore(path, COUNTS)
    assert store.commit(3, 1, [["a", 1]])
    called = []
    assert not store.commit(3, 2, [["a", 1]], before_write=lambda: called.append(1))
    assert not store.commit(2, 1, [["a", 5]])
    assert called == []  # the fault seam's before_write is not reached when skipped
    store.close()
    # a fresh process (a restart) sees the same stored txid
    again = SqliteStore(path, COUNTS)
    assert again.last_txid() == 3 and not again.commit(3, 3, [["a", 1]])
    again.close()
    assert rows_of(path, "SELECT word, count FROM counts") == [("a", 1)]
    assert rows_of(path, "SELECT txid, attempt, tuples FROM audit") == [(3, 1, 1)]


def test_a_failed_apply_leaves_nothing_behind(tmp_path):
    path = str(tmp_path / "db.sqlite")
    store = SqliteStore(path, COUNTS)
    assert store.commit(1, 1, [["a", 1]])
    with pytest.raises(StoreError, match="must be a number"):
        store.commit(2, 1, [["a", 1], ["b", "x"]])

    def crash() -> None:
        raise RuntimeError("crash inside the transaction")

    with pytest.raises(RuntimeError):
        store.commit(2, 2, [["a", 1]], before_write=crash)
    with pytest.raises(StoreError, match="has 1 values"):
        store.commit(2, 3, [["a"]])
    assert store.last_txid() == 1 and not store.db.in_transaction
    assert store.commit(2, 4, [["a", 2]])
    store.close()
    assert rows_of(path, "SELECT word, count FROM counts") == [("a", 3)]
    assert rows_of(path, "SELECT txid, attempt FROM audit ORDER BY txid") == [(1, 1), (2, 4)]


def test_insert_appends_rows_and_stores_objects_as_json(tmp_path):
    path = str(tmp_path / "db.sqlite")
    store = SqliteStore(path, ROWS)
    assert store.commit(1, 1, [[1, "one", None], [2, "two", {"b": 1, "a": [True]}]])
    assert store.commit(2, 1, [[1, "one", [1, 2]]])
    assert store.commit(3, 1, [])  # an empty batch still records its txid
    store.close()
    assert rows_of(path, "SELECT id, text, extra FROM rows ORDER BY rowid") == [
        (1, "one", None),
        (2, "two", '{"a":[true],"b":1}'),
        (1, "one", "[1,2]"),
    ]
    assert rows_of(path, "SELECT txid, tuples FROM audit ORDER BY txid") == [(1, 2), (2, 1), (3, 0)]
    assert rows_of(path, "SELECT last_txid FROM committer_state") == [(3,)]


def test_the_audit_hash_is_the_sorted_json_of_the_tuples(tmp_path):
    path = str(tmp_path / "db.sqlite")
    store = SqliteStore(path, COUNTS)
    batch = [["b", 2], ["a", 1]]
    store.commit(1, 1, batch)
    store.close()
    [(stored,)] = rows_of(path, "SELECT content_hash FROM audit")
    assert stored == content_hash(batch) == content_hash(list(reversed(batch)))
    assert stored == hashlib.sha256(b'["a",1]\n["b",2]').hexdigest()
    assert content_hash([["a", 1]]) != content_hash([["a", 2]])


@settings(
    max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    batches=st.lists(
        st.lists(st.tuples(st.sampled_from("abcd"), st.integers(-5, 5)), max_size=8), max_size=6
    ),
    replays=st.lists(st.integers(0, 5), max_size=6),
)
def test_applying_with_replays_counts_each_batch_once(tmp_path_factory, batches, replays):
    path = str(tmp_path_factory.mktemp("db") / "db.sqlite")
    store = SqliteStore(path, COUNTS)
    expected: dict[str, int] = {}
    for txid, batch in enumerate(batches, start=1):
        assert store.commit(txid, 1, [list(t) for t in batch])
        for word, n in batch:
            expected[word] = expected.get(word, 0) + n
        for r in replays:  # replays of this or earlier txids: all skipped
            if r and r <= txid:
                assert not store.commit(r, 2, [["a", 100]])
    store.close()
    assert dict(rows_of(path, "SELECT word, count FROM counts")) == expected
    assert [t for (t,) in rows_of(path, "SELECT txid FROM audit ORDER BY committed_at, txid")] == (
        list(range(1, len(batches) + 1))
    )


@pytest.mark.parametrize(
    "layout, message",
    [
        (lambda: Layout("t; drop", INSERT, ("a",)), "plain SQL name"),
        (lambda: Layout("t", "merge", ("a",)), "mode must be"),
        (lambda: Layout("t", UPSERT_ADD, ("a", "b"), ("a",), ()), "needs key fields"),
        (lambda: Layout("t", UPSERT_ADD, ("a", "b"), ("a",), ("c",)), "c not among"),
        (lambda: Layout("t", INSERT, ("a",), audit="t"), "audit table cannot"),
        (lambda: Layout("committer_state", INSERT, ("a",)), "committer's own"),
        (lambda: Layout("sqlite_master", INSERT, ("a",)), "plain SQL name"),
    ],
)
def test_bad_layouts_are_refused(layout, message):
    with pytest.raises(StoreError, match=message):
        layout()


def context(tasks: int = 1, fields=("word", "count")):
    ctx = {
        "componentid": "sink",
        "task->component": {str(i + 1): "sink" for i in range(tasks)},
        "source->stream->grouping": {"count": {"default": {"type": "SHUFFLE"}}},
        "source->stream->fields": {"count": {"default": list(fields)}},
    }
    return ctx


def test_config_reads_the_keys_and_the_input_fields(tmp_path):
    conf = {
        "sqlite.committer.path": str(tmp_path / "out.db"),
        "sqlite.committer.table": "counts",
        "sqlite.committer.mode": "upsert-add",
        "sqlite.committer.keys": ["word"],
        "sqlite.committer.values": "count",
        "sqlite.committer.audit": "audit",
    }
    config = from_conf(conf, context())
    assert config.path == str(tmp_path / "out.db")
    assert config.layout == COUNTS
    insert = from_conf(
        {
            **conf,
            "sqlite.committer.mode": "insert",
            "sqlite.committer.keys": None,
            "sqlite.committer.values": None,
        },
        context(),
    )
    assert insert.layout.mode == INSERT and insert.layout.fields == ("word", "count")


@pytest.mark.parametrize(
    "conf, ctx, message",
    [
        ({"sqlite.committer.path": None, "sqlite.committer.table": None}, context(), "required"),
        ({"sqlite.committer.table": None}, context(), "are required"),
        ({"sqlite.committer.mode": "upsert-add"}, context(), "needs sqlite.committer.keys"),
        ({"sqlite.committer.keys": ["word"]}, context(), "for the upsert-add mode"),
        ({"sqlite.committer.tabel": "t"}, context(), "unknown setting"),
        ({}, context(tasks=2), "runs as one task"),
        ({"sqlite.committer.table": "bad name"}, context(), "plain SQL name"),
        ({"sqlite.committer.path": "/nonexistent/dir/x.db"}, context(), "does not exist"),
        ({}, {"componentid": "sink"}, "no input stream"),
    ],
)
def test_config_errors_name_the_key(tmp_path, conf, ctx, message):
    base = {"sqlite.committer.path": str(tmp_path / "x.db"), "sqlite.committer.table": "t"}
    merged = {k: v for k, v in {**base, **conf}.items() if v is not None}
    with pytest.raises(ConfigError, match=message):
        from_conf(merged, ctx)


def test_fault_specs():
    assert parse("after_commit:3") == Fault("after_commit", 3, None)
    assert parse("before_write:2:1") == Fault("before_write", 2, 1)
    assert from_env({}) is None and from_env({"FAULT": "after_ack:1:2"}) == Fault("after_ack", 1, 2)
    fault = parse("after_commit:3:2")
    assert fault.hits("after_commit", 3, 2)
    assert not fault.hits("after_commit", 3, 1) and not fault.hits("before_write", 3, 2)
    assert parse("after_ack:4").hits("after_ack", 4, 9)
    for bad in ("explode:1", "after_ack", "after_ack:x", "after_ack:1:2:3"):
        with pytest.raises(ValueError, match="FAULT="):
            parse(bad)


# ---- the component, a real process driven over its pipes ---------------------------------------

COMMITTER = ["python", "-m", "components.sqlite_committer"]


def start_committer(path, env=None, **conf) -> ComponentPeer:
    peer = ComponentPeer(COMMITTER, env=env)
    peer.handshake(
        conf={
            "sqlite.committer.path": str(path),
            "sqlite.committer.table": "counts",
            "sqlite.committer.mode": "upsert-add",
            "sqlite.committer.keys": ["word"],
            "sqlite.committer.values": ["count"],
            "sqlite.committer.audit": "audit",
            **conf,
        },
        context=batch_context(
            "committer",
            componentid="store",
            outputs={},
            sources={"count": {"default": ["word", "count"]}},
        ),
    )
    assert "batch/1" in peer.extensions
    return peer


def send_batch(peer, txid, attempt, words) -> list[tuple[str, str]]:
    for i, word in enumerate(words):
        tx_tuple(peer, f"{txid}{attempt}{i}", [word, 1], txid, attempt)
    return answers(peer, len(words))


def counts(path) -> dict[str, int]:
    return dict(rows_of(path, "SELECT word, count FROM counts"))


def test_the_committer_applies_once_and_skips_a_replayed_txid(tmp_path):
    path = tmp_path / "db.sqlite"
    peer = start_committer(path)
    try:
        assert send_batch(peer, 1, 1, ["red", "blue", "red"]) == [
            ("ack", "110"),
            ("ack", "111"),
            ("ack", "112"),
        ]
        finish(peer, "f1", 1, 1)
        assert answers(peer, 1) == [("ack", "f1")]
        assert counts(path) == {"red": 2, "blue": 1}
        # txid 1 again (a replay after a crash between the commit and the ack): skipped, acked
        send_batch(peer, 1, 2, ["red", "blue", "red"])
        finish(peer, "f1b", 1, 2)
        assert answers(peer, 1) == [("ack", "f1b")]
        # an empty batch is committed (its txid recorded)
        finish(peer, "f2", 2, 1)
        assert answers(peer, 1) == [("ack", "f2")]
    finally:
        assert peer.close() == 0
    assert counts(path) == {"red": 2, "blue": 1}
    assert rows_of(path, "SELECT txid, attempt, tuples FROM audit ORDER BY txid") == [
        (1, 1, 3),
        (2, 1, 0),
    ]


def test_a_tuple_the_store_cannot_apply_fails_the_finish(tmp_path):
    path = tmp_path / "db.sqlite"
    peer = start_committer(path)
    try:
        tx_tuple(peer, "1", ["red", "x"], 1)
        assert answers(peer, 1) == [("ack", "1")]
        finish(peer, "f1", 1)
        assert answers(peer, 1) == [("fail", "f1")]
        assert "must be a number" in "".join(peer.transcript)
    finally:
        peer.close()
    assert counts(path) == {}


@pytest.mark.parametrize(
    "fault, committed",
    [("before_write:1:1", False), ("after_commit:1:1", True), ("after_commit:1", True)],
)
def test_a_crash_at_the_fault_point_then_the_replay(tmp_path, fault, committed):
    path = tmp_path / "db.sqlite"
    peer = start_committer(path, env={"FAULT": fault})
    try:
        send_batch(peer, 1, 1, ["red", "blue"])
        finish(peer, "f1", 1, 1)
        assert peer.proc.wait(10) == 137
        assert not [m for m in peer.quiet(0.1) if isinstance(m, Ack) and m.id == "f1"]
    finally:
        peer.close()
    assert counts(path) == ({"red": 1, "blue": 1} if committed else {})
    # the replay (attempt 2) in a new process, with the same FAULT: applied exactly once
    peer = start_committer(path, env={"FAULT": fault})
    try:
        send_batch(peer, 1, 2, ["red", "blue"])
        finish(peer, "f1b", 1, 2)
        assert answers(peer, 1) == [("ack", "f1b")]
    finally:
        assert peer.close() == 0
    assert counts(path) == {"red": 1, "blue": 1}
    attempt = 1 if committed else 2
    assert rows_of(path, "SELECT txid, attempt FROM audit") == [(1, attempt)]


def test_after_ack_the_committer_dies_at_the_next_message(tmp_path):
    path = tmp_path / "db.sqlite"
    peer = start_committer(path, env={"FAULT": "after_ack:1:1"})
    try:
        send_batch(peer, 1, 1, ["red"])
        finish(peer, "f1", 1, 1)
        assert answers(peer, 1) == [("ack", "f1")]
        assert peer.proc.poll() is None
        tx_tuple(peer, "21", ["blue", 1], 2)
        assert peer.proc.wait(10) == 137
    finally:
        peer.close()
    assert counts(path) == {"red": 1}


def test_the_attempts_log_has_a_line_per_commit_phase_finish_applied_or_skipped(tmp_path):
    path, log = tmp_path / "db.sqlite", tmp_path / "attempts.log"
    peer = start_committer(path, **{"sqlite.committer.attempts_log": str(log)})
    try:
        send_batch(peer, 1, 1, ["red", "blue"])
        finish(peer, "f1", 1, 1)
        assert answers(peer, 1) == [("ack", "f1")]
        send_batch(peer, 1, 2, ["blue", "red"])  # a replay of an applied txid: skipped
        finish(peer, "f1b", 1, 2)
        finish(peer, "f2", 2, 1)  # an empty batch
        assert answers(peer, 2) == [("ack", "f1b"), ("ack", "f2")]
    finally:
        assert peer.close() == 0
    same = content_hash([["red", 1], ["blue", 1]])
    assert log.read_text().splitlines() == [
        f"1 1 2 {same} applied",
        f"1 2 2 {same} skipped",
        f"2 1 0 {content_hash([])} applied",
    ]


def test_the_attempts_log_directory_must_exist(tmp_path):
    conf = {
        "sqlite.committer.path": str(tmp_path / "x.db"),
        "sqlite.committer.table": "t",
        "sqlite.committer.attempts_log": str(tmp_path / "nope" / "attempts.log"),
    }
    with pytest.raises(ConfigError, match="attempts_log: the directory"):
        from_conf(conf, context())
    conf["sqlite.committer.attempts_log"] = str(tmp_path / "attempts.log")
    assert from_conf(conf, context()).attempts_log == str(tmp_path / "attempts.log")
