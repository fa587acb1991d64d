"""The benchmarks run and write their result files. Figures are not checked: benchmarks are
measurements, not tests (see benchmarks/__init__.py)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SPLIT_SH = REPO / "benchmarks" / "components" / "split.sh"


def _check_common(result: dict, name: str) -> None:
    assert result["name"] == name
    assert result["mode"] == "smoke"
    assert result["command"].startswith("python -m benchmarks ")
    assert {"cpu_count", "cpu_model", "python"} <= result["machine"].keys()
    assert result["date"]
    assert isinstance(result["ratios"], dict)
    assert result["variants"]
    for variant, entry in result["variants"].items():
        figures = {k: v for k, v in entry.items() if k not in ("params", "n_runs")}
        assert figures, variant
        for summary in figures.values():
            if summary is not None:
                assert summary["min"] <= summary["median"] <= summary["max"], variant


def test_smoke_run_writes_results(tmp_path):
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "benchmarks",
            "protocol-ceiling",
            "acker-memory",
            "idle",
            "--smoke",
            "--results-dir",
            str(tmp_path),
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 0, out.stdout + out.stderr
    assert "== protocol-ceiling" in out.stdout and "== idle" in out.stdout

    ceiling = json.loads((tmp_path / "protocol-ceiling.json").read_text())
    _check_common(ceiling, "protocol-ceiling")
    assert ceiling["baseline"] == "ujson"
    assert ceiling["variants"]["ujson"]["tuples_per_s"]["median"] > 0

    acker = json.loads((tmp_path / "acker-memory.json").read_text())
    _check_common(acker, "acker-memory")
    assert any(v.startswith("Acker, ") for v in acker["variants"])
    assert any(k.startswith("Acker/dict") for k in acker["ratios"])

    idle = json.loads((tmp_path / "idle.json").read_text())
    _check_common(idle, "idle")
    assert "host" in idle["variants"]


def test_unknown_benchmark_is_a_usage_error(tmp_path):
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "benchmarks",
            "no-such-thing",
            "--smoke",
            "--results-dir",
            str(tmp_path),
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert out.returncode == 2
    assert "unknown benchmark" in out.stderr
    assert not list(tmp_path.iterdir())


def test_split_script_as_a_line_filter():
    """rdd-pipe feeds split.sh lines, as Spark's rdd.pipe() does (pyspark is not needed here)."""
    out = subprocess.run(
        ["bash", str(SPLIT_SH), "--lines"],
        input="the cow  jumped\n\n* over",
        capture_output=True,
        text=True,
        timeout=10,
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == ["the", "cow", "jumped", "*", "over"]


def test_scaling_tasks_smoke_run(tmp_path):
    """scaling-tasks in smoke mode runs its tiny points only (1 and 2 tasks per bolt, both
    splits) and gives each point its ratio to the same round's 2-task point."""
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "benchmarks",
            "scaling-tasks",
            "--smoke",
            "--results-dir",
            str(tmp_path),
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=90,
    )
    assert out.returncode == 0, out.stdout + out.stderr
    assert "== scaling-tasks" in out.stdout

    result = json.loads((tmp_path / "scaling-tasks.json").read_text())
    _check_common(result, "scaling-tasks")
    assert {v["params"]["parallelism"] for v in result["variants"].values()} == {1, 2}
    assert {v["params"]["split"] for v in result["variants"].values()} == {"python", "bash"}
    for variant, entry in result["variants"].items():
        assert entry["sentences_per_s"]["median"] > 0, variant
        assert entry["host_rss_mb"]["median"] > 0, variant
        assert entry["tuples_per_write"] is not None, variant
        if entry["params"]["parallelism"] == 2:
            assert entry["ratio_to_2"]["median"] == 1.0, variant
