"""`python -m host` as a real subprocess: the word-count example, exit codes, signals."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import psutil
import pytest

from host.observe.snapshot import Snapshot
from tests.support.typed_dict_check import typed_dict_problems

ROOT = Path(__file__).resolve().parents[2]
WORDCOUNT = ROOT / "examples" / "wordcount" / "topology.yaml"
# the sentences the example spout cycles through (examples/wordcount/sentences.py)
SENTENCES = [
    "the cow jumped over the moon",
    "an apple a day keeps the doctor away",
    "four score and seven years ago",
    "snow white and the seven dwarfs",
    "i am at two with nature",
]


def host(*args: str, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "host", *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
        **kwargs,
    )


def test_wordcount_example_counts_every_word_exactly(tmp_path):
    limit = 2000
    stats, report = tmp_path / "stats.json", tmp_path / "report.json"
    result = host(
        "local",
        str(WORDCOUNT),
        "--duration",
        "10",
        "--stats-json",
        str(stats),
        "-c",
        f"wordcount.sentences.limit={limit}",
        "-c",
        f"wordcount.report.path={report}",
    )
    assert result.returncode == 0, result.stderr[-3000:]
    data = json.loads(stats.read_text())
    assert typed_dict_problems(data, Snapshot) == []  # every key the host writes, typed
    top = data["topology"]
    assert top["name"] == "wordcount"
    assert top["spout_tuples_acked"] == limit
    assert top["spout_tuples_failed"] == 0 and top["spout_tuples_timed_out"] == 0
    assert top["complete_latency_ms"]["p50"] > 0
    expected = Counter(w for i in range(limit) for w in SENTENCES[i % len(SENTENCES)].split())
    comps = data["components"]
    for cid, tasks in (("sentences", 1), ("split", 2), ("count", 2), ("report", 1)):
        assert comps[cid]["tasks"] == tasks
        assert comps[cid]["restarts"] == 0 and comps[cid]["errors"] == 0
        assert set(comps[cid]) >= {
            "tasks",
            "emitted",
            "executed",
            "acked",
            "failed",
            "restarts",
            "errors",
        }
    assert comps["sentences"]["emitted"] == limit
    assert comps["split"]["executed"] == limit
    assert comps["split"]["emitted"] == sum(expected.values())
    assert comps["count"]["executed"] == sum(expected.values())
    assert json.loads(report.read_text()) == dict(expected)
    assert "topology wordcount: ran" in result.stdout  # the summary


def test_bad_topology_is_one_line_and_exit_code_2(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        "name: t\nspouts:\n  s: {command: [python, nope.py], outputs: [x]}\n"
        "bolts:\n  b: {command: [python, nope.py], inputs: {missing: shuffle}}\n"
    )
    result = host("local", str(bad))
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ")
    assert str(bad) in lines[0] and "Traceback" not in result.stderr
    assert host("validate", str(bad)).returncode == 2


def test_validate_reports_ok():
    result = host("validate", str(WORDCOUNT))
    assert result.returncode == 0
    assert "ok" in result.stdout and "6 task(s)" in result.stdout


def _descendants_when_running(proc: subprocess.Popen, expected: int, timeout: float = 30):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        kids = psutil.Process(proc.pid).children(recursive=True)
        if len([k for k in kids if k.ppid() == proc.pid]) >= expected:
            time.sleep(1.0)  # let them finish the handshake and get busy
            return psutil.Process(proc.pid).children(recursive=True)
        time.sleep(0.1)
    raise AssertionError("components did not start")


def _gone(procs, timeout: float) -> list:
    _, alive = psutil.wait_procs(procs, timeout=timeout)
    return alive


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_sigterm_and_sigint_stop_gracefully(tmp_path, sig):
    stats = tmp_path / "stats.json"
    proc = subprocess.Popen(
        [sys.executable, "-m", "host", "local", str(WORDCOUNT), "--stats-json", str(stats)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    kids = _descendants_when_running(proc, expected=6)
    proc.send_signal(sig)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err[-3000:]
    assert f"received {signal.Signals(sig).name}" in err
    assert not _gone(kids, timeout=5), "component processes outlived the host"
    data = json.loads(stats.read_text())
    assert data["topology"]["spout_tuples_acked"] > 0
    assert data["topology"]["spout_tuples_failed"] == 0


def test_host_sigkill_leaves_no_component_behind():
    proc = subprocess.Popen(
        [sys.executable, "-m", "host", "local", str(WORDCOUNT), "--quiet"],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        kids = _descendants_when_running(proc, expected=6)
        # the bash split tasks among them (each with its jq until its handshake is done)
        assert any(k.name() == "bash" for k in kids), [k.cmdline() for k in kids]
    finally:  # a failed check must not leave the host running the word count
        proc.kill()
        proc.wait()
    alive = _gone(kids, timeout=5)
    for p in alive:
        p.kill()
    assert not alive, f"still running after the host was killed: {[p.cmdline() for p in alive]}"


STORM_FLUX = ROOT / "examples" / "storm-flux" / "topology.yaml"


def test_flux_example_runs_and_every_tuple_is_acked(tmp_path):
    stats = tmp_path / "stats.json"
    result = host(
        "local", str(STORM_FLUX), "--duration", "4", "--quiet", "--stats-json", str(stats)
    )
    assert result.returncode == 0, result.stderr[-3000:]
    data = json.loads(stats.read_text())
    top, comps = data["topology"], data["components"]
    assert top["spout_tuples_acked"] > 0 and top["spout_tuples_failed"] == 0
    assert set(comps) == {"sentence-spout", "splitsentence", "count", "log"}
    assert comps["count"]["executed"] == comps["splitsentence"]["emitted"]
    assert all(c["errors"] == 0 and c["restarts"] == 0 for c in comps.values())


def test_export_flux_round_trips_through_validate():
    # written beside the example: the exported file finds the scripts relative to itself
    out = WORDCOUNT.parent / f".exported-{os.getpid()}.flux.yaml"
    try:
        result = host("export-flux", str(WORDCOUNT), "-o", str(out))
        assert result.returncode == 0, result.stderr
        text = out.read_text()
        assert "org.apache.storm.flux.wrappers.bolts.FluxShellBolt" in text
        result = host("validate", str(out))
        assert result.returncode == 0, result.stderr
        assert "6 task(s)" in result.stdout
    finally:
        out.unlink(missing_ok=True)


def test_graph_writes_dot():
    result = host("graph", str(WORDCOUNT))
    assert result.returncode == 0, result.stderr
    assert result.stdout.lstrip().startswith("digraph")
    for cid in ("sentences", "split", "count", "report"):
        assert cid in result.stdout
