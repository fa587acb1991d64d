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
COLUMNS = [("cpu_pct", "CPU %")]
POLLER = ("import select\n"
          "while True:\n"
          "    select.select([], [], [], 0.05)\n")
BASELINE = "baseline: python waking every 50 ms"


def run(ctx: Context) -> Result:
    result = Result(NAME, ctx, DESCRIPTION, baseline=BASELINE)
    mode = ctx.mode
    ctx.progress(f"{NAME}: {mode.idle_windows} x {mode.idle_window_secs:g} s")
    out = run_topology(ctx, "wordcount", {"split": "python", "idle": True},
                       windows=mode.idle_windows, window=mode.idle_window_secs,
                       warmup=min(1.0, mode.warmup_secs),
                       companion=[sys.executable, "-c", POLLER])
    windows = out["windows"]
    tasks = sum(c["tasks"] for c in out["stats"]["components"].values())
    params = {"windows": len(windows), "window_secs": mode.idle_window_secs}
    result.add(BASELINE, [{"cpu_pct": w["companion_cpu_s"] / w["secs"] * 100} for w in windows],
               params)
    result.add("host", [{"cpu_pct": w["host_cpu_s"] / w["secs"] * 100} for w in windows], params)
    result.add(f"components ({tasks} tasks, together)",
               [{"cpu_pct": w["children_cpu_s"] / w["secs"] * 100} for w in windows], params)
    result.ratio("host / baseline", result.median("host", "cpu_pct"),
                 result.median(BASELINE, "cpu_pct"))
    result.targets["host"] = "<= 1% CPU"
    result.notes.append(f"{len(windows)} windows of {mode.idle_window_secs:g} s in one run: "
                        "median (min-max) over windows")
    return result
