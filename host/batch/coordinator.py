"""Which txids are open, in what phase, and what happens on a failure: the host's port of Storm's
`TransactionalSpoutCoordinator` (`sync`, `ack`, `fail`; docs/transactional.md §2).

Pure, apart from the store it is given: at most `max_open` attempts are open; only the lowest open
txid may commit; a failure drops that txid and every later open one, to be opened again with the
stored metadata and the next attempt number. A txid's metadata and attempt number are stored
before the attempt is returned to be emitted, so a host that restarts replays the same batches.
"""

from __future__ import annotations

from typing import Any, Protocol

from host.batch.tracker import Attempt, Phase


class Store(Protocol):
    def currtx(self) -> int: ...
    def metas(self) -> dict[int, dict[str, Any]]: ...
    def put_meta(self, txid: int, meta: Any, attempt: int) -> None: ...
    def committed(self, txid: int) -> None: ...
    def forget_from(self, txid: int) -> None: ...


class Coordinator:
    def __init__(self, store: Store, max_open: int) -> None:
        self.store = store
        self.max_open = max(1, max_open)
        self.currtx = store.currtx()  # the lowest txid not committed
        records = store.metas()
        # txid -> (metadata, last attempt number) for the last committed txid and every later one
        # stored: the stored ones are replayed before any new batch is asked for
        self.stored: dict[int, tuple[Any, int]] = {
            t: (r.get("meta"), int(r.get("attempt", 0)))
            for t, r in records.items()
            if t >= self.currtx - 1
        }
        self.next_txid = self.currtx  # the next txid to open
        self.open: dict[int, Attempt] = {}  # txid -> its attempt, ascending
        self.committed_count = 0
        self.aborted_count = 0

    @property
    def committed_txid(self) -> int:
        return self.currtx - 1

    def room(self) -> bool:
        return len(self.open) < self.max_open

    def replay_due(self) -> bool:
        """The next txid to open was emitted before: it is opened from its stored metadata."""
        return self.next_txid in self.stored and self.next_txid >= self.currtx

    def prev_meta(self, txid: int) -> Any:
        record = self.stored.get(txid - 1)
        return None if record is None else record[0]

    def open_next(self, now: float, meta: Any = None, txid: int | None = None) -> Attempt:
        """Open the next txid: a replay from its stored metadata, or a new batch with `meta`
        (from the spout's `batch_init`; `txid`, when the source numbers its batches, is at least
        the proposed one, and the txids skipped are never opened)."""
        replay = self.replay_due()
        if replay:
            txid = self.next_txid
            meta, last = self.stored[txid]
            number = last + 1
        else:
            if txid is None or txid < self.next_txid:
                txid = self.next_txid
            elif txid > self.next_txid:
                self.store.forget_from(self.next_txid)
                for t in [t for t in self.stored if t >= self.next_txid]:
                    del self.stored[t]
            number = 1
        self.store.put_meta(txid, meta, number)  # durable before any tuple of it is emitted
        self.stored[txid] = (meta, number)
        attempt = Attempt(txid, number, meta, replay, now)
        self.open[txid] = attempt
        self.next_txid = txid + 1
        return attempt

    def to_commit(self) -> Attempt | None:
        """The lowest open attempt, if it is processed and nothing before it is uncommitted."""
        if not self.open:
            return None
        txid = next(iter(self.open))
        a = self.open[txid]
        if a.phase is Phase.PROCESSED and (txid == self.currtx or self._skipped_below(txid)):
            return a
        return None

    def _skipped_below(self, txid: int) -> bool:
        """Txids below `txid` were skipped by a source that numbers its batches (never opened,
        never to be): `txid` is next in line."""
        return all(t not in self.stored for t in range(self.currtx, txid))

    def committed(self, a: Attempt) -> None:
        self.store.committed(a.txid)
        del self.open[a.txid]
        self.currtx = a.txid + 1
        self.committed_count += 1
        for t in [t for t in self.stored if t < a.txid]:
            del self.stored[t]

    def fail(self, a: Attempt) -> list[Attempt]:
        """`a` failed: it and every later open attempt are aborted (returned, lowest first) and
        their txids will be opened again in order. An attempt already dropped is ignored."""
        if a.dead or self.open.get(a.txid) is not a:
            return []
        aborted = [x for t, x in self.open.items() if t >= a.txid]
        for x in aborted:
            x.dead = True
            del self.open[x.txid]
        self.next_txid = a.txid
        self.aborted_count += len(aborted)
        return aborted
