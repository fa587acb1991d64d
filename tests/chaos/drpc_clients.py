"""Many keep-alive DRPC clients on one asyncio loop, each request kept with what it got back.

Hand-written HTTP/1.1 over asyncio streams (as benchmarks/drpc_load.py, for the same reason: the
clients share a 2-core machine with the host and its bolts, so they must cost little). Unlike the
benchmark, nothing is summed up on the way: every request leaves an `Outcome` (its argument and
the one answer it got, or why it got none), so that the test can prove "answered exactly once"
request by request.

Why a double answer cannot hide: requests on one connection are answered in order
(docs/drpc.md §1), each request's argument is unique, and a client reads exactly one response
per request. A second response to a request would be read as the answer to the next request on
the connection (a 200 whose body names another argument: `wrong result`), and one to the last
request stays unread, which `Client.close` looks for (`extra bytes after the last answer`).
"""

from __future__ import annotations

import asyncio
import json
import time
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field

OK = "ok"
FAILED_REQUEST = "FAILED_REQUEST"  # the one error a killed bolt may cause (docs/drpc.md §2)


class BadResponse(Exception):
    """The bytes the server sent are not an HTTP/1.1 response as docs/drpc.md §1 describes."""


@dataclass
class Outcome:
    """One request and the one answer it got (`status` None: none; `problem` says why)."""

    args: str
    sent_at: float = 0.0
    answered_at: float = 0.0
    status: int | None = None
    content_type: str = ""
    body: bytes = b""
    problem: str = ""  # a transport problem: hung, connection lost, unreadable answer

    @property
    def kind(self) -> str:
        """OK, FAILED_REQUEST, or a short name of what is wrong with the answer."""
        if self.status is None:
            return f"no answer ({self.problem})"
        if self.status == 200:
            return OK if self.body == f"{self.args}!".encode() else "200 with a wrong result"
        error = error_type(self.content_type, self.body)
        if self.status == 400 and error == FAILED_REQUEST:
            return FAILED_REQUEST
        return f"{self.status} {error}"

    def describe(self) -> str:
        return (
            f"{self.args}: {self.kind} after {self.answered_at - self.sent_at:.2f}s: "
            f"{self.status} {self.content_type} {self.body[:200]!r} {self.problem}"
        )


def error_type(content_type: str, body: bytes) -> str:
    """The `error` of a JSON error answer, or a word on why the body is not one."""
    if not content_type.startswith("application/json"):
        return f"(not JSON: {content_type or 'no Content-Type'})"
    try:
        doc = json.loads(body)
    except ValueError:
        return "(unreadable JSON)"
    if not isinstance(doc, dict) or not isinstance(doc.get("error"), str):
        return "(JSON without an error)"
    if not isinstance(doc.get("errorMessage"), str):
        return f"{doc['error']} (without an errorMessage)"
    return doc["error"]


def tally(outcomes: Iterable[Outcome]) -> Counter[str]:
    return Counter(o.kind for o in outcomes)


def _parse_head(head: bytes) -> tuple[int, str, int, bool]:
    """(status, Content-Type, Content-Length, whether the server closes the connection)."""
    lines = head.decode("latin-1").split("\r\n")
    version, _, rest = lines[0].partition(" ")
    if version != "HTTP/1.1" or not rest[:3].isdigit():
        raise BadResponse(f"not an HTTP/1.1 status line: {lines[0]!r}")
    headers = {}
    for line in lines[1:]:
        if line:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
    if "content-length" not in headers:
        raise BadResponse(f"no Content-Length: {head!r}")
    close = headers.get("connection", "").lower() == "close"
    return int(rest[:3]), headers.get("content-type", ""), int(headers["content-length"]), close


@dataclass
class Client:
    """One keep-alive connection, one request at a time; reconnects after a lost connection."""

    host: str
    port: int
    function: str
    answer_timeout: float  # no answer within this: the host hung on the request
    problems: list[str] = field(default_factory=list)  # found outside any one request
    _reader: asyncio.StreamReader | None = None
    _writer: asyncio.StreamWriter | None = None

    async def ask(self, outcome: Outcome) -> None:
        """Send `GET /drpc/FUNCTION/ARGS` once (never again, whatever happens) and keep its
        answer, or why there was none, in `outcome`."""
        if self._reader is None or self._writer is None:
            self._reader, self._writer = await asyncio.open_connection(self.host, self.port)
        reader, writer = self._reader, self._writer
        request = f"GET /drpc/{self.function}/{outcome.args} HTTP/1.1\r\nHost: {self.host}\r\n\r\n"
        outcome.sent_at = time.monotonic()
        try:
            writer.write(request.encode("ascii"))
            async with asyncio.timeout(self.answer_timeout):
                head = await reader.readuntil(b"\r\n\r\n")
                status, content_type, length, close = _parse_head(head)
                body = await reader.readexactly(length)
        except TimeoutError:
            outcome.problem = f"hung: nothing within {self.answer_timeout:g}s"
            self._drop()
            return
        except (OSError, asyncio.IncompleteReadError, asyncio.LimitOverrunError) as exc:
            outcome.problem = f"connection lost: {type(exc).__name__}: {exc}"
            self._drop()
            return
        except BadResponse as exc:
            outcome.problem = str(exc)
            self._drop()
            return
        finally:
            outcome.answered_at = time.monotonic()
        outcome.status, outcome.content_type, outcome.body = status, content_type, body
        if close:
            self._drop()

    async def close(self, quiet_for: float = 0.3) -> None:
        """Close the connection, after making sure no answer nobody asked for is waiting on it
        (a second answer to the last request)."""
        reader, writer = self._reader, self._writer
        if reader is None or writer is None:
            return
        try:
            extra = await asyncio.wait_for(reader.read(65536), quiet_for)
        except TimeoutError:
            extra = b""
        except OSError:
            extra = b""
        if extra:
            self.problems.append(f"extra bytes after the last answer: {extra[:300]!r}")
        self._drop()

    def _drop(self) -> None:
        if self._writer is not None:
            self._writer.close()
        self._reader = self._writer = None


async def drive(
    host: str,
    port: int,
    function: str,
    args: list[str],
    *,
    clients: int,
    answer_timeout: float,
    rate: float | None = None,
) -> tuple[list[Outcome], list[str]]:
    """Ask for every argument of `args` once, from `clients` keep-alive connections; with
    `rate`, request k is not sent before k / rate seconds from the start (a steady stream that a
    fault schedule can overlap), else as fast as answers come. Returns the outcomes in the order
    of `args`, and the problems found on the connections themselves."""
    outcomes = [Outcome(a) for a in args]
    queue: asyncio.Queue[Outcome | None] = asyncio.Queue()
    pool = [Client(host, port, function, answer_timeout) for _ in range(clients)]

    async def pace() -> None:
        start = time.monotonic()
        for k, outcome in enumerate(outcomes):
            if rate is not None:
                delay = start + k / rate - time.monotonic()
                if delay > 0:
                    await asyncio.sleep(delay)
            queue.put_nowait(outcome)
        for _ in pool:
            queue.put_nowait(None)

    async def work(client: Client) -> None:
        while (outcome := await queue.get()) is not None:
            try:
                await client.ask(outcome)
            except OSError as exc:  # could not even connect
                outcome.problem = f"cannot connect: {exc}"
        await client.close()

    await asyncio.gather(pace(), *(work(c) for c in pool))
    return outcomes, [p for c in pool for p in c.problems]
