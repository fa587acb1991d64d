"""The Spark word-count example end to end, as its README runs it: examples/spark-wordcount/run.sh
(local Spark: the job, the spout, bash and Node bolts, the Parquet sink, the read-back report)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

pytestmark = pytest.mark.spark

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "spark-wordcount"


def test_run_sh_counts_the_text_and_reports_the_top_words():
    env = {**os.environ, "PYTHON": sys.executable, "DURATION": "300"}
    result = subprocess.run(
        ["bash", str(EXAMPLE / "run.sh")], capture_output=True, text=True, env=env, timeout=420
    )
    assert result.returncode == 0, result.stderr[-3000:]
    # report.py's top words and counts match a count done here, cleaning lines as job.py does
    words: Counter = Counter()
    for line in (EXAMPLE / "text.txt").read_text().splitlines():
        line = re.sub(r"[^a-z']+", " ", line.lower())
        words.update(re.sub(r"(^| )'+|'+( |$)", " ", line).split())
    for word, count in words.most_common(3):
        assert f"{count:5d}  {word}" in result.stdout, result.stdout[-2000:]
