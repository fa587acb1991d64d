"""The transactional examples through `python -m host local` as a real subprocess, each in a copy
of its folder: they run until their output holds every input exactly once, then stop on SIGTERM;
the word count is also SIGKILLed half-way and started again on the same state."""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml

from tests.support.spark_runs import expected_counts, stored_counts, wordcount_copy

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples" / "transactional"
WAIT_SECS = 90


def start(topology: Path, state: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "host", "local", str(topology), "--state-dir", str(state)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def wait_for(check: Callable[[], bool], proc: subprocess.Popen[str]) -> None:
    deadline = time.monotonic() + WAIT_SECS
    while not check():
        assert proc.poll() is None, f"the host exited early:\n{proc.communicate()[0][-3000:]}"
        assert time.monotonic() < deadline, "the example did not finish its input in time"
        time.sleep(0.1)


def stop(proc: subprocess.Popen[str]) -> str:
    proc.send_signal(signal.SIGTERM)
    out, _ = proc.communicate(timeout=60)
    assert proc.returncode == 0, out[-3000:]
    return out


@pytest.mark.parametrize("variant", ["topology.yaml", "topology-node.yaml", "topology-bash.yaml"])
def test_global_count_counts_every_number_once(tmp_path: Path, variant: str) -> None:
    example = tmp_path / "global-count"
    # without the output a run in the example's own directory leaves (git-ignored there)
    shutil.copytree(
        EXAMPLES / "global-count", example, ignore=shutil.ignore_patterns("total.json*")
    )
    total = example / "total.json"
    assert not total.exists()
    proc = start(example / variant, tmp_path / "state")

    def done() -> bool:
        try:
            return json.loads(total.read_text())["count"] >= 10_000
        except (OSError, ValueError):
            return False

    wait_for(done, proc)
    out = stop(proc)
    state = json.loads(total.read_text())
    assert (state["count"], state["sum"]) == (10_000, sum(range(10_000)))
    assert "transactional global-count" in out and "committed_txid=100" in out


def test_wordcount_sqlite_is_exactly_once_across_a_killed_host(tmp_path: Path) -> None:
    example = wordcount_copy(tmp_path, "wordcount-sqlite")  # without a counts.db of an earlier run
    db, state = example / "counts.db", tmp_path / "state"
    assert not db.exists()
    expected = expected_counts(example)
    total = sum(expected.values())
    # the first run's committer dies before writing txid 3, on every attempt: the run cannot get
    # past it, so the kill surely comes with batches committed and others not
    doc = yaml.safe_load((example / "topology.yaml").read_text())
    doc["bolts"]["store"]["env"] = {"FAULT": "before_write:3"}
    faulty = example / "faulty.yaml"
    faulty.write_text(yaml.safe_dump(doc))
    first = start(faulty, state)
    wait_for(lambda: sum(stored_counts(db).values()) > 0, first)
    first.kill()
    first.wait(timeout=30)
    assert 0 < sum(stored_counts(db).values()) < total
    again = start(example / "topology.yaml", state)
    wait_for(lambda: sum(stored_counts(db).values()) >= total, again)
    stop(again)
    assert stored_counts(db) == expected
    result = subprocess.run(
        [sys.executable, str(example / "report.py"), str(db)], capture_output=True, text=True
    )
    assert result.returncode == 0 and "exactly once: True" in result.stdout
