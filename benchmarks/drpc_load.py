"""The drpc benchmark's load generator, and the trivial server that measures it:

    python -m benchmarks.drpc_load load --port PORT [--function exclaim] [--clients 64]
        [--warmup 1.5] [--duration 4] [--rate REQ_PER_S] [--watch-pid PID]
    python -m benchmarks.drpc_load serve [--suffix !]

`load` prints one JSON object (see `LoadReport`); `serve` prints
`ECHO listening on http://127.0.0.1:PORT` and answers until it is killed.

Why hand-written HTTP on one asyncio loop: the generator shares a 2-core machine with the host
and its bolts, so it must cost little per request. Each client is a coroutine with one keep-alive
connection (asyncio.open_connection) sending a minimal `GET /drpc/FUNC/ARGS HTTP/1.1` and reading
the status line, the headers (for Content-Length) and the body. Every answer is checked: 200 and
the body `ARGS!` (exclaim's contract, docs/drpc.md §3); anything else counts as an error.

Two ways to drive the server:
- closed loop (no `--rate`): each client sends its next request when the previous one is
  answered; the figure is requests/s, and latency from send to answer.
- open loop (`--rate`): requests are scheduled at fixed times (k / rate) and handed to whichever
  client is free; latency runs from the *scheduled* time, so a slow answer that delays the
  requests behind it shows in their latency (no coordinated omission).

Only the measured window counts: closed loop, the answers that arrive in it; open loop, the
requests scheduled in it (each is waited for after the window closes). The CPU seconds of the
process under `--watch-pid` (and of its children: the bolts) and of the generator itself are
read at the window's edges.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote

import psutil

MAX_ERROR_SAMPLES = 5  # the first few wrong answers, verbatim, for the report
DRAIN_SECS = 30.0  # after the window: how long requests still in flight may take


class HttpError(RuntimeError):
    """The server's answer was not HTTP/1.1 as the generator reads it."""


@dataclass(frozen=True)
class LoadSpec:
    host: str
    port: int
    function: str
    clients: int
    warmup: float
    duration: float
    rate: float | None = None  # None: closed loop
    watch_pid: int | None = None


@dataclass
class Tally:
    """What the clients count; the loop is single-threaded, so plain fields suffice."""

    sent: int = 0
    answered: int = 0  # answers that were correct
    errors: int = 0  # wrong status or body, or a connection lost
    error_samples: list[str] = field(default_factory=list)
    latencies: list[float] = field(default_factory=list)  # seconds, the window's only
    window_answers: int = 0
    measuring: bool = False  # closed loop: answers count while this is set

    def error(self, what: str) -> None:
        self.errors += 1
        if len(self.error_samples) < MAX_ERROR_SAMPLES:
            self.error_samples.append(what)


class Connection:
    """One keep-alive HTTP/1.1 connection; one request at a time."""

    def __init__(self, host: str, port: int):
        self.host = host
        self.port = port
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None

    async def get(self, path: str) -> tuple[int, bytes]:
        """Send `GET path`, return (status, body). Reconnects if the server closed the
        connection (the request then counts as an error at the caller, via the exception)."""
        if self.writer is None or self.reader is None:
            self.reader, self.writer = await asyncio.open_connection(self.host, self.port)
        reader, writer = self.reader, self.writer
        try:
            writer.write(f"GET {path} HTTP/1.1\r\nHost: {self.host}\r\n\r\n".encode("ascii"))
            head = await reader.readuntil(b"\r\n\r\n")
            status, length, close = _parse_head(head)
            body = await reader.readexactly(length)
        except (OSError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, HttpError):
            self.close()
            raise
        if close:
            self.close()
        return status, body

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
        self.reader = self.writer = None


def _parse_head(head: bytes) -> tuple[int, int, bool]:
    """The status line and headers -> (status, Content-Length, whether the server closes)."""
    lines = head.split(b"\r\n")
    parts = lines[0].split(b" ", 2)
    if len(parts) < 2 or not parts[0].startswith(b"HTTP/1."):
        raise HttpError(f"not an HTTP status line: {lines[0]!r}")
    status = int(parts[1])
    length: int | None = None
    close = False
    for line in lines[1:]:
        name, _, value = line.partition(b":")
        key = name.strip().lower()
        if key == b"content-length":
            length = int(value.strip())
        elif key == b"connection" and value.strip().lower() == b"close":
            close = True
    if length is None:
        raise HttpError(f"answer without Content-Length (status {status})")
    return status, length, close


async def _ask(conn: Connection, tally: Tally, function: str, args: str) -> bool:
    """One request; checks the answer. True if it was right."""
    tally.sent += 1
    try:
        status, body = await conn.get(f"/drpc/{function}/{args}")
    except (OSError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, HttpError) as exc:
        tally.error(f"{args}: {type(exc).__name__}: {exc}")
        return False
    if status != 200 or body != f"{args}!".encode():
        tally.error(f"{args}: {status} {body[:200]!r}")
        return False
    tally.answered += 1
    return True


async def _closed_client(spec: LoadSpec, tally: Tally, index: int, stop: asyncio.Event) -> None:
    conn = Connection(spec.host, spec.port)
    seq = 0
    try:
        while not stop.is_set():
            seq += 1
            start = time.perf_counter()
            ok = await _ask(conn, tally, spec.function, f"c{index}-{seq}")
            if ok and tally.measuring:
                tally.window_answers += 1
                tally.latencies.append(time.perf_counter() - start)
    finally:
        conn.close()


async def _paced_client(
    spec: LoadSpec, tally: Tally, index: int, queue: asyncio.Queue[tuple[float, bool] | None]
) -> None:
    conn = Connection(spec.host, spec.port)
    seq = 0
    try:
        while (item := await queue.get()) is not None:
            scheduled, in_window = item
            seq += 1
            ok = await _ask(conn, tally, spec.function, f"c{index}-{seq}")
            if ok and in_window:
                tally.window_answers += 1
                tally.latencies.append(time.perf_counter() - scheduled)
    finally:
        conn.close()


def _count(secs: float, rate: float) -> int:
    """How many requests are scheduled in [0, secs) at `rate`: request k is at k / rate."""
    return math.ceil(secs * rate - 1e-9)  # 0.4 s x 200/s is 80, not 81 after rounding


async def _pace(
    spec: LoadSpec, rate: float, start: float, queue: asyncio.Queue[tuple[float, bool] | None]
) -> None:
    """Put request k's scheduled time (start + k / rate) on the queue once it is due, for the
    warm-up and the window. Wakes for the next due time; whatever fell due while it slept goes
    at once, with its own scheduled time (so this loop's lateness counts in the latency)."""
    first = _count(spec.warmup, rate)  # the window's first request
    total = _count(spec.warmup + spec.duration, rate)
    k = 0
    while k < total:
        due = min(math.floor((time.perf_counter() - start) * rate) + 1, total)
        while k < due:
            queue.put_nowait((start + k / rate, k >= first))
            k += 1
        if k < total:
            await asyncio.sleep(max(0.0, start + k / rate - time.perf_counter()))


class CpuWatch:
    """CPU seconds of a process and, separately, of its descendants (the host and its bolts),
    and of this generator."""

    def __init__(self, pid: int | None):
        self.proc = psutil.Process(pid) if pid else None
        self.last_children: dict[int, float] = {}

    def read(self) -> dict[str, float | None]:
        out: dict[str, float | None] = {"generator": time.process_time()}
        if self.proc is None:
            return out | {"watched": None, "children": None}
        t = self.proc.cpu_times()
        out["watched"] = t.user + t.system
        for child in self.proc.children(recursive=True):
            try:
                c = child.cpu_times()
            except psutil.Error:  # exited between listing and reading: keep its last figure
                continue
            self.last_children[child.pid] = c.user + c.system
        out["children"] = sum(self.last_children.values())
        return out


async def run_load(spec: LoadSpec) -> dict[str, Any]:
    """Drive the server as `spec` says; return the window's figures (see `main`)."""
    tally = Tally()
    cpu = CpuWatch(spec.watch_pid)
    start = time.perf_counter()
    opened_at, closed_at = start + spec.warmup, start + spec.warmup + spec.duration
    tasks: list[asyncio.Task[None]]
    if spec.rate is None:
        stop = asyncio.Event()
        tasks = [
            asyncio.create_task(_closed_client(spec, tally, i, stop)) for i in range(spec.clients)
        ]
        await asyncio.sleep(max(0.0, opened_at - time.perf_counter()))
        tally.measuring = True
        opened_at = time.perf_counter()
        before = cpu.read()
        await asyncio.sleep(max(0.0, closed_at - time.perf_counter()))
        tally.measuring = False
        closed_at = time.perf_counter()
        after = cpu.read()
        stop.set()
    else:
        queue: asyncio.Queue[tuple[float, bool] | None] = asyncio.Queue()
        tasks = [
            asyncio.create_task(_paced_client(spec, tally, i, queue)) for i in range(spec.clients)
        ]
        pacer = asyncio.create_task(_pace(spec, spec.rate, start, queue))
        await asyncio.sleep(max(0.0, opened_at - time.perf_counter()))
        before = cpu.read()
        await pacer
        # the window is the scheduled requests' span; CPU up to the last one's answer is read
        # below, after they are all answered
        for _ in tasks:
            queue.put_nowait(None)
    try:
        await asyncio.wait_for(asyncio.gather(*tasks), DRAIN_SECS)
    except TimeoutError:
        for t in tasks:
            t.cancel()
        tally.error(f"requests still unanswered {DRAIN_SECS:.0f} s after the window")
    if spec.rate is not None:
        after = cpu.read()
        closed_at = time.perf_counter()  # the CPU span: to the last answer
    return _report(spec, tally, before, after, opened_at, closed_at)


def _percentile(ordered: list[float], q: float) -> float | None:
    """Nearest-rank percentile of sorted values, in milliseconds."""
    if not ordered:
        return None
    rank = max(1, math.ceil(q / 100 * len(ordered)))
    return ordered[rank - 1] * 1000


def _report(
    spec: LoadSpec,
    tally: Tally,
    before: dict[str, float | None],
    after: dict[str, float | None],
    opened_at: float,
    closed_at: float,
) -> dict[str, Any]:
    secs = spec.duration if spec.rate is not None else closed_at - opened_at
    cpu_secs = closed_at - opened_at
    ordered = sorted(tally.latencies)
    n = tally.window_answers

    def per_request_us(key: str) -> float | None:
        a, b = after.get(key), before.get(key)
        return (a - b) / n * 1e6 if a is not None and b is not None and n else None

    def pct(key: str) -> float | None:
        a, b = after.get(key), before.get(key)
        return (a - b) / cpu_secs * 100 if a is not None and b is not None else None

    return {
        "clients": spec.clients,
        "rate": spec.rate,
        "window_secs": secs,
        "requests_per_s": n / secs if secs > 0 else None,
        "window_answers": n,
        "latency_p50_ms": _percentile(ordered, 50),
        "latency_p99_ms": _percentile(ordered, 99),
        "latency_max_ms": ordered[-1] * 1000 if ordered else None,
        "sent": tally.sent,
        "answered": tally.answered,
        "errors": tally.errors,
        "error_samples": tally.error_samples,
        "watched_cpu_us_per_req": per_request_us("watched"),
        "children_cpu_us_per_req": per_request_us("children"),
        "generator_cpu_us_per_req": per_request_us("generator"),
        "watched_cpu_pct": pct("watched"),
        "children_cpu_pct": pct("children"),
        "generator_cpu_pct": pct("generator"),
    }


# ---- the trivial server: what the generator alone can do --------------------------------------


class EchoProtocol(asyncio.Protocol):
    """Answers `GET /drpc/FUNC/ARGS` with `ARGS` + suffix at once, keep-alive, in order; enough
    HTTP for the generator above, nothing more."""

    def __init__(self, suffix: bytes):
        self.suffix = suffix
        self.buffer = b""
        self.transport: asyncio.Transport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        assert self.transport is not None
        self.buffer += data
        out = []
        while (end := self.buffer.find(b"\r\n\r\n")) >= 0:
            request_line = self.buffer[: self.buffer.find(b"\r\n")]
            self.buffer = self.buffer[end + 4 :]
            path = request_line.split(b" ")[1] if request_line.count(b" ") >= 2 else b""
            segments = path.split(b"/")
            if len(segments) == 4 and segments[1] == b"drpc":
                body = unquote(segments[3].decode("ascii")).encode() + self.suffix
                out.append(
                    b"HTTP/1.1 200 OK\r\nContent-Type: text/plain; charset=utf-8\r\n"
                    b"Content-Length: %d\r\n\r\n%s" % (len(body), body)
                )
            else:
                out.append(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n")
        if out:
            self.transport.write(b"".join(out))


async def serve(suffix: str, ready: Callable[[int], None] | None = None) -> None:
    loop = asyncio.get_running_loop()
    server = await loop.create_server(lambda: EchoProtocol(suffix.encode()), "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    if ready is not None:
        ready(port)
    async with server:
        await server.serve_forever()


# ---- the command line ---------------------------------------------------------------------------


def _positive(text: str) -> float:
    value = float(text)
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be > 0, not {text}")
    return value


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.drpc_load", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    load = sub.add_parser("load", help="drive a DRPC server; print the window's figures as JSON")
    load.add_argument("--host", default="127.0.0.1")
    load.add_argument("--port", type=int, required=True)
    load.add_argument("--function", default="exclaim")
    load.add_argument("--clients", type=int, default=64, help="keep-alive connections")
    load.add_argument("--warmup", type=float, default=1.5, metavar="SECS")
    load.add_argument("--duration", type=_positive, default=4.0, metavar="SECS")
    load.add_argument("--rate", type=_positive, help="open loop at this many requests/s")
    load.add_argument("--watch-pid", type=int, help="report this process's CPU (and children's)")
    echo = sub.add_parser("serve", help="the trivial server (answers ARGS + suffix at once)")
    echo.add_argument("--suffix", default="!", help="what it appends (a wrong one tests checks)")
    args = parser.parse_args(argv)
    if args.command == "serve":

        def ready(port: int) -> None:
            print(f"ECHO listening on http://127.0.0.1:{port}", flush=True)

        try:
            asyncio.run(serve(args.suffix, ready))
        except KeyboardInterrupt:
            pass
        return 0
    if args.clients < 1:
        parser.error(f"--clients must be >= 1, not {args.clients}")
    spec = LoadSpec(
        host=args.host,
        port=args.port,
        function=args.function,
        clients=args.clients,
        warmup=max(0.0, args.warmup),
        duration=args.duration,
        rate=args.rate,
        watch_pid=args.watch_pid,
    )
    try:
        report = asyncio.run(run_load(spec))
    except OSError as exc:
        print(f"error: cannot load {spec.host}:{spec.port}: {exc}", file=sys.stderr)
        return 1
    print(json.dumps(report), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
