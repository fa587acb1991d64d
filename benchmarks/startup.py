"""startup: from launching `python -m host local` to the first acked tuple, for a 3-component
topology (Python spout -> split -> count), as a user would start it.

The spout writes time.time() to a file when its first ack arrives; the time is measured from
just before the host is launched. Baselines, alternating with it: a bare interpreter
(`python -c pass`) and `python -m host validate` of the same file (the host's imports and the
topology's loading, without starting any process).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import time

import yaml

from .harness import COMPONENTS, REPO, Context, Result, round_robin

NAME = "startup"
DESCRIPTION = "launch of `python -m host local` to the first acked tuple (3 components)"
COLUMNS = [("secs", "seconds")]
BARE, VALIDATE, FIRST_ACK = "python -c pass", "python -m host validate", "host local: first ack"
LIMIT_SECS = 30


def _topology_file(directory: str, ack_file: str) -> str:
    spec = {
        "name": "bench-startup",
        "config": {
            "topology.max.spout.pending": 1000,
            "bench.per.next": 1,
            "bench.first.ack.file": ack_file,
            "host.shutdown.grace.secs": 1,
        },
        "spouts": {
            "sentences": {
                "command": ["python", "spout.py"],
                "outputs": ["sentence"],
                "cwd": str(COMPONENTS),
            }
        },
        "bolts": {
            "split": {
                "command": ["python", "split.py"],
                "outputs": ["word"],
                "cwd": str(COMPONENTS),
                "inputs": {"sentences": "shuffle"},
            },
            "count": {
                "command": ["python", "count.py"],
                "outputs": ["word", "count"],
                "cwd": str(COMPONENTS),
                "inputs": {"split": {"fields": ["word"]}},
            },
        },
    }
    path = os.path.join(directory, "startup.yaml")
    with open(path, "w", encoding="utf-8") as fh:
        yaml.safe_dump(spec, fh)
    return path


def _timed(argv: list[str]) -> dict:
    start = time.time()
    subprocess.run(argv, cwd=REPO, check=True, stdout=subprocess.DEVNULL)
    return {"secs": time.time() - start}


def _first_ack(topology: str, ack_file: str) -> dict:
    if os.path.exists(ack_file):
        os.unlink(ack_file)
    with tempfile.TemporaryFile() as log:
        start = time.time()
        host = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "host",
                "local",
                topology,
                "--quiet",
                "--duration",
                str(LIMIT_SECS),
            ],
            cwd=REPO,
            stdout=log,
            stderr=log,
        )
        try:
            while not os.path.exists(ack_file):
                if host.poll() is not None or time.time() - start > LIMIT_SECS:
                    log.seek(0)
                    raise RuntimeError(
                        f"no ack from the start-up topology: "
                        f"{log.read().decode(errors='replace')[-2000:]}"
                    )
                time.sleep(0.002)  # polling a file: this resolution is plenty for start-up
            with open(ack_file, encoding="utf-8") as fh:
                acked_at = float(fh.read())
        finally:
            host.send_signal(signal.SIGTERM)
            try:
                host.wait(timeout=15)
            except subprocess.TimeoutExpired:
                host.kill()
                host.wait()
    return {"secs": acked_at - start}


def run(ctx: Context) -> Result:
    result = Result(NAME, ctx, DESCRIPTION, baseline=VALIDATE)
    with tempfile.TemporaryDirectory(prefix="bench-startup-") as tmp:
        ack_file = os.path.join(tmp, "first-ack")
        topology = _topology_file(tmp, ack_file)
        samples = round_robin(
            {
                BARE: lambda: _timed([sys.executable, "-c", "pass"]),
                VALIDATE: lambda: _timed([sys.executable, "-m", "host", "validate", topology]),
                FIRST_ACK: lambda: _first_ack(topology, ack_file),
            },
            max(3, ctx.mode.runs) if ctx.mode.name != "smoke" else 1,
            ctx,
            NAME,
        )
    for variant, runs in samples.items():
        result.add(variant, runs)
    result.ratio(
        "first ack / validate", result.median(FIRST_ACK, "secs"), result.median(VALIDATE, "secs")
    )
    result.targets[FIRST_ACK] = "<= 1 s"
    return result
