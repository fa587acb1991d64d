"""latency-under-load: the Python word count driven at 50% of its maximum rate.

Every round first runs the word count flat out (the baseline: its maximum sentences/s and the
latency at saturation), then again with the spout paced at half of what that run achieved;
complete latency p50/p99/p99.9 of the paced run is the figure. A third run sends lone tuples: one
sentence per `next` at 5 a second, on a topology otherwise idle (no batching can help it, no
queue can hide it: what one tuple costs end to end). Latency is the host's complete
latency: from the spout's emit reaching the host to the last ack of its tree, timed for every
spout tuple here (host.acker.latency.sample = 1).
"""

from __future__ import annotations

from .harness import Context, Result, round_robin
from .wordcount import run_wordcount

NAME = "latency-under-load"
DESCRIPTION = "Python word count at 50% of its maximum rate (paced spout): complete latency"
FULL, HALF, LONE = "max rate (baseline)", "50% of max rate", "lone tuples, 5/s"
LONE_RATE = 5.0
COLUMNS = [
    ("sentences_per_s", "sentences/s"),
    ("target_rate", "paced at/s"),
    ("latency_p50_ms", "p50 ms"),
    ("latency_p99_ms", "p99 ms"),
    ("latency_p999_ms", "p99.9 ms"),
    ("host_cpu_pct", "host CPU %"),
]
PER_NEXT = 100
TIME_EVERY_ROOT = {"host.acker.latency.sample": 1}  # p99.9 needs every root, not 1 in 16


def run(ctx: Context) -> Result:
    result = Result(NAME, ctx, DESCRIPTION, baseline=FULL)
    last_max: list[float] = []

    def full() -> dict:
        m = run_wordcount(ctx, split="python", per_next=PER_NEXT, config=TIME_EVERY_ROOT)
        last_max.append(m["sentences_per_s"])
        return m

    def half() -> dict:
        rate = max(1.0, 0.5 * last_max[-1])
        m = run_wordcount(ctx, split="python", per_next=PER_NEXT, rate=rate, config=TIME_EVERY_ROOT)
        m["target_rate"] = rate
        return m

    def lone() -> dict:
        m = run_wordcount(ctx, split="python", per_next=1, rate=LONE_RATE, config=TIME_EVERY_ROOT)
        m["target_rate"] = LONE_RATE
        return m

    samples = round_robin({FULL: full, HALF: half, LONE: lone}, ctx.mode.runs, ctx, NAME)
    result.add(FULL, samples[FULL], {"per_next": PER_NEXT})
    result.add(HALF, samples[HALF], {"per_next": PER_NEXT, "rate": "0.5 x the max run before it"})
    result.add(LONE, samples[LONE], {"per_next": 1, "rate": LONE_RATE})
    result.ratio(
        "p99 at 50% / p99 at max",
        result.median(HALF, "latency_p99_ms"),
        result.median(FULL, "latency_p99_ms"),
    )
    result.targets[HALF] = "complete latency p99 <= 20 ms"
    result.targets[LONE] = "complete latency <= 2 ms"
    samples = result.median(HALF, "latency_samples")
    result.notes.append(
        "latencies come from the host's histogram (log-linear buckets, within "
        "~6%) of every spout tuple of the measured window: "
        f"{samples or 0:,.0f} roots per run at 50%"
    )
    return result
