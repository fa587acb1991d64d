"""The durable state of a transactional topology (docs/transactional.md §3): the lowest txid not
yet committed, each open txid's metadata and attempt number, and each spout task's own metadata,
under `<state dir>/transactional/<topology.transactional.id>/`, as Storm's
`RotatingTransactionalState` keeps them in ZooKeeper.

Every file is written whole to a temporary file, fsynced, renamed over the old one, and its
directory fsynced: a host killed at any moment leaves either the old file or the new one.
"""

from __future__ import annotations

import json
import os
from typing import Any

from components.files import write_atomically as write_bytes_atomically
from host.errors import TopologyError

_MISSING: Any = object()


def write_atomically(path: str, value: Any) -> None:
    """`value` as compact JSON at `path`, all or nothing (see the module's docstring)."""
    write_bytes_atomically(path, json.dumps(value, separators=(",", ":")).encode("utf-8"))


def _read(path: str, default: Any = _MISSING) -> Any:
    try:
        with open(path, "rb") as f:
            return json.loads(f.read())
    except FileNotFoundError:
        if default is _MISSING:
            raise
        return default
    except ValueError as exc:  # written atomically, so this is someone else's doing: say where
        raise TopologyError(
            f"the transactional state file {path} is not valid JSON: {exc}"
        ) from None


class BatchStore:
    """One transactional id's files. Reads happen at start-up; the rest are writes, each durable
    when the call returns. Task metadata is cached, as the host is its only writer."""

    def __init__(self, root: str) -> None:
        self.root = root
        self._coordinator = os.path.join(root, "coordinator")
        self._meta_dir = os.path.join(self._coordinator, "meta")
        self._user = os.path.join(root, "user")
        for d in (self._meta_dir, self._user):
            os.makedirs(d, exist_ok=True)
        self._task_metas: dict[int, dict[int, Any]] = {}  # task index -> txid -> metadata

    # -- start-up --------------------------------------------------------------------------------
    def currtx(self) -> int:
        """The lowest txid not committed yet (1 for a new state)."""
        value = _read(os.path.join(self._coordinator, "currtx"), 1)
        if type(value) is not int or value < 1:
            raise TopologyError(f"{self._coordinator}/currtx holds {value!r}, not a txid")
        return value

    def metas(self) -> dict[int, dict[str, Any]]:
        """txid -> {"meta": …, "attempt": n} for every stored txid."""
        out = {}
        for name in os.listdir(self._meta_dir):
            if name.endswith(".json") and name[:-5].isdigit():
                out[int(name[:-5])] = _read(os.path.join(self._meta_dir, name))
        return out

    def check_parallelism(self, spout: str, tasks: int) -> None:
        """Per-task metadata is kept by task index: resuming with another number of spout tasks
        would hand partitions to the wrong tasks, so it is refused while any is stored."""
        path = os.path.join(self._coordinator, "spout")
        stored = _read(path, None)
        if stored is not None and stored != tasks and any(os.scandir(self._user)):
            raise TopologyError(
                f"the transactional state in {self.root} was written by {stored} task(s) of "
                f"batch spout {spout!r}, and the topology now has {tasks}: per-task batch "
                "metadata cannot be handed to a different number of tasks. Keep the "
                "parallelism, or start from a new state directory (--state-dir)"
            )
        if stored != tasks:
            write_atomically(path, tasks)

    # -- while running ---------------------------------------------------------------------------
    def put_meta(self, txid: int, meta: Any, attempt: int) -> None:
        write_atomically(
            os.path.join(self._meta_dir, f"{txid}.json"), {"meta": meta, "attempt": attempt}
        )

    def put_task_meta(self, index: int, txid: int, meta: Any) -> None:
        directory = os.path.join(self._user, str(index))
        os.makedirs(directory, exist_ok=True)
        write_atomically(os.path.join(directory, f"{txid}.json"), meta)
        self._cached(index)[txid] = meta

    def task_meta(self, index: int, txid: int) -> Any:
        """What spout task `index` reported for `txid`, or None."""
        return self._cached(index).get(txid)

    def _cached(self, index: int) -> dict[int, Any]:
        cached = self._task_metas.get(index)
        if cached is None:
            cached = self._task_metas[index] = {}
            directory = os.path.join(self._user, str(index))
            if os.path.isdir(directory):
                for name in os.listdir(directory):
                    if name.endswith(".json") and name[:-5].isdigit():
                        cached[int(name[:-5])] = _read(os.path.join(directory, name))
        return cached

    def committed(self, txid: int) -> None:
        """`txid` is committed: the next to commit is txid + 1. Metadata below `txid` goes; the
        committed txid's own stays, as the next batch's `prev_meta` (Storm's `cleanupBefore`)."""
        write_atomically(os.path.join(self._coordinator, "currtx"), txid + 1)
        for entry in os.listdir(self._user):
            if entry.isdigit():
                self._cached(int(entry))  # tasks that reported nothing this run have files too
        for name in os.listdir(self._meta_dir):
            if name.endswith(".json") and name[:-5].isdigit() and int(name[:-5]) < txid:
                _unlink(os.path.join(self._meta_dir, name))
        for index, cached in self._task_metas.items():
            for old in [t for t in cached if t < txid]:
                del cached[old]
                _unlink(os.path.join(self._user, str(index), f"{old}.json"))

    def forget_from(self, txid: int) -> None:
        """Drop the stored metadata of `txid` and above (a source that numbers its own batches
        jumped ahead: those txids are never to be replayed)."""
        for name in os.listdir(self._meta_dir):
            if name.endswith(".json") and name[:-5].isdigit() and int(name[:-5]) >= txid:
                _unlink(os.path.join(self._meta_dir, name))


def _unlink(path: str) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
