"""A/B of the host against an earlier commit, measured in one run, alternating:

    python -m benchmarks.ab REV [--rounds 5] [--secs 4] [--idle-secs 10] [--parallelism 1]

REV is checked out into a temporary git worktree (with this checkout's built C decoder copied in)
and both sides run the same benchmark topologies through their own `benchmarks.runner`, each in a
fresh process with its own tree first on PYTHONPATH (so the components import that side's client
libraries too). Rounds alternate A-B, B-A, ... so that a drift of the machine's speed during the
run falls on both sides alike. Figures per side: the Python word count (`--parallelism` tasks per
bolt) at full rate (sentences/s, host CPU per routed tuple), the same at a fixed 50 % of the first
full-rate run of A (the rate reached, host and components' CPU %, complete latency p50 / p99),
and an idle topology (host and components' CPU %). Printed as median (min-max) and B / A.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from .wordcount import window_metrics

REPO = Path(__file__).resolve().parents[1]


def runner(
    tree: Path, builder_params: dict, *, warmup: float, window: float, windows: int = 1
) -> dict:
    spec = {
        "builder": "wordcount",
        "params": builder_params,
        "warmup": warmup,
        "windows": windows,
        "window": window,
        "max_secs": 60 + warmup + windows * window,
        "stop_when_acked": None,
        "companion": None,
        "profile": None,
    }
    with tempfile.TemporaryDirectory(prefix="ab-") as tmp:
        spec_path, out_path = Path(tmp, "spec.json"), Path(tmp, "out.json")
        spec_path.write_text(json.dumps(spec))
        env = {**os.environ, "PYTHONPATH": str(tree)}
        proc = subprocess.run(
            [sys.executable, "-m", "benchmarks.runner", str(spec_path), str(out_path)],
            cwd=tree,
            env=env,
            capture_output=True,
            text=True,
            timeout=spec["max_secs"] + 60,
        )
        if proc.returncode != 0 or not out_path.exists():
            raise SystemExit(f"runner failed in {tree}:\n{proc.stderr[-3000:]}")
        return json.loads(out_path.read_text())  # type: ignore[no-any-return]


def measure(
    tree: Path, secs: float, idle_secs: float, rate: float | None, parallelism: int = 1
) -> dict:
    word_count = {"split": "python", "per_next": 100, "parallelism": parallelism}
    full = window_metrics(runner(tree, word_count, warmup=1.5, window=secs)["windows"][0])
    out = {
        "sentences_per_s": full["sentences_per_s"],
        "host_us_per_tuple": full["host_cpu_us_per_tuple"],
    }
    if rate is None:
        rate = 0.5 * full["sentences_per_s"]
    half = window_metrics(
        runner(
            tree,
            {
                **word_count,
                "rate": rate,
                "config": {"host.acker.latency.sample": 1},
            },
            warmup=1.5,
            window=secs,
        )["windows"][0]
    )
    out["rate"] = rate
    # what the paced run reached, and what it cost: a spout asked too seldom or too often at half
    # load shows here (host/runtime/idle_backoff.py)
    out["sentences_per_s_at_half"] = half["sentences_per_s"]
    out["host_cpu_pct_at_half"] = half["host_cpu_pct"]
    out["components_cpu_pct_at_half"] = half["components_cpu_pct"]
    out["p50_ms_at_half"] = half["latency_p50_ms"]
    out["p99_ms_at_half"] = half["latency_p99_ms"]
    idle = runner(tree, {"split": "python", "idle": True}, warmup=1.0, window=idle_secs)
    window = idle["windows"][0]
    out["idle_host_cpu_pct"] = window["host_cpu_s"] / window["secs"] * 100
    out["idle_components_cpu_pct"] = window["children_cpu_s"] / window["secs"] * 100
    return out


def worktree(rev: str, into: Path) -> Path:
    subprocess.run(
        ["git", "worktree", "add", "--detach", str(into), rev],
        cwd=REPO,
        check=True,
        capture_output=True,
    )
    for so in (REPO / "multilang").glob("_speedups*.so"):
        shutil.copy(so, into / "multilang" / so.name)
    return into


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.ab",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("rev", help="the commit to compare against (A); B is this checkout")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--secs", type=float, default=4.0, help="measured window per run")
    parser.add_argument("--idle-secs", type=float, default=10.0)
    parser.add_argument(
        "--parallelism",
        type=int,
        default=1,
        help="tasks per bolt of the word count at full rate and at half load (scaling-tasks' N)",
    )
    args = parser.parse_args(argv)
    tmp = Path(tempfile.mkdtemp(prefix="ab-base-"))
    base = worktree(args.rev, tmp / "a")
    sides = {"A": base, "B": REPO}
    samples: dict[str, list[dict]] = {"A": [], "B": []}
    rate: float | None = None
    try:
        for r in range(args.rounds):
            for side in ("A", "B") if r % 2 == 0 else ("B", "A"):
                m = measure(sides[side], args.secs, args.idle_secs, rate, args.parallelism)
                rate = rate or m["rate"]
                samples[side].append(m)
                print(
                    f"round {r + 1} {side}: " + ", ".join(f"{k} {v:.4g}" for k, v in m.items()),
                    flush=True,
                )
    finally:
        subprocess.run(
            ["git", "worktree", "remove", "--force", str(base)], cwd=REPO, capture_output=True
        )
        shutil.rmtree(tmp, ignore_errors=True)
    print(
        f"\nA = {args.rev}, B = this checkout; {args.rounds} rounds, alternating; "
        "median (min-max)\n"
    )
    print("| figure | A | B | B / A |\n|---|---:|---:|---:|")
    for key in (
        "sentences_per_s",
        "host_us_per_tuple",
        "sentences_per_s_at_half",
        "host_cpu_pct_at_half",
        "components_cpu_pct_at_half",
        "p50_ms_at_half",
        "p99_ms_at_half",
        "idle_host_cpu_pct",
        "idle_components_cpu_pct",
    ):
        cells = []
        medians = []
        for side in ("A", "B"):
            values = [s[key] for s in samples[side] if s[key] is not None]
            med = statistics.median(values)
            medians.append(med)
            cells.append(f"{med:.4g} ({min(values):.4g}-{max(values):.4g})")
        print(f"| {key} | {cells[0]} | {cells[1]} | {medians[1] / medians[0]:.3f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
