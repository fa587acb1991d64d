"""A hand-made `batches` section (host.observe.snapshot.BatchStats, docs/transactional.md §6) for
the tests of what draws it: the live view, the plain lines and the web UI. Every figure is
distinct, so a test that finds it in the output knows where it came from."""

from __future__ import annotations

from typing import Any

from host.observe.snapshot import BatchStats
from tests.support.typed_dict_check import typed_dict_problems

ABORT = "txid 42 attempt 1: a tuple failed in partial task 3\n(the attempt and every later one)"
COMMITTED_AT = 1_700_000_000.0


def batches(*, replays: int = 1, last_abort: str | None = ABORT, recent: int = 12) -> Any:
    """Two open attempts (a replay of txid 42 committing, txid 43 processing), `recent`
    committed batches (txids 42 - recent .. 41, oldest first), and the latencies."""
    section = {
        "transactional_id": "global-count",
        "committed_txid": 41,
        "open": [
            {
                "txid": 42,
                "attempt": 2,
                "phase": "committing",
                "age_s": 1.75,
                "tuples": 300,
                "finished": 5,
                "tasks": 6,
            },
            {
                "txid": 43,
                "attempt": 1,
                "phase": "processing",
                "age_s": 0.5,
                "tuples": 120,
                "finished": 1,
                "tasks": 6,
            },
        ],
        "committed": 12,
        "committed_tuples": 1234,
        "replays": replays,
        "last_abort": last_abort,
        "batch_latency_ms": {"p50": 85.5, "p99": 240.0, "mean": 90.1},
        "commit_latency_ms": {"p50": 3.5, "p99": 12.5, "mean": 4.0},
        "recent": [
            {
                "txid": txid,
                "attempt": 1,
                "tuples": 1000 + txid,
                "processing_ms": 70.0 + txid,
                "commit_ms": 2.0 + txid / 100,
                "committed_at": COMMITTED_AT + txid,
            }
            for txid in range(42 - recent, 42)
        ],
    }
    assert typed_dict_problems(section, BatchStats, extra_keys=False) == []
    return section
