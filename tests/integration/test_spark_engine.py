"""The Spark engine (`python -m host spark`, host/spark/engine.py) on Spark's multi-process test
cluster, `local-cluster[2,1,1024]` (two executor JVMs on this machine), against `host local`.

Spark start-ups are the cost here (10-40 s each on two busy cores), so they are few: the word
count runs once as a command; the killed driver runs the command twice; the three global-count
variants and the component killed inside an executor share one SparkSession, in one subprocess
that runs this file as a script (`--shared-runs`), started once for the module.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.support.spark_runs import (
    CLUSTER,
    ROOT,
    SPARK_CONF,
    applied_attempts,
    engine_run,
    expected_counts,
    kill,
    run_host_local_until,
    run_shared_runs,
    run_spark,
    runs_in_one_session,
    spark_command,
    start,
    stored_counts,
    wait_for,
    wordcount_copy,
)

EXAMPLES = ROOT / "examples" / "transactional"
VARIANTS = ["topology.yaml", "topology-node.yaml", "topology-bash.yaml"]
WORDCOUNT_BATCHES = 4  # 2000 lines per file, 500 per file per batch

pytestmark = pytest.mark.spark


# ---- helpers ------------------------------------------------------------------------------------


def run_local_until(topology: Path, state: Path, done: Callable[[], bool]) -> None:
    """`host local` until `done()`, then SIGTERM; it must exit 0."""
    ended = run_host_local_until(topology, state, done)
    assert ended.returncode == 0, ended.stdout[-3000:]


def global_count_copy(tmp_path: Path, name: str) -> Path:
    """The global count with batches of 2,500 numbers (4 batches, not 100)."""
    example = tmp_path / name
    shutil.copytree(EXAMPLES / "global-count", example)
    (example / "total.json").unlink(missing_ok=True)
    numbers = example / "numbers.py"
    text = numbers.read_text()
    assert "LIMIT, BATCH = 10_000, 100" in text
    numbers.write_text(text.replace("LIMIT, BATCH = 10_000, 100", "LIMIT, BATCH = 10_000, 2_500"))
    return example


def read_total(path: Path) -> dict[str, int] | None:
    try:
        total: dict[str, int] = json.loads(path.read_text())
        return total
    except (OSError, ValueError):
        return None


# a batch bolt that SIGKILLs itself once, half-way through txid 2 (the first process to get
# there creates the marker file; every later process finds it and counts normally)
KILL_ONCE_COUNT = """\
import os, signal
from multilang import BatchBolt

MARKER = os.environ["KILL_ONCE_MARKER"]


class Count(BatchBolt):
    def begin(self, batch):
        batch.counts = {}
        batch.seen = 0

    def process(self, tup, batch):
        batch.seen += 1
        if batch.tx.txid == 2 and batch.seen == 300:
            try:
                fd = os.open(MARKER, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
            except FileExistsError:
                pass
            else:
                os.write(fd, str(os.getpid()).encode())
                os.close(fd)
                os.kill(os.getpid(), signal.SIGKILL)
        word = tup.values[0]
        batch.counts[word] = batch.counts.get(word, 0) + 1

    def finish_batch(self, batch):
        for word, n in batch.counts.items():
            self.emit([word, n])


Count().run()
"""


# ---- the shared session: global counts and a killed component ---------------------------------


@pytest.fixture(scope="module")
def shared(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Runs, in one subprocess with one local-cluster SparkSession: the three global-count
    variants (4 batches each) and the word count whose count bolt SIGKILLs itself once."""
    base = tmp_path_factory.mktemp("shared")
    runs = []
    for variant in VARIANTS:
        example = global_count_copy(base, variant.replace(".yaml", ""))
        runs.append(
            {"name": variant, "topology": str(example / variant), "max_batches": 4, "dir": ""}
        )
    example = wordcount_copy(base, "wordcount-kill")
    (example / "count_kill_once.py").write_text(KILL_ONCE_COUNT)
    doc = yaml.safe_load((example / "topology.yaml").read_text())
    doc["bolts"]["count"]["command"] = ["python", "count_kill_once.py"]
    doc["bolts"]["count"]["env"] = {"KILL_ONCE_MARKER": str(example / "killed.pid")}
    (example / "kill.yaml").write_text(yaml.safe_dump(doc))
    runs.append(
        {
            "name": "kill",
            "topology": str(example / "kill.yaml"),
            "max_batches": WORDCOUNT_BATCHES,
            "dir": str(example),
        }
    )
    for i, run in enumerate(runs):
        run["checkpoint"] = str(base / f"checkpoint-{i}")
    results, _ = run_shared_runs(__file__, runs, base)
    return {"runs": {r["name"]: r for r in runs}, "results": results}


def shared_runs(spec_path: str, results_path: str) -> None:
    """Script mode: every run of the spec in one SparkSession, sequentially."""
    sys.path.insert(0, str(ROOT))
    from host.topology.files import load

    runs_in_one_session(
        spec_path,
        results_path,
        {"spark.master": CLUSTER, **SPARK_CONF},
        "spark-engine-tests",
        lambda run, spark: engine_run(load(run["topology"]), run, spark),
    )


@pytest.mark.parametrize("variant", VARIANTS)
def test_global_count_on_spark_equals_host_local(
    shared: dict[str, Any], tmp_path: Path, variant: str
) -> None:
    run = shared["runs"][variant]
    assert shared["results"][variant] == {"committed": 4, "restarts": 0}
    on_spark = read_total(Path(run["topology"]).parent / "total.json")
    local = global_count_copy(tmp_path, "local")
    total = local / "total.json"
    run_local_until(
        local / variant, tmp_path / "state", lambda: (read_total(total) or {}).get("txid") == 4
    )
    assert on_spark == read_total(total) == {"txid": 4, "count": 10_000, "sum": sum(range(10_000))}


def test_component_killed_inside_an_executor_is_retried_by_spark(shared: dict[str, Any]) -> None:
    example = Path(shared["runs"]["kill"]["dir"])
    marker = example / "killed.pid"
    assert marker.exists(), "the count bolt never killed itself"
    # Spark retried the task (no query restart), and the retry counted from nothing
    assert shared["results"]["kill"] == {"committed": WORDCOUNT_BATCHES, "restarts": 0}
    assert stored_counts(example / "counts.db") == expected_counts(example)
    assert applied_attempts(example / "counts.db") == {
        t: 1 for t in range(1, WORDCOUNT_BATCHES + 1)
    }


# ---- the word count as a command ------------------------------------------------------------------


def test_wordcount_on_spark_equals_host_local_and_the_input(tmp_path: Path) -> None:
    example = wordcount_copy(tmp_path, "spark")
    expected = expected_counts(example)
    started = time.monotonic()
    out = run_spark(
        example / "topology.yaml",
        tmp_path / "checkpoint",
        CLUSTER,
        "--max-batches",
        str(WORDCOUNT_BATCHES),
    )
    spark_secs = time.monotonic() - started
    assert f"txid {WORDCOUNT_BATCHES} committed" in out
    on_spark = stored_counts(example / "counts.db")
    local = wordcount_copy(tmp_path, "local")
    started = time.monotonic()
    total = sum(expected.values())
    run_local_until(
        local / "topology.yaml",
        tmp_path / "state",
        lambda: sum(stored_counts(local / "counts.db").values()) >= total,
    )
    local_secs = time.monotonic() - started
    assert on_spark == stored_counts(local / "counts.db") == expected
    report = subprocess.run(
        [sys.executable, str(example / "report.py"), str(example / "counts.db")],
        capture_output=True,
        text=True,
    )
    assert report.returncode == 0 and "exactly once: True" in report.stdout
    print(f"word count, 6000 lines: host spark {spark_secs:.1f}s, host local {local_secs:.1f}s")


def test_driver_killed_and_restarted_from_its_checkpoint(tmp_path: Path) -> None:
    example = wordcount_copy(tmp_path, "wordcount")
    db, checkpoint = example / "counts.db", tmp_path / "checkpoint"
    expected = expected_counts(example)
    total = sum(expected.values())
    # the first run's committer dies before writing txid 3, on every attempt: the run cannot get
    # past it, so the kill surely lands with batches committed and others not
    doc = yaml.safe_load((example / "topology.yaml").read_text())
    doc["bolts"]["store"]["env"] = {"FAULT": "before_write:3"}
    faulty = example / "faulty.yaml"
    faulty.write_text(yaml.safe_dump(doc))
    first = start(spark_command(faulty, checkpoint, CLUSTER, "--max-restarts", "100"))
    try:
        wait_for(lambda: sum(stored_counts(db).values()) > 0, first, "the first commit")
    finally:
        kill(first)
    committed = sum(stored_counts(db).values())
    assert 0 < committed < total
    out = run_spark(
        example / "topology.yaml", checkpoint, CLUSTER, "--max-batches", str(WORDCOUNT_BATCHES)
    )
    assert stored_counts(db) == expected
    applied = applied_attempts(db)
    assert sorted(applied) == list(range(1, len(applied) + 1))  # every txid once, none skipped
    assert "restart" not in out.split("stopped:")[0] or "0 restart(s)" in out


# ---- no Spark: the plan and the refusals ------------------------------------------------------


def test_explain_prints_the_plan_and_starts_nothing() -> None:
    from click.testing import CliRunner

    from host.spark.command import spark

    topology = "examples/transactional/wordcount-sqlite/topology.yaml"
    result = CliRunner().invoke(spark, [topology, "--explain"])
    assert result.exit_code == 0, result.output
    assert result.output.startswith(
        f"{topology}: plan for topology 'wordcount-sqlite' on Spark: 4 stage(s), 7 partition(s)"
    )
    assert "stage 4: bolt store: committer in the batch group" in result.output


def test_a_spark_input_is_planned_alone_and_a_streaming_one_relayed_beside_a_plain_spout(
    tmp_path: Path,
) -> None:
    """The Spark spout's input is the query's source alone; a streaming one beside a plain spout
    is relayed (several plain spouts run: tests/integration/test_spark_several_spouts.py; plain
    and Kafka spouts: test_spark_mixed_sources.py; the Spark spout's inputs:
    test_spark_input_source.py; its inputs beside a plain spout, a streaming one included:
    test_spark_input_beside_spouts.py)."""
    from click.testing import CliRunner

    from host.spark.command import spark

    result = CliRunner().invoke(spark, ["examples/spark-wordcount/topology.yaml", "--explain"])
    assert result.exit_code == 0, result.output
    assert "stage 1: spout lines: spark input" in result.output

    (tmp_path / "s.py").write_text("# never run\n")
    mixed = tmp_path / "mixed.yaml"
    mixed.write_text(
        "name: mixed\n"
        "spouts:\n"
        "  a: {command: [python, s.py], outputs: [x]}\n"
        "  k:\n"
        "    command: [python, -m, components.spark_spout]\n"
        "    outputs: [x]\n"
        "    config: {spark.spout.source: streaming, spark.spout.job: 'job:lines'}\n"
        "bolts:\n"
        "  c: {command: [python, s.py], outputs: [], inputs: {a: shuffle, k: shuffle}}\n"
    )
    result = CliRunner().invoke(spark, [str(mixed), "--explain"])
    assert result.exit_code == 0, result.output
    assert "the streaming input of 'k': a relay query in the driver stages" in result.output
    assert "    k: spark input (streaming, relayed), task(s) " in result.output


def test_a_directory_too_big_to_ship_is_refused_before_anything_starts(tmp_path: Path) -> None:
    """host.spark.ship (docs/spark.md §6.1): a cluster master ships the components' directory;
    one whose files pass host.spark.ship.max.mb exits 2 before Spark starts (the master named
    here does not exist: nothing connects to it) and leaves nothing behind."""
    from click.testing import CliRunner

    from host.spark.command import spark

    example = wordcount_copy(tmp_path, "wordcount")
    (example / "data" / "big.bin").write_bytes(b"x" * (64 * 1024))
    checkpoint = tmp_path / "checkpoint"
    argv = [str(example / "topology.yaml"), "--checkpoint", str(checkpoint)]
    argv += ["--master", "spark://127.0.0.1:9", "-c", "host.spark.ship.max.mb=0.05"]
    result = CliRunner().invoke(spark, argv)
    assert result.exit_code == 2, result.output
    assert "key 'host.spark.ship.max.mb'" in result.output
    assert f"shipping {example}, where count, lines, split, store run" in result.output
    assert not checkpoint.exists()
    assert not list(Path(tempfile.gettempdir()).glob(f"multilang-ship-{os.getuid()}-{os.getpid()}"))


if __name__ == "__main__" and sys.argv[1:2] == ["--shared-runs"]:
    os.chdir(ROOT)
    shared_runs(sys.argv[2], sys.argv[3])
