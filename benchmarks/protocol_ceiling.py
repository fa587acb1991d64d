"""protocol-ceiling: the physical limit of JSON over pipes on this machine.

A Python parent and a minimal Python child (components/ceiling_child.py: raw os.read/os.write, no
library) exchange what our bolts exchange: the parent writes a tuple, the child answers with an
anchored emit and an ack; 100 tuples in flight. The parent encodes every tuple and decodes every
reply, as a host must. Every other throughput figure is also given as a ratio to this one.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import time

import psutil

from .harness import COMPONENTS, Context, Result, round_robin

NAME = "protocol-ceiling"
DESCRIPTION = "JSON over pipes, Python parent <-> raw Python child, tuple in / emit + ack out"
COLUMNS = [
    ("tuples_per_s", "tuples/s"),
    ("parent_cpu_us_per_tuple", "parent CPU us/tuple"),
    ("child_cpu_us_per_tuple", "child CPU us/tuple"),
]
DEPTH = 100
END = b"\nend\n"
SENTENCE = "the cow jumped over"


def libraries() -> list[str]:
    """ujson always (the chosen library); orjson when installed."""
    libs = ["ujson"]
    if importlib.util.find_spec("orjson") is not None:
        libs.append("orjson")
    return libs


def _codec(lib: str):
    if lib == "orjson":
        import orjson

        return orjson.loads, orjson.dumps
    import ujson

    return ujson.loads, lambda value: ujson.dumps(value).encode()


def measure(lib: str, secs: float, depth: int = DEPTH) -> dict:
    """One run: acked tuples per second over `secs`, after a short warm-up."""
    loads, dumps = _codec(lib)
    proc = subprocess.Popen(
        [sys.executable, str(COMPONENTS / "ceiling_child.py"), lib],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        bufsize=0,
    )
    child = psutil.Process(proc.pid)
    wfd, rfd = proc.stdin.fileno(), proc.stdout.fileno()
    next_id = 1

    def send(n: int) -> None:
        nonlocal next_id
        frames = []
        for _ in range(n):
            frames.append(
                dumps(
                    {
                        "id": str(next_id),
                        "comp": "sentences",
                        "stream": "default",
                        "task": 1,
                        "tuple": [SENTENCE],
                    }
                )
            )
            next_id += 1
        frames.append(b"")
        data = END.join(frames)
        while data:
            data = data[os.write(wfd, data) :]

    try:
        warmup = min(0.2, secs / 4)
        start = time.perf_counter()
        in_flight, acked, rest = depth, 0, b""
        t0 = acked0 = cpu0 = child0 = None
        send(depth)
        while True:
            data = os.read(rfd, 65536)
            if not data:
                raise RuntimeError(f"the ceiling child ({lib}) exited: {proc.wait()}")
            frames = (rest + data).split(END)
            rest = frames.pop()
            done = 0
            for raw in frames:
                if loads(raw)["command"] == "ack":
                    done += 1
            acked += done
            in_flight -= done
            now = time.perf_counter()
            if t0 is None and now - start >= warmup:
                t0, acked0 = now, acked
                cpu0, child0 = time.process_time(), sum(child.cpu_times()[:2])
            elif t0 is not None and now - t0 >= secs:
                break
            if in_flight < depth:
                send(depth - in_flight)
                in_flight = depth
        cpu = time.process_time() - cpu0
        child_cpu = sum(child.cpu_times()[:2]) - child0
    finally:
        proc.stdin.close()
        proc.wait(timeout=10)
        proc.stdout.close()
    n = acked - acked0
    return {
        "tuples_per_s": n / (now - t0),
        "parent_cpu_us_per_tuple": cpu / n * 1e6,
        "child_cpu_us_per_tuple": child_cpu / n * 1e6,
    }


def run(ctx: Context) -> Result:
    result = Result(NAME, ctx, DESCRIPTION, baseline="ujson")
    secs = ctx.mode.ceiling_secs
    libs = libraries()
    samples = round_robin(
        {lib: (lambda lib=lib: measure(lib, secs)) for lib in libs}, ctx.mode.runs, ctx, NAME
    )
    for lib in libs:
        result.add(lib, samples[lib], {"depth": DEPTH, "secs": secs, "json": lib})
    if "orjson" in libs:
        result.ratio(
            "orjson/ujson",
            result.median("orjson", "tuples_per_s"),
            result.median("ujson", "tuples_per_s"),
        )
    else:
        result.notes.append("orjson not installed (pip install -e '.[bench]'): ujson only")
    result.targets["reference"] = (
        "the prototype the performance targets were set against measured ~57,000 tuples/s "
        "(ujson), ~91,000 (orjson) on its 2-core machine"
    )
    ctx.cache["ceiling"] = result.median("ujson", "tuples_per_s")
    return result
