"""Transactional batches for Python components: the client side of the `batch/1` extension
(docs/transactional.md §4, §5). Batch bolts and committers are here, the batch spouts in
`multilang.batch_spouts` (re-exported).

```python
from multilang import BatchBolt

class PartialCount(BatchBolt):
    def begin(self, batch):           # a new attempt's state; batch.tx is Tx(txid, attempt)
        batch.count = 0
    def process(self, tup, batch):    # acked when it returns, failed if it raises
        batch.count += 1
    def finish_batch(self, batch):    # the task has all of the attempt; emits anchored to it
        self.emit([batch.tx.txid, batch.count])

PartialCount().run()
```

As Storm's BatchBoltExecutor, the state is per attempt: a fresh `Batch` when an attempt is first
seen (`begin`), dropped after its `finish`, on `abort`, and when a higher attempt of its txid
shows up. A message of an attempt that is over (a lower attempt, or one already finished or
aborted) is stale: it is failed, with a warning, without calling user code (the host ignores
answers about attempts it aborted, §2.7).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from .batch_component import NO_BATCH_HOST, _BatchComponent
from .batch_messages import BatchControl, Numbered, Tx, TxTuple
from .batch_spouts import (
    OpaquePartitionedTransactionalSpout,
    PartitionedTransactionalSpout,
    TransactionalSpout,
)
from .batch_state import AttemptStates, Batch
from .client import Bolt
from .client_io import (
    _ACK_FRAME,
    _ANCHORED_END,
    _EMIT_END,
    Tuple,
    _format_exception,
    _id_json,
)
from .messages import BATCH_EXT, DEFAULT_STREAM, HEARTBEAT_STREAM, SYSTEM_TASK, TICK_STREAM, WARN

__all__ = [
    "BATCH_EXT",
    "NO_BATCH_HOST",
    "Batch",
    "BatchBolt",
    "Committer",
    "OpaquePartitionedTransactionalSpout",
    "PartitionedTransactionalSpout",
    "TransactionalSpout",
    "Numbered",
    "Tx",
]


class BatchBolt(_BatchComponent):
    """A batch bolt (`batch: bolt`): `begin(batch)` for a new attempt, `process(tup, batch)` for
    each of its tuples, `finish_batch(batch)` once the task has all of them (§2.5).

    Emits are anchored to what is being handled: the tuple in `process`, the `finish` in
    `finish_batch` (and in `begin`, to the message that opened the attempt), so every emit belongs
    to one attempt (§4.2). A tuple is acked when `process` returns and failed (with an `error`
    giving the traceback) when it raises; the `finish` likewise after `finish_batch`, and a failed
    one fails the attempt. Heartbeats are answered with `sync`; tick tuples go to `process_tick`
    and are acked."""

    _tuple_type = Tuple

    def __init__(self) -> None:
        super().__init__()
        self._states = AttemptStates()
        self._anchors: list[Any] | None = None  # the message being handled, as emits' anchors
        self._emit_end: bytes | None = _EMIT_END  # a plain emit's frame end (see client.Bolt)

    # ---- hooks ---------------------------------------------------------------------------------
    def begin(self, batch: Batch) -> None:
        """A new attempt: set up `batch`'s attributes. Default: nothing."""

    def process(self, tup: Tuple, batch: Batch) -> None:
        """One tuple of the attempt `batch.tx`."""
        raise NotImplementedError("a batch bolt must define process(self, tup, batch)")

    def finish_batch(self, batch: Batch) -> None:
        """Every tuple of the attempt has been processed (and acked): emit its results."""

    def process_tick(self, tup: Tuple) -> None:
        """Called for every tick tuple; the library acks it afterwards. Default: nothing."""

    def cleanup(self) -> None:
        """Called once when the host closes stdin, before the process exits."""

    # ---- what user code can send ---------------------------------------------------------------
    # Bolt's emit, as it is (the fast path included): anchored to the message being handled
    # unless `anchors` (Tuples or tuple ids of one attempt) are given. Declared for type checkers
    # with its signature, since a BatchBolt is not a Bolt (users' `self.emit(...)` type-checks)
    if TYPE_CHECKING:

        def emit(
            self,
            values: Iterable[Any],
            stream: str = DEFAULT_STREAM,
            anchors: Iterable[Any] = (),
            direct_task: int | None = None,
            need_task_ids: bool = False,
        ) -> list[int] | None: ...

    else:
        emit = Bolt.emit

    # ---- dispatch ------------------------------------------------------------------------------
    def _batch_handshake(self, batch: dict[str, Any]) -> None:
        committed = batch.get("committed_txid")
        self._states = AttemptStates(committed if type(committed) is int else 0)

    def _handle(self, msg: Any) -> None:
        kind = type(msg)
        if kind is TxTuple:
            self._on_tuple(msg.tuple, msg.tx)
        elif kind is BatchControl:  # decoded before any heartbeat test (§4.2)
            if msg.op == "finish":
                self._on_finish(msg.id, msg.tx)
            else:
                self._states.retire(msg.tx)  # abort: not answered
        elif kind is Tuple and msg.task == SYSTEM_TASK and msg.stream == HEARTBEAT_STREAM:
            self._out.append(self._sync_frame)
        elif kind is Tuple and msg.task == SYSTEM_TASK and msg.stream == TICK_STREAM:
            self._run(msg.id, lambda: self.process_tick(msg))
        elif kind is Tuple:
            # every tuple a batch bolt gets is of an attempt (§3: it is fed by the batch group)
            self.log(f"failing a tuple without `tx`: {msg!r}", WARN)
            self._send("fail", msg.id)
        else:
            self._unexpected(msg)

    def _on_tuple(self, tup: Tuple, tx: Tx) -> None:
        opened = self._states.open(tx)
        if opened is None:
            self._stale("tuple", tup.id, tx)
            return
        batch, new = opened
        self._run(tup.id, lambda: self._call(batch, new, lambda: self.process(tup, batch)))

    def _on_finish(self, finish_id: Any, tx: Tx) -> None:
        opened = self._states.open(tx)  # an attempt that brought this task no tuple starts here
        if opened is None:
            self._stale("finish", finish_id, tx)
            return
        batch, new = opened
        try:
            self._run(finish_id, lambda: self._call(batch, new, lambda: self.finish_batch(batch)))
        finally:
            self._states.retire(tx)

    def _call(self, batch: Batch, new: bool, hook: Callable[[], None]) -> None:
        if new:
            try:
                self.begin(batch)
            except BaseException:
                self._states.retire(batch.tx)  # half set up: the attempt fails, nothing reuses it
                raise
        hook()

    def _stale(self, what: str, msg_id: Any, tx: Tx) -> None:
        self.log(f"failing a {what} of attempt {tuple(tx)}, which is over", WARN)
        self._send("fail", msg_id)

    def _run(self, msg_id: Any, hook: Callable[[], None]) -> None:
        """Run `hook` with emits anchored to `msg_id`; then ack `msg_id`, or fail it if the hook
        raised (error first, then fail: the reason is logged first, as client.Bolt does)."""
        id_json = _id_json(msg_id)
        self._anchors = [msg_id]
        self._emit_end = None if id_json is None else _ANCHORED_END % id_json
        try:
            hook()
        except Exception:
            self.error(_format_exception())
            self._send("fail", msg_id)
        else:
            if id_json is not None:
                self._out.append(_ACK_FRAME % id_json)
            else:
                self._send("ack", msg_id)
        finally:
            self._anchors = None
            self._emit_end = _EMIT_END

    def _send(self, command: str, msg_id: Any) -> None:
        self._out.append(self._pack({"command": command, "id": msg_id}))

    def _shutdown(self) -> None:
        self.cleanup()


class Committer(BatchBolt):
    """A committer (`batch: committer`): a batch bolt whose `finish` comes in the attempt's
    commit phase, in strict txid order (§2.2): `finish_batch` is where the batch's result is
    stored, with `batch.tx.txid` in the same transaction, so that a replayed txid is skipped."""
