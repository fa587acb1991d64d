"""The batch layer's figures for the stats snapshot (docs/transactional.md §6)."""

from __future__ import annotations

import time
from collections import deque

from host.batch.coordinator import Coordinator
from host.batch.tracker import Attempt
from host.observe.metrics import LatencyHistogram
from host.observe.snapshot import BatchStats, CommittedBatch, CompleteLatency

RECENT = 20  # committed batches kept


class BatchFigures:
    def __init__(self) -> None:
        self.last_abort: str | None = None
        self.committed_tuples = 0  # spout tuples of the batches committed in this run
        self.batch_latency = LatencyHistogram()
        self.commit_latency = LatencyHistogram()  # replaced per window by the benchmarks
        self.recent: deque[CommittedBatch] = deque(maxlen=RECENT)

    def committed(self, a: Attempt, now: float) -> None:
        self.committed_tuples += a.spout_tuples
        self.batch_latency.record(now - a.opened_at)
        commit_at = a.commit_at if a.commit_at is not None else now
        self.commit_latency.record(now - commit_at)
        self.recent.append(
            {
                "txid": a.txid,
                "attempt": a.number,
                "tuples": a.tuples,
                "processing_ms": round((commit_at - a.opened_at) * 1000, 3),
                "commit_ms": round((now - commit_at) * 1000, 3),
                "committed_at": time.time(),
            }
        )

    def snapshot(
        self, transactional_id: str, coordinator: Coordinator, tasks: int, now: float
    ) -> BatchStats:
        return {
            "transactional_id": transactional_id,
            "committed_txid": coordinator.committed_txid,
            "open": [
                {
                    "txid": a.txid,
                    "attempt": a.number,
                    "phase": a.phase.value,
                    "age_s": round(now - a.opened_at, 3),
                    "tuples": a.tuples,
                    "finished": len(a.finished),
                    "tasks": tasks,
                }
                for a in coordinator.open.values()
            ],
            "committed": coordinator.committed_count,
            "committed_tuples": self.committed_tuples,
            "replays": coordinator.aborted_count,
            "last_abort": self.last_abort,
            "batch_latency_ms": _latency(self.batch_latency),
            "commit_latency_ms": _latency(self.commit_latency),
            "recent": list(self.recent),
        }


def _latency(h: LatencyHistogram) -> CompleteLatency:
    return {"p50": h.percentile(50), "p99": h.percentile(99), "mean": h.mean_ms()}
