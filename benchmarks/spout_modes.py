"""spout-modes: what lock-step costs, and which spouts pay it (docs/protocol.md §3.5).

The Python word count with one sentence per `next`, four ways: our Python spout, which announces
`pipeline/1` and is written commands ahead (the baseline, measured in the same rounds); the same
spout held to Storm's lock-step by `pipelining: false`; pystorm's spout, unmodified, which
announces nothing and so runs in lock-step; and pystorm's spout switched to pipelining, which its
in-order loop makes safe. One sentence per `next` is where the exchange costs most: a spout that
emits a batch per `next` pays the round trip once per batch.
"""

from __future__ import annotations

from .harness import Context, Result, round_robin, run_topology
from .wordcount import window_metrics

NAME = "spout-modes"
DESCRIPTION = "word count, 1 sentence per next: pipelined vs lock-step spouts"
COLUMNS = [
    ("sentences_per_s", "sentences/s"),
    ("host_cpu_us_per_tuple", "host us/tuple"),
    ("latency_p99_ms", "p99 ms"),
]
VARIANTS = {
    "ours, pipelined (announced)": {"spout": "python"},
    "ours, lock-step (pipelining: false)": {"spout": "python", "pipelining": False},
    "pystorm, lock-step (default)": {"spout": "pystorm"},
    "pystorm, pipelining: true": {"spout": "pystorm", "pipelining": True},
}
BASELINE = next(iter(VARIANTS))


def _one(ctx: Context, params: dict):
    def one() -> dict:
        run = run_topology(ctx, "wordcount", {"split": "python", "per_next": 1, **params})
        return window_metrics(run["windows"][0])

    return one


def run(ctx: Context) -> Result:
    result = Result(NAME, ctx, DESCRIPTION, baseline=BASELINE)
    plan = {label: _one(ctx, params) for label, params in VARIANTS.items()}
    samples = round_robin(plan, ctx.mode.runs, ctx, NAME)
    for label, params in VARIANTS.items():
        result.add(label, samples[label], {"per_next": 1, **params})
    for label in list(VARIANTS)[1:]:
        result.ratio(
            f"sentences/s: {label} / baseline",
            result.median(label, "sentences_per_s"),
            result.median(BASELINE, "sentences_per_s"),
        )
    return result
