"""rdd-pipe: the same split-and-count work on the same input, done by PySpark's `rdd.pipe()`
through components/split.sh (as a line filter) and by our topology (the same split.sh as a bolt,
every sentence acked), one run each. Only when pyspark is importable (and Java runs).

Both rates exclude start-up: Spark's from the job's start, with the SparkContext up and a small
warm-up job done; ours from the spout's first emit to the last ack (the spout writes both
times). Spark gets local[2] and 2 partitions; our topology 2 tasks per bolt (bash split, Python
count).
"""

from __future__ import annotations

import importlib.util
import json
import operator
import os
import shlex
import subprocess
import sys
import tempfile
import time

from .harness import COMPONENTS, REPO, Context, Result, run_topology

NAME = "rdd-pipe"
DESCRIPTION = "split-and-count: PySpark rdd.pipe() through split.sh vs our topology"
COLUMNS = [("records_per_s", "sentences/s"), ("secs", "seconds"), ("words", "words counted")]
SPARK, OURS = "pyspark rdd.pipe (baseline)", "our topology (acked)"


def _spark_job(input_path: str, partitions: int) -> dict:
    """Runs in its own process: the JVM must not outlive it."""
    from pyspark import SparkConf, SparkContext

    conf = (
        SparkConf()
        .setMaster(f"local[{partitions}]")
        .setAppName("bench-rdd-pipe")
        .set("spark.ui.enabled", "false")
    )
    sc = SparkContext(conf=conf)
    command = f"bash {shlex.quote(str(COMPONENTS / 'split.sh'))} --lines"

    def split_and_count(lines) -> dict:
        words = lines.pipe(command, checkCode=True)
        return dict(words.map(lambda w: (w, 1)).reduceByKey(operator.add).collect())

    try:
        sc.setLogLevel("ERROR")
        # a small job first: Python workers and the JIT warm up outside the clock, as our
        # topology's start-up is outside it
        split_and_count(sc.parallelize(["the cow jumped over"] * 1000, partitions))
        start = time.perf_counter()
        lines = sc.textFile(input_path, partitions)
        counts = split_and_count(lines)
        secs = time.perf_counter() - start
        n = lines.count()  # after the clock: counted for the rate, not timed
    finally:
        sc.stop()
    return {"records_per_s": n / secs, "secs": secs, "words": sum(counts.values())}


def _spark(input_path: str) -> dict:
    out = subprocess.run(
        [sys.executable, "-m", "benchmarks.rdd_pipe", input_path, "2"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=600,
    )
    if out.returncode != 0:
        raise RuntimeError(out.stderr.strip()[-1500:] or f"exit status {out.returncode}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def _ours(ctx: Context, input_path: str, n: int, tmp: str) -> dict:
    done = os.path.join(tmp, "done.json")
    out = run_topology(
        ctx,
        "wordcount",
        {
            "split": "bash",
            "parallelism": 2,
            "per_next": 100,
            "config": {"bench.input.file": input_path, "bench.limit": n, "bench.done.file": done},
        },
        warmup=0.0,
        windows=1,
        window=3600.0,
        stop_when_acked=n,
        max_secs=600,
    )
    with open(done, encoding="utf-8") as fh:
        times = json.load(fh)
    secs = times["all_acked"] - times["first_emit"]
    words = out["stats"]["components"]["count"]["executed"]
    return {"records_per_s": n / secs, "secs": secs, "words": words}


def run(ctx: Context) -> Result:
    result = Result(NAME, ctx, DESCRIPTION, baseline=SPARK)
    if importlib.util.find_spec("pyspark") is None:
        result.skipped = "pyspark not installed"
        return result
    from .components.spout import SENTENCES

    n = ctx.mode.rdd_records
    with tempfile.TemporaryDirectory(prefix="bench-rdd-") as tmp:
        input_path = os.path.join(tmp, "sentences.txt")
        with open(input_path, "w", encoding="utf-8") as fh:
            for i in range(n):
                fh.write(SENTENCES[i % len(SENTENCES)] + "\n")
        ctx.progress(f"{NAME}: pyspark, {n:,} sentences")
        try:
            spark = _spark(input_path)
        except (RuntimeError, subprocess.SubprocessError) as exc:
            result.skipped = f"pyspark did not run: {exc}"
            return result
        ctx.progress(f"{NAME}: our topology, {n:,} sentences")
        ours = _ours(ctx, input_path, n, tmp)
    result.add(SPARK, [spark], {"sentences": n, "partitions": 2})
    result.add(OURS, [ours], {"sentences": n, "parallelism": 2, "split": "bash"})
    result.ratio("ours / rdd.pipe records per s", ours["records_per_s"], spark["records_per_s"])
    result.targets[OURS] = ">= 1.0x rdd.pipe records/s, with per-tuple acks"
    result.notes.append("one run each (a Spark job is long); rates exclude start-up")
    return result


if __name__ == "__main__":
    print(json.dumps(_spark_job(sys.argv[1], int(sys.argv[2]))))
