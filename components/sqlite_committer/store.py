"""The SQLite committer's write (pure: no protocol): apply one batch and record its txid in ONE
SQLite transaction, or skip it when the stored txid is already at or past it (the sink contract of
docs/transactional.md §7: a replay after a crash between the commit and the ack must not apply twice).

Tables (created when missing):
- the data table, in one of two modes: `upsert-add` (a row per key; the value columns are summed
  into it: word counts) or `insert` (every tuple appended as a row);
- `committer_state(name PRIMARY KEY, last_txid)`: the last applied txid, per data table;
- optionally an audit table `(txid PRIMARY KEY, attempt, tuples, content_hash, committed_at)`: one
  row per applied txid, for the chaos tests (strictly increasing, once-only, same content per
  txid). An empty batch is applied too (its txid is recorded), so the audit lists every txid.
"""

from __future__ import annotations

import json
import re
import sqlite3
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from components.audit import content_hash

UPSERT_ADD, INSERT = "upsert-add", "insert"
MODES = (UPSERT_ADD, INSERT)
STATE_TABLE = "committer_state"
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


class StoreError(ValueError):
    """A table layout or a tuple the committer cannot apply."""


def check_name(name: str, what: str) -> str:
    """Table and column names are plain identifiers (they are put into SQL text)."""
    if not isinstance(name, str) or not _NAME.fullmatch(name) or name.lower().startswith("sqlite_"):
        raise StoreError(f"{what} {name!r} is not a plain SQL name ([A-Za-z_][A-Za-z0-9_]*)")
    return name


def q(name: str) -> str:
    return f'"{name}"'


def sql_value(value: Any) -> Any:
    """A tuple value as SQLite stores it: scalars as they are, lists and objects as JSON text."""
    if value is None or isinstance(value, (int, float, str, bytes)):
        return int(value) if isinstance(value, bool) else value
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


@dataclass(frozen=True)
class Layout:
    """Where and how a batch goes: `fields` are the tuples' field names, in tuple order."""

    table: str
    mode: str
    fields: tuple[str, ...]
    keys: tuple[str, ...] = ()
    values: tuple[str, ...] = ()
    audit: str | None = None

    def __post_init__(self) -> None:
        check_name(self.table, "table")
        if self.audit is not None:
            check_name(self.audit, "audit table")
            if self.audit in (self.table, STATE_TABLE):
                raise StoreError(f"the audit table cannot be named {self.audit!r}")
        if self.table == STATE_TABLE:
            raise StoreError(f"the table cannot be named {STATE_TABLE!r} (the committer's own)")
        for f in self.fields:
            check_name(f, "field")
        if self.mode not in MODES:
            raise StoreError(f"mode must be one of {', '.join(MODES)}, got {self.mode!r}")
        if self.mode == UPSERT_ADD:
            if not self.keys or not self.values:
                raise StoreError("the upsert-add mode needs key fields and value fields")
            missing = [f for f in self.keys + self.values if f not in self.fields]
            if missing:
                raise StoreError(
                    f"{', '.join(missing)} not among the input fields ({', '.join(self.fields)})"
                )
            if set(self.keys) & set(self.values):
                raise StoreError("a field cannot be both a key and a value")


def _schema(layout: Layout) -> list[str]:
    statements = [
        f"CREATE TABLE IF NOT EXISTS {STATE_TABLE} "
        f"(name TEXT PRIMARY KEY, last_txid INTEGER NOT NULL)"
    ]
    if layout.mode == UPSERT_ADD:
        columns = [q(k) for k in layout.keys]
        columns += [f"{q(v)} NOT NULL DEFAULT 0" for v in layout.values]
        keys = ", ".join(q(k) for k in layout.keys)
        statements.append(
            f"CREATE TABLE IF NOT EXISTS {q(layout.table)} ({', '.join(columns)}, PRIMARY KEY ({keys}))"
        )
    else:
        columns = [q(f) for f in layout.fields]
        statements.append(f"CREATE TABLE IF NOT EXISTS {q(layout.table)} ({', '.join(columns)})")
    if layout.audit:
        statements.append(
            f"CREATE TABLE IF NOT EXISTS {q(layout.audit)} (txid INTEGER PRIMARY KEY, "
            f"attempt INTEGER NOT NULL, tuples INTEGER NOT NULL, content_hash TEXT NOT NULL, "
            f"committed_at REAL NOT NULL)"
        )
    return statements


def _sums(layout: Layout, tuples: Sequence[Sequence[Any]]) -> dict[tuple[Any, ...], list[Any]]:
    """The batch added up per key (one statement per key instead of per tuple)."""
    key_at = [layout.fields.index(k) for k in layout.keys]
    value_at = [layout.fields.index(v) for v in layout.values]
    sums: dict[tuple[Any, ...], list[Any]] = {}
    for t in tuples:
        key = tuple(sql_value(t[i]) for i in key_at)
        adds = [t[i] for i in value_at]
        for name, v in zip(layout.values, adds):
            if isinstance(v, bool) or not isinstance(v, (int, float)):
                raise StoreError(f"value field {name!r} must be a number, got {v!r} in {list(t)}")
        total = sums.get(key)
        if total is None:
            sums[key] = adds
        else:
            for i, v in enumerate(adds):
                total[i] += v
    return sums


class SqliteStore:
    """One SQLite file; `commit` applies a batch once per txid."""

    def __init__(self, path: str, layout: Layout, timeout: float = 30.0):
        self.layout = layout
        # autocommit mode: the transactions are the explicit BEGIN ... COMMIT below
        self.db = sqlite3.connect(path, timeout=timeout, isolation_level=None)
        self.db.execute("PRAGMA synchronous = FULL")  # a COMMIT that returned is on disk
        self.db.execute("BEGIN IMMEDIATE")
        try:
            for statement in _schema(layout):
                self.db.execute(statement)
            self.db.execute("COMMIT")
        except BaseException:
            self.db.execute("ROLLBACK")
            raise

    def last_txid(self) -> int:
        row = self.db.execute(
            f"SELECT last_txid FROM {STATE_TABLE} WHERE name = ?", (self.layout.table,)
        ).fetchone()
        return int(row[0]) if row else 0

    def commit(
        self,
        txid: int,
        attempt: int,
        tuples: Sequence[Sequence[Any]],
        before_write: Callable[[], None] | None = None,
    ) -> bool:
        """Apply the batch and store `last_txid = txid` in one transaction; False (nothing done)
        when the stored last_txid is already >= txid. `before_write` runs once the skip check has
        passed, before anything is written (the fault seam)."""
        layout = self.layout
        n = len(layout.fields)
        for t in tuples:
            if len(t) != n:
                raise StoreError(
                    f"a tuple has {len(t)} values, the input fields are {n} "
                    f"({', '.join(layout.fields)}): {list(t)!r}"
                )
        db = self.db
        db.execute("BEGIN IMMEDIATE")  # the write lock now: the check and the write are atomic
        try:
            if self.last_txid() >= txid:
                db.execute("ROLLBACK")
                return False
            if before_write is not None:
                before_write()
            self._apply(tuples)
            db.execute(
                f"INSERT INTO {STATE_TABLE} (name, last_txid) VALUES (?, ?) "
                f"ON CONFLICT (name) DO UPDATE SET last_txid = excluded.last_txid",
                (layout.table, txid),
            )
            if layout.audit:
                db.execute(
                    f"INSERT INTO {q(layout.audit)} "
                    f"(txid, attempt, tuples, content_hash, committed_at) VALUES (?, ?, ?, ?, ?)",
                    (txid, attempt, len(tuples), content_hash(tuples), time.time()),
                )
            db.execute("COMMIT")
        except BaseException:
            if db.in_transaction:
                db.execute("ROLLBACK")
            raise
        return True

    def _apply(self, tuples: Sequence[Sequence[Any]]) -> None:
        layout = self.layout
        table = q(layout.table)
        if layout.mode == INSERT:
            marks = ", ".join("?" for _ in layout.fields)
            columns = ", ".join(q(f) for f in layout.fields)
            self.db.executemany(
                f"INSERT INTO {table} ({columns}) VALUES ({marks})",
                ([sql_value(v) for v in t] for t in tuples),
            )
            return
        columns = ", ".join(q(c) for c in layout.keys + layout.values)
        marks = ", ".join("?" for _ in layout.keys + layout.values)
        keys = ", ".join(q(k) for k in layout.keys)
        adds = ", ".join(f"{q(v)} = {q(v)} + excluded.{q(v)}" for v in layout.values)
        self.db.executemany(
            f"INSERT INTO {table} ({columns}) VALUES ({marks}) "
            f"ON CONFLICT ({keys}) DO UPDATE SET {adds}",
            (list(key) + values for key, values in _sums(layout, tuples).items()),
        )

    def close(self) -> None:
        self.db.close()
