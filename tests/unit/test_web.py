"""host.observe.web.server: the web UI's HTTP API, started in-process on port 0 with made-up snapshots
and read with urllib; it listens on 127.0.0.1 and nowhere else."""

from __future__ import annotations

import http.client
import json
import socket
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

import psutil
import pytest

from host.observe.snapshot import Snapshot
from host.observe.web.server import DEFAULT_PORT, HOST, WebUI
from host.topology import TopologyBuilder
from tests.support.batch_snapshot import batches
from tests.support.typed_dict_check import typed_dict_problems

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def topology(tmp_path: Path):
    for name in ("spout.py", "bolt.py"):
        (tmp_path / name).write_text("# never run\n")
    b = TopologyBuilder("demo", config={"topology.max.spout.pending": 50})
    b.spout(
        "sentences", ["python", "spout.py"], outputs={"default": ["sentence"], "alerts": ["level"]}
    )
    b.bolt("split", ["python", "bolt.py"], outputs=["word"], parallelism=3).shuffle("sentences")
    b.bolt(
        "count",
        ["python", "bolt.py"],
        outputs=["word", "count"],
        parallelism=2,
        config={"topology.tick.tuple.freq.secs": 5},
    ).fields("split", "word")
    b.bolt("alarm", ["python", "bolt.py"]).all("sentences", stream="alerts")
    return b.build(tmp_path)


@pytest.fixture
def ui(topology):
    server = WebUI(topology, port=0)
    server.start()
    yield server
    server.stop()


def get(ui: WebUI, path: str, headers: dict | None = None):
    request = urllib.request.Request(ui.url.rstrip("/") + path, headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=5) as response:
            return response.status, dict(response.headers), response.read()
    except urllib.error.HTTPError as exc:
        return exc.code, dict(exc.headers), exc.read()


def snap(acked: int) -> dict:
    """A snapshot that fits host.observe.snapshot's schema; a log line the page must escape."""
    data = {
        "topology": {
            "name": "demo",
            "uptime_s": 1.0,
            "spout_tuples_acked": acked,
            "spout_tuples_failed": 0,
            "spout_tuples_timed_out": 0,
            "spout_tuples_pending": 0,
            "acked_per_s": float(acked),
            "failed_per_s": 0.0,
            "timed_out_per_s": 0.0,
            "complete_latency_ms": {"p50": 1.0, "p99": 2.0, "mean": 1.2},
        },
        "components": {
            "split": {
                "tasks": 1,
                "emitted": 5,
                "transferred": 5,
                "executed": 4,
                "acked": 4,
                "failed": 0,
                "restarts": 0,
                "errors": 0,
                "metrics": {"hits": 3},
                "in_flight": 0,
                "queued": 0,
                "states": ["running"],
                "capacity": 0.25,
                "cpu_percent": 1.5,
                "rss_bytes": 12 << 20,
                "tasks_detail": [
                    {
                        "task": 2,
                        "pid": 4242,
                        "state": "running",
                        "emitted": 5,
                        "executed": 4,
                        "acked": 4,
                        "failed": 0,
                        "in_flight": 0,
                        "queued": 0,
                        "restarts": 0,
                        "errors": 0,
                        "last_error": None,
                        "last_error_at": None,
                        "capacity": 0.25,
                        "cpu_percent": 1.5,
                        "rss_bytes": 12 << 20,
                    }
                ],
            }
        },
        "recent_logs": [
            {
                "time": 1.0,
                "component": "split",
                "task": 2,
                "level": "INFO",
                "message": "<script>alert(1)</script>",
            }
        ],
        "failures": [],
    }
    assert typed_dict_problems(data, Snapshot, extra_keys=False) == []
    return data


def test_listens_on_127_0_0_1_only(ui):
    assert ui.httpd.server_address[0] == HOST == "127.0.0.1"
    assert ui.url == f"http://127.0.0.1:{ui.port}/"
    mine = [
        c
        for c in psutil.Process().net_connections(kind="inet")
        if c.status == psutil.CONN_LISTEN and c.laddr.port == ui.port
    ]
    assert [c.laddr.ip for c in mine] == ["127.0.0.1"]


def test_refuses_any_other_address(topology):
    with pytest.raises(ValueError):
        WebUI(topology, port=0, host="0.0.0.0")


def test_serves_the_page_and_its_files(ui):
    status, headers, body = get(ui, "/")
    assert status == 200 and headers["Content-Type"].startswith("text/html")
    assert b'src="/app.js"' in body and b'href="/style.css"' in body
    assert "default-src 'self'" in headers["Content-Security-Policy"]  # nothing from elsewhere
    status, headers, body = get(ui, "/app.js")
    assert status == 200 and headers["Content-Type"].startswith("text/javascript")
    assert b"/api/snapshot" in body
    status, headers, _ = get(ui, "/style.css")
    assert status == 200 and headers["Content-Type"].startswith("text/css")


def test_unknown_paths_are_404(ui):
    for path in ("/nope", "/../pyproject.toml", "/static/app.js", "/api/"):
        assert get(ui, path)[0] == 404, path


def test_topology_endpoint(ui):
    status, headers, body = get(ui, "/api/topology")
    assert status == 200 and headers["Content-Type"] == "application/json"
    data = json.loads(body)
    assert data["name"] == "demo"
    assert data["config"] == {"topology.max.spout.pending": 50}
    comps = {c["id"]: c for c in data["components"]}
    assert list(comps) == ["sentences", "split", "count", "alarm"]
    assert comps["sentences"]["kind"] == "spout"
    assert comps["sentences"]["outputs"] == {"default": ["sentence"], "alerts": ["level"]}
    assert comps["split"]["parallelism"] == 3
    assert comps["count"]["inputs"] == [
        {
            "source": "split",
            "stream": "default",
            "grouping": "fields",
            "fields": ["word"],
            "label": "fields(word)",
        }
    ]
    assert comps["count"]["config"] == {"topology.tick.tuple.freq.secs": 5}
    assert comps["alarm"]["inputs"][0]["label"] == "[alerts] all"
    assert comps["split"]["command"] == ["python", "bolt.py"]


def test_snapshot_endpoint_serves_the_latest_published(ui):
    status, _, body = get(ui, "/api/snapshot")
    assert status == 503 and json.loads(body)["error"]
    first = snap(10)
    ui.publish(first)
    status, headers, body = get(ui, "/api/snapshot")
    assert status == 200 and headers["Cache-Control"] == "no-store"
    assert json.loads(body) == first
    assert ui.snapshot_bytes() is ui.snapshot_bytes()  # encoded once per snapshot
    ui.publish(snap(20))
    assert json.loads(get(ui, "/api/snapshot")[2])["topology"]["spout_tuples_acked"] == 20


def test_snapshot_of_a_transactional_topology_serves_its_batches(ui):
    """The `batches` section (docs/transactional.md §6) reaches the page as it was published, and
    the page has the place that draws it (tests/e2e/test_web_ui.py checks the drawing)."""
    data = snap(10)
    data["batches"] = batches()
    assert typed_dict_problems(data, Snapshot, extra_keys=False) == []
    ui.publish(data)
    status, _, body = get(ui, "/api/snapshot")
    assert status == 200
    served = json.loads(body)
    assert served["batches"] == data["batches"]
    assert typed_dict_problems(served, Snapshot, extra_keys=False) == []
    assert served["batches"]["open"][0] == {
        "txid": 42,
        "attempt": 2,
        "phase": "committing",
        "age_s": 1.75,
        "tuples": 300,
        "finished": 5,
        "tasks": 6,
    }
    page = get(ui, "/")[2]
    for element in (b'id="batches"', b'id="open-attempts"', b'id="recent-batches"'):
        assert element in page, element
    assert b"snap.batches" in get(ui, "/app.js")[2]
    ui.publish(snap(11))  # not transactional: no section
    assert "batches" not in json.loads(get(ui, "/api/snapshot")[2])


def test_snapshot_with_nan_is_still_valid_json(ui):
    data = snap(1)
    data["topology"]["complete_latency_ms"]["mean"] = float("nan")
    ui.publish(data)
    body = get(ui, "/api/snapshot")[2]
    assert json.loads(body)["topology"]["complete_latency_ms"]["mean"] is None
    assert b"NaN" not in body


def test_head_requests(ui):
    conn = http.client.HTTPConnection(HOST, ui.port, timeout=5)
    conn.request("HEAD", "/api/topology")
    response = conn.getresponse()
    assert response.status == 200 and int(response.getheader("Content-Length")) > 0
    assert response.read() == b""
    conn.close()


def test_other_host_names_are_refused(ui):
    """A page on another site whose name resolves to 127.0.0.1 (DNS rebinding) gets nothing."""
    ui.publish(snap(1))
    assert get(ui, "/api/snapshot", {"Host": "evil.example:80"})[0] == 403
    assert get(ui, "/api/snapshot", {"Host": f"localhost:{ui.port}"})[0] == 200


def test_stop_closes_the_port(topology):
    server = WebUI(topology, port=0)
    server.start()
    port = server.port
    server.stop()
    with pytest.raises(OSError):
        socket.create_connection((HOST, port), timeout=2).close()


def test_cli_reports_a_port_in_use_in_one_line_and_starts_nothing():
    with socket.socket() as busy:
        busy.bind((HOST, 0))
        busy.listen()
        port = busy.getsockname()[1]
        result = subprocess.run(
            [
                sys.executable,
                "-m",
                "host",
                "local",
                "examples/wordcount/topology.yaml",
                "--ui",
                str(port),
                "--duration",
                "1",
            ],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
    assert result.returncode == 1
    assert result.stderr.strip().splitlines() == [
        (
            f"error: cannot serve the web UI on 127.0.0.1:{port}: Address already in use "
            "(--ui 0 picks a free port)"
        )
    ]
    assert "topology wordcount" not in result.stdout


def test_ui_option_takes_an_optional_port():
    from host.cli import local

    option = next(p for p in local.params if p.name == "ui_port")
    assert option.flag_value == DEFAULT_PORT and option.default is None
