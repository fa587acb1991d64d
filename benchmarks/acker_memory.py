"""acker-memory: host.runtime.acker.Acker in isolation: memory per pending spout tuple (root) with
100,000 and 1,000,000 pending, and operations per second.

Memory: roots are opened as the host opens them (`open` with the spout task and an int message
id, then `add` with the XOR of the copies' ids; the real clock), and the growth of traced memory
(tracemalloc) is divided by the number of roots, host.runtime.acker being imported before the first
reading; RSS growth is measured in a separate process without tracemalloc. Baseline: a plain dict {random 64-bit root id: random 64-bit XOR}, the least
any XOR ledger in Python can hold per root. Ops/s: open + add + ack of one root with 1,000 roots
pending, against the baseline's dict insert + pop. Every measurement runs in a fresh process.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections import deque
from random import getrandbits

from .harness import REPO, Context, Result, round_robin

NAME = "acker-memory"
DESCRIPTION = "host.runtime.acker.Acker: bytes per pending root, open+add+ack operations/s"
COLUMNS = [
    ("tracemalloc_bytes_per_root", "bytes/root (tracemalloc)"),
    ("rss_bytes_per_root", "bytes/root (RSS)"),
    ("held", "held"),
    ("ops_per_s", "roots opened+acked/s"),
]
WINDOW = 1000  # roots pending while measuring ops/s


# ---- the worker (runs in its own process) -------------------------------------------------------


def _fill_acker(n: int):
    from host.runtime.acker import Acker

    acker = Acker(30, time.monotonic)
    open_, add = acker.open, acker.add
    for i in range(n):
        add((open_(1, i + 1000, 0),), getrandbits(64) | 1)
    assert len(acker) == n
    return acker


def _fill_dict(n: int) -> dict:
    ledger = {}
    for _ in range(n):
        ledger[getrandbits(64) | 1] = getrandbits(64) | 1
    return ledger


def _memory(kind: str, n: int, how: str) -> dict:
    fill = _fill_acker if kind == "acker" else _fill_dict
    if kind == "acker":
        # loaded before the first reading: the module's code is no memory per root, and its
        # pages alone came to some 7 bytes per root in RSS at 100,000
        import host.runtime.acker  # noqa: F401
    if how == "tracemalloc":
        import tracemalloc

        tracemalloc.start()
        before = tracemalloc.get_traced_memory()[0]
        held = fill(n)
        grown = tracemalloc.get_traced_memory()[0] - before
    else:
        import psutil

        me = psutil.Process()
        before = me.memory_info().rss
        held = fill(n)
        grown = me.memory_info().rss - before
    return {"bytes_per_root": grown / n, "held": len(held)}


def _ops(kind: str, secs: float) -> dict:
    done = 0
    if kind == "acker":
        from host.runtime.acker import Acker

        acker = Acker(30, time.monotonic)
        open_, add, ack = acker.open, acker.add, acker.ack
        window: deque = deque()
        for i in range(WINDOW):
            x = getrandbits(64) | 1
            add((root := open_(1, i, 0),), x)
            window.append((root, x))
        end = time.perf_counter() + secs
        start = time.perf_counter()
        while True:
            for i in range(1000):
                x = getrandbits(64) | 1
                root = open_(1, i, 0)
                add((root,), x)
                window.append((root, x))
                old, oldx = window.popleft()
                if ack((old,), oldx):
                    done += 1
            if time.perf_counter() >= end:
                break
    else:
        ledger: dict = {}
        window = deque()
        for _ in range(WINDOW):
            root = getrandbits(64) | 1
            ledger[root] = getrandbits(64) | 1
            window.append(root)
        end = time.perf_counter() + secs
        start = time.perf_counter()
        while True:
            for _ in range(1000):
                root = getrandbits(64) | 1
                ledger[root] = getrandbits(64) | 1
                window.append(root)
                ledger.pop(window.popleft())
                done += 1
            if time.perf_counter() >= end:
                break
    return {"ops_per_s": done / (time.perf_counter() - start)}


def worker(spec: dict) -> dict:
    if spec["op"] == "memory":
        return _memory(spec["kind"], spec["n"], spec["how"])
    return _ops(spec["kind"], spec["secs"])


def _in_process(spec: dict) -> dict:
    out = subprocess.run(
        [sys.executable, "-m", "benchmarks.acker_memory", json.dumps(spec)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )
    if out.returncode != 0:
        raise RuntimeError(f"acker worker {spec} failed: {out.stderr.strip()[-2000:]}")
    return json.loads(out.stdout)


# ---- the benchmark ------------------------------------------------------------------------------


def _memory_of(kind: str, n: int, tracemalloc: bool) -> dict:
    m = {}
    if tracemalloc:
        traced = _in_process({"op": "memory", "kind": kind, "n": n, "how": "tracemalloc"})
        m["tracemalloc_bytes_per_root"] = traced["bytes_per_root"]
    rss = _in_process({"op": "memory", "kind": kind, "n": n, "how": "rss"})
    m["rss_bytes_per_root"] = rss["bytes_per_root"]
    m["held"] = float(rss["held"])
    return m


def run(ctx: Context) -> Result:
    result = Result(NAME, ctx, DESCRIPTION, baseline="dict baseline")
    sizes = ctx.mode.acker_sizes
    secs = ctx.mode.acker_ops_secs
    kinds = {"dict baseline": "dict", "Acker": "acker"}
    # tracemalloc slows allocation ~10x: 1,000,000 roots under it take ~12 s, so --quick traces
    # only the smaller size (RSS covers both)
    traced = sizes if ctx.mode.name == "full" else sizes[:1]
    for n in sizes:  # memory is deterministic: measured once, baseline then subject
        for label, kind in kinds.items():
            ctx.progress(f"{NAME}: {label}, {n:,} pending")
            result.add(
                f"{label}, {n:,} pending", [_memory_of(kind, n, n in traced)], {"pending": n}
            )
    ops = round_robin(
        {
            label: (lambda kind=kind: _in_process({"op": "ops", "kind": kind, "secs": secs}))
            for label, kind in kinds.items()
        },
        ctx.mode.runs,
        ctx,
        NAME,
    )
    for label in kinds:
        result.add(
            f"{label}, ops ({WINDOW:,} pending)", ops[label], {"pending": WINDOW, "secs": secs}
        )
    for n in sizes:
        for how in ("tracemalloc", "rss"):
            key = f"{how}_bytes_per_root"
            if result.median(f"Acker, {n:,} pending", key) is not None:
                result.ratio(
                    f"Acker/dict bytes per root at {n:,} ({how})",
                    result.median(f"Acker, {n:,} pending", key),
                    result.median(f"dict baseline, {n:,} pending", key),
                )
    result.ratio(
        "Acker/dict ops per s",
        result.median(f"Acker, ops ({WINDOW:,} pending)", "ops_per_s"),
        result.median(f"dict baseline, ops ({WINDOW:,} pending)", "ops_per_s"),
    )
    result.targets["Acker"] = "<= 200 bytes per pending spout tuple; 1,000,000 pending held"
    result.notes.append(
        "memory: one measurement per size (deterministic); ops/s: median of "
        "the rounds; one fresh process per measurement"
    )
    return result


if __name__ == "__main__":
    print(json.dumps(worker(json.loads(sys.argv[1]))))
