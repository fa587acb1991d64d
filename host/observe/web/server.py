"""The web UI's HTTP server: the page, and the run as JSON, on 127.0.0.1 only.

It runs on a daemon thread of its own and never touches the event loop's state. The loop hands
it each new snapshot with `publish()`, an attribute assignment: a snapshot is a fresh object built
for the report and never changed afterwards, so the server reads it without a lock, and turns it
into JSON only when a browser asks (once per snapshot, however many browsers ask).

    GET /                 the page (static/index.html, app.js, style.css: no build step, no CDN)
    GET /api/topology     components, streams, groupings, parallelism, config (fixed for the run)
    GET /api/snapshot     the latest snapshot (`host.observe.snapshot.Snapshot`)
"""

from __future__ import annotations

import json
import logging
import math
import threading
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib import resources
from typing import Any
from urllib.parse import urlsplit

from host.observe.snapshot import Snapshot
from host.topology.flux_java import builtin_for_command
from host.topology.graph import edge_label, in_host_label
from host.topology.model import Topology

HOST = "127.0.0.1"  # never anything else: the UI shows commands, config and log lines
DEFAULT_PORT = 8765
STATIC_FILES = {
    "/": ("index.html", "text/html; charset=utf-8"),
    "/index.html": ("index.html", "text/html; charset=utf-8"),
    "/app.js": ("app.js", "text/javascript; charset=utf-8"),
    "/style.css": ("style.css", "text/css; charset=utf-8"),
}
# the page loads nothing from anywhere else, and no other site may frame it
SECURITY_HEADERS = {
    "Content-Security-Policy": "default-src 'self'; img-src 'self' data:; "
    "frame-ancestors 'none'; base-uri 'none'; form-action 'none'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}
_LOCAL_NAMES = ("127.0.0.1", "localhost")

log = logging.getLogger("host.observe.web")


def topology_json(topology: Topology) -> dict[str, Any]:
    """What `/api/topology` serves: the model as the page draws it."""
    components = []
    for c in topology.components:
        builtin = builtin_for_command(c.command)
        components.append(
            {
                "id": c.id,
                "kind": c.kind,
                "parallelism": c.parallelism,
                "command": list(c.command),
                "builtin": builtin.short_name if builtin is not None else None,
                "serializer": c.serializer,
                "outputs": {stream: list(fields) for stream, fields in c.outputs.items()},
                "inputs": [
                    {
                        "source": i.source,
                        "stream": i.stream,
                        "grouping": i.grouping.type,
                        "fields": list(i.grouping.fields),
                        "label": edge_label(i),
                    }
                    for i in c.inputs
                ],
                "config": c.config,
                # a DRPC part run inside the host (docs/drpc.md §3), e.g. "DRPCSpout(exclaim), in
                # host"; None for a component with a process. An in-host part has no entry in
                # the snapshot's `components`: the page labels it instead of showing figures.
                "in_host": in_host_label(c),
            }
        )
    return {
        "name": topology.name,
        "source": topology.source,
        "config": topology.config,
        "components": components,
    }


def _finite(value: Any) -> Any:
    """NaN and infinities become null: the browser's JSON.parse refuses them."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(v) for v in value]
    return value


def to_json(data: Any) -> bytes:
    try:
        text = json.dumps(data, default=str, allow_nan=False, separators=(",", ":"))
    except ValueError:
        text = json.dumps(_finite(data), default=str, separators=(",", ":"))
    return text.encode("utf-8")


def _static(name: str) -> bytes:
    return resources.files("host.observe.web").joinpath("static", name).read_bytes()


class WebUI:
    """Serves the UI of one run. Binds at construction (so a port in use is an error before the
    topology starts); `start()` serves on a daemon thread; `publish(snapshot)` from the loop;
    `stop()` when the run ends."""

    def __init__(self, topology: Topology, port: int = DEFAULT_PORT, host: str = HOST):
        if host != HOST:
            raise ValueError(f"the web UI only listens on {HOST}")
        self._files = {path: (_static(name), ctype) for path, (name, ctype) in STATIC_FILES.items()}
        self._topology = to_json(topology_json(topology))
        self._snapshot: Snapshot | None = None  # replaced by publish(), never changed in place
        self._encoded: tuple[Snapshot | None, bytes] = (None, b"")
        self._thread: threading.Thread | None = None
        self.httpd = _Server((host, port), _Handler)
        self.httpd.ui = self

    @property
    def port(self) -> int:
        return self.httpd.server_address[1]

    @property
    def url(self) -> str:
        return f"http://{HOST}:{self.port}/"

    def start(self) -> None:
        self._thread = threading.Thread(
            target=self.httpd.serve_forever,
            name="web-ui",
            kwargs={"poll_interval": 0.2},
            daemon=True,
        )
        self._thread.start()

    def publish(self, snapshot: Snapshot) -> None:
        """Called by the event loop with each new snapshot; costs one assignment."""
        self._snapshot = snapshot

    def stop(self) -> None:
        if self._thread is not None:
            self.httpd.shutdown()
            self._thread.join(timeout=5)
            self._thread = None
        self.httpd.server_close()

    # ---- read by the server's threads -----------------------------------------------------------
    def snapshot_bytes(self) -> bytes | None:
        snap = self._snapshot
        if snap is None:
            return None
        cached = self._encoded
        if cached[0] is snap:
            return cached[1]
        for attempt in range(3):
            try:
                data = to_json(snap)
                break
            except RuntimeError:  # a live registry (custom metrics) grew while being encoded
                if attempt == 2:
                    raise
        self._encoded = (snap, data)
        return data

    def resource(self, path: str) -> tuple[bytes, str] | None:
        if path == "/api/topology":
            return self._topology, "application/json"
        if path == "/api/snapshot":
            data = self.snapshot_bytes()
            return None if data is None else (data, "application/json")
        return self._files.get(path)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    ui: WebUI


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    server_version = "multilang-host"
    sys_version = ""

    def do_GET(self) -> None:
        self._respond(body=True)

    def do_HEAD(self) -> None:
        self._respond(body=False)

    def _respond(self, body: bool) -> None:
        if not self._host_is_local():
            # another name resolving to 127.0.0.1 (DNS rebinding): not a page of ours
            self._send(HTTPStatus.FORBIDDEN, b"forbidden\n", "text/plain; charset=utf-8", body)
            return
        path = urlsplit(self.path).path
        try:
            found = self.server.ui.resource(path)
        except Exception:  # a bug: answer, and say it in the host's log
            log.exception("web UI: %s failed", path)
            self._send(
                HTTPStatus.INTERNAL_SERVER_ERROR,
                b'{"error":"internal error"}',
                "application/json",
                body,
            )
            return
        if found is None:
            if path == "/api/snapshot":
                self._send(
                    HTTPStatus.SERVICE_UNAVAILABLE,
                    b'{"error":"not started yet"}',
                    "application/json",
                    body,
                )
            else:
                self._send(HTTPStatus.NOT_FOUND, b"not found\n", "text/plain; charset=utf-8", body)
            return
        self._send(HTTPStatus.OK, found[0], found[1], body)

    def _host_is_local(self) -> bool:
        host = self.headers.get("Host")
        if host is None:
            return True  # HTTP/1.0 without Host: only something on this machine gets here
        name = host.rsplit(":", 1)[0] if not host.endswith("]") else host
        return name.lower() in _LOCAL_NAMES

    def _send(self, status: HTTPStatus, data: bytes, ctype: str, body: bool) -> None:
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(data)))
        for key, value in SECURITY_HEADERS.items():
            self.send_header(key, value)
        self.end_headers()
        if body:
            try:
                self.wfile.write(data)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the browser went away

    def log_message(self, format: str, *args: Any) -> None:
        log.debug("web UI: " + format, *args)  # one line per request is noise in the terminal
