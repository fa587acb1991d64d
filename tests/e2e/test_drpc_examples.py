"""The DRPC examples (examples/drpc/): first each component alone against scripted input, then the
topologies through `python -m host local` as a real subprocess, called over real HTTP
(docs/drpc.md): many concurrent clients, curl, the `python -m host drpc` client, the Flux form,
the reach of every URL of the sample data against the direct computation, and the errors a
caller can provoke. Every host is stopped with SIGTERM and must exit 0."""

from __future__ import annotations

import http.client
import importlib.util
import json
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from types import ModuleType
from typing import Any
from urllib.parse import quote

import pytest

from host.testing import ComponentPeer, make_context, run_component
from multilang.messages import Ack, Emit

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples" / "drpc"
EXCLAIM = EXAMPLES / "exclaim"
REACH = EXAMPLES / "reach"
START_SECS = 120  # the host's start-up, every component's handshake included (2 busy cores)
CALL_SECS = 60  # one HTTP request, from sending it to its answer
STOP_SECS = 60
LISTENING = re.compile(r"DRPC server listening on http://([0-9.]+):([0-9]+) \(functions: ([^)]*)\)")
TEXT = "text/plain; charset=utf-8"


def load_reach() -> ModuleType:
    """examples/drpc/reach/reach.py, the direct computation, as a module."""
    spec = importlib.util.spec_from_file_location("drpc_reach_example", REACH / "reach.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


reach_example = load_reach()
DATA = reach_example.load()
UNKNOWN_URL = "unknown.example.com/never/tweeted"


# ---- the components alone --------------------------------------------------------------------


def bolt_context(component: str, source: str, fields: list[str], outputs: list[str]) -> Any:
    return make_context(
        taskid=5,
        componentid=component,
        outputs={"default": outputs},
        sources={source: {"default": fields}},
    )


def test_exclaim_sh_in_the_linear_form_keeps_the_request_id_first() -> None:
    context = bolt_context("exclaim", "drpc-request", ["request", "args"], ["request", "result"])
    tuples = [
        {"values": [7, "hello"], "comp": "drpc-request"},
        {"values": [8, 'a "quoted" café ✓'], "comp": "drpc-request"},
        {"values": [9, ""], "comp": "drpc-request"},
    ]
    result = run_component(["bash", "exclaim.sh"], tuples, context=context, cwd=EXCLAIM)
    assert result.problems == [] and result.errors == [] and result.exit_code == 0
    assert [e.values for e in result.emits] == [[7, "hello!"], [8, 'a "quoted" café ✓!'], [9, "!"]]
    assert [e.anchors for e in result.emits] == [["1"], ["2"], ["3"]]
    assert result.acked == ["1", "2", "3"]
    assert [log.msg for log in result.logs] == ["exclaim: the linear form"]


def test_exclaim_sh_in_the_flux_form_passes_the_return_info_on_anchored() -> None:
    context = bolt_context("exclaim", "drpc", ["args", "return-info"], ["result", "return-info"])
    info = '{"id":"7","host":"127.0.0.1","port":3774}'
    tuples = [{"values": ["hello", info], "comp": "drpc"}, {"values": ["-n", info], "comp": "drpc"}]
    result = run_component(["bash", "exclaim.sh"], tuples, context=context, cwd=EXCLAIM)
    assert result.problems == [] and result.errors == [] and result.exit_code == 0
    assert [e.values for e in result.emits] == [["hello!", info], ["-n!", info]]
    assert [e.anchors for e in result.emits] == [["1"], ["2"]]
    assert result.acked == ["1", "2"]
    assert [log.msg for log in result.logs] == ["exclaim: the flux form"]


def test_tweeters_py_emits_one_tuple_per_tweeter_and_none_for_an_unknown_url() -> None:
    urls = [*DATA.tweeters, UNKNOWN_URL]
    context = bolt_context("tweeters", "drpc-request", ["request", "args"], ["request", "tweeter"])
    tuples = [{"values": [n, url], "comp": "drpc-request"} for n, url in enumerate(urls, 1)]
    result = run_component(["python", "tweeters.py"], tuples, context=context, cwd=REACH)
    assert result.problems == [] and result.errors == [] and result.exit_code == 0
    expected = [[n, t] for n, url in enumerate(urls, 1) for t in DATA.tweeters.get(url, [])]
    assert [e.values for e in result.emits] == expected
    assert result.acked == [str(n) for n in range(1, len(urls) + 1)]


def test_followers_js_emits_one_tuple_per_follower() -> None:
    accounts = sorted({t for ts in DATA.tweeters.values() for t in ts})
    assert set(accounts) - set(DATA.followers), "the data should have a tweeter nobody follows"
    context = bolt_context("followers", "tweeters", ["request", "tweeter"], ["request", "follower"])
    tuples = [{"values": [3, account], "comp": "tweeters"} for account in accounts]
    result = run_component(["node", "followers.js"], tuples, context=context, cwd=REACH)
    assert result.problems == [] and result.errors == [] and result.exit_code == 0
    expected = [[3, f] for account in accounts for f in DATA.followers.get(account, [])]
    assert [e.values for e in result.emits] == expected
    assert result.acked == [str(n) for n in range(1, len(accounts) + 1)]


def batch_bolt(command: list[str], component: str, source: str, fields: list[str]) -> ComponentPeer:
    """A batch bolt of a linear DRPC topology, after its handshake: `context.batch` as the host
    gives it (docs/drpc.md §3.2)."""
    context = bolt_context(component, source, fields, ["request", "n"])
    context["batch"] = {
        "protocol": 1,
        "role": "bolt",
        "transactional_id": None,
        "committed_txid": 0,
        "drpc": "reach",
    }
    peer = ComponentPeer(command, cwd=str(REACH))
    peer.handshake(None, context)
    assert "batch/1" in peer.extensions
    return peer


def send(peer: ComponentPeer, message: dict[str, Any]) -> None:
    peer.send_raw(json.dumps(message).encode() + b"\nend\n")


def request_tuple(peer: ComponentPeer, id: str, source: str, values: list[Any]) -> None:
    """A tuple of request values[0]: the request is the attempt {txid: request, attempt: 1}."""
    tx = {"txid": values[0], "attempt": 1}
    send(
        peer, {"id": id, "comp": source, "stream": "default", "task": 1, "tuple": values, "tx": tx}
    )


def finish(peer: ComponentPeer, id: str, request: int) -> None:
    batch = {"op": "finish", "txid": request, "attempt": 1, "commit": False}
    send(
        peer,
        {"id": id, "comp": None, "stream": "__heartbeat", "task": -1, "tuple": [], "batch": batch},
    )


def answers_until_acked(peer: ComponentPeer, ids: set[str]) -> list[Any]:
    """What the component writes until it has acked every id in `ids`."""
    out: list[Any] = []
    while ids:
        msg = peer.read(CALL_SECS)
        out.append(msg)
        if isinstance(msg, Ack):
            ids.discard(msg.id)
    return out


@pytest.mark.parametrize(
    ("command", "source", "fields", "tuples", "results"),
    [
        (  # distinct: the size of its set of a request, even 0 (a request it got nothing of)
            ["python", "distinct.py"],
            "followers",
            ["request", "follower"],
            [[7, "ann"], [7, "bo"], [7, "ann"], [8, "cy"], [7, "bo"]],
            {7: [[7, 2]], 8: [[8, 1]], 9: [[9, 0]]},
        ),
        (  # total: the sum of a request's partial counts; silent for one it got nothing of
            ["node", "total.js"],
            "distinct",
            ["request", "count"],
            [[7, 2], [7, 0], [8, 1], [7, 3]],
            {7: [[7, 5]], 8: [[8, 1]], 9: []},
        ),
    ],
    ids=["distinct.py", "total.js"],
)
def test_batch_bolts_answer_each_request_at_its_finish(
    command: list[str],
    source: str,
    fields: list[str],
    tuples: list[list[Any]],
    results: dict[int, list[list[Any]]],
) -> None:
    peer = batch_bolt(command, command[1].split(".")[0], source, fields)
    try:
        for n, values in enumerate(tuples, 1):
            request_tuple(peer, str(n), source, values)
        answers = answers_until_acked(peer, {str(n) for n in range(1, len(tuples) + 1)})
        assert [m for m in answers if isinstance(m, Emit)] == [], "emitted before a finish"
        for request, expected in results.items():
            finish_id = f"f{request}"
            finish(peer, finish_id, request)
            answers = answers_until_acked(peer, {finish_id})
            emits = [m for m in answers if isinstance(m, Emit)]
            assert [e.values for e in emits] == expected
            assert all(e.anchors == [finish_id] for e in emits)
    finally:
        assert peer.close() == 0, peer.stderr


def test_the_sample_data_needs_deduplication_and_has_empty_reaches() -> None:
    assert len(DATA.tweeters) >= 10
    naive = {
        url: sum(len(DATA.followers.get(t, [])) for t in tweeters)
        for url, tweeters in DATA.tweeters.items()
    }
    reaches = {url: reach_example.reach(DATA, url) for url in DATA.tweeters}
    assert any(reaches[url] < naive[url] for url in reaches), "no overlap: dedup is untested"
    assert reach_example.reach(DATA, UNKNOWN_URL) == 0
    assert sum(1 for r in reaches.values() if r == 0) >= 2
    assert reaches["foo.example.com/blog/1"] == 9


def test_reach_py_prints_the_reach_of_every_url() -> None:
    out = subprocess.run(
        [sys.executable, str(REACH / "reach.py")], capture_output=True, text=True, check=True
    ).stdout
    lines = [line.split("\t", 1) for line in out.splitlines()]
    assert {url: int(n) for n, url in lines} == {
        url: reach_example.reach(DATA, url) for url in DATA.tweeters
    }
    one = subprocess.run(
        [sys.executable, str(REACH / "reach.py"), UNKNOWN_URL],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert one == f"0\t{UNKNOWN_URL}\n"


# ---- the topologies, through python -m host local ----------------------------------------------


class Host:
    """`python -m host local TOPOLOGY --drpc-bind 127.0.0.1:0` as a subprocess; its output is
    read all along (by a thread, so that the pipe never fills) and kept in `lines`."""

    def __init__(self, topology: Path):
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "host", "local", str(topology), "--drpc-bind", "127.0.0.1:0"],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        self.lines: list[str] = []
        self.changed = threading.Condition()
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()
        self.host, self.port, self.functions = self._wait_listening()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            with self.changed:
                self.lines.append(line)
                self.changed.notify_all()
        with self.changed:
            self.changed.notify_all()

    @property
    def output(self) -> str:
        with self.changed:
            return "".join(self.lines)

    def _wait_listening(self) -> tuple[str, int, list[str]]:
        deadline = time.monotonic() + START_SECS
        seen = 0
        with self.changed:
            while True:
                for line in self.lines[seen:]:
                    found = LISTENING.search(line)
                    if found:
                        functions = [f.strip() for f in found.group(3).split(",")]
                        return found.group(1), int(found.group(2)), functions
                seen = len(self.lines)
                if self.proc.poll() is not None and not self.reader.is_alive():
                    raise AssertionError(f"the host exited early:\n{''.join(self.lines)[-4000:]}")
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AssertionError(
                        f"no 'DRPC server listening' line in {START_SECS}s:\n"
                        f"{''.join(self.lines)[-4000:]}"
                    )
                self.changed.wait(min(left, 1.0))

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def connect(self) -> http.client.HTTPConnection:
        return http.client.HTTPConnection(self.host, self.port, timeout=CALL_SECS)

    def stop(self) -> str:
        """SIGTERM, then the exit status must be 0; the host's whole output."""
        self.proc.send_signal(signal.SIGTERM)
        try:
            code = self.proc.wait(STOP_SECS)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            raise AssertionError(
                f"the host did not stop on SIGTERM:\n{self.output[-4000:]}"
            ) from None
        self.reader.join(STOP_SECS)
        assert code == 0, f"the host exited {code}:\n{self.output[-4000:]}"
        return self.output

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


@pytest.fixture
def start_host() -> Iterator[Callable[[Path], Host]]:
    """start_host(topology) -> a running Host; whatever a failed test left running is killed."""
    hosts: list[Host] = []

    def _start(topology: Path) -> Host:
        host = Host(topology)
        hosts.append(host)
        return host

    yield _start
    for host in hosts:
        host.kill()


def call(
    conn: http.client.HTTPConnection, function: str, args: str, method: str = "GET"
) -> tuple[int, str, str]:
    """One DRPC call on a keep-alive connection: (status, content type, body)."""
    if method == "GET":
        conn.request("GET", f"/drpc/{function}/{quote(args, safe='')}")
    else:
        conn.request(method, f"/drpc/{function}", body=args.encode("utf-8"))
    response = conn.getresponse()
    body = response.read().decode("utf-8")
    return response.status, response.getheader("Content-Type", ""), body


def execute(host: Host, function: str, args: str, method: str = "GET") -> str:
    """The result of one call on a connection of its own; AssertionError for any other answer."""
    conn = host.connect()
    try:
        status, ctype, body = call(conn, function, args, method)
    finally:
        conn.close()
    assert (status, ctype) == (200, TEXT), f"{function}({args!r}): {status} {ctype} {body}"
    return body


def clients_in_threads(
    host: Host, function: str, jobs: list[list[str]], expect: Callable[[str], str]
) -> None:
    """One thread per job, each on one keep-alive connection, calling `function` with every
    argument of its job in turn (GET and POST alternately); every answer must be expect(arg)."""

    def client(args: list[str]) -> list[str]:
        wrong: list[str] = []
        conn = host.connect()
        try:
            for n, arg in enumerate(args):
                status, ctype, body = call(conn, function, arg, "GET" if n % 2 else "POST")
                if (status, ctype, body) != (200, TEXT, expect(arg)):
                    wrong.append(f"{arg!r}: {status} {ctype} {body!r}")
        finally:
            conn.close()
        return wrong

    with ThreadPoolExecutor(max_workers=len(jobs)) as pool:
        wrong = [w for ws in pool.map(client, jobs) for w in ws]
    assert wrong == [], f"{len(wrong)} wrong answers, the first: {wrong[:5]}"


def test_exclaim_answers_16_concurrent_clients_exactly(start_host: Callable[[Path], Host]) -> None:
    host = start_host(EXCLAIM / "topology.yaml")
    assert host.functions == ["exclaim"]
    jobs = [[f"client {c} call {n} ✓/?&%" for n in range(50)] for c in range(16)]
    clients_in_threads(host, "exclaim", jobs, lambda arg: arg + "!")
    conn = host.connect()
    conn.request("GET", "/drpc/exclaim")  # no argument segment: the empty string
    response = conn.getresponse()
    assert (response.status, response.read()) == (200, b"!")
    conn.close()
    bolts = summary(host.stop())
    assert bolts["exclaim"]["tasks"] == 2
    assert bolts["exclaim"]["emitted"] == 16 * 50 + 1  # one result per request, no more


SUMMARY_LINE = re.compile(
    r"^  ([\w-]+): tasks=(\d+) emitted=(\d+) executed=(\d+) acked=(\d+) failed=(\d+) "
    r"restarts=(\d+) errors=(\d+)$",
    re.MULTILINE,
)
SPOUT_LINE = re.compile(r"spout tuples acked=(\d+) failed=(\d+) timed_out=(\d+)")


def summary(out: str) -> dict[str, dict[str, int]]:
    """The bolts' lines of the host's closing summary, each checked clean (no failed tuple, no
    restart, no error): bolt -> {tasks, emitted, executed, acked}."""
    found = {
        m[1]: dict(zip(("tasks", "emitted", "executed", "acked"), map(int, m.groups()[1:5])))
        for m in SUMMARY_LINE.finditer(out)
    }
    assert found, f"no per-bolt summary in the host's output:\n{out[-3000:]}"
    for m in SUMMARY_LINE.finditer(out):
        assert m.groups()[5:] == ("0", "0", "0"), f"not clean: {m[0]!r}"
    return found


def error_of(conn: http.client.HTTPConnection, method: str, path: str) -> tuple[int, str, Any]:
    conn.request(method, path)
    response = conn.getresponse()
    body = response.read().decode("utf-8")
    ctype = response.getheader("Content-Type", "")
    return response.status, ctype, json.loads(body) if ctype == "application/json" else body


def test_exclaim_errors_a_caller_can_provoke(start_host: Callable[[Path], Host]) -> None:
    host = start_host(EXCLAIM / "topology.yaml")
    conn = host.connect()
    try:
        began = time.monotonic()
        status, ctype, body = error_of(conn, "GET", "/drpc/no-such-function/x")
        # said at once: long before drpc.request.timeout.secs (30 in this topology)
        assert time.monotonic() - began < 25
        assert (status, ctype, body["error"]) == (404, "application/json", "UNKNOWN_FUNCTION")
        assert isinstance(body["errorMessage"], str) and body["errorMessage"]
        status, _, body = error_of(conn, "POST", "/drpc/no-such-function")
        assert (status, body["error"]) == (404, "UNKNOWN_FUNCTION")
        # /drpc/f/a/b: args are one path segment, as in Storm
        status, _, body = error_of(conn, "GET", "/drpc/exclaim/a/b")
        assert (status, body["error"]) == (404, "BAD_REQUEST")
        status, _, body = error_of(conn, "GET", "/not-drpc")
        assert (status, body["error"]) == (404, "BAD_REQUEST")
    finally:
        conn.close()
    conn = host.connect()  # a 405 may close the connection: a fresh one
    try:
        status, _, body = error_of(conn, "DELETE", "/drpc/exclaim/x")
        assert (status, body["error"]) == (405, "BAD_REQUEST")
    finally:
        conn.close()
    assert execute(host, "exclaim", "still fine") == "still fine!"
    host.stop()


def test_exclaim_through_curl(start_host: Callable[[Path], Host]) -> None:
    curl = shutil.which("curl")
    if curl is None:
        pytest.skip("curl is not installed")
    host = start_host(EXCLAIM / "topology.yaml")

    def run_curl(*args: str) -> str:
        done = subprocess.run(
            [curl, "--silent", "--show-error", "--fail", "--max-time", str(CALL_SECS), *args],
            capture_output=True,
            text=True,
            timeout=CALL_SECS + 10,
        )
        assert done.returncode == 0, done.stderr
        return done.stdout

    assert run_curl(f"{host.url}/drpc/exclaim/hello") == "hello!"
    assert run_curl("-d", "hello world", f"{host.url}/drpc/exclaim") == "hello world!"
    assert run_curl(f"{host.url}/drpc/exclaim/caf%C3%A9%20au%20lait") == "café au lait!"
    host.stop()


def test_exclaim_through_the_host_drpc_client(start_host: Callable[[Path], Host]) -> None:
    host = start_host(EXCLAIM / "topology.yaml")

    def client(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "host", "drpc", *args, "--url", host.url],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=CALL_SECS + 30,
        )

    ok = client("exclaim", "hello")
    assert (ok.returncode, ok.stdout.strip()) == (0, "hello!"), ok.stderr
    unknown = client("no-such-function", "hello")
    assert unknown.returncode == 1
    assert unknown.stderr.startswith("UNKNOWN_FUNCTION: "), unknown.stderr
    host.stop()


def test_exclaim_flux_form(start_host: Callable[[Path], Host]) -> None:
    host = start_host(EXCLAIM / "topology.flux.yaml")
    assert host.functions == ["exclaim"]
    jobs = [[f"flux {c}-{n} ✓ /x?y" for n in range(40)] for c in range(8)]
    clients_in_threads(host, "exclaim", jobs, lambda arg: arg + "!")
    assert execute(host, "exclaim", "hello") == "hello!"
    out = host.stop()
    assert summary(out)["exclaim"]["emitted"] == 8 * 40 + 1
    spout = SPOUT_LINE.search(out)  # every DRPCSpout tuple's tree completed
    assert spout is not None and spout.groups() == (str(8 * 40 + 1), "0", "0"), out[-3000:]


def test_reach_of_every_url_equals_the_direct_computation(
    start_host: Callable[[Path], Host],
) -> None:
    host = start_host(REACH / "topology.yaml")
    assert host.functions == ["reach"]
    urls = [*DATA.tweeters, UNKNOWN_URL]
    expected = {url: str(reach_example.reach(DATA, url)) for url in urls}
    assert expected[UNKNOWN_URL] == "0"
    for url in urls:  # one at a time, by GET (the URL percent-encoded) and by POST
        assert execute(host, "reach", url) == expected[url], url
        assert execute(host, "reach", url, "POST") == expected[url], url
    # then all at once, many requests in flight: each is its own batch, told apart by its id
    jobs = [urls[c:] + urls[:c] for c in range(len(urls))]
    clients_in_threads(host, "reach", jobs * 2, lambda url: expected[url])
    bolts = summary(host.stop())
    requests = 2 * len(urls) + 2 * len(urls) * len(urls)
    assert {b: bolts[b]["tasks"] for b in bolts} == {
        "tweeters": 2,
        "followers": 3,
        "distinct": 3,
        "total": 2,
    }
    # every distinct task reports each request; only the total task owning it answers
    assert bolts["distinct"]["emitted"] == 3 * requests
    assert bolts["total"]["emitted"] == requests
