"""python -m benchmarks [NAME ...] [--quick | --smoke] [--results-dir DIR] [--list]"""

from __future__ import annotations

import argparse
import shlex
import sys
import time
import traceback
from pathlib import Path

from . import (
    acker_memory,
    drpc,
    idle,
    kafka,
    latency_under_load,
    protocol_ceiling,
    rdd_pipe,
    scaling,
    scaling_tasks,
    spark_driver,
    spark_engine,
    spark_spout,
    spout_modes,
    startup,
    transactional,
    wordcount,
)
from .harness import BENCH_DIR, MODES, Context, machine, table

BENCHMARKS = {
    m.NAME: m
    for m in (
        protocol_ceiling,
        wordcount,
        latency_under_load,
        acker_memory,
        idle,
        startup,
        scaling,
        scaling_tasks,
        spout_modes,
        rdd_pipe,
        spark_spout,
        spark_driver,
        spark_engine,
        kafka,
        transactional,
        drpc,
    )
}


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks",
        description="Measure the multilang host against baselines run alongside it. Prints a "
        "table per benchmark and writes <results-dir>/<name>.json.",
    )
    parser.add_argument(
        "names",
        nargs="*",
        metavar="NAME",
        help=f"benchmarks to run (default: all): {', '.join(BENCHMARKS)}",
    )
    speed = parser.add_mutually_exclusive_group()
    speed.add_argument("--quick", action="store_true", help="shorter runs: all in ~2 minutes")
    speed.add_argument(
        "--smoke",
        action="store_true",
        help="a fraction of a second per run: only proves that everything runs",
    )
    parser.add_argument(
        "--results-dir",
        type=Path,
        default=None,
        help="where to write the JSON results (default: benchmarks/results). "
        "The scaling plot goes to benchmarks/plots for a full run with the "
        "default results dir, else here",
    )
    parser.add_argument("--list", action="store_true", help="list the benchmarks and exit")
    args = parser.parse_args(argv)
    if args.list:
        for name, module in BENCHMARKS.items():
            print(f"{name:20} {module.DESCRIPTION}")
        return 0
    unknown = [n for n in args.names if n not in BENCHMARKS]
    if unknown:
        parser.error(f"unknown benchmark(s) {', '.join(unknown)}; known: {', '.join(BENCHMARKS)}")
    names = args.names or list(BENCHMARKS)
    mode = MODES["smoke" if args.smoke else "quick" if args.quick else "full"]
    results_dir = args.results_dir or BENCH_DIR / "results"
    # the committed plot (README) comes from full runs only; shorter runs plot beside the results
    plots_dir = (
        BENCH_DIR / "plots" if mode.name == "full" and args.results_dir is None else results_dir
    )
    ctx = Context(
        mode,
        results_dir,
        plots_dir,
        ("python -m benchmarks " + shlex.join(argv)).rstrip(),
        machine(),
    )
    m = ctx.machine
    print(
        f"# {ctx.command}\n# {m['cpu_count']} x {m['cpu_model']}, Python {m['python']}, "
        f"ujson {m['ujson']}, orjson {m['orjson'] or '-'}, node {m['node'] or '-'}, "
        f"commit {m['commit'] or '-'}; mode {mode.name}; load average "
        f"{m['load_average_at_start']}",
        flush=True,
    )
    failed = []
    started = time.monotonic()
    for name in names:
        module = BENCHMARKS[name]
        t0 = time.monotonic()
        try:
            result = module.run(ctx)
        except Exception:
            failed.append(name)
            print(f"== {name}: FAILED\n{traceback.format_exc()}", flush=True)
            continue
        path = result.write()
        print(table(result, module.COLUMNS), flush=True)
        print(f"   ({time.monotonic() - t0:.0f} s; {path})\n", flush=True)
    print(
        f"# {len(names) - len(failed)}/{len(names)} benchmarks in "
        f"{time.monotonic() - started:.0f} s" + (f"; failed: {', '.join(failed)}" if failed else "")
    )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
