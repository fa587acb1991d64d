"""The SQLite committer component (see the package docstring): collects an attempt's tuples and,
in the commit phase, hands them to `SqliteStore.commit` (one transaction, skipped when the stored
txid is already at or past this one)."""

from __future__ import annotations

from typing import Any

from components.audit import content_hash
from components.fault_seam import AfterAck, Fault, crash_at, from_env
from multilang import DEBUG, Tuple
from multilang.batch import Batch, Committer

from .config import from_conf
from .store import SqliteStore


class SqliteCommitter(Committer):
    def initialize(self, conf: dict[str, Any], context: dict[str, Any]) -> None:
        self.config = from_conf(conf, context)
        self.fault: Fault | None = from_env()
        self.after_ack = AfterAck(self.fault)
        self.store = SqliteStore(self.config.path, self.config.layout)
        self.log(
            f"writing {self.config.layout.table} in {self.config.path} "
            f"({self.config.layout.mode}), last txid {self.store.last_txid()}",
            DEBUG,
        )

    def begin(self, batch: Batch) -> None:
        self._after_ack()
        batch.tuples = []

    def process(self, tup: Tuple, batch: Batch) -> None:
        self._after_ack()
        batch.tuples.append(tup.values)

    def process_tick(self, tup: Tuple) -> None:
        self._after_ack()

    def finish_batch(self, batch: Batch) -> None:
        self._after_ack()
        txid, attempt = batch.tx
        applied = self.store.commit(
            txid,
            attempt,
            batch.tuples,
            before_write=lambda: crash_at(self.fault, "before_write", txid, attempt),
        )
        self._record_attempt(txid, attempt, batch.tuples, applied)
        if applied:
            crash_at(self.fault, "after_commit", txid, attempt)
        else:
            self.log(f"txid {txid} was applied before: skipped (attempt {attempt})", DEBUG)
        self.after_ack.arm(txid, attempt)  # its ack goes out when this returns

    def _record_attempt(self, txid: int, attempt: int, tuples: list[Any], applied: bool) -> None:
        """`sqlite.committer.attempts_log`: a line `txid attempt tuples content_hash
        applied|skipped` per commit-phase finish, written before the `after_commit` seam, so the
        chaos tests can check that every attempt of a txid carried the same tuples (the audit
        table keeps only the applied one)."""
        path = self.config.attempts_log
        if path is None:
            return
        outcome = "applied" if applied else "skipped"
        line = f"{txid} {attempt} {len(tuples)} {content_hash(tuples)} {outcome}\n"
        with open(path, "a", encoding="utf-8") as log:  # one small O_APPEND write per line
            log.write(line)

    def _after_ack(self) -> None:
        self.after_ack.fire_if_armed(self.flush)

    def cleanup(self) -> None:
        self.store.close()


def main() -> None:
    SqliteCommitter().run()
