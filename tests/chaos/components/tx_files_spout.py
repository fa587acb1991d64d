"""The ready file spout (components/transactional_files) with two crash seams of its own, planned
by TX_FAULTS (tx_faults.py), each fired once per schedule:

- `spout_half:T`: while emitting a partition's share of txid T, emit half its lines, write them
  out, then exit 137: the host got part of the batch and must abort and replay it whole;
- `spout_init:T`: task 0 exits 137 on the `batch_init` of txid T, before any metadata answer;
- `spout_commit:T`: a task exits 137 on the `batch_commit` of txid T, before its `sync`.

The seams are in this wrapper rather than in the ready component; the reading and the metadata are
the component's own (components/transactional_files/partition.py)."""

from __future__ import annotations

from typing import Any

from tx_faults import claim, die

from components.transactional_files.partition import Meta, new_batch, replay_batch, rows
from components.transactional_files.spout import TransactionalFileSpout
from multilang.batch import Tx


class ChaosFileSpout(TransactionalFileSpout):
    def _coordinate(self, txid: int, prev_meta: Any) -> Any:
        if claim("spout_init", txid):
            die("spout_init", txid, self.flush)
        return super()._coordinate(txid, prev_meta)

    def commit(self, tx: Tx) -> None:
        if claim("spout_commit", tx.txid):
            die("spout_commit", tx.txid, self.flush)

    def emit_new(self, tx: Tx, partition: int, last_meta: Meta | None) -> Meta:
        batch, meta = new_batch(self.config.files[partition], last_meta, self.config.batch_lines)
        self._emit_rows(tx, rows(meta, batch))
        return meta

    def emit_again(self, tx: Tx, partition: int, meta: Meta) -> None:
        self._emit_rows(tx, rows(meta, replay_batch(meta)))

    def _emit_rows(self, tx: Tx, values: list[list[Any]]) -> None:
        if values and claim("spout_half", tx.txid):
            for v in values[: len(values) // 2]:
                self.emit(v)
            die("spout_half", tx.txid, self.flush)
        for v in values:
            self.emit(v)


ChaosFileSpout().run()
