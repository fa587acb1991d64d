"""The partitioned transactional file spout (see the package docstring): each file a partition,
each batch of a partition a stored byte range of whole lines."""

from __future__ import annotations

from typing import Any

from multilang import DEBUG
from multilang.batch import PartitionedTransactionalSpout, Tx

from .config import check_fields, from_conf
from .partition import Meta, new_batch, replay_batch, rows


class TransactionalFileSpout(PartitionedTransactionalSpout):
    def open(self, conf: dict[str, Any], context: dict[str, Any]) -> None:
        check_fields(context)
        self.config = from_conf(conf)
        self.log(
            f"reading {len(self.config.files)} file(s) in batches of up to "
            f"{self.config.batch_lines} lines",
            DEBUG,
        )

    def partitions(self) -> int:
        return len(self.config.files)

    def emit_new(self, tx: Tx, partition: int, last_meta: Meta | None) -> Meta:
        batch, meta = new_batch(self.config.files[partition], last_meta, self.config.batch_lines)
        for values in rows(meta, batch):
            self.emit(values)
        return meta

    def emit_again(self, tx: Tx, partition: int, meta: Meta) -> None:
        for values in rows(meta, replay_batch(meta)):
            self.emit(values)


def main() -> None:
    TransactionalFileSpout().run()
