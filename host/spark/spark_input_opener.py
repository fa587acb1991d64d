"""The Spark spout's input beside other spouts (docs/spark.md §4.9): each txid's share of it
chosen in the driver by the stager (host/spark/staged_spouts.py), as a batch spout's coordinator
is asked for its metadata, and read in the executors by the staged source
(host/spark/staged_source.py) with the spout's own reading. A DataFrame's share is its next
staged files, a directory input's its next complete output directory, a streaming input's its
next micro-batches as the relay query staged them (host/spark/stream_relay.py).

    opener = SparkInputOpener(topology, "rows", checkpoint, state_root, trigger_secs=1.0)
    opener.prepare(spark, committed_txid)   # stages a DataFrame input, starts a streaming
                                            # input's relay; its state in step
    opener.has_new(txid)                    # whether txid would hold files
    opener.open(txid)                       # txid's files (maybe none) stored; always True
    opener.committed(txid)

Unlike a coordinator it never holds a txid back: a txid it has nothing new for holds none of its
rows (an idle share that keeps the position of the one before), so the plain spouts beside it
are never kept waiting by a finished DataFrame or a quiet stream. Its state is host local's
layout for a batch spout (host/batch/store.py), in the directory of its own that batch spouts
beside others get (`sources/<spout id>/`): a txid's files are stored before the txid is staged,
so a txid opened before a driver died is opened again with the same files.
"""

from __future__ import annotations

import base64
import logging
import pickle
from typing import Any

from host.batch.store import BatchStore
from host.spark.batch_opener import source_root
from host.spark.source import meta_record
from host.spark.spark_input import DATAFRAME, idle_meta
from host.spark.spark_input_source import SparkInput, next_meta
from host.spark.stream_relay import StreamRelay, relay_share
from host.topology import settings as cfg
from host.topology.model import Topology

log = logging.getLogger(__name__)


# a relay query that stops by itself (an error in its micro-batch: Spark then ends the query) is
# started again from its checkpoint this many times in a row without a new staged micro-batch
RELAY_RESTARTS = 3


class SparkInputOpener:
    def __init__(
        self,
        topology: Topology,
        spout: str,
        checkpoint: str,
        state_root: str,
        *,
        trigger_secs: float = 1.0,
    ) -> None:
        self.spout = spout
        self.root = source_root(state_root, spout, alone=False)
        self.input = SparkInput(topology, spout, checkpoint, self.root)
        self.max_rows = cfg.settings_for(topology).spark_batch_max_tuples
        self.relay = (
            StreamRelay(self.input, checkpoint, trigger_secs) if self.input.streaming else None
        )
        self._spark: Any = None
        self._relay_restarts = 0
        self._relay_seen: tuple[int, int] | None = None  # the newest staged B, when last looked
        self._peeked: tuple[int, dict[str, Any]] | None = None

    def prepare(self, spark: Any, committed: int) -> None:
        """Before the stager starts: a DataFrame input staged (once), a streaming input's relay
        started, the state directory made and its currtx moved up to the engine's `committed`
        txid."""
        self.input.stage_dataframe(spark)
        store = BatchStore(self.root)
        if store.currtx() <= committed:
            store.committed(committed)
        if self.relay is not None:
            # what the committed txids hold is not staged again; what the txids opened before a
            # restart hold stays staged for their replay
            currtx = store.currtx()
            self.relay.committed(_end(self._prev(currtx)))
            self.relay.opened(_end(self._prev(currtx + _opened_ahead(self.root, currtx))))
            self._spark = spark
            self.relay.start(spark)

    def option(self) -> list[str]:
        """This input in the staged source's `inputs` option: (spout, state directory, its
        settings, pickled)."""
        spec = base64.b64encode(pickle.dumps(self.input.spec)).decode("ascii")
        return [self.spout, self.root, spec]

    def has_new(self, txid: int) -> bool:
        """Whether txid holds rows of this input: opened already, or files are waiting."""
        if meta_record(self.root, txid) is not None:
            return True
        return self._next(txid) is not None

    def open(self, txid: int) -> bool:
        """Store txid's share: the next files, or none (an idle share). Kept when stored
        already. Always True: the others never wait for this input."""
        if meta_record(self.root, txid) is None:
            meta = self._next(txid)
            if meta is None:
                meta = idle_meta(self._prev(txid), self.input.spec.source)
            BatchStore(self.root).put_meta(txid, meta, 0)
        if self.relay is not None:
            self.relay.opened(_end(self._prev(txid + 1)))
        self._peeked = None
        return True

    def committed(self, txid: int) -> None:
        BatchStore(self.root).committed(txid)
        if self.relay is not None:
            self.relay.committed(_end(self._prev(txid + 1)))

    def close(self) -> None:
        """A streaming input's relay query stops; nothing else runs for an input in the driver."""
        if self.relay is not None:
            self.relay.close()

    def _prev(self, txid: int) -> Any:
        """The share of the txid before (kept after its commit: host/batch/store.py)."""
        record = meta_record(self.root, txid - 1) if txid > 1 else None
        return None if record is None else record.get("meta")

    def _next(self, txid: int) -> dict[str, Any] | None:
        """txid's files, None while there are none; what `has_new` found is kept for `open`
        (nothing is: a directory not complete yet may be by the next look)."""
        peeked = self._peeked
        if peeked is not None and peeked[0] == txid:
            return peeked[1]
        if self.relay is not None:
            meta = self._next_relayed(txid)
        else:
            meta = next_meta(self.input.spec, self.input.staging, self._prev(txid), self.max_rows)
        if meta is not None:
            self._peeked = (txid, meta)
        return meta

    def _next_relayed(self, txid: int) -> dict[str, Any] | None:
        """A streaming input's share of txid: the next micro-batches the relay staged, read as a
        staged DataFrame's files are; None while the next one is not staged."""
        relay = self.relay
        assert relay is not None
        batches = relay.staged_batches()
        self._watch_relay(batches)
        chosen = relay_share(batches, _end(self._prev(txid)), self.max_rows)
        if not chosen:
            return None
        rows = dict(batches)
        return {
            "input": DATAFRAME,  # parquet with the spout's fields, as a staged DataFrame's
            "relayed": chosen,
            "files": relay.files(chosen),
            "rows": sum(rows[b] for b in chosen),
            "end": chosen[-1] + 1,
        }

    def _watch_relay(self, batches: list[tuple[int, int]]) -> None:
        """A relay query that stopped by itself is started again from its checkpoint; after
        RELAY_RESTARTS in a row with no new staged micro-batch between them, the stager fails
        with the reason (and the engine ends the run: engine.py `_await`)."""
        relay = self.relay
        assert relay is not None
        newest = batches[-1] if batches else None
        if newest != self._relay_seen:
            self._relay_seen, self._relay_restarts = newest, 0
        why = relay.failure()
        if why is None:
            return
        if self._relay_restarts >= RELAY_RESTARTS:
            raise RuntimeError(f"{relay.name} failed {RELAY_RESTARTS + 1} times in a row: {why}")
        self._relay_restarts += 1
        log.warning("%s stopped (%s); starting it again from its checkpoint", relay.name, why)
        relay.start(self._spark)


def _end(meta: Any) -> int:
    """The first relayed micro-batch a share (or the share before it) leaves for later."""
    return int(meta.get("end", 0)) if isinstance(meta, dict) else 0


def _opened_ahead(root: str, currtx: int) -> int:
    """How many txids from `currtx` on have a stored share (opened before a restart)."""
    n = 0
    while meta_record(root, currtx + n) is not None:
        n += 1
    return n
