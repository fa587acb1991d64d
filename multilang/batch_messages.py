"""The host messages of the `batch/1` extension (docs/transactional.md §4), typed, and the JSON
decoder a batch-aware client reads its stdin with.

The base decoder (`host_decoding.HostDecoder`) keeps only Storm's keys, so a tuple's `tx` and a
control message's `batch` would be lost there; `BatchHostDecoder` looks at them first and hands
every other message to `host_decoding.host_message`. The batch layer is JSON-only (§3: batch
components speak `serializer: json`), so there is no msgpack twin.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from .codec import DEFAULT_MAX_FRAME, ProtocolError, loads
from .host_decoding import HostDecoder, host_message
from .messages import DEFAULT_STREAM, HostMessage, TupleMessage


class Tx(NamedTuple):
    """One attempt at a batch: its transaction id and the attempt number (1, 2, … per txid)."""

    txid: int
    attempt: int


class Numbered(NamedTuple):
    """What a transactional spout's `initialize` returns for a source that numbers its own
    batches (a Spark micro-batch id, say): the batch's metadata and its txid, which must be at
    least the txid proposed; the txids in between are skipped (§4.3, `batch_meta`'s `txid`)."""

    txid: int
    meta: Any


class TxTuple(NamedTuple):
    """An input tuple of an attempt (§4.2: a tuple with a `tx` key)."""

    tuple: TupleMessage
    tx: Tx


class BatchControl(NamedTuple):
    """`finish` or `abort` (§4.2): heartbeat-shaped, told apart by their `batch` key. `id` is what
    a `finish` is acked or failed with; `commit` is true for a committer's finish."""

    op: str
    id: Any
    tx: Tx
    commit: bool = False


class BatchInit(NamedTuple):
    """`batch_init` (§4.3, task 0): propose the metadata of txid `txid`."""

    txid: int
    prev_meta: Any


class BatchEmit(NamedTuple):
    """`batch_emit` (§4.3, every task): emit this task's share of the attempt `tx`."""

    tx: Tx
    meta: Any
    task_meta: Any
    prev_task_meta: Any
    committed: int
    replay: bool


class BatchCommit(NamedTuple):
    """`batch_commit` (§4.3, every task): the attempt `tx` is in its commit phase."""

    tx: Tx


BatchMessage = TxTuple | BatchControl | BatchInit | BatchEmit | BatchCommit


def _tx(value: Any) -> Tx:
    if type(value) is not dict:
        raise ProtocolError("`tx` is not an object", repr(value).encode())
    txid, attempt = value.get("txid"), value.get("attempt")
    if type(txid) is not int or type(attempt) is not int:
        raise ProtocolError("`tx` needs integer `txid` and `attempt`", repr(value).encode())
    return Tx(txid, attempt)


def batch_host_message(
    value: Any, tuple_type: type[TupleMessage] = TupleMessage
) -> HostMessage | BatchMessage:
    """One parsed JSON value from a batch/1 host -> its typed message (ProtocolError if it is
    malformed). The `batch` key is tested before anything else: a `finish` is heartbeat-shaped,
    and must never be taken for a heartbeat (§4.2)."""
    if type(value) is dict:
        control = value.get("batch")
        if control is not None and "tuple" in value:
            if type(control) is not dict or control.get("op") not in ("finish", "abort"):
                raise ProtocolError("unknown `batch` control message", repr(value).encode())
            return BatchControl(
                control["op"], value.get("id"), _tx(control), control.get("commit") is True
            )
        if "tx" in value and "tuple" in value:
            tup = tuple_type._make(
                (
                    value.get("id"),
                    value.get("comp"),
                    value.get("stream", DEFAULT_STREAM),
                    value.get("task"),
                    value["tuple"],
                )
            )
            return TxTuple(tup, _tx(value["tx"]))
        command = value.get("command")
        try:
            if command == "batch_init":
                return BatchInit(value["txid"], value.get("prev_meta"))
            if command == "batch_emit":
                return BatchEmit(
                    _tx(value["tx"]),
                    value.get("meta"),
                    value.get("task_meta"),
                    value.get("prev_task_meta"),
                    value.get("committed", 0),
                    value.get("replay") is True,
                )
            if command == "batch_commit":
                return BatchCommit(_tx(value["tx"]))
        except KeyError as exc:
            raise ProtocolError(f"`{command}` without {exc}", repr(value).encode()) from None
    return host_message(value, tuple_type)


class BatchHostDecoder(HostDecoder):
    """`feed(bytes) -> [message, ...]` for a batch/1 client: the base decoder's messages plus the
    batch ones above. Same error contract as HostDecoder: a bad message raises ProtocolError with
    the messages before it in `decoded`, and the next `feed` (even `feed(b"")`) returns the ones
    after it. Parses message by message: batch traffic is not the plain data path."""

    __slots__ = ()

    def __init__(
        self, max_frame: int = DEFAULT_MAX_FRAME, tuple_type: type[TupleMessage] = TupleMessage
    ):
        super().__init__(max_frame, tuple_type)

    def feed(self, data: bytes) -> list[Any]:
        payloads, self._backlog = self._backlog, []
        if data:
            try:
                payloads = payloads + self.framer.feed(data)
            except ProtocolError as exc:  # frame limit: hand over what came before it
                decoded = self._decode(payloads + exc.decoded)
                raise ProtocolError(exc.reason, exc.raw, decoded) from None
        return self._decode(payloads)

    def _decode(self, payloads: list[bytes]) -> list[Any]:
        out: list[Any] = []
        for i, payload in enumerate(payloads):
            try:
                out.append(batch_host_message(loads(payload), self._tuple_type))
            except (ValueError, ProtocolError) as exc:  # ProtocolError is a ValueError
                self._backlog = payloads[i + 1 :]
                reason = (
                    exc.reason if isinstance(exc, ProtocolError) else "invalid JSON from the host"
                )
                raise ProtocolError(reason, payload, out) from None
        return out
