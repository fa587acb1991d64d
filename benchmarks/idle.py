"""idle: a word-count topology whose spout never emits: CPU % of the host and of its components.

The host asks an idle spout for tuples with a back-off up to `host.spout.idle.max.sleep.ms` (50)
and sends every bolt a heartbeat a second. Baseline, measured over the same windows: a Python
process that only wakes up every 50 ms (select() with a timeout), the least a poller at the
host's back-off interval can cost. The run is cut into windows; the figures are over windows.
"""

from __future__ import annotations

import sys

from .harness import Context, Result, run_topology

NAME = "idle"
DESCRIPTION = "topology whose spout never emits: CPU % (100 = one core)"
COLUMNS = [("cpu_pct", "CPU % per window"), ("cpu_pct_whole_run", "CPU % whole run")]
POLLER = "import select\nwhile True:\n    select.select([], [], [], 0.05)\n"
BASELINE = "python waking every 50 ms"


def run(ctx: Context) -> Result:
    result = Result(NAME, ctx, DESCRIPTION, baseline=BASELINE)
    mode = ctx.mode
    ctx.progress(f"{NAME}: {mode.idle_windows} x {mode.idle_window_secs:g} s")
    out = run_topology(
        ctx,
        "wordcount",
        {"split": "python", "idle": True},
        windows=mode.idle_windows,
        window=mode.idle_window_secs,
        warmup=min(1.0, mode.warmup_secs),
        companion=[sys.executable, "-c", POLLER],
    )
    windows = out["windows"]
    tasks = sum(c["tasks"] for c in out["stats"]["components"].values())
    params = {"windows": len(windows), "window_secs": mode.idle_window_secs}
    total = sum(w["secs"] for w in windows)

    def per_window(key: str) -> list[dict]:
        samples = [{"cpu_pct": w[key] / w["secs"] * 100} for w in windows]
        # CPU times tick at 10 ms: over the whole run the figure is finer than per window
        samples[0]["cpu_pct_whole_run"] = sum(w[key] for w in windows) / total * 100
        return samples

    result.add(BASELINE, per_window("companion_cpu_s"), params)
    result.add("host", per_window("host_cpu_s"), params)
    result.add(f"components ({tasks} tasks, together)", per_window("children_cpu_s"), params)
    result.ratio(
        "host / baseline (whole run)",
        result.median("host", "cpu_pct_whole_run"),
        result.median(BASELINE, "cpu_pct_whole_run"),
    )
    result.targets["host"] = "<= 1% CPU"
    result.notes.append(
        f"{len(windows)} windows of {mode.idle_window_secs:g} s in one run: "
        "median (min-max) over windows"
    )
    return result
