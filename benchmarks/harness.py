"""What every benchmark shares: run lengths per mode, round-robin runs, median/min/max summaries,
the machine description, the result file and the printed table."""

from __future__ import annotations

import datetime
import importlib.util
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

BENCH_DIR = Path(__file__).resolve().parent
REPO = BENCH_DIR.parent
COMPONENTS = BENCH_DIR / "components"


@dataclass(frozen=True)
class Mode:
    """How long and how often to measure. `full` is what the README's figures come from; `quick`
    is the same set in under two minutes; `smoke` only proves that everything runs."""

    name: str
    runs: int  # rounds of every benchmark that alternates variants
    ceiling_secs: float  # one protocol-ceiling run
    warmup_secs: float  # topology runs: after every task is up, before the window opens
    measure_secs: float  # topology runs: the measured window
    idle_windows: int  # idle: windows of `idle_window_secs` each (median over windows)
    idle_window_secs: float
    acker_sizes: tuple[int, ...]
    acker_ops_secs: float
    scaling_runs: int
    rdd_records: int


MODES = {
    "full": Mode(
        "full",
        runs=5,
        ceiling_secs=2.0,
        warmup_secs=1.5,
        measure_secs=4.0,
        idle_windows=6,
        idle_window_secs=5.0,
        acker_sizes=(100_000, 1_000_000),
        acker_ops_secs=2.0,
        scaling_runs=3,
        rdd_records=200_000,
    ),
    "quick": Mode(
        "quick",
        runs=3,
        ceiling_secs=0.5,
        warmup_secs=0.3,
        measure_secs=0.6,
        idle_windows=5,
        idle_window_secs=1.0,
        acker_sizes=(100_000, 1_000_000),
        acker_ops_secs=0.5,
        scaling_runs=1,
        rdd_records=20_000,
    ),
    "smoke": Mode(
        "smoke",
        runs=1,
        ceiling_secs=0.2,
        warmup_secs=0.2,
        measure_secs=0.3,
        idle_windows=2,
        idle_window_secs=0.3,
        acker_sizes=(10_000, 20_000),
        acker_ops_secs=0.1,
        scaling_runs=1,
        rdd_records=2_000,
    ),
}


@dataclass
class Context:
    mode: Mode
    results_dir: Path
    plots_dir: Path
    command: str
    machine: dict
    cache: dict = field(default_factory=dict)  # figures one benchmark can reuse from another

    def progress(self, text: str) -> None:
        print(f"  .. {text}", file=sys.stderr, flush=True)


# ---- summaries ----------------------------------------------------------------------------------


def summarise(values: Iterable[float | None]) -> dict | None:
    """median, min, max and the runs themselves; None when no run produced the figure."""
    runs = [v for v in values if v is not None]
    if not runs:
        return None
    return {"median": statistics.median(runs), "min": min(runs), "max": max(runs), "runs": runs}


def round_robin(
    variants: dict[str, Callable[[], dict]], runs: int, ctx: Context, name: str
) -> dict[str, list[dict]]:
    """Run every variant once per round, in the same order each round, `runs` rounds: the
    baseline (put it first) is measured between the subjects, not before or after all of them."""
    samples: dict[str, list[dict]] = {v: [] for v in variants}
    for r in range(runs):
        for variant, fn in variants.items():
            ctx.progress(f"{name}: round {r + 1}/{runs}: {variant}")
            samples[variant].append(fn())
    return samples


class Result:
    """One benchmark's result file: per variant, each metric's median/min/max over the runs."""

    def __init__(self, name: str, ctx: Context, description: str, baseline: str | None):
        self.name = name
        self.ctx = ctx
        self.description = description
        self.baseline = baseline
        self.variants: dict[str, dict] = {}
        self.ratios: dict[str, float | None] = {}
        self.targets: dict[str, str] = {}
        self.notes: list[str] = []
        self.extra: dict[str, Any] = {}
        self.skipped: str | None = None

    def add(self, variant: str, samples: list[dict], params: dict | None = None) -> None:
        metrics = sorted({k for s in samples for k in s})
        entry: dict[str, Any] = {"params": params or {}, "n_runs": len(samples)}
        for key in metrics:
            entry[key] = summarise(s.get(key) for s in samples)
        self.variants[variant] = entry

    def median(self, variant: str, metric: str) -> float | None:
        value = self.variants.get(variant, {}).get(metric)
        return value["median"] if value else None

    def ratio(self, key: str, num: float | None, den: float | None) -> float | None:
        value = num / den if num is not None and den else None
        self.ratios[key] = value
        return value

    def as_json(self) -> dict:
        out = {
            "name": self.name,
            "description": self.description,
            "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
            "mode": self.ctx.mode.name,
            "command": self.ctx.command,
            "machine": self.ctx.machine,
            "baseline": self.baseline,
            "variants": self.variants,
            "ratios": self.ratios,
            "targets": self.targets,
            "notes": self.notes,
            # other work on the machine is the usual reason for a wide min-max
            "load_average_at_end": _load_average(),
        }
        if self.skipped is not None:
            out["skipped"] = self.skipped
        out.update(self.extra)
        return out

    def write(self) -> Path:
        self.ctx.results_dir.mkdir(parents=True, exist_ok=True)
        path = self.ctx.results_dir / f"{self.name}.json"
        tmp = path.with_suffix(".json.tmp")
        tmp.write_text(json.dumps(self.as_json(), indent=2) + "\n", encoding="utf-8")
        os.replace(tmp, path)
        return path


# ---- printing -----------------------------------------------------------------------------------


def fmt(value: float | None) -> str:
    if value is None:
        return "-"
    size = abs(value)
    if size >= 1000:
        return f"{value:,.0f}"
    if size >= 100:
        return f"{value:.0f}"
    if size >= 10:
        return f"{value:.1f}"
    if size >= 1:
        return f"{value:.2f}"
    return f"{value:.3g}"


def cell(summary: dict | None) -> str:
    if not summary:
        return "-"
    if summary["min"] == summary["max"]:
        return fmt(summary["median"])
    return f"{fmt(summary['median'])} ({fmt(summary['min'])}-{fmt(summary['max'])})"


def table(result: Result, columns: list[tuple[str, str]]) -> str:
    """The variants as rows, `columns` = [(metric key, header)], each cell `median (min-max)`;
    then the ratios, targets and notes."""
    lines = [f"== {result.name}: {result.description}"]
    if result.skipped is not None:
        lines.append(f"   skipped: {result.skipped}")
        return "\n".join(lines)
    header = ["variant"] + [h for _, h in columns]
    rows = [header]
    aside = []  # variants with none of the columns' figures (a baseline of another kind)
    for variant, entry in result.variants.items():
        cells = [cell(entry.get(key)) for key, _ in columns]
        if all(c == "-" for c in cells):
            figures = [
                f"{k} {cell(v)}" for k, v in entry.items() if k not in ("params", "n_runs") and v
            ]
            aside.append(f"   {variant}: {', '.join(figures)}")
        else:
            rows.append([variant] + cells)
    widths = [max(len(r[i]) for r in rows) for i in range(len(header))]
    for i, row in enumerate(rows):
        lines.append(
            "   "
            + "  ".join(
                c.ljust(w) if j == 0 else c.rjust(w) for j, (c, w) in enumerate(zip(row, widths))
            )
        )
        if i == 0:
            lines.append("   " + "  ".join("-" * w for w in widths))
    lines.extend(aside)
    runs = {e["n_runs"] for e in result.variants.values()}
    lines.append(
        f"   (median (min-max) over {'/'.join(map(str, sorted(runs)))} run(s); "
        f"baseline: {result.baseline or '-'})"
    )
    for key, value in result.ratios.items():
        lines.append(f"   ratio {key}: {fmt(value)}")
    for key, value in result.targets.items():
        lines.append(f"   target {key}: {value}")
    for note in result.notes:
        lines.append(f"   note: {note}")
    return "\n".join(lines)


# ---- the machine --------------------------------------------------------------------------------


def _first_line(argv: list[str]) -> str | None:
    try:
        out = subprocess.run(argv, capture_output=True, text=True, timeout=10, cwd=REPO)
    except (OSError, subprocess.SubprocessError):
        return None
    text = (out.stdout or out.stderr).strip()
    return text.splitlines()[0] if out.returncode == 0 and text else None


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as fh:
            for line in fh:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _version(module: str) -> str | None:
    try:
        from importlib.metadata import version

        return version(module)
    except Exception:  # not installed
        return None


def _load_average() -> list[float] | None:
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:
        return None


def machine() -> dict:
    """What the figures depend on: CPUs, memory, interpreters, JSON libraries, the commit."""
    try:
        import psutil

        memory = psutil.virtual_memory().total
    except Exception:  # psutil is a dependency; be robust anyway
        memory = None
    commit = _first_line(["git", "rev-parse", "--short", "HEAD"])
    dirty = _first_line(["git", "status", "--porcelain", "--", "host", "multilang"])
    return {
        "cpu_count": os.cpu_count(),
        "cpu_model": _cpu_model(),
        "load_average_at_start": _load_average(),
        "memory_bytes": memory,
        "platform": platform.platform(),
        "python": platform.python_version(),
        "python_implementation": platform.python_implementation(),
        "ujson": _version("ujson"),
        "orjson": _version("orjson"),
        # the host's optional speed-ups, as the benchmarks' processes load them
        "c_decoder": _c_decoder_built(),
        "pure_python": os.environ.get("MULTILANG_PURE_PYTHON", "") not in ("", "0"),
        "node": _first_line(["node", "--version"]),
        "bash": _first_line(["bash", "-c", "echo $BASH_VERSION"]),
        "jq": _first_line(["jq", "--version"]),
        "commit": commit + ("+uncommitted host/multilang changes" if dirty else "")
        if commit
        else None,
    }


def _c_decoder_built() -> bool:
    return importlib.util.find_spec("multilang._speedups") is not None


# ---- running a topology -------------------------------------------------------------------------


class RunFailed(RuntimeError):
    """A benchmark topology did not run to the end of its windows."""


def run_topology(
    ctx: Context,
    builder: str,
    params: dict,
    *,
    windows: int = 1,
    window: float | None = None,
    warmup: float | None = None,
    stop_when_acked: int | None = None,
    companion: list[str] | None = None,
    profile: str | None = None,
    max_secs: float | None = None,
) -> dict:
    """Run `benchmarks.runner` in a fresh process (one host per run: nothing carries over from
    one run to the next) and return what it measured. `params["pure_python"]`: the host and
    its components without the optional speed-ups (MULTILANG_PURE_PYTHON=1)."""
    env = None
    if params.get("pure_python"):
        params = {k: v for k, v in params.items() if k != "pure_python"}
        env = {**os.environ, "MULTILANG_PURE_PYTHON": "1"}
    window = ctx.mode.measure_secs if window is None else window
    warmup = ctx.mode.warmup_secs if warmup is None else warmup
    if max_secs is None:
        max_secs = 30 + warmup + windows * window
    spec = {
        "builder": builder,
        "params": params,
        "warmup": warmup,
        "windows": windows,
        "window": window,
        "max_secs": max_secs,
        "stop_when_acked": stop_when_acked,
        "companion": companion,
        "profile": profile,
    }
    with tempfile.TemporaryDirectory(prefix="bench-run-") as tmp:
        spec_path, out_path = os.path.join(tmp, "spec.json"), os.path.join(tmp, "out.json")
        with open(spec_path, "w", encoding="utf-8") as fh:
            json.dump(spec, fh)
        try:
            proc = subprocess.run(
                [sys.executable, "-m", "benchmarks.runner", spec_path, out_path],
                cwd=REPO,
                capture_output=True,
                text=True,
                env=env,
                timeout=max_secs + 30,
            )
        except subprocess.TimeoutExpired as exc:
            raise RunFailed(f"{builder} {params}: no result after {exc.timeout:.0f}s") from None
        result = None
        if os.path.exists(out_path):
            with open(out_path, encoding="utf-8") as fh:
                result = json.load(fh)
    if proc.returncode != 0 or result is None:
        tail = "\n    ".join((proc.stderr or "").strip().splitlines()[-15:])
        why = result.get("failure") if result else None
        raise RunFailed(
            f"{builder} {params}: runner exited {proc.returncode}"
            f"{': ' + why if why else ''}\n    {tail}"
        )
    return result


def median_bars(result: Result, labels: list[str], metric: str) -> tuple[list, list]:
    """A metric's medians over variants, and their min-max as matplotlib's error bars."""
    med, lo, hi = [], [], []
    for label in labels:
        s = result.variants[label].get(metric) or {"median": 0, "min": 0, "max": 0}
        med.append(s["median"])
        lo.append(s["median"] - s["min"])
        hi.append(s["max"] - s["median"])
    return med, [lo, hi]
