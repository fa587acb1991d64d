"""transactional: what exactly-once costs (docs/transactional.md).

The exactly-once word count (a transactional spout of 1,000 sentences per batch, the unmodified
Python split as a plain member, a batch bolt counting per attempt, the SQLite committer adding
each batch's counts and its txid in one transaction; `topology.max.spout.pending` 3) against the
plain acked word count (the same spout sentences, split and count; max.spout.pending 1000),
measured in the same rounds. A sentence counts when its tuple tree is acked (plain) or when its
batch is committed (transactional). Also: batches committed per second and the commit phase's
latency (from the lowest processed txid entering its commit phase to its commit).
"""

from __future__ import annotations

import tempfile

from .harness import Context, Result, round_robin, run_topology
from .wordcount import window_metrics

NAME = "transactional"
DESCRIPTION = "exactly-once word count (batches of 1,000, 3 open) vs the plain acked word count"
COLUMNS = [
    ("sentences_per_s", "sentences/s"),
    ("batches_per_s", "batches/s"),
    ("commit_p50_ms", "commit p50 ms"),
    ("commit_p99_ms", "commit p99 ms"),
    ("host_cpu_pct", "host CPU %"),
]
PLAIN = "plain acked word count"
EXACTLY_ONCE = "exactly-once word count (SQLite)"
BATCH_SIZE = 1000
PENDING = 3


def _plain(ctx: Context):
    def one() -> dict:
        run = run_topology(ctx, "wordcount", {"split": "python"})
        return window_metrics(run["windows"][0])

    return one


def _exactly_once(ctx: Context):
    def one() -> dict:
        with tempfile.TemporaryDirectory(prefix="bench-tx-") as tmp:
            params = {
                "batch_size": BATCH_SIZE,
                "pending": PENDING,
                "state_dir": f"{tmp}/state",
                "database": f"{tmp}/counts.db",
            }
            window = run_topology(ctx, "transactional", params)["windows"][0]
        secs, batches = window["secs"], window["batches"]
        return {
            "sentences_per_s": batches["committed_tuples"] / secs,
            "batches_per_s": batches["committed"] / secs,
            "commit_p50_ms": batches["commit_latency_ms"]["p50"],
            "commit_p99_ms": batches["commit_latency_ms"]["p99"],
            "replays": batches["replays"],
            "host_cpu_pct": window["host_cpu_s"] / secs * 100,
            "components_cpu_pct": window["children_cpu_s"] / secs * 100,
        }

    return one


def run(ctx: Context) -> Result:
    result = Result(NAME, ctx, DESCRIPTION, baseline=PLAIN)
    plan = {PLAIN: _plain(ctx), EXACTLY_ONCE: _exactly_once(ctx)}
    samples = round_robin(plan, ctx.mode.runs, ctx, NAME)
    result.add(PLAIN, samples[PLAIN], {"split": "python", "max_spout_pending": 1000})
    result.add(
        EXACTLY_ONCE,
        samples[EXACTLY_ONCE],
        {"batch_size": BATCH_SIZE, "max_spout_pending": PENDING, "sink": "sqlite"},
    )
    result.ratio(
        "sentences/s: exactly-once / plain acked",
        result.median(EXACTLY_ONCE, "sentences_per_s"),
        result.median(PLAIN, "sentences_per_s"),
    )
    return result
