"""DRPC in the event loop, over fake children and the fake clock (tests/unit/fake_children.py),
with real HTTP clients on a real socket: a request's way through Storm's DRPCSpout and
ReturnResults (docs/drpc.md §3.1) and through a linear topology's request layer (§3.2), and every
way a request ends (§2): answered, failed, timed out, refused, shut down. The same through real
processes: tests/e2e/test_drpc_examples.py."""

from __future__ import annotations

import json
import os
import socket
from collections.abc import Callable
from typing import Any

import pytest

from host.runtime.supervisor import Supervisor
from host.testing import FakeClock
from host.topology.model import (
    BOLT,
    DRPC_REQUEST,
    DRPC_RESULT,
    DRPC_SPOUT,
    RETURN_RESULTS,
    SPOUT,
    Component,
    Grouping,
    Input,
    Topology,
)
from tests.unit.fake_children import FakeChild, FakeLauncher

SHUFFLE = Grouping("shuffle")
BASE_CONFIG = {
    "host.drpc.bind": "127.0.0.1:0",
    "topology.subprocess.timeout.secs": 600,
    "host.restart.backoff.initial.secs": 1,
}


def flux_form(**config: Any) -> Topology:
    """DRPCSpout -> a fake bolt -> ReturnResults (Storm's BasicDRPCTopology, Flux-style)."""
    return Topology(
        name="drpc",
        components=(
            Component(
                "drpc",
                SPOUT,
                (),
                {"default": ("args", "return-info")},
                in_host=DRPC_SPOUT,
                drpc_function="exclaim",
            ),
            Component(
                "bolt",
                BOLT,
                ("fake", "bolt"),
                {"default": ("result", "return-info")},
                (Input("drpc", "default", SHUFFLE),),
            ),
            Component(
                "return", BOLT, (), {}, (Input("bolt", "default", SHUFFLE),), in_host=RETURN_RESULTS
            ),
        ),
        config={**BASE_CONFIG, **config},
    )


def linear_form(**config: Any) -> Topology:
    """drpc-request -> a (plain) -> b (finish_batch) -> drpc-result."""
    return Topology(
        name="linear",
        components=(
            Component(
                "drpc-request",
                SPOUT,
                (),
                {"default": ("request", "args")},
                in_host=DRPC_REQUEST,
                drpc_function="f",
            ),
            Component(
                "a",
                BOLT,
                ("fake", "a"),
                {"default": ("id", "x")},
                (Input("drpc-request", "default", SHUFFLE),),
            ),
            Component(
                "b",
                BOLT,
                ("fake", "b"),
                {"default": ("id", "result")},
                (Input("a", "default", SHUFFLE),),
                batch="bolt",
            ),
            Component(
                "drpc-result", BOLT, (), {}, (Input("b", "default", SHUFFLE),), in_host=DRPC_RESULT
            ),
        ),
        config={**BASE_CONFIG, **config},
    )


def frames(child: FakeChild) -> list[dict[str, Any]]:
    data = b""
    while True:
        try:
            chunk = os.read(child._stdin_r, 1 << 16)
        except BlockingIOError:
            break
        if not chunk:
            break
        data += chunk
    return [json.loads(f) for f in data.split(b"\nend\n") if f.strip()]


def controls(child: FakeChild) -> list[dict[str, Any]]:
    """The batch control messages (finish, abort) among what the host wrote to a child."""
    return [f for f in frames(child) if isinstance(f, dict) and f.get("batch")]


class Client:
    """One keep-alive HTTP/1.1 connection to the host's DRPC server."""

    def __init__(self, port: int) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=10)
        self.buf = b""

    def send(self, target: str, method: str = "GET", body: bytes = b"") -> None:
        head = f"{method} {target} HTTP/1.1\r\nHost: x\r\nContent-Length: {len(body)}\r\n\r\n"
        self.sock.sendall(head.encode() + body)

    def response(self) -> tuple[int, dict[str, str], bytes] | None:
        """A complete response if one was received, else None (never blocks)."""
        self.sock.setblocking(False)
        try:
            while True:
                chunk = self.sock.recv(65536)
                if not chunk:
                    break
                self.buf += chunk
        except BlockingIOError:
            pass
        finally:
            self.sock.setblocking(True)
        head, sep, rest = self.buf.partition(b"\r\n\r\n")
        if not sep:
            return None
        lines = head.decode().split("\r\n")
        headers = {k.lower(): v.strip() for k, v in (h.split(":", 1) for h in lines[1:])}
        length = int(headers["content-length"])
        if len(rest) < length:
            return None
        self.buf = rest[length:]
        return int(lines[0].split()[1]), headers, rest[:length]

    def close(self) -> None:
        self.sock.close()


class Run:
    def __init__(self, topology: Topology) -> None:
        self.clock = FakeClock()
        self.launcher = FakeLauncher()
        self.sup = Supervisor(topology, clock=self.clock, launcher=self.launcher)
        self.sup.start()
        self.clients: list[Client] = []
        self.steps()
        self.handshakes: dict[str, dict[str, Any]] = {}
        for c in topology.components:
            if c.in_host is None:
                child = self.launcher.last(c.id)
                self.handshakes[c.id] = frames(child)[0]
                child.send(pid=child.pid, ext=["batch/1"] if c.batch else [])
        self.steps()

    @property
    def port(self) -> int:
        assert self.sup.drpc is not None
        return self.sup.drpc.server.port

    def client(self) -> Client:
        c = Client(self.port)
        self.clients.append(c)
        return c

    def steps(self, n: int = 4) -> None:
        for _ in range(n):
            self.sup.step(max_wait=0)

    def until(self, what: Callable[[], Any], turns: int = 500) -> Any:
        """Turn the loop (waiting on real sockets, at most 10 ms a turn) until `what()` gives
        something; the cap only bounds a broken test."""
        for _ in range(turns):
            got = what()
            if got:
                return got
            self.sup.step(max_wait=0.01)
        raise AssertionError("the condition never held")

    def answer(self, client: Client) -> tuple[int, dict[str, str], bytes]:
        return self.until(client.response)  # type: ignore[no-any-return]

    def tuples(self, name: str, count: int = 1) -> list[dict[str, Any]]:
        """The next `count` tuples the host writes to a fake child (however many reads)."""
        child = self.launcher.last(name)
        got: list[dict[str, Any]] = []

        def enough() -> bool:
            got.extend(f for f in frames(child) if "tuple" in f)
            return len(got) >= count

        self.until(enough)
        return got

    def child(self, name: str) -> FakeChild:
        return self.launcher.last(name)

    def close(self) -> None:
        for c in self.clients:
            c.close()
        for child in self.launcher.children:
            child.exit(0)
        self.sup.finish()


@pytest.fixture
def run():  # type: ignore[no-untyped-def]
    runs: list[Run] = []

    def make(topology: Topology) -> Run:
        r = Run(topology)
        runs.append(r)
        return r

    yield make
    for r in runs:
        r.close()


def error_of(body: bytes) -> tuple[str, str]:
    doc = json.loads(body)
    return doc["error"], doc["errorMessage"]


# -- the Flux form: DRPCSpout and ReturnResults -------------------------------------------------


def test_a_request_through_drpc_spout_and_return_results(run) -> None:  # type: ignore[no-untyped-def]
    r = run(flux_form())
    client = r.client()
    client.send("/drpc/exclaim/hello%20there")
    (t,) = r.tuples("bolt")
    args, info = t["tuple"]
    assert args == "hello there" and t["comp"] == "drpc"
    assert json.loads(info) == {"id": "1", "host": "127.0.0.1", "port": r.port}
    assert client.response() is None  # nothing until the topology answers
    bolt = r.child("bolt")
    bolt.send(command="emit", tuple=[args + "!", info], anchors=[t["id"]])
    bolt.send(command="ack", id=t["id"])
    status, headers, body = r.answer(client)
    assert (status, body) == (200, b"hello there!")
    assert headers["content-type"] == "text/plain; charset=utf-8"
    r.until(lambda: len(r.sup.acker) == 0)  # ReturnResults acked: the tree completed
    snap = r.sup.snapshot()["drpc"]  # type: ignore[typeddict-item]
    assert (snap["answered"], snap["pending"], snap["failed"]) == (1, 0, 0)
    # the same connection serves the next request (keep-alive), and POST carries any string
    client.send("/drpc/exclaim", "POST", b"a/b c")
    (t,) = r.tuples("bolt")
    assert t["tuple"][0] == "a/b c"
    bolt.send(command="emit", tuple=[{"n": 1}, t["tuple"][1]], anchors=[t["id"]])
    bolt.send(command="ack", id=t["id"])
    assert r.answer(client)[2] == b'{"n":1}'  # a result that is not a string: as JSON


def test_a_failed_tuple_fails_the_request_at_once(run) -> None:  # type: ignore[no-untyped-def]
    r = run(flux_form())
    client = r.client()
    client.send("/drpc/exclaim/x")
    (t,) = r.tuples("bolt")
    r.child("bolt").send(command="fail", id=t["id"])
    status, _, body = r.answer(client)
    assert status == 400 and error_of(body)[0] == "FAILED_REQUEST"


def test_a_bolt_dying_fails_its_requests_at_once(run) -> None:  # type: ignore[no-untyped-def]
    r = run(flux_form())
    client = r.client()
    client.send("/drpc/exclaim/x")
    r.tuples("bolt")
    r.child("bolt").exit(1)
    status, _, body = r.answer(client)
    assert status == 400 and error_of(body)[0] == "FAILED_REQUEST"


def test_a_request_times_out_with_504(run) -> None:  # type: ignore[no-untyped-def]
    r = run(flux_form(**{"drpc.request.timeout.secs": 5, "topology.message.timeout.secs": 60}))
    client = r.client()
    client.send("/drpc/exclaim/x")
    (t,) = r.tuples("bolt")
    r.clock.advance(6)
    status, _, body = r.answer(client)
    assert (status, error_of(body)) == (504, ("SERVER_TIMEOUT", "Timed Out"))
    # its result, coming late, is dropped; the tuple is acked as ReturnResults would
    bolt = r.child("bolt")
    bolt.send(command="emit", tuple=["x!", t["tuple"][1]], anchors=[t["id"]])
    bolt.send(command="ack", id=t["id"])
    r.until(lambda: r.sup.snapshot()["drpc"]["duplicate"] == 1)  # type: ignore[typeddict-item]


def test_acked_without_a_result_waits_as_in_storm(run) -> None:  # type: ignore[no-untyped-def]
    r = run(flux_form(**{"drpc.request.timeout.secs": 5}))
    client = r.client()
    client.send("/drpc/exclaim/x")
    (t,) = r.tuples("bolt")
    r.child("bolt").send(command="ack", id=t["id"])
    r.until(lambda: len(r.sup.acker) == 0)
    r.steps()
    assert client.response() is None  # still waiting for a result
    r.clock.advance(6)
    assert r.answer(client)[0] == 504


def test_unknown_function_and_bad_routes_are_answered_at_once(run) -> None:  # type: ignore[no-untyped-def]
    r = run(flux_form())
    client = r.client()
    client.send("/drpc/nope/x")
    status, _, body = r.answer(client)
    assert status == 404 and error_of(body)[0] == "UNKNOWN_FUNCTION"
    assert "exclaim" in error_of(body)[1]
    client.send("/other")
    status, _, body = r.answer(client)
    assert status == 404 and error_of(body)[0] == "BAD_REQUEST"
    client.send("/drpc/exclaim", "PUT")
    status, headers, _ = r.answer(client)
    assert status == 405 and headers["allow"]


def test_max_spout_pending_holds_requests_in_the_host(run) -> None:  # type: ignore[no-untyped-def]
    r = run(flux_form(**{"topology.max.spout.pending": 1}))
    first, second = r.client(), r.client()
    first.send("/drpc/exclaim/1")
    (t1,) = r.tuples("bolt")
    second.send("/drpc/exclaim/2")
    r.until(lambda: r.sup.snapshot()["drpc"]["waiting"] == 1)  # type: ignore[typeddict-item]
    assert frames(r.child("bolt")) == []  # held: one tuple pending per spout task
    bolt = r.child("bolt")
    bolt.send(command="emit", tuple=["1!", t1["tuple"][1]], anchors=[t1["id"]])
    bolt.send(command="ack", id=t1["id"])
    assert r.answer(first)[2] == b"1!"
    (t2,) = r.tuples("bolt")
    assert t2["tuple"][0] == "2"


def test_a_full_table_answers_503_busy(run) -> None:  # type: ignore[no-untyped-def]
    r = run(flux_form(**{"host.drpc.max.pending": 1}))
    first, second = r.client(), r.client()
    first.send("/drpc/exclaim/1")
    r.tuples("bolt")
    second.send("/drpc/exclaim/2")
    status, headers, body = r.answer(second)
    assert status == 503 and error_of(body)[0] == "SERVER_BUSY"
    assert headers["retry-after"] == "1"


def test_a_stop_answers_pending_requests_503(run) -> None:  # type: ignore[no-untyped-def]
    r = run(flux_form(**{"host.shutdown.grace.secs": 1}))
    client = r.client()
    client.send("/drpc/exclaim/x")
    r.tuples("bolt")
    r.sup.request_stop("test")
    r.steps()
    r.clock.advance(2)  # the drain's grace passes with the tuple unanswered
    status, _, body = r.answer(client)
    assert (status, error_of(body)[0]) == (503, "SERVER_SHUTDOWN")


# -- the linear form: each request a batch -------------------------------------------------------


def test_a_linear_request_finishes_its_batch_bolt_and_answers(run) -> None:  # type: ignore[no-untyped-def]
    r = run(linear_form())
    batch = r.handshakes["b"]["context"]["batch"]
    assert batch == {
        "protocol": 1,
        "role": "bolt",
        "transactional_id": None,
        "committed_txid": 0,
        "drpc": "f",
    }
    assert "batch" not in r.handshakes["a"]["context"]
    client = r.client()
    client.send("/drpc/f/in")
    (t,) = r.tuples("a")
    assert t["tuple"] == [1, "in"] and "tx" not in t  # a plain member sees a plain tuple
    a = r.child("a")
    a.send(command="emit", tuple=[1, "in-a"], anchors=[t["id"]])
    a.send(command="ack", id=t["id"])
    (tb,) = r.tuples("b")
    assert tb["tuple"] == [1, "in-a"] and tb["tx"] == {"txid": 1, "attempt": 1}
    b = r.child("b")
    b.send(command="ack", id=tb["id"])
    finish = r.until(lambda: controls(b))
    assert finish[0]["batch"] == {"op": "finish", "txid": 1, "attempt": 1, "commit": False}
    assert client.response() is None
    b.send(command="emit", tuple=[1, "result"], anchors=[finish[0]["id"]])
    b.send(command="ack", id=finish[0]["id"])
    status, _, body = r.answer(client)
    assert (status, body) == (200, b"result")
    r.until(lambda: r.sup.path.batches is not None and r.sup.path.batches.idle)


def test_a_linear_request_finished_without_a_result_is_an_error_at_once(run) -> None:  # type: ignore[no-untyped-def]
    r = run(linear_form())
    client = r.client()
    client.send("/drpc/f/in")
    (t,) = r.tuples("a")
    r.child("a").send(command="ack", id=t["id"])  # no emit: b gets nothing, only its finish
    b = r.child("b")
    finish = r.until(lambda: controls(b))
    b.send(command="ack", id=finish[0]["id"])
    status, _, body = r.answer(client)
    assert status == 500 and error_of(body)[0] == "INTERNAL_ERROR"


def test_linear_requests_are_independent_and_fail_alone(run) -> None:  # type: ignore[no-untyped-def]
    r = run(linear_form())
    one, two = r.client(), r.client()
    one.send("/drpc/f/1")
    two.send("/drpc/f/2")
    got = r.tuples("a", 2)
    by_request = {t["tuple"][0]: t for t in got}
    a = r.child("a")
    a.send(command="fail", id=by_request[1]["id"])  # request 1 fails ...
    status, _, body = r.answer(one)
    assert status == 400 and error_of(body)[0] == "FAILED_REQUEST"
    aborts = r.until(lambda: controls(r.child("b")))
    assert aborts[0]["batch"] == {"op": "abort", "txid": 1, "attempt": 1}
    t2 = by_request[2]  # ... and request 2 goes on
    a.send(command="emit", tuple=[2, "x"], anchors=[t2["id"]])
    a.send(command="ack", id=t2["id"])
    b = r.child("b")
    (tb,) = r.tuples("b")
    b.send(command="emit", tuple=[2, "two"], anchors=[tb["id"]])
    b.send(command="ack", id=tb["id"])
    finish = r.until(lambda: controls(b))
    b.send(command="ack", id=finish[0]["id"])
    assert r.answer(two)[2] == b"two"
