"""host.drpc.client.DRPCClient and `python -m host drpc` (docs/drpc.md §1, §4) against a real
HTTP server started here: a threaded stdlib server that answers as the host's DRPC server does
(results, each error type, idle keep-alive connections closed, a slow function), and counts the
connections it accepts and the requests it reads."""

from __future__ import annotations

import json
import os
import re
import selectors
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import pytest
from click.testing import CliRunner

from host.drpc.client import DRPCClient, DRPCConnectionError, DRPCError, DRPCTimeoutError
from host.drpc.command import drpc as drpc_command

ROOT = Path(__file__).resolve().parents[2]
DEADLINE = 30.0  # seconds a poll waits for something that happens at once on an idle machine

# docs/drpc.md §1: the error answers, as (status, type)
ERRORS = {
    "FAILED_REQUEST": 400,
    "SERVER_TIMEOUT": 504,
    "SERVER_SHUTDOWN": 503,
    "INTERNAL_ERROR": 500,
    "UNKNOWN_FUNCTION": 404,
    "SERVER_BUSY": 503,
    "BAD_REQUEST": 400,
}


class FakeDRPCServer(ThreadingHTTPServer):
    """The host's DRPC HTTP API, with functions whose answers the tests pick:

    - `exclaim`: args + "!"; `echo`: args as they are
    - `error-TYPE`: the JSON error answer of TYPE (ERRORS); `plain-error`: a 502 in plain text
    - `close-after`: answers args, then closes the connection without saying so (a server
      dropping an idle keep-alive connection); `drop`: reads the request, closes, no answer
    - `close-said`: answers with `Connection: close`
    - `slow`: answers only once `release` is set
    """

    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.lock = threading.Lock()
        self.connections = 0  # accepted
        self.closed = 0  # closed by this server
        self.requests: list[tuple[str, str, str]] = []  # (function, args, raw path)
        self.release = threading.Event()
        self.changed = threading.Condition(self.lock)

    @property
    def url(self) -> str:
        host, port = self.server_address[:2]
        return f"http://{host!s}:{port}"

    def process_request(self, request: Any, client_address: Any) -> None:
        with self.lock:
            self.connections += 1
        super().process_request(request, client_address)

    def shutdown_request(self, request: Any) -> None:
        super().shutdown_request(request)
        with self.changed:
            self.closed += 1
            self.changed.notify_all()

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # a late answer written to a connection the client gave up: not the test's business

    def record(self, function: str, args: str, path: str) -> None:
        with self.changed:
            self.requests.append((function, args, path))
            self.changed.notify_all()

    def wait_for(self, what: str, predicate: Any) -> None:
        with self.changed:
            if not self.changed.wait_for(predicate, timeout=DEADLINE):
                raise AssertionError(f"the fake DRPC server: {what} did not happen")

    def calls(self, function: str) -> list[str]:
        with self.lock:
            return [args for f, args, _ in self.requests if f == function]


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive unless told otherwise, as the host's server
    timeout = 60  # an idle connection's thread ends in the end
    server: FakeDRPCServer

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        prefix = "/drpc/"
        if not self.path.startswith(prefix) or "/" in self.path[len(prefix) :]:
            self._answer(404, "application/json", _error_body("BAD_REQUEST", "not a route"))
            return
        function = unquote(self.path[len(prefix) :], errors="strict")
        length = int(self.headers.get("Content-Length", "0"))
        args = self.rfile.read(length).decode("utf-8")
        self.server.record(function, args, self.path)
        if function == "exclaim":
            self._answer(200, "text/plain; charset=utf-8", (args + "!").encode("utf-8"))
        elif function in ("echo", "close-after"):
            self._answer(200, "text/plain; charset=utf-8", args.encode("utf-8"))
            self.close_connection = function == "close-after"
        elif function == "close-said":
            self._answer(200, "text/plain; charset=utf-8", b"bye", close=True)
        elif function.startswith("error-"):
            kind = function[len("error-") :]
            body = _error_body(kind, f"{kind.lower()} for {args!r}")
            self._answer(ERRORS[kind], "application/json", body)
        elif function == "plain-error":
            self._answer(502, "text/plain", b"bad gateway\n")
        elif function == "drop":
            self.close_connection = True
        elif function == "slow":
            self.server.release.wait(DEADLINE * 4)
            self._answer(200, "text/plain; charset=utf-8", b"late")
        else:
            body = _error_body("UNKNOWN_FUNCTION", f"no DRPC spout serves {function!r}")
            self._answer(404, "application/json", body)

    def _answer(self, status: int, content_type: str, body: bytes, close: bool = False) -> None:
        self.send_response(status)
        if close:
            self.send_header("Connection", "close")  # BaseHTTPRequestHandler then closes it
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


def _error_body(kind: str, message: str) -> bytes:
    return json.dumps({"error": kind, "errorMessage": message}).encode("utf-8")


@pytest.fixture
def server() -> Iterator[FakeDRPCServer]:
    srv = FakeDRPCServer()
    thread = threading.Thread(target=srv.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield srv
    finally:
        srv.release.set()
        srv.shutdown()
        srv.server_close()
        thread.join(DEADLINE)


@pytest.fixture
def refused_url() -> Iterator[str]:
    """A port that refuses connections: bound (so nobody else takes it), not listening."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    try:
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    finally:
        sock.close()


def _wait_readable(client: DRPCClient) -> None:
    """Until the client's idle connection shows the server's close (the end of stream reached
    its socket): the precondition of the reconnect test, asserted rather than assumed."""
    sock = client._connection.sock  # the test looks inside: no public way to see the socket
    assert sock is not None, "the client has no open connection"
    with selectors.DefaultSelector() as selector:
        selector.register(sock, selectors.EVENT_READ)
        assert selector.select(DEADLINE), "the server's close never reached the client"


# --- the client ----------------------------------------------------------------------------


def test_result(server: FakeDRPCServer) -> None:
    with DRPCClient(server.url) as client:
        assert client.execute("exclaim", "hello") == "hello!"
    assert server.requests == [("exclaim", "hello", "/drpc/exclaim")]


@pytest.mark.parametrize(
    "args", ["", "a/b/c", "héllo wörld ✓ 𝄞", "line\nbreak\r\n", "?x=1&y=2#z", " spaced "]
)
def test_any_args_go_through_unchanged(server: FakeDRPCServer, args: str) -> None:
    with DRPCClient(server.url) as client:
        assert client.execute("echo", args) == args
    assert server.calls("echo") == [args]


def test_function_name_is_percent_encoded(server: FakeDRPCServer) -> None:
    with DRPCClient(server.url) as client:
        with pytest.raises(DRPCError) as info:
            client.execute("a b/ç?", "x")
    assert info.value.type == "UNKNOWN_FUNCTION"
    assert server.requests == [("a b/ç?", "x", "/drpc/a%20b%2F%C3%A7%3F")]


@pytest.mark.parametrize("kind", sorted(ERRORS))
def test_error_answers(server: FakeDRPCServer, kind: str) -> None:
    with DRPCClient(server.url) as client:
        with pytest.raises(DRPCError) as info:
            client.execute(f"error-{kind}", "hi")
    error = info.value
    assert (error.status, error.type, error.message) == (
        ERRORS[kind],
        kind,
        f"{kind.lower()} for 'hi'",
    )
    assert str(error) == f"{kind}: {kind.lower()} for 'hi' (HTTP {ERRORS[kind]})"


def test_non_json_error_answer(server: FakeDRPCServer) -> None:
    with DRPCClient(server.url) as client:
        with pytest.raises(DRPCError) as info:
            client.execute("plain-error", "x")
    assert (info.value.status, info.value.type, info.value.message) == (
        502,
        "HTTP_502",
        "bad gateway",
    )


def test_keep_alive_uses_one_connection(server: FakeDRPCServer) -> None:
    with DRPCClient(server.url) as client:
        results = [client.execute("exclaim", str(n)) for n in range(5)]
        with pytest.raises(DRPCError):  # an error answer keeps the connection too
            client.execute("error-FAILED_REQUEST", "x")
        results.append(client.execute("exclaim", "last"))
    assert results == ["0!", "1!", "2!", "3!", "4!", "last!"]
    assert len(server.requests) == 7
    assert server.connections == 1


def test_reconnects_once_the_server_closed_an_idle_connection(server: FakeDRPCServer) -> None:
    with DRPCClient(server.url) as client:
        assert client.execute("close-after", "first") == "first"
        server.wait_for("closing the connection", lambda: server.closed == 1)
        _wait_readable(client)
        assert client.execute("exclaim", "second") == "second!"
        assert client.execute("exclaim", "third") == "third!"
    assert server.calls("exclaim") == ["second", "third"]
    assert server.connections == 2


def test_connection_close_said_by_the_server(server: FakeDRPCServer) -> None:
    with DRPCClient(server.url) as client:
        assert client.execute("close-said", "x") == "bye"
        assert client.execute("exclaim", "y") == "y!"
    assert server.connections == 2


def test_a_request_that_reached_the_server_is_not_sent_again(server: FakeDRPCServer) -> None:
    with DRPCClient(server.url) as client:
        assert client.execute("exclaim", "warm") == "warm!"  # a reused connection, next
        with pytest.raises(DRPCConnectionError, match="may have run") as info:
            client.execute("drop", "once")
        assert not isinstance(info.value, DRPCTimeoutError)
        assert client.execute("exclaim", "after") == "after!"  # a new connection
    assert server.calls("drop") == ["once"]
    assert server.connections == 2


def test_timeout(server: FakeDRPCServer) -> None:
    with DRPCClient(server.url, timeout=0.5) as client:
        with pytest.raises(DRPCTimeoutError, match="no answer within 0.5s") as info:
            client.execute("slow", "x")
        assert isinstance(info.value, TimeoutError)
        assert isinstance(info.value, DRPCConnectionError)
        server.release.set()  # the late answer must not be taken for the next request's
        assert client.execute("exclaim", "next") == "next!"
    assert server.calls("slow") == ["x"]
    assert server.connections == 2


def test_connection_refused(refused_url: str) -> None:
    with DRPCClient(refused_url) as client:
        with pytest.raises(DRPCConnectionError, match="cannot connect") as info:
            client.execute("exclaim", "x")
    assert isinstance(info.value, OSError)
    assert refused_url in str(info.value)


def test_url_prefix(server: FakeDRPCServer) -> None:
    with DRPCClient(server.url + "/") as client:  # a trailing '/' is not a second one
        assert client.execute("exclaim", "x") == "x!"
    assert server.requests[0][2] == "/drpc/exclaim"


@pytest.mark.parametrize(
    "url",
    ["https://127.0.0.1:3774", "127.0.0.1:3774", "http://:3774", "http://h:99999", "http://h/?q"],
)
def test_bad_url(url: str) -> None:
    with pytest.raises(ValueError, match="bad DRPC URL"):
        DRPCClient(url)


def test_bad_arguments(server: FakeDRPCServer) -> None:
    with DRPCClient(server.url) as client:
        with pytest.raises(ValueError, match="function name is empty"):
            client.execute("", "x")
        with pytest.raises(TypeError, match="must be str"):
            client.execute("exclaim", b"x")  # type: ignore[arg-type]
    assert server.requests == []


# --- the command -------------------------------------------------------------------------


def _registered() -> bool:
    from host.cli import main

    return "drpc" in main.commands


def _run(argv: list[str], stdin: bytes = b"") -> subprocess.CompletedProcess[bytes]:
    """The command in a real process: `python -m host drpc` once host/cli.py has it, else its
    module run on its own."""
    if _registered():
        command = [sys.executable, "-m", "host", "drpc", *argv]
    else:
        code = "from host.drpc.command import drpc; drpc(prog_name='drpc')"
        command = [sys.executable, "-c", code, *argv]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        command, input=stdin, capture_output=True, cwd=ROOT, env=env, timeout=DEADLINE * 2
    )


def test_command_result(server: FakeDRPCServer) -> None:
    result = CliRunner().invoke(drpc_command, ["exclaim", "a/b", "--url", server.url])
    assert (result.exit_code, result.stdout, result.stderr) == (0, "a/b!\n", "")


def test_command_error_answer(server: FakeDRPCServer) -> None:
    result = CliRunner().invoke(drpc_command, ["error-FAILED_REQUEST", "x", "--url", server.url])
    assert result.exit_code == 1
    assert (result.stdout, result.stderr) == ("", "FAILED_REQUEST: failed_request for 'x'\n")


def test_command_no_server(refused_url: str) -> None:
    result = CliRunner().invoke(drpc_command, ["exclaim", "x", "--url", refused_url])
    assert result.exit_code == 2
    assert result.stdout == ""
    assert result.stderr.startswith("error: ") and "cannot connect" in result.stderr
    assert result.stderr.count("\n") == 1


def test_command_timeout(server: FakeDRPCServer) -> None:
    result = CliRunner().invoke(
        drpc_command, ["slow", "x", "--url", server.url, "--timeout", "0.5"]
    )
    assert result.exit_code == 2
    assert result.stderr.startswith("error: ") and "no answer within 0.5s" in result.stderr
    assert result.stderr.count("\n") == 1


def test_command_reads_stdin(server: FakeDRPCServer) -> None:
    args = "from stdin: a/b ✓\n"
    result = CliRunner().invoke(
        drpc_command, ["echo", "-", "--url", server.url], input=args.encode("utf-8")
    )
    assert (result.exit_code, result.stdout) == (0, args + "\n")
    assert server.calls("echo") == [args]


def test_command_in_a_process(server: FakeDRPCServer) -> None:
    done = _run(["exclaim", "héllo", "--url", server.url])
    assert (done.returncode, done.stdout, done.stderr) == (0, "héllo!\n".encode(), b"")


def test_command_in_a_process_reads_stdin(server: FakeDRPCServer) -> None:
    args = "x/y\n  ✓ \x1b[31mred\x1b[0m"  # ANSI escapes too: the result is printed exactly
    done = _run(["echo", "-", "--url", server.url], stdin=args.encode("utf-8"))
    assert (done.returncode, done.stdout, done.stderr) == (0, (args + "\n").encode(), b"")


def test_command_in_a_process_error_and_no_server(server: FakeDRPCServer, refused_url: str) -> None:
    done = _run(["error-SERVER_BUSY", "x", "--url", server.url])
    assert (done.returncode, done.stdout) == (1, b"")
    assert done.stderr == b"SERVER_BUSY: server_busy for 'x'\n"
    done = _run(["exclaim", "x", "--url", refused_url])
    assert (done.returncode, done.stdout) == (2, b"")
    assert done.stderr.startswith(b"error: ") and done.stderr.count(b"\n") == 1


def test_command_args_after_double_dash(server: FakeDRPCServer) -> None:
    result = CliRunner().invoke(drpc_command, ["--url", server.url, "echo", "--", "-1"])
    assert (result.exit_code, result.stdout) == (0, "-1\n")


def test_command_bad_url() -> None:
    result = CliRunner().invoke(drpc_command, ["exclaim", "x", "--url", "ftp://h"])
    assert result.exit_code == 2
    assert "bad DRPC URL" in result.stderr


def test_client_file_works_copied_alone(server: FakeDRPCServer, tmp_path: Path) -> None:
    """host/drpc/client.py is standard library only: a copy runs with no `host` on the path."""
    (tmp_path / "drpc_client.py").write_bytes((ROOT / "host" / "drpc" / "client.py").read_bytes())
    code = (
        "import sys\n"
        "sys.path.insert(0, sys.argv[2])\n"  # -I leaves out the current directory
        "import drpc_client\n"
        "assert 'host' not in sys.modules\n"
        "with drpc_client.DRPCClient(sys.argv[1]) as c:\n"
        "    print(c.execute('exclaim', 'copied'))\n"
    )
    done = subprocess.run(
        [sys.executable, "-I", "-c", code, server.url, str(tmp_path)],
        cwd=tmp_path,
        capture_output=True,
        timeout=DEADLINE * 2,
    )
    assert (done.returncode, done.stdout, done.stderr) == (0, b"copied!\n", b"")


# --- the host's real DRPC server ---------------------------------------------------------

LISTENING = re.compile(r"DRPC server listening on (http://[0-9.]+:[0-9]+) ")
EXCLAIM = ROOT / "examples" / "drpc" / "exclaim" / "topology.yaml"
HOST_SECS = 120  # the host's start-up and stop, every component included (2 busy cores)


def test_a_real_topology() -> None:
    """examples/drpc/exclaim through `python -m host local`: the client (one connection for
    several calls and an error answer) and the command, then SIGTERM and exit 0."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "host", "local", str(EXCLAIM), "--quiet"]
        + ["--drpc-bind", "127.0.0.1:0"],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    lines: list[bytes] = []
    listening = threading.Event()
    url: list[str] = []

    def read() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.append(line)
            found = LISTENING.search(line.decode("utf-8", "replace"))
            if found and not url:
                url.append(found.group(1))
                listening.set()
        listening.set()

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        assert listening.wait(HOST_SECS) and url, b"".join(lines).decode()[-4000:]
        with DRPCClient(url[0], timeout=HOST_SECS) as client:
            assert client.execute("exclaim", "hello") == "hello!"
            assert client.execute("exclaim", "a/b ✓") == "a/b ✓!"
            with pytest.raises(DRPCError) as info:
                client.execute("no-such-function", "x")
            assert (info.value.status, info.value.type) == (404, "UNKNOWN_FUNCTION")
            assert client.execute("exclaim", "") == "!"
        done = _run(["exclaim", "-", "--url", url[0]], stdin=b"from stdin")
        assert (done.returncode, done.stdout, done.stderr) == (0, b"from stdin!\n", b"")
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(HOST_SECS) == 0, b"".join(lines).decode()[-4000:]
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        reader.join(HOST_SECS)
