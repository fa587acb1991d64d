"""The drpc benchmark and its load generator run, check every answer and write their report.
Figures are not checked: benchmarks are measurements, not tests (see benchmarks/__init__.py)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
FLUX = REPO / "examples" / "drpc" / "exclaim" / "topology.flux.yaml"


@pytest.fixture
def echo_server(request: pytest.FixtureRequest) -> Iterator[int]:
    """The generator's trivial server in its own process; its port. `suffix` via indirect."""
    suffix = getattr(request, "param", "!")
    proc = subprocess.Popen(
        [sys.executable, "-m", "benchmarks.drpc_load", "serve", "--suffix", suffix],
        cwd=REPO,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()  # printed once it listens; "" if it died
        found = re.search(r"ECHO listening on http://127\.0\.0\.1:(\d+)", line)
        assert found, f"no listening line from the trivial server: {line!r}"
        yield int(found.group(1))
    finally:
        proc.kill()
        proc.wait()


def _load(port: int, *extra: str) -> dict:
    out = subprocess.run(
        [sys.executable, "-m", "benchmarks.drpc_load", "load", "--port", str(port)]
        + ["--clients", "4", "--warmup", "0.1", "--duration", "0.3", *extra],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def test_generator_closed_loop_checks_every_answer(echo_server: int) -> None:
    report = _load(echo_server)
    assert report["clients"] == 4 and report["rate"] is None
    assert report["sent"] > 0
    assert report["answered"] == report["sent"]
    assert report["errors"] == 0, report["error_samples"]
    assert report["window_answers"] > 0
    assert 0 < report["latency_p50_ms"] <= report["latency_p99_ms"] <= report["latency_max_ms"]
    assert report["generator_cpu_pct"] is not None
    assert report["watched_cpu_pct"] is None  # no --watch-pid


def test_generator_open_loop_sends_the_scheduled_requests(echo_server: int) -> None:
    report = _load(echo_server, "--rate", "200")
    # 200/s over 0.1 s of warm-up and a 0.3 s window: 80 scheduled, 60 of them in the window
    assert report["sent"] == 80
    assert report["window_answers"] == 60
    assert report["answered"] == report["sent"]
    assert report["errors"] == 0, report["error_samples"]
    assert report["requests_per_s"] == pytest.approx(200)


@pytest.mark.parametrize("echo_server", ["?"], indirect=True)
def test_generator_counts_wrong_answers(echo_server: int) -> None:
    report = _load(echo_server)
    assert report["sent"] > 0
    assert report["answered"] == 0
    assert report["errors"] == report["sent"]
    assert "?" in report["error_samples"][0]


def test_smoke_run_writes_the_report(tmp_path: Path) -> None:
    out = subprocess.run(
        [sys.executable, "-m", "benchmarks", "drpc", "--smoke", "--results-dir", str(tmp_path)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 0, out.stdout + out.stderr
    assert "== drpc" in out.stdout

    result = json.loads((tmp_path / "drpc.json").read_text())
    assert result["name"] == "drpc" and result["mode"] == "smoke"
    assert result["command"].startswith("python -m benchmarks ")
    assert result["baseline"] == "ceiling (trivial server): 64 clients"
    series = ["linear", "ceiling (trivial server)"] + (["flux"] if FLUX.exists() else [])
    rows = ["1 client", "16 clients", "64 clients"]
    paced = {
        s: f"{s}: paced as linear" if s.startswith("ceiling") else f"{s}: paced at 50% of 64"
        for s in series
    }
    assert set(result["variants"]) == {f"{s}: {r}" for s in series for r in rows} | set(
        paced.values()
    )
    for name, entry in result["variants"].items():
        assert entry["n_runs"] == 1, name
        assert entry["errors"]["median"] == 0, (name, result["notes"])
        assert entry["sent"]["median"] > 0, name
        assert entry["requests_per_s"]["median"] > 0, name
        assert entry["latency_p99_ms"]["median"] > 0, name
        assert entry["server_cpu_us_per_req"]["median"] is not None, name
    for row in paced.values():
        assert result["variants"][row]["target_rate"]["median"] > 0, row
        assert result["variants"][row]["params"]["loop"] == "open", row
    assert (
        result["variants"]["ceiling (trivial server): paced as linear"]["target_rate"]
        == result["variants"]["linear: paced at 50% of 64"]["target_rate"]
    )
    assert "linear / ceiling requests/s at 64 clients" in result["ratios"]
    assert result["targets"]
    # the plot needs matplotlib (the [bench] extra, which `make test` does not install)
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        assert any("matplotlib not installed" in n for n in result["notes"])
    else:
        assert (tmp_path / "drpc.png").exists()
