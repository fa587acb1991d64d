"""benchmarks/spark_driver.py runs end to end (smoke mode): the driver alone for each language,
and the Spark jobs (driver and rdd.pipe) with every word counted."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks.spark_driver import LANGS, driver_alone

REPO = Path(__file__).resolve().parents[2]


def test_driver_alone_counts_every_word_and_its_cpu():
    out = driver_alone("python", 300)
    assert out["records_per_s"] > 0 and out["driver_cpu_us"] > 0


@pytest.mark.spark
def test_the_benchmark_runs_in_smoke_mode(tmp_path):
    run = subprocess.run(
        [sys.executable, "-m", "benchmarks", "spark-driver", "--smoke", "--results-dir", tmp_path],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    result = json.loads((tmp_path / "spark-driver.json").read_text())
    assert "skipped" not in result, result.get("skipped", "")[:2000]
    for lang in LANGS:
        for variant in ("driver", "rdd.pipe", "driver alone (no Spark)"):
            assert result["variants"][f"{lang}: {variant}"]["records_per_s"]["median"] > 0
        assert result["ratios"][f"{lang}: driver / rdd.pipe sentences per s"] > 0
