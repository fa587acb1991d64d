"""spark-engine: the transactional word count (examples/transactional/wordcount-sqlite's bolts,
unmodified, on a larger input) under `host spark` on Spark's two-executor test cluster
(`local-cluster[2,1,1024]`), against the same topology under `host local`, and the same
split-and-count as plain `rdd.pipe` + `reduceByKey` on the same cluster, in one run
(issue 17's targets: host spark >= 1.5x host local; the final counts identical).

The input: two files of sentences (benchmarks/components/spout.py's, four words each), one per
spout task, read `files.spout.batch.lines` lines per file per micro-batch; then a few empty
micro-batches once the files are read. Each round, in this order, on fresh copies:

* *host local*: `python -m host local` (a subprocess) until the committer's audit table lists
  every non-empty txid, then SIGTERM;
* *host spark*: `SparkEngine` on one SparkSession kept for the whole run (Spark's start-up is
  outside every figure), `--trigger 0`, stopped after the empty micro-batches;
* *host spark, micro-batches a tenth the size*: the same, with a tenth of the lines a
  micro-batch (full mode: 10,000 sentences against 100,000) and no empty micro-batches, for
  issue 17's target that a micro-batch costs at most 2x its share of one ten times larger (the
  ratio of the two batch p50s, the larger's divided by ten);
* *rdd.pipe*: `textFile` of the same files, `pipe()` through a Python line filter that splits
  (as the split bolt does), `map((w, 1))`, `reduceByKey`, `collect`.

Figures: *sentences/s* in the steady state, from the committer's own commit times (the audit
table's `committed_at`), start-up excluded: host spark, the sentences of txids 2..K over txid 1's
commit to txid K's (one micro-batch at a time; the first, which starts the bolts, left out);
host local, which keeps 3 batches open (`topology.max.spout.pending`), txids 1..K over the time
from txid 1's opening (its metadata file appearing in the state directory) to txid K's commit.
rdd.pipe: the job's wall time, a warm-up job done first. *commit interval* p50/p99: the time between consecutive commits
of non-empty txids (both runtimes). *batch p50/p99* (host spark): a non-empty micro-batch's
`foreachBatch` wall time from the second on (read, stages, commit). *empty batch* (host spark):
the median `foreachBatch` wall time of the empty micro-batches: a micro-batch's fixed cost
(Spark's scheduling, the jobs, the committer's transaction). Every round checks that host spark's
stored counts equal host local's and the input's.

*CPU us/sentence*: every process's CPU over the whole run (start-up, every micro-batch, the empty
ones) per input sentence, sampled from the job's process tree (benchmarks/process_cpu.py: Spark's
JVMs and Python workers, the components, `host local`'s host); the notes give it by kind. The
cluster's JVMs idle through the `host local` runs, and their little CPU counts there too.

Every Spark job runs in its own process (`python -m benchmarks.spark_engine SPEC`), which also
starts the `host local` runs (the cluster's JVMs sit idle meanwhile).
"""

from __future__ import annotations

import collections
import importlib.util
import json
import operator
import os
import shlex
import shutil
import signal
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from .harness import REPO, Context, Result
from .process_cpu import KINDS, ProcessCpu

NAME = "spark-engine"
DESCRIPTION = (
    "transactional word count: host spark on local-cluster[2,1,1024] vs host local vs rdd.pipe"
)
COLUMNS = [
    ("sentences_per_s", "sentences/s"),
    ("commit_interval_p50_ms", "commit interval p50 ms"),
    ("batch_p50_ms", "batch p50 ms"),
    ("batch_p99_ms", "batch p99 ms"),
    ("empty_batch_ms", "empty batch ms"),
    ("cpu_us_per_sentence", "CPU us/sentence"),
    ("cpu_us_jvm", "JVM us/sentence"),
]
EXAMPLE = REPO / "examples" / "transactional" / "wordcount-sqlite"
CLUSTER = "local-cluster[2,1,1024]"
LOCAL, SPARK, PIPE = "host local", "host spark (local-cluster)", "rdd.pipe + reduceByKey"
SMALL = "host spark, micro-batches a tenth the size"
SMALLER = 10  # issue 17: a micro-batch of 10,000 sentences against its share of 100,000
# (lines per file, lines per file per micro-batch, empty micro-batches) per mode
# big micro-batches: a micro-batch's fixed cost (one Spark job of two stages, ~0.8 s on two
# cores) is paid per batch, so the engine's rate grows with the batch (the empty-batch column)
SIZES = {"full": (250_000, 50_000, 3), "quick": (100_000, 25_000, 2), "smoke": (600, 300, 2)}
FILES = 2  # one per spout task
WAIT_SECS = 600
SPLIT_FILTER = (  # the split bolt's work as a line filter: a sentence in, a word per line out
    "import sys\n"
    "w = sys.stdout.write\n"
    "for line in sys.stdin:\n"
    "    words = line.split()\n"
    "    if words: w('\\n'.join(words) + '\\n')\n"
)


# ---- the input and the topology copies ------------------------------------------------------


def write_input(data: Path, lines_per_file: int) -> None:
    from .components.spout import SENTENCES

    data.mkdir(parents=True, exist_ok=True)
    for f in range(FILES):
        with open(data / f"part-{f}.txt", "w", encoding="utf-8") as fh:
            for i in range(lines_per_file):
                fh.write(SENTENCES[(i + f) % len(SENTENCES)] + "\n")


def expected_counts(data: Path) -> dict[str, int]:
    return dict(
        collections.Counter(
            w
            for path in sorted(data.glob("*.txt"))
            for line in path.read_text(encoding="utf-8").splitlines()
            for w in line.split()
        )
    )


def topology_copy(base: Path, name: str, data: Path, batch_lines: int) -> Path:
    """The example's topology and bolts, unmodified but for the batch size, reading `data`."""
    import yaml

    example = base / name
    example.mkdir(parents=True)
    for f in ("split.py", "count.py"):
        shutil.copy(EXAMPLE / f, example / f)
    doc = yaml.safe_load((EXAMPLE / "topology.yaml").read_text(encoding="utf-8"))
    spout = doc["spouts"]["lines"]["config"]
    spout["files.spout.paths"] = str(data / "*.txt")
    spout["files.spout.batch.lines"] = batch_lines
    path = example / "topology.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
    return path


def stored_counts(db: Path) -> dict[str, int]:
    with sqlite3.connect(db) as conn:
        return dict(conn.execute("SELECT word, count FROM counts"))


def commit_times(db: Path) -> dict[int, float]:
    """txid -> committed_at (the committer's time.time()), from the audit table."""
    try:
        with sqlite3.connect(db) as conn:
            return dict(conn.execute("SELECT txid, committed_at FROM audit"))
    except sqlite3.Error:  # not created yet
        return {}


def percentile(values: list[float], q: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def commit_figures(
    times: dict[int, float], batches: int, per_batch: int, opened: float | None = None
) -> dict[str, Any]:
    """Steady-state sentences/s and the commit intervals of the non-empty txids. The rate: with
    `opened` (when txid 1 was opened), txids 1..K over `opened` to txid K's commit (host local,
    which works on 3 batches at once: txids 2 and 3 are partly done when txid 1 commits); else
    txids 2..K over txid 1's commit to txid K's (host spark: one micro-batch at a time)."""
    stamps = [times[t] for t in range(1, batches + 1)]
    gaps = [b - a for a, b in zip(stamps, stamps[1:], strict=False)]
    secs = stamps[-1] - (stamps[0] if opened is None else opened)
    done = batches - 1 if opened is None else batches
    return {
        "sentences_per_s": per_batch * done / secs if secs > 0 else None,
        "commit_interval_p50_ms": statistics.median(gaps) * 1000 if gaps else None,
        "commit_interval_p99_ms": (percentile(gaps, 0.99) or 0) * 1000 if gaps else None,
    }


# ---- the variants (inside the job's process) ----------------------------------------------------


def run_local(topology: Path, state: Path, batches: int) -> dict[str, Any]:
    db = topology.parent / "counts.db"
    proc = subprocess.Popen(
        [sys.executable, "-m", "host", "local", str(topology), "--state-dir", str(state)],
        cwd=REPO,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    opened: float | None = None  # when txid 1's metadata was stored: the batch opened
    try:
        deadline = time.monotonic() + WAIT_SECS
        while len(commit_times(db)) < batches:
            if opened is None and any(state.glob("**/coordinator/meta/1.json")):
                opened = time.time()
            if proc.poll() is not None:
                raise RuntimeError(f"host local exited early: {proc.communicate()[1][-2000:]}")
            if time.monotonic() > deadline:
                raise RuntimeError(f"host local: {batches} txids not committed in {WAIT_SECS}s")
            time.sleep(0.02)
    finally:
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=60)
    if proc.returncode != 0:
        raise RuntimeError(f"host local: exit status {proc.returncode}: {err[-2000:]}")
    return {"db": db, "times": commit_times(db), "opened": opened}


def run_engine(spark: Any, topology: Path, checkpoint: Path, batches: int, empty: int) -> dict:
    from host.spark.engine import SparkEngine
    from host.spark.plan import plan
    from host.topology.files import load

    engine = SparkEngine(
        plan(load(str(topology))),
        str(checkpoint),
        trigger_secs=0,
        max_batches=batches + empty,
        spark=spark,
        echo=lambda _text: None,
    )
    engine.run()
    if engine.committed != batches + empty or engine.restarts:
        raise RuntimeError(
            f"host spark: {engine.committed} micro-batches committed, {engine.restarts} restarts"
        )
    db = topology.parent / "counts.db"
    return {"db": db, "times": commit_times(db), "batch_secs": list(engine.batch_secs)}


def run_pipe(sc: Any, data: Path, partitions: int) -> tuple[float, dict[str, int]]:
    command = shlex.join([sys.executable, "-c", SPLIT_FILTER])
    start = time.perf_counter()
    lines = sc.textFile(str(data / "*.txt"), partitions)
    words = lines.pipe(command, checkCode=True)
    counts = dict(words.map(lambda w: (w, 1)).reduceByKey(operator.add, partitions).collect())
    return time.perf_counter() - start, counts


def _spark_job(spec: dict) -> dict:
    """Runs in its own process (the JVMs must not outlive it): the rounds, each variant once."""
    from components.spark_spout.session import start_session

    lines, batch_lines, empty = spec["lines"], spec["batch_lines"], spec["empty"]
    batches = lines // batch_lines
    per_batch = batch_lines * FILES
    conf = {"spark.master": CLUSTER, "spark.ui.enabled": "false", **spec.get("conf", {})}
    spark = start_session(conf, "bench-spark-engine", log_level="ERROR")
    sc = spark.sparkContext
    samples: dict[str, list[dict]] = {LOCAL: [], SPARK: [], PIPE: [], SMALL: []}
    try:
        with tempfile.TemporaryDirectory(prefix="bench-spark-engine-") as tmp:
            base = Path(tmp)
            data = base / "data"
            write_input(data, lines)
            expected = expected_counts(data)
            # warm-up outside the clock: Python workers, the JIT, a first query
            warm = base / "warm"
            write_input(warm / "data", 200)
            run_engine(spark, topology_copy(warm, "wc", warm / "data", 100), warm / "ck", 2, 1)
            run_pipe(sc, warm / "data", FILES)
            for r in range(spec["rounds"]):
                round_dir = base / f"round-{r}"
                topo = topology_copy(round_dir, "local", data, batch_lines)
                with ProcessCpu() as local_cpu:
                    local = run_local(topo, round_dir / "state", batches)
                topo = topology_copy(round_dir, "spark", data, batch_lines)
                with ProcessCpu() as spark_cpu:
                    on_spark = run_engine(spark, topo, round_dir / "checkpoint", batches, empty)
                spark_counts, local_counts = (
                    stored_counts(on_spark["db"]),
                    stored_counts(local["db"]),
                )
                if not spark_counts == local_counts == expected:
                    raise RuntimeError(
                        f"round {r}: host spark's counts {_total(spark_counts)} words, host "
                        f"local's {_total(local_counts)}, the input's {_total(expected)}: "
                        "not identical"
                    )
                samples[LOCAL].append(
                    {
                        **commit_figures(local["times"], batches, per_batch, local["opened"]),
                        **cpu_figures(local_cpu.seconds(), lines * FILES),
                    }
                )
                secs = on_spark["batch_secs"]
                full, empties = secs[1:batches], secs[batches:]
                samples[SPARK].append(
                    {
                        **commit_figures(on_spark["times"], batches, per_batch),
                        **batch_figures(full),
                        "empty_batch_ms": _ms(statistics.median(empties) if empties else None),
                        **cpu_figures(spark_cpu.seconds(), lines * FILES),
                    }
                )
                small_batches = batches * SMALLER
                topo = topology_copy(round_dir, "small", data, batch_lines // SMALLER)
                small = run_engine(spark, topo, round_dir / "checkpoint-small", small_batches, 0)
                if stored_counts(small["db"]) != expected:
                    raise RuntimeError(f"round {r}: host spark's counts with small micro-batches")
                samples[SMALL].append(
                    {
                        **commit_figures(small["times"], small_batches, per_batch // SMALLER),
                        **batch_figures(small["batch_secs"][1:]),
                    }
                )
                pipe_secs, pipe_counts = run_pipe(sc, data, FILES)
                if pipe_counts != expected:
                    raise RuntimeError(f"round {r}: rdd.pipe counted {_total(pipe_counts)} words")
                samples[PIPE].append({"sentences_per_s": lines * FILES / pipe_secs})
    finally:
        spark.stop()
    return samples


def cpu_figures(seconds: dict[str, float], sentences: int) -> dict[str, Any]:
    """CPU per sentence over a whole run (start-up, every micro-batch and the empty ones
    included): in all, and of each kind of process (`cpu_us_<kind>`, benchmarks/process_cpu.py)."""
    per = {
        f"cpu_us_{kind.replace(' ', '_')}": secs / sentences * 1e6 for kind, secs in seconds.items()
    }
    return {"cpu_us_per_sentence": sum(per.values()), **per}


def _ms(secs: float | None) -> float | None:
    return None if secs is None else secs * 1000


def batch_figures(secs: list[float]) -> dict:
    """p50 and p99 of micro-batch durations (seconds) in ms; None without any."""
    return {
        "batch_p50_ms": _ms(statistics.median(secs) if secs else None),
        "batch_p99_ms": _ms(percentile(secs, 0.99)),
    }


def _total(counts: dict[str, int]) -> int:
    return sum(counts.values())


# ---- the benchmark ----------------------------------------------------------------------------


def run_job(spec: dict, cwd: Path = REPO) -> dict:
    env = dict(
        os.environ,
        PYTHONPATH=str(cwd) + os.pathsep + os.environ.get("PYTHONPATH", ""),
        PYSPARK_PYTHON=sys.executable,  # the workers import host.spark: this interpreter's
    )
    out = subprocess.run(
        [sys.executable, "-m", "benchmarks.spark_engine", json.dumps(spec)],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=3600,
    )
    if out.returncode != 0:
        raise RuntimeError(out.stderr.strip()[-3000:] or f"exit status {out.returncode}")
    result: dict = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def run(ctx: Context) -> Result:
    result = Result(NAME, ctx, DESCRIPTION, baseline=LOCAL)
    if importlib.util.find_spec("pyspark") is None:
        result.skipped = "pyspark not installed"
        return result
    lines, batch_lines, empty = SIZES[ctx.mode.name]
    spec = {"lines": lines, "batch_lines": batch_lines, "empty": empty, "rounds": ctx.mode.runs}
    ctx.progress(
        f"{NAME}: {ctx.mode.runs} round(s) of {lines * FILES:,} sentences, "
        f"{batch_lines * FILES:,} per micro-batch, on {CLUSTER}"
    )
    try:
        samples = run_job(spec)
    except (RuntimeError, subprocess.SubprocessError) as exc:
        result.skipped = f"the Spark job did not run: {exc}"
        return result
    params = {
        "sentences": lines * FILES,
        "sentences_per_batch": batch_lines * FILES,
        "empty_batches": empty,
    }
    result.add(LOCAL, samples[LOCAL], params)
    result.add(SPARK, samples[SPARK], {**params, "master": CLUSTER, "trigger_secs": 0})
    result.add(PIPE, samples[PIPE], {"sentences": lines * FILES, "master": CLUSTER})
    result.add(
        SMALL,
        samples[SMALL],
        {**params, "sentences_per_batch": batch_lines * FILES // SMALLER, "empty_batches": 0},
    )
    result.ratio(
        "sentences/s: host spark / host local",
        result.median(SPARK, "sentences_per_s"),
        result.median(LOCAL, "sentences_per_s"),
    )
    result.ratio(
        "sentences/s: host spark / rdd.pipe",
        result.median(SPARK, "sentences_per_s"),
        result.median(PIPE, "sentences_per_s"),
    )
    big_share = result.median(SPARK, "batch_p50_ms")
    result.ratio(
        f"micro-batch p50: 1/{SMALLER} the size / its share of the full one",
        result.median(SMALL, "batch_p50_ms"),
        None if big_share is None else big_share / SMALLER,
    )
    result.targets[SPARK] = ">= 1.5x host local sentences/s; counts identical (asserted)"
    result.targets[SMALL] = (
        f"a micro-batch's p50 <= 2x its share of one {SMALLER}x larger (the ratio above); "
        "counts identical (asserted)"
    )
    result.notes.append(
        "steady state from the committer's commit times (host spark: txid 1's commit to the "
        "last non-empty txid's; host local, 3 batches open: txid 1's opening to it); Spark's "
        "start-up and a warm-up query are outside every figure; the counts of host spark, host "
        "local and the input are asserted identical each round"
    )
    for variant in (LOCAL, SPARK):
        kinds = [
            f"{kind} {us:.1f}"
            for kind in KINDS
            if (us := result.median(variant, f"cpu_us_{kind.replace(' ', '_')}"))
        ]
        result.notes.append(f"{variant}: CPU us/sentence by process (medians): {', '.join(kinds)}")
    return result


if __name__ == "__main__":
    print(json.dumps(_spark_job(json.loads(sys.argv[1]))))
