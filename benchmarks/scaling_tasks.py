"""scaling-tasks: throughput as parallelism grows past the cores.

The word count (Python spout, 100 sentences per `next`, max.spout.pending 1000) with 1, 2, 4, 16,
64 and 200 tasks in each bolt: once with the Python split and once with the bash split (a bash
process and its jq co-process per task), the count in Python. Every round runs every point once;
each point's throughput is also given as a ratio to the 2-task point of its series measured in
the same round (then the median of those ratios).

Per point, besides acked sentences/s and the complete latency: where the host's cost per tuple
goes as tasks are added. A routed tuple is a sentence or a word (as in `wordcount`); per routed
tuple: the host's CPU, its context switches (voluntary: it slept in the selector; involuntary:
the scheduler gave its core to another process, such as a component its write woke), and the
tuples moved per read and per write syscall (how much each syscall batches). The runner asks the host for a stats
snapshot every 0.2 s, which reads /proc for every task: with 400 tasks that is a visible share of
the host's CPU and reads, so the per-tuple figures leave it out and `report CPU %` shows it (the
CLI pays the same, every 0.5 s). Host CPU % (snapshots included) and host run-queue % (the share
of the window the host was runnable but waiting for a core, from /proc/self/schedstat) say
whether the host, a single loop, is busy, starved or waiting for input. Host RSS is at the end of
the window.

The plot (throughput against tasks per bolt, both series, min-max bars; host CPU per tuple)
goes to benchmarks/plots/scaling-tasks.png after a full run, else beside the results.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from .harness import Context, Result, median_bars, round_robin, run_topology
from .wordcount import window_metrics

NAME = "scaling-tasks"
DESCRIPTION = "word count with 1..200 tasks per bolt: throughput and host cost per routed tuple"
COLUMNS = [
    ("sentences_per_s", "sentences/s"),
    ("ratio_to_2", "x N=2"),
    ("host_us_per_tuple", "host us/tuple"),
    ("switches_per_tuple", "ctx sw/tuple"),
    ("tuples_per_write", "tuples/write"),
    ("tuples_per_read", "tuples/read"),
    ("latency_p50_ms", "p50 ms"),
    ("latency_p99_ms", "p99 ms"),
    ("host_rss_mb", "host RSS MB"),
    ("host_cpu_pct", "host CPU %"),
    ("host_run_queue_pct", "host run-queue %"),
    ("report_cpu_pct", "report CPU %"),
    ("startup_s", "start s"),
]
TASKS = {
    "python": (1, 2, 4, 16, 64, 200),
    "bash": (1, 2, 4, 16, 64, 200),
}
SMOKE_TASKS = (1, 2)
BASELINE_TASKS = 2
# (warm-up, window) seconds per mode: longer than the other topology benchmarks' because a point
# with 200 tasks per bolt moves few tuples per task in a short window, and its start-up (not
# measured) dwarfs the window anyway. The warm-up also covers the host's adaptation to the load
# (shuffle run lengths and CPU isolation, about a second: docs/architecture.md, "Many tasks")
WINDOWS = {"full": (3.0, 5.0), "quick": (2.0, 2.0)}
ROUNDS = {"full": 3, "quick": 3}
# A task's handshake can wait behind hundreds of others starting on few cores
CONFIG = {"host.handshake.timeout.secs": 120}
# The run's time limit: start-up (launch to every task running, which the runner waits for before
# the warm-up) plus the windows. Measured on 2 cores: 13.6 s for the Python series at 200 tasks
# per bolt (401 processes), 9.5 s for bash (601, jq included); the allowance is about 5x that, so
# that a loaded machine fails slowly rather than spuriously
STARTUP_ALLOWANCE_SECS = 30.0
STARTUP_SECS_PER_PROCESS = 0.1


def _label(split: str, n: int) -> str:
    return f"{split} split, {n} task{'s' if n > 1 else ''}/bolt"


def _processes(split: str, n: int) -> int:
    """The processes the topology starts: the spout, the split tasks (in bash with a jq each,
    which reads the handshake and ends: shell-frames/1), the count."""
    return 1 + n * (2 if split == "bash" else 1) + n


def point_metrics(run: dict) -> dict:
    """One run's figures (its first window): `window_metrics` plus the per-routed-tuple costs,
    net of the runner's stats snapshots."""
    w = run["windows"][0]
    m = window_metrics(w)
    secs = w["secs"]
    routed = w["acked"] + w["components"]["count"]["executed"]
    io = w.get("host_io") or {}
    report = w.get("report") or {}

    def net(key: str) -> float | None:
        if key not in io:
            return None
        return io[key] - report.get(key, 0)

    def per_tuple(value: float | None, scale: float = 1.0) -> float | None:
        return value * scale / routed if value is not None and routed else None

    def tuples_per(value: float | None) -> float | None:
        return routed / value if value else None

    host_cpu = w["host_cpu_s"] - report.get("cpu", 0.0)
    voluntary, involuntary = net("voluntary_switches"), net("involuntary_switches")
    run_delay = net("run_delay_s")
    switches = (voluntary or 0) + (involuntary or 0) if voluntary is not None else None
    m.update(
        {
            "routed_per_s": routed / secs,
            "host_us_per_tuple": per_tuple(host_cpu, 1e6),
            "host_us_per_tuple_with_reports": m["host_cpu_us_per_tuple"],
            "report_cpu_pct": report.get("cpu", 0.0) / secs * 100,
            "switches_per_tuple": per_tuple(switches),
            "voluntary_switches_per_tuple": per_tuple(voluntary),
            "involuntary_switches_per_tuple": per_tuple(involuntary),
            "tuples_per_write": tuples_per(net("writes")),
            "tuples_per_read": tuples_per(net("reads")),
            "host_rss_mb": w["host_rss_bytes"] / 1e6 if w.get("host_rss_bytes") else None,
            # the share of the window the host was runnable but not running (a core was busy)
            "host_run_queue_pct": run_delay / secs * 100 if run_delay is not None else None,
            "startup_s": run.get("startup_s"),
        }
    )
    return m


def _point(ctx: Context, split: str, n: int, warmup: float, window: float):
    max_secs = (
        STARTUP_ALLOWANCE_SECS + STARTUP_SECS_PER_PROCESS * _processes(split, n) + warmup + window
    )

    def one() -> dict:
        run = run_topology(
            ctx,
            "wordcount",
            {"split": split, "per_next": 100, "parallelism": n, "config": CONFIG},
            warmup=warmup,
            window=window,
            max_secs=max_secs,
        )
        return point_metrics(run)

    return one


def run(ctx: Context) -> Result:
    smoke = ctx.mode.name == "smoke"
    warmup, window = WINDOWS.get(ctx.mode.name, (ctx.mode.warmup_secs, ctx.mode.measure_secs))
    rounds = ROUNDS.get(ctx.mode.name, 1)
    series = {split: SMOKE_TASKS if smoke else tasks for split, tasks in TASKS.items()}
    result = Result(
        NAME,
        ctx,
        DESCRIPTION,
        baseline=f"{_label('python', BASELINE_TASKS)}; {_label('bash', BASELINE_TASKS)}",
    )
    if shutil.which("jq") is None or shutil.which("bash") is None:
        del series["bash"]
        result.notes.append("bash or jq not on PATH: no bash series")
    # the baseline first in every round, then the points in order
    plan = {}
    for split, tasks in series.items():
        for n in sorted(tasks, key=lambda n: (n != BASELINE_TASKS, n)):
            plan[_label(split, n)] = _point(ctx, split, n, warmup, window)
    samples = round_robin(plan, rounds, ctx, NAME)
    for split, tasks in series.items():
        base = samples[_label(split, BASELINE_TASKS)]
        for n in tasks:
            label = _label(split, n)
            for r, sample in enumerate(samples[label]):  # the same round's N=2
                sample["ratio_to_2"] = (
                    sample["sentences_per_s"] / base[r]["sentences_per_s"]
                    if base[r]["sentences_per_s"]
                    else None
                )
            result.add(
                label,
                samples[label],
                {
                    "split": split,
                    "parallelism": n,
                    "per_next": 100,
                    "max_spout_pending": 1000,
                    "processes": _processes(split, n),
                    "warmup_s": warmup,
                    "window_s": window,
                },
            )
        for n in tasks:
            if n != BASELINE_TASKS:
                key = f"{split}: sentences/s at {n} tasks / {BASELINE_TASKS} tasks"
                result.ratios[key] = result.median(_label(split, n), "ratio_to_2")
    result.targets.update(
        {
            "python split": "N=16 >= 0.9x N=2; N=64 >= 0.75x N=2; N=200 >= 0.5x N=2",
            "host us/tuple": "<= 5 at N=2, <= 7 at N=64",
            "host RSS": "<= 150 MB at N=200",
        }
    )
    result.notes.append(
        "routed tuple = sentence acked or word counted; host us/tuple, ctx sw/tuple and "
        "tuples per read/write leave out the runner's stats snapshots (report CPU % is their "
        "share of a core); ctx sw = voluntary + involuntary; start s: launch to every task "
        "running (not measured); ratios: median of the same-round ratios"
    )
    plot = _plot(result, series, ctx.plots_dir / "scaling-tasks.png")
    if plot is not None:
        result.extra["plot"] = str(plot)
    else:
        result.notes.append("matplotlib not installed (pip install -e '.[bench]'): no plot")
    return result


def _plot(result: Result, series: dict[str, tuple[int, ...]], path: Path) -> Path | None:
    try:
        import matplotlib
    except ImportError:
        return None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.2))
    ticks = sorted({n for tasks in series.values() for n in tasks})
    for split, tasks in series.items():
        labels = [_label(split, n) for n in tasks]
        med, err = median_bars(result, labels, "sentences_per_s")
        left.errorbar(tasks, med, yerr=err, marker="o", capsize=4, label=f"{split} split")
        cost, err = median_bars(result, labels, "host_us_per_tuple")
        right.errorbar(tasks, cost, yerr=err, marker="o", capsize=4, label=f"{split} split")
    for ax in (left, right):
        ax.set_xscale("log")
        ax.set_xticks(ticks, [str(n) for n in ticks])
        ax.minorticks_off()
        ax.set_xlabel("tasks per bolt (split and count)")
        ax.set_ylim(bottom=0)
        ax.legend()
    left.set_ylabel("acked sentences/s")
    left.set_title("word count (4 words/sentence): throughput")
    right.set_ylabel("host CPU us per routed tuple")
    right.set_title("host cost per tuple (sentence or word)")
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
