"""Batch spouts (docs/transactional.md §4.3, §5): a transactional spout, and its partitioned and
opaque partitioned kinds, as Storm's ITransactionalSpout, IPartitionedTransactionalSpout and
IOpaquePartitionedTransactionalSpout.

The host sends one command at a time and never `next`: `batch_init` to task 0 (the coordinator:
the next batch's metadata, or a bare `sync` for "not ready"), `batch_emit` to every task (emit
this task's share, then optionally `batch_meta` with the task's own metadata, then `sync`), and
`batch_commit` in the commit phase. Emits carry no message id: the host tracks the attempt.

The setup hook of a batch spout is `open(conf, context)`, as Storm's spouts, since `initialize`
is the coordinator's `initialize(txid, prev_meta)` here. An exception in any hook is fatal: the
traceback goes to the host as an `error` and the process exits 1. Answering `sync` after a
half-emitted batch would have the host take it for the whole batch; a dead task instead aborts
the attempt, which is replayed from the stored metadata once the task is restarted (§2.4).
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable
from typing import Any, NoReturn

from .batch_component import _BatchComponent
from .batch_messages import BatchCommit, BatchEmit, BatchInit, Numbered, Tx
from .batch_state import owned_partitions, task_index
from .client_io import _EMIT_END, _emit_frame, _format_exception, _StartupError
from .messages import DEFAULT_STREAM, SpoutCommand

__all__ = [
    "OpaquePartitionedTransactionalSpout",
    "PartitionedTransactionalSpout",
    "TransactionalSpout",
]


class _NoMeta:
    """What `_emit_batch` returns when the task has no metadata of its own to report."""


_NO_META = _NoMeta()


class _BatchSpout(_BatchComponent):
    """The batch spouts' dispatch: batch_init / batch_emit / batch_commit, each answered with
    `sync` (after `batch_meta` when there is metadata to report)."""

    def __init__(self) -> None:
        super().__init__()
        self._emitting = False  # emit is only allowed while a batch is being emitted
        #: the last committed txid, as the latest `batch_emit` said (clean up below it)
        self.committed_txid = 0
        #: this task's index among the spout's tasks, and how many there are (from the context)
        self.task_index, self.task_count = 0, 1

    # ---- hooks ---------------------------------------------------------------------------------
    def open(self, conf: dict[str, Any], context: dict[str, Any]) -> None:
        """Called once after the handshake, before any command."""

    def commit(self, tx: Tx) -> None:
        """The attempt `tx` is being committed (`batch_commit`): an opaque source advances its
        committed position here. Default: nothing."""

    def close(self) -> None:
        """Called once when the host closes stdin, before the process exits."""

    # ---- what user code can send ---------------------------------------------------------------
    def emit(self, values: Iterable[Any], stream: str = DEFAULT_STREAM) -> None:
        """Emit a tuple of the batch being emitted (no message id: it belongs to the attempt).
        Only while a batch is emitted; raises EncodeError for non-JSON values."""
        if not self._emitting:
            raise RuntimeError("a batch spout emits only while it emits a batch")
        if type(values) is not list:
            values = list(values)
        if stream == DEFAULT_STREAM:
            self._out.append(_emit_frame(values, _EMIT_END))
        else:
            wire = {"command": "emit", "tuple": values, "stream": stream, "need_task_ids": False}
            self._out.append(self._pack(wire))

    # ---- what subclasses define --------------------------------------------------------------
    def _coordinate(self, txid: int, prev_meta: Any) -> Any:
        """Task 0's answer to batch_init: the metadata of `txid`, None = not ready."""
        raise NotImplementedError

    def _emit_batch(self, msg: BatchEmit) -> Any:
        """Emit this task's share of `msg.tx`; the task's own metadata, or _NO_META."""
        raise NotImplementedError

    # ---- dispatch ------------------------------------------------------------------------------
    def _batch_handshake(self, batch: dict[str, Any]) -> None:
        committed = batch.get("committed_txid")
        self.committed_txid = committed if type(committed) is int else 0
        self.task_index, self.task_count = task_index(self.context)

    def _start(self) -> None:
        try:
            self.open(self.conf, self.context)
        except Exception as exc:
            text = _format_exception()
            self.error(text)
            self._flush()
            raise _StartupError(f"open failed:\n{text}") from exc

    def _handle(self, msg: Any) -> None:
        kind = type(msg)
        if kind is BatchEmit:
            self.committed_txid = msg.committed
            self._emitting = True
            try:
                meta = self._fatal_on_error(lambda: self._emit_batch(msg))
            finally:
                self._emitting = False
            if meta is not _NO_META:
                self._out.append(self._pack({"command": "batch_meta", "meta": meta}))
        elif kind is BatchInit:
            meta = self._fatal_on_error(lambda: self._coordinate(msg.txid, msg.prev_meta))
            if type(meta) is Numbered:  # the source numbers its batches (§4.3)
                reply = {"command": "batch_meta", "meta": meta.meta, "txid": meta.txid}
                self._out.append(self._pack(reply))
            elif meta is not None:  # a bare sync: not ready, asked again later (§4.3)
                self._out.append(self._pack({"command": "batch_meta", "meta": meta}))
        elif kind is BatchCommit:
            self._fatal_on_error(lambda: self.commit(msg.tx))
        elif kind is not SpoutCommand:  # activate, deactivate (and next, ack, fail: never sent)
            self._unexpected(msg)
            return
        self._out.append(self._sync_frame)  # the host waits for it whatever happened

    def _fatal_on_error(self, hook: Callable[[], Any]) -> Any:
        try:
            return hook()
        except Exception:
            self._die(_format_exception())

    def _die(self, text: str) -> NoReturn:
        self.error(text)
        self._flush()
        print(text, file=sys.stderr)
        raise SystemExit(1)

    def _shutdown(self) -> None:
        self.close()


class TransactionalSpout(_BatchSpout):
    """A transactional spout: task 0 decides each batch's metadata (`initialize`), every task
    emits its share of it (`emit_batch`); a replay passes the same metadata, and must emit the
    same tuples (Storm's ITransactionalSpout: its Coordinator and Emitter in one class)."""

    def initialize(self, txid: int, prev_meta: Any) -> Any:  # type: ignore[override]
        """Task 0: the metadata of batch `txid` (any JSON value), given the previous batch's
        (None for txid 1); None when no batch is ready (asked again after a back-off);
        `Numbered(txid, meta)` for a source that numbers its batches itself."""
        raise NotImplementedError("a transactional spout must define initialize(txid, prev_meta)")

    def emit_batch(self, tx: Tx, meta: Any) -> None:
        """Every task: emit this task's share of the batch `meta` describes, with `self.emit`.
        The same `meta` must give the same tuples."""
        raise NotImplementedError("a transactional spout must define emit_batch(tx, meta)")

    def _coordinate(self, txid: int, prev_meta: Any) -> Any:
        return self.initialize(txid, prev_meta)

    def _emit_batch(self, msg: BatchEmit) -> Any:
        self.emit_batch(msg.tx, msg.meta)
        return _NO_META


class _PartitionedSpout(_BatchSpout):
    """Partitions: the coordinator's metadata is {"partitions": n}; task i of N emits the
    partitions p with p % N == i; the task's own metadata is {str(p): partition metadata}."""

    def partitions(self) -> int:
        """How many partitions the source has now (asked by task 0 for every batch)."""
        raise NotImplementedError("a partitioned spout must define partitions()")

    def _coordinate(self, txid: int, prev_meta: Any) -> Any:
        return {"partitions": int(self.partitions())}

    def _mine(self, msg: BatchEmit) -> list[int]:
        meta = msg.meta
        count = meta.get("partitions") if type(meta) is dict else None
        if type(count) is not int:
            raise ValueError(f"batch metadata without a `partitions` count: {meta!r}")
        return owned_partitions(count, self.task_index, self.task_count)


def _partition_metas(value: Any) -> dict[str, Any]:
    return value if type(value) is dict else {}


class PartitionedTransactionalSpout(_PartitionedSpout):
    """A partitioned transactional spout (Storm's IPartitionedTransactionalSpout): the first time
    a batch is emitted, each partition emits from where its previous batch ended (`emit_new`) and
    says what it emitted; a replay emits exactly that again (`emit_again`)."""

    def emit_new(self, tx: Tx, partition: int, last_meta: Any) -> Any:
        """Emit the next batch of `partition`, after the one `last_meta` describes (None for the
        first); return this batch's metadata (any JSON value)."""
        raise NotImplementedError("a partitioned spout must define emit_new")

    def emit_again(self, tx: Tx, partition: int, meta: Any) -> None:
        """Emit again exactly the batch of `partition` that `meta` describes."""
        raise NotImplementedError("a partitioned spout must define emit_again")

    def _emit_batch(self, msg: BatchEmit) -> Any:
        mine = self._mine(msg)
        prev = _partition_metas(msg.prev_task_meta)
        if msg.task_meta is None:
            return {str(p): self.emit_new(msg.tx, p, prev.get(str(p))) for p in mine}
        stored = _partition_metas(msg.task_meta)
        out, added = dict(stored), False
        for p in mine:
            key = str(p)
            if key in stored:
                self.emit_again(msg.tx, p, stored[key])
            else:  # not emitted the first time (not expected: the count is stored with the txid)
                out[key], added = self.emit_new(msg.tx, p, prev.get(key)), True
        return out if added else _NO_META


class OpaquePartitionedTransactionalSpout(_PartitionedSpout):
    """An opaque partitioned spout (Storm's IOpaquePartitionedTransactionalSpout): every emit of a
    txid, first or replay, goes on from the previous txid's metadata, so a replay may emit other
    tuples; exactly-once then needs an opaque sink (one that keeps the previous value too)."""

    def emit_partition(self, tx: Tx, partition: int, last_meta: Any) -> Any:
        """Emit a batch of `partition` from where `last_meta` (None for the first) left off;
        return this batch's metadata."""
        raise NotImplementedError("an opaque partitioned spout must define emit_partition")

    def _emit_batch(self, msg: BatchEmit) -> Any:
        prev = _partition_metas(msg.prev_task_meta)
        return {str(p): self.emit_partition(msg.tx, p, prev.get(str(p))) for p in self._mine(msg)}
