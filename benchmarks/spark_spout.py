"""spark-spout: the Spark spout feeding a topology, next to a plain in-memory Python spout feeding
the same topology with the same sentences, in the same run.

Topology: source -> split (Python, shuffle) -> count (Python, fields on word), every sentence
acked, max.spout.pending 1000, 100 rows per `next` for both spouts. The Spark spout runs its
DataFrame source over the same text file (`spark.spout.format: text`, local[2]).

Figures per variant: `emit_rate` (sentences/s from the spout's first emit to the last ack, so
start-up is excluded), `first_tuple_s` (seconds from the host's start to the spout's first
emit) and `spout_cpu_us_per_row` (the spout process's CPU time over the same span, per row: the
share of a busy machine the spout takes, steadier than rates when the machine is shared).
The Spark spout is measured twice: *cold*, once (a fresh staging directory: the JVM starts,
the job runs and is staged), and *warm*, each round (a fresh checkpoint over the staged
rows, as after a restart: no JVM). Target: the Spark spout's rate >= 80% of the plain spout's
(it must not be the bottleneck).

Each run is its own process (`python -m benchmarks.spark_spout SPEC OUT`): one host per run.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

from .harness import COMPONENTS, REPO, Context, Result, round_robin

NAME = "spark-spout"
DESCRIPTION = "Spark spout (DataFrame source) vs a plain Python spout, same topology"
COLUMNS = [
    ("emit_rate", "sentences/s"),
    ("first_tuple_s", "start to first tuple (s)"),
    ("spout_cpu_us_per_row", "spout CPU us/row"),
]
PLAIN, COLD, WARM = (
    "plain Python spout (baseline)",
    "Spark spout, cold (JVM + staging)",
    "Spark spout, warm (staged)",
)
ROWS = {"full": 200_000, "quick": 20_000, "smoke": 2_000}
SPARK_CONF = {
    "spark.master": "local[2]",
    "spark.ui.enabled": "false",
    "spark.driver.extraJavaOptions": "-XX:TieredStopAtLevel=1",
}


def build(spec: dict):
    from host.topology import TopologyBuilder

    n = spec["rows"]
    b = TopologyBuilder(
        "bench-spark-spout",
        config={
            "topology.max.spout.pending": 1000,
            "topology.message.timeout.secs": 120,
            "host.shutdown.grace.secs": 2,
        },
    )
    if spec["variant"] == "plain":
        b.spout(
            "source",
            ["python", "spout.py"],
            outputs=["sentence"],
            config={"bench.input.file": spec["input"], "bench.limit": n, "bench.per.next": 100},
        )
    else:
        b.spout(
            "source",
            ["python", "-m", "components.spark_spout"],
            outputs=["value"],
            config={
                **SPARK_CONF,
                "spark.spout.source": "dataframe",
                "spark.spout.path": spec["input"],
                "spark.spout.format": "text",
                "spark.spout.rows.per.next": 100,
                "spark.spout.checkpoint.dir": spec["checkpoint"],
                "spark.spout.staging.dir": spec["staging"],
            },
        )
    b.bolt("split", ["python", "split.py"], outputs=["word"]).shuffle("source")
    b.bolt("count", ["python", "count.py"], outputs=["word", "count"]).fields("split", "word")
    return b.build(COMPONENTS)


def measure(spec: dict) -> dict:
    """Runs in its own process: the host until `rows` sentences are acked."""
    from host.runtime.supervisor import Supervisor

    sup = Supervisor(build(spec))
    first: list[float] = []

    def on_emit(component, task, m) -> None:
        if not first and component == "source":
            first.append(time.monotonic())

    sup.on_emit = on_emit
    started = time.monotonic()
    sup.start(spec["max_secs"])
    done_at = None
    cpu_at_first = cpu_at_done = None
    try:
        while sup.step():
            if first and cpu_at_first is None:
                cpu_at_first = _spout_cpu(sup)
            if done_at is None and sup.path.spout_acked >= spec["rows"]:
                done_at = time.monotonic()
                cpu_at_done = _spout_cpu(sup)
                sup.request_stop("all sentences acked")
    finally:
        sup.finish()
    if done_at is None or not first:
        raise RuntimeError(
            f"{spec['variant']}: {sup.path.spout_acked} of {spec['rows']} acked "
            f"({sup.failure or 'time limit'})"
        )
    figures = {
        "emit_rate": spec["rows"] / (done_at - first[0]),
        "first_tuple_s": first[0] - started,
        "secs": done_at - first[0],
    }
    if cpu_at_first is not None and cpu_at_done is not None:
        figures["spout_cpu_us_per_row"] = (cpu_at_done - cpu_at_first) / spec["rows"] * 1e6
    return figures


def _spout_cpu(sup) -> float | None:
    """CPU seconds of the spout's Python process so far (not its JVM: that is start-up)."""
    import psutil

    pid = next((pid for name, pid in sup.pids().items() if name.startswith("source[")), None)
    if pid is None:
        return None
    try:
        times = psutil.Process(pid).cpu_times()
    except psutil.Error:
        return None
    return times.user + times.system


def _run(spec: dict) -> dict:
    with tempfile.TemporaryDirectory(prefix="bench-spark-run-") as tmp:
        spec_path, out_path = os.path.join(tmp, "spec.json"), os.path.join(tmp, "out.json")
        with open(spec_path, "w", encoding="utf-8") as fh:
            json.dump({**spec, "checkpoint": os.path.join(tmp, "ck")}, fh)
        proc = subprocess.run(
            [sys.executable, "-m", "benchmarks.spark_spout", spec_path, out_path],
            cwd=REPO,
            capture_output=True,
            text=True,
            timeout=spec["max_secs"] + 60,
        )
        if proc.returncode != 0 or not os.path.exists(out_path):
            tail = "\n    ".join(proc.stderr.strip().splitlines()[-15:])
            raise RuntimeError(f"{spec['variant']} run failed ({proc.returncode}):\n    {tail}")
        with open(out_path, encoding="utf-8") as fh:
            return json.load(fh)


def run(ctx: Context) -> Result:
    result = Result(NAME, ctx, DESCRIPTION, baseline=PLAIN)
    if importlib.util.find_spec("pyspark") is None or shutil.which("java") is None:
        result.skipped = "pyspark or java not installed (pip install -e '.[spark]')"
        return result
    from .components.spout import SENTENCES

    n = ROWS[ctx.mode.name]
    with tempfile.TemporaryDirectory(prefix="bench-spark-") as tmp:
        text = os.path.join(tmp, "sentences.txt")
        with open(text, "w", encoding="utf-8") as fh:
            for i in range(n):
                fh.write(SENTENCES[i % len(SENTENCES)] + "\n")
        base = {"rows": n, "input": text, "staging": os.path.join(tmp, "staging"), "max_secs": 600}
        ctx.progress(f"{NAME}: Spark spout, cold start, {n:,} sentences")
        cold = _run({**base, "variant": "spark"})
        samples = round_robin(
            {
                PLAIN: lambda: _run({**base, "variant": "plain"}),
                WARM: lambda: _run({**base, "variant": "spark"}),
            },
            ctx.mode.runs,
            ctx,
            NAME,
        )
    params = {
        "sentences": n,
        "max_spout_pending": 1000,
        "per_next": 100,
        "bolts": "split (Python) -> count (Python)",
    }
    result.add(PLAIN, samples[PLAIN], params)
    result.add(WARM, samples[WARM], {**params, "spark": SPARK_CONF})
    result.add(COLD, [cold], {**params, "spark": SPARK_CONF})
    result.ratio(
        "Spark spout (warm) / plain spout, emit rate",
        result.median(WARM, "emit_rate"),
        result.median(PLAIN, "emit_rate"),
    )
    result.ratio(
        "Spark spout (cold) / plain spout, emit rate",
        result.median(COLD, "emit_rate"),
        result.median(PLAIN, "emit_rate"),
    )
    result.targets[WARM] = ">= 0.8x the plain spout's emit rate (the spout is not the bottleneck)"
    result.notes.append(
        "cold: one run (the JVM start and the staging job dominate its "
        "start-to-first-tuple); rates exclude start-up"
    )
    return result


if __name__ == "__main__":
    with open(sys.argv[1], encoding="utf-8") as fh:
        figures = measure(json.load(fh))
    with open(sys.argv[2], "w", encoding="utf-8") as fh:
        json.dump(figures, fh)
