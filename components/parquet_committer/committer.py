"""The Parquet committer component (see the package docstring): collects an attempt's tuples and,
in the commit phase, writes the txid's file unless it is there already."""

from __future__ import annotations

import os
from typing import Any

from components.fault_seam import AfterAck, crash_at, from_env
from multilang import DEBUG, WARN, Tuple
from multilang.batch import Batch, Committer

from .config import PREFIX, from_conf
from .writer import part_name, remove_temporaries, write_batch


class ParquetCommitter(Committer):
    def initialize(self, conf: dict[str, Any], context: dict[str, Any]) -> None:
        self.config = from_conf(conf, context)
        self.fault = from_env()
        self.after_ack = AfterAck(self.fault)
        self.warned: set[str] = set()
        os.makedirs(self.config.directory, exist_ok=True)
        for name in remove_temporaries(self.config.directory):
            self.log(f"removed {name}, left by an earlier run", DEBUG)

    def begin(self, batch: Batch) -> None:
        self.after_ack.fire_if_armed(self.flush)
        batch.tuples = []

    def process(self, tup: Tuple, batch: Batch) -> None:
        self.after_ack.fire_if_armed(self.flush)
        batch.tuples.append(tup.values)

    def process_tick(self, tup: Tuple) -> None:
        self.after_ack.fire_if_armed(self.flush)

    def finish_batch(self, batch: Batch) -> None:
        self.after_ack.fire_if_armed(self.flush)
        txid, attempt = batch.tx
        written = write_batch(
            self.config.directory,
            txid,
            attempt,
            self.config.fields,
            batch.tuples,
            self.config.types,
            self.config.compression,
            self._mixed,
            before_write=lambda: crash_at(self.fault, "before_write", txid, attempt),
        )
        if written:
            crash_at(self.fault, "after_commit", txid, attempt)
        else:
            self.log(f"{part_name(txid)} is there already: skipped (attempt {attempt})", DEBUG)
        self.after_ack.arm(txid, attempt)  # its ack goes out when this returns

    def _mixed(self, name: str) -> None:
        if name not in self.warned:
            self.warned.add(name)
            self.log(
                f"column {name!r} mixes value types: written as strings (set "
                f"{PREFIX}schema to fix its type)",
                WARN,
            )


def main() -> None:
    ParquetCommitter().run()
