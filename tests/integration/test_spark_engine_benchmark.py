"""benchmarks/spark_engine.py runs end to end (smoke mode): host local, host spark on
local-cluster (with two micro-batch sizes) and rdd.pipe in one run, with host spark's counts
asserted equal to host local's and the input's (the benchmark fails otherwise), and each run's
CPU by kind of process; and its figures from the audit table, without Spark."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks.process_cpu import kind_of
from benchmarks.spark_engine import (
    LOCAL,
    NAME,
    PIPE,
    SMALL,
    SPARK,
    commit_figures,
    commit_times,
)

REPO = Path(__file__).resolve().parents[2]


def test_commit_figures_leave_the_first_batch_out(tmp_path: Path) -> None:
    db = tmp_path / "counts.db"
    with sqlite3.connect(db) as conn:
        conn.execute("CREATE TABLE audit (txid INTEGER PRIMARY KEY, committed_at REAL)")
        conn.executemany("INSERT INTO audit VALUES (?, ?)", [(1, 10.0), (2, 10.5), (3, 11.5)])
    times = commit_times(db)
    assert times == {1: 10.0, 2: 10.5, 3: 11.5}
    figures = commit_figures(times, batches=3, per_batch=1000)
    assert figures["sentences_per_s"] == pytest.approx(2000 / 1.5)
    assert figures["commit_interval_p50_ms"] == pytest.approx(750)


def test_processes_are_told_apart_by_their_command_line() -> None:
    assert kind_of(["/usr/lib/jvm/java-17/bin/java", "-cp", "x"], False) == "jvm"
    assert kind_of(["/venv/bin/python", "-m", "pyspark.daemon", "pyspark.worker"], False) == (
        "python workers"
    )
    assert kind_of(["/venv/bin/python", "-m", "host", "local", "t.yaml"], False) == "host"
    assert kind_of(["python", "split.py"], False) == "components"
    assert kind_of(["/venv/bin/python", "-m", "benchmarks.spark_engine", "{}"], True) == "driver"


@pytest.mark.spark
def test_the_benchmark_runs_in_smoke_mode(tmp_path: Path) -> None:
    run = subprocess.run(
        [sys.executable, "-m", "benchmarks", NAME, "--smoke", "--results-dir", tmp_path],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    result = json.loads((tmp_path / f"{NAME}.json").read_text())
    assert "skipped" not in result, result.get("skipped", "")[:2000]
    for variant in (LOCAL, SPARK, PIPE):
        assert result["variants"][variant]["sentences_per_s"]["median"] > 0
    assert result["variants"][SPARK]["empty_batch_ms"]["median"] > 0
    assert result["variants"][SPARK]["batch_p50_ms"]["median"] > 0
    assert result["ratios"]["sentences/s: host spark / host local"] > 0
    # the same with micro-batches a tenth the size (its counts asserted by the benchmark too)
    assert result["variants"][SMALL]["batch_p50_ms"]["median"] > 0
    assert result["ratios"]["micro-batch p50: 1/10 the size / its share of the full one"] > 0
    # the CPU of each kind of process: Spark's JVMs and workers, the components, the host
    spark, local = result["variants"][SPARK], result["variants"][LOCAL]
    for key in ("cpu_us_jvm", "cpu_us_python_workers", "cpu_us_components"):
        assert spark[key]["median"] > 0, key
    assert local["cpu_us_host"]["median"] > 0 and local["cpu_us_components"]["median"] > 0
    assert spark["cpu_us_per_sentence"]["median"] >= spark["cpu_us_jvm"]["median"]
