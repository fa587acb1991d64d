"""What the batch layer writes (docs/transactional.md §4), and how it marks a batch tuple in the
runtime's in-flight tables (`BatchTag`). Pure: bytes in, bytes out."""

from __future__ import annotations

from typing import Any

from host.batch.tracker import Attempt
from multilang.codec import dumps, frame

INIT, EMIT, COMMIT = "batch_init", "batch_emit", "batch_commit"


class BatchTag(tuple):
    """What a batch tuple's in-flight entry holds where a tracked tuple holds its spout tuples'
    roots: an empty tuple (so the acker's paths take it for an untracked tuple and do nothing)
    that says which attempt the tuple belongs to. One per attempt for its tuples, one per
    `finish` written (`finish` set: its ack finishes the task)."""

    attempt: Attempt
    finish: bool

    def __new__(cls, attempt: Attempt, finish: bool = False) -> BatchTag:
        tag = super().__new__(cls)
        tag.attempt = attempt
        tag.finish = finish
        return tag


def tx_json(a: Attempt) -> bytes:
    return b'"tx":{"txid":%d,"attempt":%d}' % (a.txid, a.number)


def tx_tuple(prefix: bytes, values: bytes, tuple_id: int, tx: bytes) -> bytes:
    """An input tuple for a batch-aware bolt: the JSON serializer's tuple (a cached prefix, the
    values, the id) with the attempt's `tx` key (§4.2)."""
    return b'%b%b,"id":"%d",%b}\nend\n' % (prefix, values, tuple_id, tx)


def finish(tuple_id: int, a: Attempt, commit: bool) -> bytes:
    """`finish`, heartbeat-shaped (§4.2): answered by an ack of `tuple_id`."""
    return (
        b'{"id":"%d","comp":null,"stream":"__heartbeat","task":-1,"tuple":[],'
        b'"batch":{"op":"finish","txid":%d,"attempt":%d,"commit":%b}}\nend\n'
        % (tuple_id, a.txid, a.number, b"true" if commit else b"false")
    )


def abort(tuple_id: int, a: Attempt) -> bytes:
    """`abort`, heartbeat-shaped (§4.2): not answered."""
    return (
        b'{"id":"%d","comp":null,"stream":"__heartbeat","task":-1,"tuple":[],'
        b'"batch":{"op":"abort","txid":%d,"attempt":%d}}\nend\n' % (tuple_id, a.txid, a.number)
    )


def batch_init(txid: int, prev_meta: Any) -> bytes:
    return frame(dumps({"command": INIT, "id": "", "txid": txid, "prev_meta": prev_meta}))


def batch_emit(a: Attempt, task_meta: Any, prev_task_meta: Any, committed: int) -> bytes:
    return frame(
        dumps(
            {
                "command": EMIT,
                "id": "",
                "tx": {"txid": a.txid, "attempt": a.number},
                "meta": a.meta,
                "task_meta": task_meta,
                "prev_task_meta": prev_task_meta,
                "committed": committed,
                "replay": a.replay,
            }
        )
    )


def batch_commit(a: Attempt) -> bytes:
    return frame(dumps({"command": COMMIT, "id": "", "tx": {"txid": a.txid, "attempt": a.number}}))
