"""Profile the host while it runs a benchmark topology: which functions take its time.

    python -m benchmarks.profile [--seconds 8] [--split python|bash|node] [--per-next 100]
                                 [--parallelism 1] [--top 25] [--pyinstrument]

Runs the word count in `benchmarks.runner` under py-spy (sampling, 1,000 Hz, native frames off,
idle samples left out) and prints the functions with the most samples, by own time (where the
CPU was) and by inclusive time (what it was doing it for). `--pyinstrument` uses pyinstrument
inside the host process instead (a call tree; slower, changes the timing more).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections import Counter

from .harness import REPO
from .wordcount import io_metrics

_LINE = re.compile(r" \(([^:()]+):\d+\)$")  # "fn (file.py:123)" -> "fn (file.py)"


def _function(frame: str) -> str:
    return _LINE.sub(r" (\1)", frame)


def summarise_raw(path: str, top: int, under: str = "Supervisor.run") -> str:
    """py-spy's raw (collapsed stacks) output -> own and inclusive sample shares per function,
    of the stacks that pass through `under` (the event loop: imports and set-up left out)."""
    own: Counter = Counter()
    inclusive: Counter = Counter()
    total = 0
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            stack, _, count = line.rstrip("\n").rpartition(" ")
            if not stack:
                continue
            n = int(count)
            total += n
            frames = [_function(f) for f in stack.split(";")]
            if under and not any(f.startswith(under + " ") for f in frames):
                continue
            own[frames[-1]] += n
            for f in set(frames):
                inclusive[f] += n
    if not total:
        return "no samples"
    lines = [f"{total} samples of the host's {under} (idle time left out)", "", "own time:"]
    lines += [f"  {n / total * 100:5.1f}%  {f}" for f, n in own.most_common(top)]
    lines += ["", "inclusive time:"]
    lines += [
        f"  {n / total * 100:5.1f}%  {f}"
        for f, n in inclusive.most_common(top)
        if "runpy" not in f and "runner.py" not in f and not f.startswith(under + " ")
    ]
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.profile",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--seconds", type=float, default=8.0)
    parser.add_argument("--split", choices=("python", "bash", "node"), default="python")
    parser.add_argument("--per-next", type=int, default=100)
    parser.add_argument("--parallelism", type=int, default=1)
    parser.add_argument("--top", type=int, default=25)
    parser.add_argument("--pyinstrument", action="store_true")
    args = parser.parse_args()
    params = {"split": args.split, "per_next": args.per_next, "parallelism": args.parallelism}
    with tempfile.TemporaryDirectory(prefix="bench-profile-") as tmp:
        spec = {
            "builder": "wordcount",
            "params": params,
            "warmup": 1.0,
            "windows": 1,
            "window": args.seconds,
            "max_secs": args.seconds + 60,
        }
        out_path, raw = os.path.join(tmp, "out.json"), os.path.join(tmp, "host.raw")
        runner = [
            sys.executable,
            "-m",
            "benchmarks.runner",
            os.path.join(tmp, "spec.json"),
            out_path,
        ]
        if args.pyinstrument:
            spec["profile"] = os.path.join(tmp, "profile.txt")
        else:
            py_spy = shutil.which("py-spy") or os.path.join(
                os.path.dirname(sys.executable), "py-spy"
            )
            if not os.path.exists(py_spy):
                print(
                    "py-spy not installed (pip install -e '.[bench]'); try --pyinstrument",
                    file=sys.stderr,
                )
                return 1
            runner = [
                py_spy,
                "record",
                "--rate",
                "1000",
                "--format",
                "raw",
                "--output",
                raw,
                "--",
            ] + runner
        with open(os.path.join(tmp, "spec.json"), "w", encoding="utf-8") as fh:
            json.dump(spec, fh)
        proc = subprocess.run(runner, cwd=REPO, capture_output=True, text=True)
        if proc.returncode != 0 or not os.path.exists(out_path):
            print(proc.stderr[-3000:], file=sys.stderr)
            return 1
        with open(out_path, encoding="utf-8") as fh:
            w = json.load(fh)["windows"][0]
        io = io_metrics(w)
        print(
            f"wordcount {params}: {w['acked'] / w['secs']:,.0f} sentences/s, host CPU "
            f"{w['host_cpu_s'] / w['secs'] * 100:.0f}% (under the profiler)"
        )
        if io:
            print(
                f"host syscalls: {io['host_reads_per_s']:,.0f} reads/s of "
                f"{io['host_bytes_per_read'] or 0:,.0f} B, {io['host_writes_per_s']:,.0f} "
                f"writes/s of {io['host_bytes_per_write'] or 0:,.0f} B, "
                f"{io['host_voluntary_switches_per_s']:,.0f} sleeps/s; garbage collector "
                f"{io.get('host_gc_pct', 0):.1f}% of a core"
            )
        print()
        if args.pyinstrument:
            with open(spec["profile"], encoding="utf-8") as fh:
                print(fh.read())
        else:
            print(summarise_raw(raw, args.top))
    return 0


if __name__ == "__main__":
    sys.exit(main())
