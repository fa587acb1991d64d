"""Driving one batch/1 component over its pipes (docs/transactional.md §4): the handshake
context of a batch component, and the batch messages as raw JSON frames for `ComponentPeer`."""

from __future__ import annotations

import json
from typing import Any

from host.testing import ComponentPeer, make_context
from multilang.messages import Ack, Fail, Sync


def batch_context(role: str, committed: int = 0, **kwargs: Any) -> dict[str, Any]:
    """`make_context(**kwargs)` with `context.batch` (§4.1)."""
    context = make_context(**kwargs)
    context["batch"] = {
        "protocol": 1,
        "role": role,
        "transactional_id": "test",
        "committed_txid": committed,
    }
    return context


def send(peer: ComponentPeer, message: dict[str, Any]) -> None:
    peer.send_raw(json.dumps(message).encode() + b"\nend\n")


def tx_tuple(peer: ComponentPeer, id: str, values: list[Any], txid: int, attempt: int = 1) -> None:
    """A tuple of the attempt (§4.2)."""
    send(
        peer,
        {
            "id": id,
            "comp": "spout",
            "stream": "default",
            "task": 1,
            "tuple": values,
            "tx": {"txid": txid, "attempt": attempt},
        },
    )


def finish(peer: ComponentPeer, id: str, txid: int, attempt: int = 1, commit: bool = True) -> None:
    control = {"op": "finish", "txid": txid, "attempt": attempt, "commit": commit}
    send(
        peer,
        {
            "id": id,
            "comp": None,
            "stream": "__heartbeat",
            "task": -1,
            "tuple": [],
            "batch": control,
        },
    )


def abort(peer: ComponentPeer, txid: int, attempt: int) -> None:
    control = {"op": "abort", "txid": txid, "attempt": attempt}
    send(
        peer,
        {
            "id": "",
            "comp": None,
            "stream": "__heartbeat",
            "task": -1,
            "tuple": [],
            "batch": control,
        },
    )


def answers(peer: ComponentPeer, n: int, timeout: float = 10) -> list[tuple[str, str]]:
    """The next `n` acks or fails, as (kind, id); logs and other messages in between skipped."""
    out: list[tuple[str, str]] = []
    while len(out) < n:
        msg = peer.read(timeout)
        if isinstance(msg, Ack):
            out.append(("ack", msg.id))
        elif isinstance(msg, Fail):
            out.append(("fail", msg.id))
    return out


def until_sync(peer: ComponentPeer, timeout: float = 10) -> list[Any]:
    """Messages up to (without) the next `sync`."""
    return peer.read_until(Sync, timeout)[:-1]


def batch_init(peer: ComponentPeer, txid: int, prev_meta: Any) -> None:
    send(peer, {"command": "batch_init", "id": "", "txid": txid, "prev_meta": prev_meta})


def batch_emit(
    peer: ComponentPeer,
    txid: int,
    attempt: int,
    meta: Any,
    task_meta: Any = None,
    prev_task_meta: Any = None,
    committed: int = 0,
) -> None:
    send(
        peer,
        {
            "command": "batch_emit",
            "id": "",
            "tx": {"txid": txid, "attempt": attempt},
            "meta": meta,
            "task_meta": task_meta,
            "prev_task_meta": prev_task_meta,
            "committed": committed,
            "replay": task_meta is not None,
        },
    )


def batch_commit(peer: ComponentPeer, txid: int, attempt: int) -> None:
    send(peer, {"command": "batch_commit", "id": "", "tx": {"txid": txid, "attempt": attempt}})
