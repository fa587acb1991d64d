"""The Spark word-count example end to end, as its README runs it: examples/spark-wordcount/run.sh
(local Spark: the job, the spout, bash and Node bolts, the Parquet sink, the read-back report),
and the same topology file on the Spark engine (`python -m host spark`: the spout's DataFrame
read by Spark, the bolts inside Spark's workers, the sink flushing on its end-of-partition tick)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

pytestmark = pytest.mark.spark

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "spark-wordcount"


def _expected_words() -> Counter:
    """The text's words counted here, its lines cleaned as job.py cleans them."""
    words: Counter = Counter()
    for line in (EXAMPLE / "text.txt").read_text().splitlines():
        line = re.sub(r"[^a-z']+", " ", line.lower())
        words.update(re.sub(r"(^| )'+|'+( |$)", " ", line).split())
    return words


def _check_report(stdout: str) -> None:
    """report.py's summary and top words match the count done here."""
    words = _expected_words()
    summary = f"{len(words)} distinct words, {sum(words.values())} in all"
    assert summary in stdout, stdout[-2000:]
    for word, count in words.most_common(3):
        assert f"{count:5d}  {word}" in stdout, stdout[-2000:]


def test_run_sh_counts_the_text_and_reports_the_top_words():
    env = {**os.environ, "PYTHON": sys.executable, "DURATION": "300"}
    result = subprocess.run(
        ["bash", str(EXAMPLE / "run.sh")], capture_output=True, text=True, env=env, timeout=420
    )
    assert result.returncode == 0, result.stderr[-3000:]
    _check_report(result.stdout)


def test_the_same_topology_on_the_spark_engine(tmp_path: Path):
    """The README's `python -m host spark topology.yaml --checkpoint .run/spark --max-batches 1`
    in a copy of the example: the text's 91 lines are one micro-batch (fewer than
    host.spark.batch.max.tuples), so the count bolt's running counts, which start fresh each
    micro-batch on Spark, end as under `host local`."""
    example = tmp_path / "spark-wordcount"
    shutil.copytree(EXAMPLE, example, ignore=shutil.ignore_patterns(".run"))
    run = subprocess.run(
        [sys.executable, "-m", "host", "spark", "topology.yaml"]
        + ["--checkpoint", ".run/spark", "--max-batches", "1", "-c", "spark.ui.enabled=false"],
        cwd=example,
        capture_output=True,
        text=True,
        timeout=420,
    )
    assert run.returncode == 0, (run.stdout + run.stderr)[-3000:]
    assert "txid 1 committed" in run.stdout, run.stdout[-2000:]
    report = subprocess.run(
        [sys.executable, "report.py", ".run/counts"],
        cwd=example,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert report.returncode == 0, report.stderr[-3000:]
    _check_report(report.stdout)
