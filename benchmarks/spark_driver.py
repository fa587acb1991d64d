"""spark-driver: the split stage of the word count through our executor-side component driver
(host/spark/component_process.py) inside Spark, against `rdd.pipe()` with a line filter in the
same language, on the same sentences, in the same run (issue 17's target: >= 0.33x rdd.pipe).

Per language (Python, Node: benchmarks/components/split.{py,js}; bash: split.sh), each round
runs two jobs on local[2] with 2 partitions, alternated:
* *driver*: `mapPartitionsWithIndex`, partition i driving the split bolt's task i through
  `shared_process(...).run_bolt_rows(...)`, one row per word handed on to Spark;
* *rdd.pipe*: the same sentences through a line filter in that language (a sentence in, one word
  per line out).
Both count the words in the same Python worker (`count()`). Rates exclude start-up: a small job of
each kind runs first (the JVM, the workers and the bolts start there; Spark reuses its workers,
and our processes with them). `worker_cpu_us` is the Python workers' CPU time per sentence
(`time.process_time` around each partition: the driver, or PySpark's pipe, plus PySpark's own row
handling), the component or filter excluded. The *driver alone* variant runs the driver with no
Spark, in one process over one bolt, for its CPU cost per sentence (`driver_cpu_us`).

Every Spark job runs in its own process (`python -m benchmarks.spark_driver SPEC`).
"""

from __future__ import annotations

import importlib.util
import json
import os
import shlex
import subprocess
import sys
import time
from collections.abc import Iterator
from typing import Any

from .harness import COMPONENTS, REPO, Context, Result

NAME = "spark-driver"
DESCRIPTION = "split stage: our component driver in Spark mapPartitions vs rdd.pipe, same language"
COLUMNS = [
    ("records_per_s", "sentences/s"),
    ("worker_cpu_us", "worker CPU us/sentence"),
    ("driver_cpu_us", "driver alone CPU us/sentence"),
]
LANGS = ("python", "node", "bash")
SPLIT_BOLTS = {
    "python": ["python", "split.py"],
    "node": ["node", "split.js"],
    "bash": ["bash", "split.sh"],
}
# the same split as a plain line filter, in each language: a sentence in, a word per line out
PY_FILTER = (
    "import sys\n"
    "w = sys.stdout.write\n"
    "for line in sys.stdin:\n"
    "    words = line.split()\n"
    "    if words: w('\\n'.join(words) + '\\n')\n"
)
NODE_FILTER = (
    "let rest = '';"
    "process.stdin.setEncoding('utf8');"
    "process.stdin.on('data', (chunk) => {"
    "  const lines = (rest + chunk).split('\\n'); rest = lines.pop(); const out = [];"
    "  for (const l of lines) for (const w of l.split(' ')) if (w) out.push(w);"
    "  if (out.length) process.stdout.write(out.join('\\n') + '\\n');"
    "});"
    "process.stdin.on('end', () => {"
    "  const out = rest.split(' ').filter((w) => w);"
    "  if (out.length) process.stdout.write(out.join('\\n') + '\\n');"
    "});"
)
BASH_SHARE = 10  # bash splits ~15x slower than the others: a tenth of the sentences


def filter_command(lang: str) -> str:
    if lang == "python":
        return shlex.join([sys.executable, "-c", PY_FILTER])
    if lang == "node":
        return shlex.join(["node", "-e", NODE_FILTER])
    return shlex.join(["bash", str(COMPONENTS / "split.sh"), "--lines"])


def split_topology(lang: str) -> Any:
    """spout `s` -> `split` (2 tasks, the language's split bolt) -> `count` (fields on word)."""
    from host.topology.native import from_document

    noop = ["python", "-c", "pass"]
    return from_document(
        {
            "name": f"bench-spark-driver-{lang}",
            "spouts": {"s": {"command": noop, "outputs": ["sentence"]}},
            "bolts": {
                "split": {
                    "command": SPLIT_BOLTS[lang],
                    "outputs": ["word"],
                    "parallelism": 2,
                    "inputs": {"s": "shuffle"},
                },
                "count": {
                    "command": noop,
                    "outputs": ["word", "count"],
                    "inputs": {"split": {"fields": ["word"]}},
                },
            },
        },
        base_dir=COMPONENTS,
    )


def _sentences(n: int) -> list[str]:
    from .components.spout import SENTENCES

    return [SENTENCES[i % len(SENTENCES)] for i in range(n)]


# ---- inside the Spark job's process ---------------------------------------------------------------


def _driver_partition(topology: Any, index: int, lines: Iterator[str]) -> Iterator[Any]:
    """Partition `index` = the split bolt's task `index`; yields each word, then the worker's
    CPU seconds for the partition (as a float, told apart by type)."""
    from host.runtime.context import assign_tasks
    from host.spark.process_cache import shared_process

    cpu = time.process_time()
    task = assign_tasks(topology).tasks_of("split")[index]
    proc = shared_process(topology, "split", task)
    tuples = (("s", "default", 1, [line]) for line in lines)
    if hasattr(proc, "run_bolt_rows"):
        for rows in proc.run_bolt_rows(tuples):
            yield from rows.values
    else:  # a driver without the batch API (an A/B run against an older one)
        for emit in proc.run_bolt(tuples):
            yield emit.values
    yield time.process_time() - cpu


def _timed(lines: Iterator[Any]) -> Iterator[Any]:
    cpu = time.process_time()
    yield from lines
    yield time.process_time() - cpu


def _count(rows: Iterator[Any]) -> Iterator[tuple[int, float]]:
    n, cpu = 0, 0.0
    for r in rows:
        if type(r) is float:
            cpu += r
        else:
            n += 1
    yield (n, cpu)


def _spark_job(spec: dict) -> dict:
    """Runs in its own process (the JVM must not outlive it): per language and round, one
    driver job and one rdd.pipe job, alternated; returns the samples per variant."""
    from pyspark import SparkConf, SparkContext

    conf = (
        SparkConf()
        .setMaster("local[2]")
        .setAppName("bench-spark-driver")
        .set("spark.ui.enabled", "false")
        .set("spark.executorEnv.PYTHONPATH", str(REPO))
    )
    sc = SparkContext(conf=conf)
    samples: dict[str, list[dict]] = {}
    try:
        sc.setLogLevel("ERROR")
        for lang in spec["langs"]:
            n = spec["n"] // (BASH_SHARE if lang == "bash" else 1)
            topology = split_topology(lang)
            command = filter_command(lang)

            def driver(rdd: Any, topology: Any = topology) -> Any:
                return rdd.mapPartitionsWithIndex(lambda i, it: _driver_partition(topology, i, it))

            def pipe(rdd: Any, command: str = command) -> Any:
                return rdd.pipe(command, checkCode=True).mapPartitions(_timed)

            variants = {f"{lang}: driver": driver, f"{lang}: rdd.pipe": pipe}
            warm = sc.parallelize(_sentences(2000), 2)
            for make in variants.values():  # workers, JIT and bolts start outside the clock
                make(warm).mapPartitions(_count).collect()
            data = sc.parallelize(_sentences(n), 2).cache()
            data.count()
            for _ in range(spec["rounds"]):
                for name, make in variants.items():
                    start = time.perf_counter()
                    counted = make(data).mapPartitions(_count).collect()
                    secs = time.perf_counter() - start
                    words = sum(c for c, _ in counted)
                    if words != 4 * n:
                        raise RuntimeError(f"{name}: {words} words, expected {4 * n}")
                    samples.setdefault(name, []).append(
                        {
                            "records_per_s": n / secs,
                            "secs": secs,
                            "worker_cpu_us": sum(c for _, c in counted) / n * 1e6,
                        }
                    )
            data.unpersist()
    finally:
        sc.stop()
    return samples


# ---- the driver alone ----------------------------------------------------------------------------


def driver_alone(lang: str, n: int) -> dict:
    """One driver, one bolt, no Spark: rate and the driver's own CPU per sentence."""
    from host.runtime.context import assign_tasks
    from host.spark.component_process import ComponentProcess

    topology = split_topology(lang)
    proc = ComponentProcess(topology, "split", assign_tasks(topology).tasks_of("split")[0])
    try:
        for _ in proc.run_bolt_rows(("s", "default", 1, [s]) for s in _sentences(1000)):
            pass
        lines = _sentences(n)
        cpu, start = time.process_time(), time.perf_counter()
        words = 0
        for rows in proc.run_bolt_rows(("s", "default", 1, [s]) for s in lines):
            words += len(rows.values)
        secs, cpu = time.perf_counter() - start, time.process_time() - cpu
    finally:
        proc.close()
    if words != 4 * n:
        raise RuntimeError(f"{lang}: {words} words, expected {4 * n}")
    return {"records_per_s": n / secs, "secs": secs, "driver_cpu_us": cpu / n * 1e6}


def _run_job(spec: dict) -> dict:
    env = dict(
        os.environ,
        PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""),
        PYSPARK_PYTHON=sys.executable,  # the workers import host.spark: this interpreter's packages
    )
    out = subprocess.run(
        [sys.executable, "-m", "benchmarks.spark_driver", json.dumps(spec)],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=1800,
    )
    if out.returncode != 0:
        raise RuntimeError(out.stderr.strip()[-1500:] or f"exit status {out.returncode}")
    result: dict = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def run(ctx: Context) -> Result:
    result = Result(NAME, ctx, DESCRIPTION, baseline=None)
    n, rounds = ctx.mode.rdd_records, ctx.mode.runs
    alone: dict[str, list[dict]] = {}
    for _ in range(rounds):
        for lang in LANGS:
            share = BASH_SHARE if lang == "bash" else 1
            ctx.progress(f"{NAME}: driver alone, {lang}, {n // share:,} sentences")
            alone.setdefault(lang, []).append(driver_alone(lang, n // share))
    if importlib.util.find_spec("pyspark") is None:
        result.skipped = "pyspark not installed"
        return result
    ctx.progress(f"{NAME}: Spark local[2], {rounds} rounds of {n:,} sentences per language")
    try:
        samples = _run_job({"langs": list(LANGS), "n": n, "rounds": rounds})
    except (RuntimeError, subprocess.SubprocessError) as exc:
        result.skipped = f"pyspark did not run: {exc}"
        return result
    for lang in LANGS:
        share = BASH_SHARE if lang == "bash" else 1
        ours, pipe = f"{lang}: driver", f"{lang}: rdd.pipe"
        result.add(pipe, samples[pipe], {"sentences": n // share, "partitions": 2})
        result.add(ours, samples[ours], {"sentences": n // share, "partitions": 2})
        result.add(f"{lang}: driver alone (no Spark)", alone[lang], {"sentences": n // share})
        result.ratio(
            f"{lang}: driver / rdd.pipe sentences per s",
            result.median(ours, "records_per_s"),
            result.median(pipe, "records_per_s"),
        )
        result.targets[ours] = ">= 0.33x rdd.pipe sentences/s (issue 17: >= 130,000/s)"
    result.notes.append(
        "rates exclude start-up; worker CPU excludes the component or filter process; "
        "bash runs a tenth of the sentences"
    )
    return result


if __name__ == "__main__":
    print(json.dumps(_spark_job(json.loads(sys.argv[1]))))
