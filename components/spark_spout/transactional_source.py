"""The Structured Streaming source of the transactional Spark spout: the plain streaming query
(sources.StreamingSource: the user's job, foreachBatch, Spark's checkpoint), with a batch function
that stages each micro-batch and then waits for the host to commit it instead of feeding rows to
the protocol loop (docs/transactional.md §4.3; the package docstring, "Transactional").

It runs on Spark's foreachBatch thread. It never writes to the host and never deletes staging:
the protocol loop emits the rows (from the staging, on every attempt) and deletes a staging
directory once its txid's commit is durable. The hand-over is `CommitGate`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .commit_gate import CommitGate, StagedBatch
from .segments import Stopped, stage, staged
from .sources import StreamingSource

if TYPE_CHECKING:
    from pyspark.sql import DataFrame


def staging_uri(staging_dir: str, spark_batch_id: int) -> str:
    return f"{staging_dir.rstrip('/')}/batch-{spark_batch_id}"


class TransactionalStreamingSource(StreamingSource):
    name = "streaming"

    def __init__(self, *args: Any, gate: CommitGate, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.gate = gate

    def _batch(self, df: DataFrame, batch_id: int) -> None:
        """Spark's micro-batch `batch_id` is txid `batch_id + 1`. Returns once that txid is
        committed (Spark then commits the micro-batch to its log), at once if it was before (a
        micro-batch Spark replays after a restart of the host or of the spout)."""
        if self.handoff.stopping.is_set():
            raise Stopped("the spout is closing")
        txid = batch_id + 1
        if self.gate.is_released(txid):
            self.handoff.log(
                f"Spark batch {batch_id} is txid {txid}, committed before: not emitted again"
            )
            return
        uri = staging_uri(self.cfg.staging_dir, batch_id)
        manifest = staged(uri)
        if manifest is None:  # a replayed micro-batch keeps its first staging: the same rows
            manifest = stage(df, uri, list(self.cfg.fields), {"batch": batch_id, "txid": txid})
        self.gate.offer_and_wait(StagedBatch(batch_id, uri, int(manifest["rows"])))

    def stop(self, timeout: float = 5.0) -> None:
        self.gate.stop()  # a foreachBatch waiting for its commit gives up first
        super().stop(timeout)
