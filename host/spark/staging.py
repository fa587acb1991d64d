"""The staging directory of the plain spouts on Spark: its layout and its durable file I/O
(docs/spark.md §4.6, §4.9). The driver writes it (host/spark/staged_spouts.py), the executors
read it (host/spark/staged_source.py); no pyspark here.

    <checkpoint>/staged/                 STAGED_SUBDIR: the staging root
        <txid>/                          one complete staged batch (a micro-batch)
            manifest.json                {"txid": T, "tasks": [task id, ...], "tuples": [n, ...]}
            <index>.rows                 spout task `index`'s share (partition index = task index)
        .tmp-<txid>-<hex>/               a batch being written: renamed to <txid>/ once whole
        idle-after-<txid>                an idle micro-batch (no txid) wanted after txid

A rows file holds one line per emit (`encode_row`): the stream as JSON, the direct task (or
nothing), the message id as compact JSON (or nothing), the values as compact JSON, tab-separated.
Every file and directory is fsynced before the rename, and the root after it, so a driver killed
at any moment leaves the whole batch or none; a leftover `.tmp-` directory was never handed over.
"""

from __future__ import annotations

import json
import os
import shutil
import uuid
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from components.files import fsync_dir, write_durably
from host.errors import TopologyError
from host.spark.shared_checkpoint import unshared_reason
from host.spark.source_rows import SourceRow, row_values_text, source_rows
from multilang.messages import Emit

STAGED_SUBDIR = "staged"  # <checkpoint>/staged/<txid>/
MANIFEST = "manifest.json"
ROWS = "{index}.rows"
TMP_PREFIX = ".tmp-"


def staged_path(staged_root: str, txid: int) -> str:
    return os.path.join(staged_root, str(txid))


def staged_txids(staged_root: str) -> list[int]:
    """The txids with a complete staged batch, ascending."""
    try:
        names = os.listdir(staged_root)
    except FileNotFoundError:
        return []
    return sorted(int(n) for n in names if n.isdigit())


def read_manifest(staged_root: str, txid: int) -> dict[str, Any] | None:
    try:
        with open(os.path.join(staged_path(staged_root, txid), MANIFEST), "rb") as f:
            manifest: dict[str, Any] = json.loads(f.read())
            return manifest
    except FileNotFoundError:
        return None


def write_staged(
    staged_root: str, txid: int, tasks: Sequence[int], rows: Sequence[Sequence[bytes]]
) -> None:
    """Stage txid's batch: `rows[i]` (encoded lines, see `encode_row`) is spout task i's share.
    Every file is fsynced in a temporary directory, which is then renamed into place and the
    staging directory fsynced: a driver killed at any moment leaves the whole batch or none."""
    os.makedirs(staged_root, exist_ok=True)
    tmp = os.path.join(staged_root, f"{TMP_PREFIX}{txid}-{uuid.uuid4().hex}")
    os.mkdir(tmp)
    try:
        for index, lines in enumerate(rows):
            write_durably(os.path.join(tmp, ROWS.format(index=index)), b"".join(lines))
        manifest = {"txid": txid, "tasks": list(tasks), "tuples": [len(r) for r in rows]}
        write_durably(os.path.join(tmp, MANIFEST), json.dumps(manifest).encode())
        fsync_dir(tmp)
        os.rename(tmp, staged_path(staged_root, txid))
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    fsync_dir(staged_root)


def delete_staged(staged_root: str, txid: int) -> None:
    shutil.rmtree(staged_path(staged_root, txid), ignore_errors=True)


# An idle micro-batch that holds no txid, beside batch spouts (docs/spark.md §2.4): the stager (in
# the driver) asks for one with a marker file, the staged source's `latestOffset` (in Spark's
# Python worker for the query) sees it, and the engine removes it as the micro-batch runs. Not
# fsynced: a request lost with a dead driver costs one idle micro-batch, which the next period
# asks for again.
IDLE_PREFIX = "idle-after-"


def request_idle(staged_root: str, txid: int) -> None:
    """Ask for an idle micro-batch after txid (the last one opened)."""
    os.makedirs(staged_root, exist_ok=True)
    with open(os.path.join(staged_root, f"{IDLE_PREFIX}{txid}"), "wb"):
        pass


def idle_requested(staged_root: str, txid: int) -> bool:
    """Whether an idle micro-batch is wanted after txid."""
    return os.path.exists(os.path.join(staged_root, f"{IDLE_PREFIX}{txid}"))


def clear_idle_requests(staged_root: str) -> None:
    """Remove every idle request (it ran, a txid came first, or a new run starts)."""
    try:
        names = os.listdir(staged_root)
    except FileNotFoundError:
        return
    for name in names:
        if name.startswith(IDLE_PREFIX):
            try:
                os.unlink(os.path.join(staged_root, name))
            except FileNotFoundError:
                pass


def id_key(msg_id: Any) -> str:
    """A message id as compact JSON: how staged rows hold it and how re-emits are matched."""
    return json.dumps(msg_id, separators=(",", ":"), sort_keys=True)


def encode_row(m: Emit) -> bytes:
    """One emit as a staged line: the stream as JSON, the direct task (or nothing), the message
    id as JSON (or nothing), the values as compact JSON, tab-separated (JSON text holds no raw
    tab or newline)."""
    values = row_values_text(m.values)  # a TypeError that says why for what JSON cannot hold
    try:
        msg_id = "" if m.id is None else id_key(m.id)
    except (TypeError, ValueError) as exc:
        raise TypeError(
            f"a message id that JSON cannot hold ({exc}): a plain spout's tuples are staged as JSON"
        ) from None
    direct = "" if m.task is None else str(m.task)
    return f"{json.dumps(m.stream)}\t{direct}\t{msg_id}\t{values}\n".encode()


def staged_ids(staged_root: str, txid: int) -> list[str]:
    """The message ids (as `id_key` text) of a staged batch's reliable tuples."""
    return [msg_id for _, msg_id in staged_task_ids(staged_root, txid)]


def staged_task_ids(staged_root: str, txid: int) -> list[tuple[int, str]]:
    """(task id, message id as `id_key` text) of a staged batch's reliable tuples."""
    manifest = read_manifest(staged_root, txid)
    out = []
    for index, task in enumerate(manifest["tasks"] if manifest else ()):
        path = os.path.join(staged_path(staged_root, txid), ROWS.format(index=index))
        with open(path, encoding="utf-8") as f:
            for line in f:
                msg_id = line.split("\t", 3)[2]
                if msg_id:
                    out.append((task, msg_id))
    return out


def read_rows(staged_root: str, txid: int, index: int, task: int) -> Iterator[SourceRow]:
    """Task `index`'s staged share of txid as the source's rows (host/spark/source_rows.py)."""
    path = os.path.join(staged_path(staged_root, txid), ROWS.format(index=index))
    try:
        f = open(path, encoding="utf-8")
    except FileNotFoundError:  # staged before the txid was handed to Spark: not where we look
        raise TopologyError(
            f"txid {txid}: no staged rows of spout task {task} at {path}"
            + unshared_reason(staged_root)
        ) from None
    with f:
        yield from source_rows(index, task, _staged_tuples(f))


def _staged_tuples(lines: Iterable[str]) -> Iterator[tuple[str, str, int | None]]:
    loads = json.loads
    for line in lines:
        stream, direct, _, values = line.rstrip("\n").split("\t", 3)
        yield (loads(stream), values, int(direct) if direct else None)
