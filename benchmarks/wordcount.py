"""wordcount: sentences (Python) -> split -> count (Python), acked, max.spout.pending 1000.

Variants: the Python split with the spout emitting up to 100 sentences per `next` (also without
the optional speed-ups, MULTILANG_PURE_PYTHON=1) and with 1 per `next`; the split bolt in bash and
in Node; parallelism 2 for each bolt. The protocol ceiling
(ujson) runs between them in every round, and each run's ratio is to the ceiling run just before
it. Sentences have 4 words, so words/s is 4x sentences/s.
"""

from __future__ import annotations

from . import protocol_ceiling
from .harness import Context, Result, round_robin, run_topology

NAME = "wordcount"
DESCRIPTION = "spout -> split -> count, acked, max.spout.pending 1000, 4 words per sentence"
CEILING = "ceiling (ujson)"
COLUMNS = [
    ("sentences_per_s", "sentences/s"),
    ("words_per_s", "words/s"),
    ("latency_p50_ms", "p50 ms"),
    ("latency_p99_ms", "p99 ms"),
    ("host_cpu_us_per_tuple", "host us/tuple"),
    ("host_cpu_pct", "host CPU %"),
    ("components_cpu_pct", "comp. CPU %"),
    ("ratio_to_ceiling", "x ceiling"),
]
VARIANTS = {
    "python, 100/next": {"split": "python", "per_next": 100},
    # without the C decoder and orjson (MULTILANG_PURE_PYTHON=1): what they are worth
    "python, 100/next, pure Python": {"split": "python", "per_next": 100, "pure_python": True},
    "python, 1/next": {"split": "python", "per_next": 1},
    "bash split": {"split": "bash", "per_next": 100},
    "node split": {"split": "node", "per_next": 100},
    "python, parallelism 2": {"split": "python", "per_next": 100, "parallelism": 2},
}


def window_metrics(window: dict, words_from: str = "count") -> dict:
    """The figures of one measured window of a word-count run. A routed tuple is a sentence or a
    word: host CPU per routed tuple = host CPU / (sentences acked + words counted)."""
    secs = window["secs"]
    sentences = window["acked"]
    words = window["components"][words_from]["executed"]
    latency = window["latency_ms"]
    routed = sentences + words
    return {
        "sentences_per_s": sentences / secs,
        "words_per_s": words / secs,
        "latency_p50_ms": latency["p50"],
        "latency_p99_ms": latency["p99"],
        "latency_p999_ms": latency["p999"],
        "latency_samples": latency["count"],  # the host times a sample of the roots
        "host_cpu_pct": window["host_cpu_s"] / secs * 100,
        "host_cpu_us_per_tuple": window["host_cpu_s"] / routed * 1e6 if routed else None,
        "components_cpu_pct": window["children_cpu_s"] / secs * 100,
        "failed": window["failed"],
        **io_metrics(window),
    }


def io_metrics(window: dict) -> dict:
    """The host's read and write syscalls per second and bytes per write (not in the table: for
    whoever tunes the loop's batching)."""
    io, secs = window.get("host_io") or {}, window["secs"]
    out = {}
    if "writes" in io:
        out["host_reads_per_s"] = io["reads"] / secs
        out["host_writes_per_s"] = io["writes"] / secs
        out["host_bytes_per_write"] = io["write_bytes"] / io["writes"] if io["writes"] else None
        out["host_bytes_per_read"] = io["read_bytes"] / io["reads"] if io["reads"] else None
    if "voluntary_switches" in io:
        out["host_voluntary_switches_per_s"] = io["voluntary_switches"] / secs
    if "gc_secs" in io:
        out["host_gc_pct"] = io["gc_secs"] / secs * 100
    return out


def run_wordcount(ctx: Context, **params) -> dict:
    return window_metrics(run_topology(ctx, "wordcount", params)["windows"][0])


def run(ctx: Context) -> Result:
    result = Result(NAME, ctx, DESCRIPTION, baseline=CEILING)
    last_ceiling: list[float] = []

    def ceiling() -> dict:
        m = protocol_ceiling.measure("ujson", ctx.mode.ceiling_secs)
        last_ceiling.append(m["tuples_per_s"])
        return {"tuples_per_s": m["tuples_per_s"]}

    def topology(params: dict):
        def one() -> dict:
            m = run_wordcount(ctx, **params)
            m["ratio_to_ceiling"] = m["sentences_per_s"] / last_ceiling[-1]
            return m

        return one

    plan = {CEILING: ceiling, **{v: topology(p) for v, p in VARIANTS.items()}}
    samples = round_robin(plan, ctx.mode.runs, ctx, NAME)
    result.add(CEILING, samples[CEILING], {"json": "ujson", "depth": protocol_ceiling.DEPTH})
    for variant, params in VARIANTS.items():
        result.add(
            variant, samples[variant], {"parallelism": 1, **params, "max_spout_pending": 1000}
        )
    ceiling_median = result.median(CEILING, "tuples_per_s")
    main = "python, 100/next"
    result.ratio(
        "sentences/s (python, 100/next) / ceiling tuples/s",
        result.median(main, "sentences_per_s"),
        ceiling_median,
    )
    result.ratio(
        "routed tuples/s (python, 100/next) / ceiling tuples/s",
        _routed(result, main),
        ceiling_median,
    )
    for variant in VARIANTS:
        if variant != main:
            result.ratio(
                f"sentences/s {variant} / python, 100/next",
                result.median(variant, "sentences_per_s"),
                result.median(main, "sentences_per_s"),
            )
    result.targets.update(
        {
            "python, 100/next": ">= 25,000 sentences/s; host <= 8 us per routed tuple; "
            ">= 0.4x ceiling",
            "python, 1/next": ">= 15,000 sentences/s",
        }
    )
    result.notes.append(
        "x ceiling = acked sentences/s / protocol-ceiling tuples/s of the same "
        "round; routed tuples = sentences + words"
    )
    ctx.cache["wordcount_max"] = result.median(main, "sentences_per_s")
    return result


def _routed(result: Result, variant: str) -> float | None:
    s, w = (result.median(variant, "sentences_per_s"), result.median(variant, "words_per_s"))
    return s + w if s is not None and w is not None else None
