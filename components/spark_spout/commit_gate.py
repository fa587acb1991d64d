"""The hand-over between Spark's foreachBatch thread and the protocol loop of the transactional
Spark spout (transactional.py; docs/transactional.md §4.3 and the package docstring).

Two threads meet here and nowhere else:

- Spark's thread (foreachBatch) stages micro-batch N, **offers** it as txid N+1 and blocks until
  that txid is **released**;
- the protocol loop (the main thread, the only writer to the host) hands the offered batch to the
  host when `batch_init` asks (`proposal`) and releases txids as it learns they were committed:
  `batch_commit` for a txid, `committed` in `batch_emit`, the handshake's `committed_txid`.

A txid is released at its `batch_commit`, before the host writes `currtx`: Spark may then commit
the micro-batch to its own log. Should the host die in between, it replays the txid from the
staged rows (their staging is deleted only once the commit is durable, which the spout learns
later), and the sink skips what it already applied. One lock, one condition; nothing here does
I/O, so both sides hold the lock only for a few assignments.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any

from .segments import Stopped


@dataclass(frozen=True)
class StagedBatch:
    """A micro-batch staged as parquet: Spark's batch id, where it is staged, how many rows."""

    spark_batch_id: int
    staging: str
    rows: int

    @property
    def txid(self) -> int:
        """Storm's txids start at 1, Spark's batch ids at 0."""
        return self.spark_batch_id + 1

    def meta(self) -> dict[str, Any]:
        """The batch's metadata as the host stores it (and hands back in `batch_emit`)."""
        return {"spark_batch_id": self.spark_batch_id, "staging": self.staging, "rows": self.rows}


class CommitGate:
    def __init__(self, released: int = 0) -> None:
        self._cond = threading.Condition()
        self._released = released  # every txid up to this one may be committed by Spark
        self._offered: StagedBatch | None = None  # staged, waiting for the host to commit it
        self._stopped = False

    # ---- Spark's thread -------------------------------------------------------------------------
    def is_released(self, txid: int) -> bool:
        with self._cond:
            return txid <= self._released

    def offer_and_wait(self, batch: StagedBatch) -> None:
        """Offer `batch` to the host and return once its txid is released; Stopped when the
        spout closes first (Spark then does not commit the micro-batch, and replays it)."""
        with self._cond:
            if batch.txid <= self._released:
                return
            self._offered = batch
            try:
                while batch.txid > self._released:
                    if self._stopped:
                        raise Stopped("the spout is closing")
                    self._cond.wait()
            finally:
                if self._offered is batch:
                    self._offered = None

    # ---- the protocol loop ----------------------------------------------------------------------
    def proposal(self, txid: int) -> StagedBatch | None:
        """The batch to answer `batch_init` for `txid` with: the offered one when its txid is
        `txid` or later (a source that numbers its batches may skip txids, §4.3). None when
        nothing is offered, or when the offered txid is below `txid`: the host opened it already
        (the attempt is under way, or the host replays it from its stored metadata)."""
        with self._cond:
            batch = self._offered
            if batch is None or batch.txid < txid or batch.txid <= self._released:
                return None
            return batch

    def offered(self) -> StagedBatch | None:
        with self._cond:
            return self._offered

    def release(self, txid: int) -> None:
        """Every txid up to `txid` is committed (or in its commit phase): Spark may go on."""
        with self._cond:
            if txid > self._released:
                self._released = txid
                self._cond.notify_all()

    @property
    def released(self) -> int:
        with self._cond:
            return self._released

    def stop(self) -> None:
        """The spout is closing: a waiting foreachBatch raises Stopped."""
        with self._cond:
            self._stopped = True
            self._cond.notify_all()
