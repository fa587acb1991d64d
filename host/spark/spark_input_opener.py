"""The Spark spout's DataFrame or directory input beside other spouts (docs/spark.md §4.9): each
txid's share of it chosen in the driver by the stager (host/spark/staged_spouts.py), as a batch
spout's coordinator is asked for its metadata, and read in the executors by the staged source
(host/spark/staged_source.py) with the spout's own reading.

    opener = SparkInputOpener(topology, "rows", checkpoint, state_root)
    opener.prepare(spark, committed_txid)   # stages a DataFrame input; its state in step
    opener.has_new(txid)                    # whether txid would hold files
    opener.open(txid)                       # txid's files (maybe none) stored; always True
    opener.committed(txid)

Unlike a coordinator it never holds a txid back: a txid it has nothing new for holds none of its
rows (an idle share that keeps the position of the one before), so the plain spouts beside it
are never kept waiting by a finished DataFrame. Its state is host local's layout for a batch
spout (host/batch/store.py), in the directory of its own that batch spouts beside others get
(`sources/<spout id>/`): a txid's files are stored before the txid is staged, so a txid opened
before a driver died is opened again with the same files.
"""

from __future__ import annotations

import base64
import pickle
from typing import Any

from host.batch.store import BatchStore
from host.spark.batch_opener import source_root
from host.spark.source import meta_record
from host.spark.spark_input import idle_meta
from host.spark.spark_input_source import SparkInput, next_meta
from host.topology import settings as cfg
from host.topology.model import Topology


class SparkInputOpener:
    def __init__(self, topology: Topology, spout: str, checkpoint: str, state_root: str) -> None:
        self.spout = spout
        self.root = source_root(state_root, spout, alone=False)
        self.input = SparkInput(topology, spout, checkpoint, self.root)
        self.max_rows = cfg.settings_for(topology).spark_batch_max_tuples
        self._peeked: tuple[int, dict[str, Any]] | None = None

    def prepare(self, spark: Any, committed: int) -> None:
        """Before the stager starts: a DataFrame input staged (once), the state directory made
        and its currtx moved up to the engine's `committed` txid."""
        self.input.stage_dataframe(spark)
        store = BatchStore(self.root)
        if store.currtx() <= committed:
            store.committed(committed)

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
        self._peeked = None
        return True

    def committed(self, txid: int) -> None:
        BatchStore(self.root).committed(txid)

    def close(self) -> None:
        """Nothing runs for this input in the driver."""

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
        meta = next_meta(self.input.spec, self.input.staging, self._prev(txid), self.max_rows)
        if meta is not None:
            self._peeked = (txid, meta)
        return meta
