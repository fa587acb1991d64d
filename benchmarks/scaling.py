"""scaling: the cost curve, not one point.

1. The Python word count (100 sentences per `next`) with 1, 2, 4 and 8 tasks per bolt.
2. spout -> relay -> sink, acked, with tuples of one 10 B, 1 KB and 10 KB string.

Every round runs every point once (the first of each series is its baseline); the plot,
throughput against parallelism and against tuple size with min-max bars, goes to
benchmarks/plots/scaling.png after a full run (the README shows it), else beside the results.
"""

from __future__ import annotations

from pathlib import Path

from .harness import Context, Result, median_bars, round_robin, run_topology
from .wordcount import window_metrics

NAME = "scaling"
DESCRIPTION = "acked/s and host CPU as bolt parallelism and tuple size grow"
COLUMNS = [
    ("acked_per_s", "acked/s"),
    ("routed_per_s", "routed tuples/s"),
    ("mb_per_s", "payload MB/s"),
    ("latency_p99_ms", "p99 ms"),
    ("host_cpu_pct", "host CPU %"),
    ("host_cpu_us_per_tuple", "host us/tuple"),
    ("components_cpu_pct", "comp. CPU %"),
]
PARALLELISM = (1, 2, 4, 8)
SIZES = (10, 1000, 10_000)


def _parallel(ctx: Context, p: int):
    def one() -> dict:
        m = window_metrics(
            run_topology(ctx, "wordcount", {"split": "python", "per_next": 100, "parallelism": p})[
                "windows"
            ][0]
        )
        m["acked_per_s"] = m.pop("sentences_per_s")
        m["routed_per_s"] = m["acked_per_s"] + m.pop("words_per_s")
        return m

    return one


def _sized(ctx: Context, size: int):
    def one() -> dict:
        w = run_topology(ctx, "sized", {"size": size})["windows"][0]
        secs = w["secs"]
        routed = sum(c["transferred"] for c in w["components"].values())
        return {
            "acked_per_s": w["acked"] / secs,
            "routed_per_s": routed / secs,
            "mb_per_s": routed * size / secs / 1e6,
            "latency_p99_ms": w["latency_ms"]["p99"],
            "host_cpu_pct": w["host_cpu_s"] / secs * 100,
            "host_cpu_us_per_tuple": w["host_cpu_s"] / routed * 1e6 if routed else None,
            "components_cpu_pct": w["children_cpu_s"] / secs * 100,
        }

    return one


def _label_p(p: int) -> str:
    return f"wordcount, {p} task{'s' if p > 1 else ''}/bolt"


def _label_size(size: int) -> str:
    return f"relay, {size:,} B tuples"


def run(ctx: Context) -> Result:
    result = Result(NAME, ctx, DESCRIPTION, baseline=f"{_label_p(1)}; {_label_size(SIZES[0])}")
    plan = {_label_p(p): _parallel(ctx, p) for p in PARALLELISM}
    plan.update({_label_size(s): _sized(ctx, s) for s in SIZES})
    samples = round_robin(plan, ctx.mode.scaling_runs, ctx, NAME)
    for p in PARALLELISM:
        result.add(_label_p(p), samples[_label_p(p)], {"parallelism": p, "per_next": 100})
    for s in SIZES:
        result.add(_label_size(s), samples[_label_size(s)], {"tuple_bytes": s, "per_next": 100})
    for p in PARALLELISM[1:]:
        result.ratio(
            f"acked/s at {p} tasks / 1 task",
            result.median(_label_p(p), "acked_per_s"),
            result.median(_label_p(1), "acked_per_s"),
        )
    for s in SIZES[1:]:
        result.ratio(
            f"acked/s at {s:,} B / {SIZES[0]} B",
            result.median(_label_size(s), "acked_per_s"),
            result.median(_label_size(SIZES[0]), "acked_per_s"),
        )
    plot = _plot(result, ctx.plots_dir / "scaling.png")
    if plot is not None:
        result.extra["plot"] = str(plot)
    else:
        result.notes.append("matplotlib not installed (pip install -e '.[bench]'): no plot")
    return result


def _plot(result: Result, path: Path) -> Path | None:
    try:
        import matplotlib
    except ImportError:
        return None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.2))
    med, err = median_bars(result, [_label_p(p) for p in PARALLELISM], "acked_per_s")
    left.errorbar(PARALLELISM, med, yerr=err, marker="o", capsize=4)
    cpu, _ = median_bars(result, [_label_p(p) for p in PARALLELISM], "host_cpu_pct")
    left.set_xscale("log", base=2)
    left.set_xticks(PARALLELISM, [str(p) for p in PARALLELISM])
    left.set_xlabel("tasks per bolt (split and count)")
    left.set_ylabel("acked sentences/s")
    left.set_ylim(bottom=0)
    left.set_title("word count (4 words/sentence): parallelism")
    twin = left.twinx()
    twin.plot(PARALLELISM, cpu, color="tab:red", linestyle="--", marker="x", label="host CPU %")
    twin.set_ylabel("host CPU % (dashed)")
    twin.set_ylim(0, max(110, max(cpu) * 1.1))
    med, err = median_bars(result, [_label_size(s) for s in SIZES], "acked_per_s")
    right.errorbar(SIZES, med, yerr=err, marker="o", capsize=4)
    mb, _ = median_bars(result, [_label_size(s) for s in SIZES], "mb_per_s")
    right.set_xscale("log")
    right.set_xticks(SIZES, ["10 B", "1 KB", "10 KB"])
    right.set_xlabel("tuple size")
    right.set_ylabel("acked tuples/s")
    right.set_ylim(bottom=0)
    right.set_title("spout -> relay -> sink: tuple size")
    twin = right.twinx()
    twin.plot(SIZES, mb, color="tab:green", linestyle="--", marker="x")
    twin.set_ylabel("payload MB/s through the host (dashed)")
    twin.set_ylim(bottom=0)
    m = result.ctx.machine
    fig.suptitle(
        f"multilang host, {result.ctx.mode.name} run {result.as_json()['date'][:10]}, "
        f"{m.get('cpu_count')} x {m.get('cpu_model')}, Python {m.get('python')} "
        f"(median, bars: min-max)",
        fontsize=9,
    )
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path
