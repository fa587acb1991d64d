"""`python -m host local` with a DRPC topology that cannot serve: an address already in use, a bad
`--drpc-bind` (docs/drpc.md §1, §5). Either way the host stops before any process starts, with a
one-line error and a non-zero exit."""

from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path

EXCLAIM = Path(__file__).resolve().parents[2] / "examples" / "drpc" / "exclaim" / "topology.yaml"


def host(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "host", "local", str(EXCLAIM), "--duration", "5", *args],
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_an_address_in_use_stops_the_run_before_it_starts() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = host("--drpc-bind", f"127.0.0.1:{port}")
    assert done.returncode == 1
    assert f"cannot serve DRPC on http://127.0.0.1:{port}" in done.stderr
    assert "--drpc-bind 127.0.0.1:0 picks a free port" in done.stderr
    # no component was started: each bash bolt logs its form once it runs (exclaim.sh)
    assert "the linear form" not in done.stdout + done.stderr


def test_a_bad_bind_is_a_topology_error() -> None:
    done = host("--drpc-bind", "127.0.0.1:http")
    assert done.returncode == 2
    assert "host.drpc.bind" in done.stderr and "127.0.0.1:http" in done.stderr
