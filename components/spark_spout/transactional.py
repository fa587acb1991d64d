"""The transactional Spark spout (`spark.spout.transactional: true`, declared `batch: spout`): each
Structured Streaming micro-batch is one transaction (docs/transactional.md §4.3; the package
docstring, "Transactional").

Two threads, and `CommitGate` between them:

- Spark's foreachBatch thread (transactional_source.py) stages micro-batch N as parquet under
  `<staging.dir>/batch-N/`, offers it as txid N+1 and blocks until that txid is committed;
- the main thread runs the multilang loop (the host sends one command at a time, never `next`):
  - `batch_init` (txid T): the offered batch when its txid is T or later, as `batch_meta`
    `{"spark_batch_id": N, "staging": ..., "rows": R}` with `"txid": N+1`; otherwise a bare
    `sync` ("not ready": nothing staged yet; the host asks again after a back-off);
  - `batch_emit`: the staged rows, read with pyarrow, on the first attempt and on every replay
    (after a failure or a restart of the host), so every attempt emits the same tuples and a
    replay never asks Spark again;
  - `batch_commit` (txid T): releases foreachBatch(T-1), and Spark commits the micro-batch.

A staging directory is deleted once its txid's commit is durable: known from `committed` in
`batch_emit`, from `batch_commit` of a later txid (commits go in txid order, §2.2) and from the
handshake's `committed_txid`; never at the txid's own `batch_commit`, after which the host may still
die before it records the commit and replay the txid from that staging.

After a restart, a micro-batch that Spark replays whose txid the host had committed returns at
once; one whose txid the host replays from its stored metadata waits for that replay's commit.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from typing import Any, NoReturn

import pyarrow.fs as pafs

from multilang import WARN, TransactionalSpout, Tx
from multilang.batch_messages import Numbered
from multilang.client_base import _Component
from multilang.client_io import _StartupError

from . import checkpoint as ckpt
from .checkpoint import Checkpoint
from .commit_gate import CommitGate, StagedBatch
from .config import ConfigError, SpoutConfig, from_conf
from .convert import RowConverter
from .segments import Fatal, Handoff, Segment, filesystem, listing, record_batches, staged
from .transactional_source import TransactionalStreamingSource

# what the plain spout's process keeps when it becomes this one (the handshake's results and the
# protocol pipes); everything else is this class's own fresh state
_KEPT = (
    "conf",
    "context",
    "pid",
    "task_id",
    "component_id",
    "serializer",
    "_pending",
    "_task_ids",
    "_out",
    "_in_fd",
    "_out_fd",
    "_stdout_log",
)


class TransactionalSparkSpout(TransactionalSpout):
    """See the module docstring. Started as the plain SparkSpout (one entry point,
    `python -m components.spark_spout`), which hands over to this class when the handshake's
    conf has `spark.spout.transactional: true` (`take_over`), before the pid reply."""

    handoff: Handoff | None = None  # set in open; before_wait runs before it too

    @classmethod
    def take_over(cls, plain: _Component) -> bytes:
        """Make the plain spout `plain` (handshake read, pid not answered) this class and answer
        the pid, announcing batch/1. The object is changed in place: the client's stdout
        redirection holds a reference to it."""
        if plain.serializer != "json":
            raise _StartupError(
                "spark spout: a transactional spout speaks JSON only (declare it with "
                "`serializer: json`)"
            )
        fresh = cls()
        kept = {name: getattr(plain, name) for name in _KEPT}
        plain.__class__ = cls
        state = vars(plain)
        state.clear()
        state.update(vars(fresh))
        state.update(kept)
        return plain._pid_reply()

    # ---- set-up and shutdown --------------------------------------------------------------------
    def open(self, conf: dict[str, Any], context: dict[str, Any]) -> None:
        try:
            cfg: SpoutConfig = from_conf(conf, context)
        except ConfigError as exc:
            raise ConfigError(f"spark spout {self.component_id}: {exc}") from None
        self.cfg = cfg
        ckpt.ensure_dir(cfg.checkpoint_dir)
        self.handoff = Handoff(cfg.read_ahead)
        self.converter = RowConverter(cfg.fields)
        committed = self.committed_txid  # the handshake's committed_txid
        self.gate = CommitGate(committed)
        self.durable = committed  # the last txid whose commit the host has recorded
        self._delete_committed_staging()
        app = f"spark-spout-{self.component_id or 'spout'}"
        # the plain spout's progress file is not used: the host's transactional state is the
        # progress, and Spark's checkpoint says which micro-batch comes next
        unused = Checkpoint(cfg.source, cfg.fingerprint())
        self.source = TransactionalStreamingSource(
            cfg, conf, unused, self.handoff, app, gate=self.gate
        )
        self.log(f"starting Spark… (transactional; txids committed so far: {committed})")
        self.source.start()

    def close(self) -> None:
        source = getattr(self, "source", None)
        if source is not None:
            source.stop()

    def before_wait(self) -> None:
        self._service()  # Spark's log lines, and a fatal problem, while no command comes

    # ---- the commands ---------------------------------------------------------------------------
    def initialize(self, txid: int, prev_meta: Any) -> Numbered | None:  # type: ignore[override]
        """The next staged micro-batch, numbered by Spark: txid = batch id + 1 (§4.3)."""
        self._service()
        batch = self.gate.proposal(txid)
        return None if batch is None else Numbered(batch.txid, batch.meta())

    def emit_batch(self, tx: Tx, meta: Any) -> None:
        self._service()
        self._learn_committed(self.committed_txid)
        batch = self._check_meta(tx, meta)
        if tx.attempt > 1:
            self.log(
                f"txid {tx.txid} attempt {tx.attempt}: emitting Spark batch "
                f"{batch.spark_batch_id} again from its staging ({batch.rows} rows)"
            )
        emitted = 0
        for rows in self._staged_rows(tx, batch):
            for values in rows:
                self.emit(values)
            emitted += len(rows)
            self.flush()  # a large batch goes out record batch by record batch
        if emitted != batch.rows:
            self._die(
                f"txid {tx.txid}: the staging of Spark batch {batch.spark_batch_id} at "
                f"{batch.staging} has {emitted} rows, its metadata says {batch.rows}"
            )

    def commit(self, tx: Tx) -> None:
        self._service()
        self.gate.release(tx.txid)  # Spark may commit the micro-batch now
        self._learn_committed(tx.txid - 1)  # commits go in txid order: the one before is recorded

    # ---- staging --------------------------------------------------------------------------------
    def _check_meta(self, tx: Tx, meta: Any) -> StagedBatch:
        ok = (
            type(meta) is dict
            and type(meta.get("spark_batch_id")) is int
            and type(meta.get("staging")) is str
            and type(meta.get("rows")) is int
        )
        if not ok or meta["spark_batch_id"] + 1 != tx.txid:
            self._die(
                f"txid {tx.txid}: the stored metadata {meta!r} is not this spout's (a Spark "
                f"batch id + 1 = the txid): is the state directory another topology's?"
            )
        return StagedBatch(meta["spark_batch_id"], meta["staging"], meta["rows"])

    def _staged_rows(self, tx: Tx, batch: StagedBatch) -> Iterator[list[list[Any]]]:
        manifest = staged(batch.staging)
        if manifest is None:
            self._die(
                f"txid {tx.txid}: the staging of Spark batch {batch.spark_batch_id} at "
                f"{batch.staging} is gone, so the batch cannot be emitted again as it was; "
                f"a staging directory must stay until its txid is committed"
            )
        if list(manifest.get("fields") or []) != list(self.cfg.fields):
            self._die(
                f"txid {tx.txid}: Spark batch {batch.spark_batch_id} was staged with the fields "
                f"{manifest.get('fields')}, the spout now emits {list(self.cfg.fields)}"
            )
        fs, path = filesystem(batch.staging)
        files = [f"{path}/{entry['name']}" for entry in manifest["files"]]
        segment = Segment(f"batch-{batch.spark_batch_id}", int(manifest["rows"]), files, fs)
        for record_batch in record_batches(segment, self.converter.fields, self.cfg.batch_rows):
            if record_batch.num_rows:
                yield self.converter.rows(record_batch)

    def _learn_committed(self, txid: int) -> None:
        """The host has recorded the commit of every txid up to `txid`."""
        if txid <= self.durable:
            return
        self.durable = txid
        self.gate.release(txid)
        self._delete_committed_staging()

    def _delete_committed_staging(self) -> None:
        """Delete `batch-N` staging directories whose txid (N+1) is durably committed."""
        fs, root = filesystem(self.cfg.staging_dir)
        for info in listing(fs, root):
            name = info.base_name
            if info.type != pafs.FileType.Directory or not name.startswith("batch-"):
                continue
            number = name.removeprefix("batch-")
            if number.isdigit() and int(number) + 1 <= self.durable:
                try:
                    fs.delete_dir(f"{root}/{name}")
                except OSError as exc:  # left behind: deleted at the next commit
                    self.log(f"cannot delete the committed staging {root}/{name}: {exc}", WARN)

    # ---- housekeeping ---------------------------------------------------------------------------
    def _service(self) -> None:
        """Forward the source's log lines; die on its fatal problem."""
        handoff = self.handoff
        if handoff is None:
            return
        logs = handoff.logs
        while not logs.empty():
            message, level = logs.get_nowait()
            self.log(message, level)
        while True:
            item = handoff.take()
            if item is None:
                return
            if type(item) is Fatal:
                self._die(item.message)
            # End: the query stopped (the source logged it); no batch will be ready again

    def _die(self, text: str) -> NoReturn:
        """A problem no retry fixes: report it and exit 1 at once (Spark's threads would keep
        a normal exit waiting); the host restarts the task, or stops with the message."""
        print(f"spark spout: {text}", file=sys.stderr, flush=True)
        self.error(text)
        try:
            self.flush()
        finally:
            os._exit(1)
