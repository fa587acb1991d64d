"""A client of the host's DRPC HTTP API (docs/drpc.md §1, §4): call a topology like a function.

Standard library only and no imports from the rest of `host`, so that this file can be copied
into any project as it is::

    from host.drpc.client import DRPCClient, DRPCError

    with DRPCClient("http://127.0.0.1:3774") as drpc:
        print(drpc.execute("exclaim", "hello"))   # 'hello!'

Errors:

- `DRPCError` (an `Exception`): the server answered with an error (`.status`, `.type`,
  `.message`), e.g. `400 FAILED_REQUEST`; docs/drpc.md §1 lists the types. A body that is not the
  server's JSON still raises it, with the type `HTTP_<status>`.
- `DRPCConnectionError` (an `OSError`): no answer at all: nothing listens at the URL, the host is
  unreachable, or the connection was lost before the answer came.
- `DRPCTimeoutError` (a `DRPCConnectionError` and a `TimeoutError`): `timeout` seconds passed.
"""

from __future__ import annotations

import codecs
import http.client
import json
import selectors
import socket
from types import TracebackType
from urllib.parse import quote, urlsplit

__all__ = [
    "DEFAULT_URL",
    "DRPCClient",
    "DRPCConnectionError",
    "DRPCError",
    "DRPCTimeoutError",
]

# drpc.http.port, Storm's default, on the address the host binds by default (docs/drpc.md §5)
DEFAULT_URL = "http://127.0.0.1:3774"

_ERROR_BODY_SHOWN = 500  # characters of a non-JSON error body kept in the message


class DRPCError(Exception):
    """The server answered with an error: `status` (the HTTP status), `type` (the JSON body's
    `error`, e.g. `FAILED_REQUEST`, or `HTTP_<status>` when the body is not such JSON) and
    `message` (its `errorMessage`, or the body's text)."""

    def __init__(self, status: int, type: str, message: str) -> None:
        super().__init__(status, type, message)
        self.status = status
        self.type = type
        self.message = message

    def __str__(self) -> str:
        return f"{self.type}: {self.message} (HTTP {self.status})"


class DRPCConnectionError(OSError):
    """No answer from the server: cannot connect (refused, unreachable, unknown host) or the
    connection was lost before the answer. The message says which, and what was requested."""


class DRPCTimeoutError(DRPCConnectionError, TimeoutError):
    """The client's `timeout` passed while connecting or waiting for the answer. The connection
    is closed (a late answer would be taken for the next request's); the request may still run
    on the server."""


class DRPCClient:
    """One keep-alive HTTP/1.1 connection to a DRPC server; `execute` sends a request on it and
    waits for the answer.

    `url` is the server's base URL (`http://HOST[:PORT][/PREFIX]`); requests go to
    `{url}/drpc/{function}`. `timeout` bounds, in seconds, connecting and each wait for data
    from the server (the server writes nothing before the answer, so in effect the wait for the
    answer); None waits as long as the server does (its `drpc.request.timeout.secs`, 600 by
    default, ends in `504 SERVER_TIMEOUT`).

    Not thread-safe: one instance per thread (a connection carries one request at a time). The
    connection opens at the first `execute` and is reopened when the server closed it;
    `close()` (or leaving the `with` block) closes it, and a later `execute` opens a new one.
    """

    def __init__(self, url: str = DEFAULT_URL, timeout: float | None = None) -> None:
        self.url, host, port, self._prefix = _parse_url(url)
        if timeout is not None and not timeout > 0:
            raise ValueError(f"timeout must be a positive number of seconds or None: {timeout!r}")
        self.timeout = timeout
        self._connection = http.client.HTTPConnection(host, port, timeout=timeout)

    def execute(self, function: str, args: str) -> str:
        """Call `function` with `args`; return its result. Raises `DRPCError` for an error
        answer, `DRPCConnectionError` (or `DRPCTimeoutError`) when none came."""
        if not isinstance(function, str) or not isinstance(args, str):
            raise TypeError(
                "function and args must be str, got "
                f"{type(function).__name__} and {type(args).__name__}"
            )
        if not function:
            raise ValueError("function name is empty")
        # POST, not GET /drpc/f/args: a body carries any string, a path segment cannot carry '/'
        path = f"{self._prefix}/drpc/{quote(function, safe='')}"
        body = args.encode("utf-8")
        status, headers, data = self._exchange(function, path, body)
        if status == 200:
            try:
                return data.decode(_charset(headers))
            except UnicodeDecodeError as exc:
                raise DRPCError(status, "HTTP_200", f"the result cannot be decoded: {exc}") from exc
        raise _error_of(status, headers, data)

    def close(self) -> None:
        """Close the connection (if open)."""
        self._connection.close()

    def __enter__(self) -> DRPCClient:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"DRPCClient({self.url!r}, timeout={self.timeout!r})"

    # The rule for sending a request again (never more than once):
    #
    # - Before reusing an idle connection, look whether the server has closed it (it is readable:
    #   an end of stream, a reset, or bytes nobody asked for). If so, open a new one first. This
    #   is the common case (a server dropping idle keep-alive connections) and sends nothing twice.
    # - If writing the request on a reused connection fails, the server closed it between that
    #   look and the write: the kernel did not take the whole request, so the server cannot have
    #   read a complete one and acted on it. Send it once more, on a new connection.
    # - Once the request was written, no resending: a connection lost before the answer may have
    #   delivered the request (a DRPC request runs the topology, it is not idempotent), so that is
    #   a DRPCConnectionError saying the request may have run. A new connection is never retried.
    def _exchange(
        self, function: str, path: str, body: bytes
    ) -> tuple[int, http.client.HTTPMessage, bytes]:
        what = f"{function!r} at {self.url}"
        connection = self._connection
        reused = connection.sock is not None
        if reused and _peer_closed(connection.sock):
            connection.close()
            reused = False
        if not reused:
            self._connect(what)
        try:
            self._send(what, path, body)
        except DRPCTimeoutError:
            raise
        except DRPCConnectionError:
            if not reused:
                raise
            self._connect(what)  # closed between the look and the write: see the rule above
            self._send(what, path, body)
        try:
            response = connection.getresponse()
            data = response.read()
        except TimeoutError as exc:
            connection.close()  # an answer may still come: the connection is out of step
            raise DRPCTimeoutError(
                f"DRPC request {what}: no answer within {self.timeout}s"
            ) from exc
        except (OSError, http.client.HTTPException) as exc:
            connection.close()
            raise DRPCConnectionError(
                f"DRPC request {what}: the connection was lost before the answer "
                f"({_reason(exc)}); the request may have run, it was not sent again"
            ) from exc
        return response.status, response.headers, data

    def _connect(self, what: str) -> None:
        try:
            self._connection.connect()
        except TimeoutError as exc:
            self._connection.close()
            raise DRPCTimeoutError(
                f"DRPC request {what}: cannot connect within {self.timeout}s"
            ) from exc
        except OSError as exc:
            self._connection.close()
            raise DRPCConnectionError(
                f"DRPC request {what}: cannot connect: {_reason(exc)}"
            ) from exc

    def _send(self, what: str, path: str, body: bytes) -> None:
        try:
            # http.client writes the headers and a bytes body in one sendall, with Content-Length
            self._connection.request(
                "POST", path, body=body, headers={"Content-Type": "text/plain; charset=utf-8"}
            )
        except TimeoutError as exc:
            self._connection.close()
            raise DRPCTimeoutError(
                f"DRPC request {what}: cannot send it within {self.timeout}s"
            ) from exc
        except OSError as exc:
            self._connection.close()
            raise DRPCConnectionError(
                f"DRPC request {what}: the connection failed while sending: {_reason(exc)}"
            ) from exc


def _parse_url(url: str) -> tuple[str, str, int | None, str]:
    """(the URL without a trailing '/', host, port or None for 80, path prefix)."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:
        raise ValueError(f"bad DRPC URL {url!r}: {exc}") from exc
    if parts.scheme != "http":
        raise ValueError(f"bad DRPC URL {url!r}: expected http://HOST[:PORT]")
    if not parts.hostname:
        raise ValueError(f"bad DRPC URL {url!r}: no host")
    if parts.query or parts.fragment or parts.username is not None:
        raise ValueError(f"bad DRPC URL {url!r}: expected http://HOST[:PORT][/PREFIX] only")
    prefix = parts.path.rstrip("/")
    return url.rstrip("/"), parts.hostname, port, prefix


def _peer_closed(sock: socket.socket) -> bool:
    """Whether an idle connection can no longer carry a request: readable when nothing was
    asked means the server closed it (or wrote out of turn)."""
    with selectors.DefaultSelector() as selector:
        selector.register(sock, selectors.EVENT_READ)
        return bool(selector.select(0))


def _error_of(status: int, headers: http.client.HTTPMessage, data: bytes) -> DRPCError:
    """The server's `{"error": TYPE, "errorMessage": TEXT}` (Storm's DRPCExceptionMapper), or
    `HTTP_<status>` with the body's text."""
    text = data.decode(_charset(headers), errors="replace")
    try:
        value = json.loads(text)
    except ValueError:
        value = None
    if isinstance(value, dict) and isinstance(value.get("error"), str):
        message = value.get("errorMessage")
        return DRPCError(status, value["error"], message if isinstance(message, str) else "")
    text = text.strip()
    if len(text) > _ERROR_BODY_SHOWN:
        text = text[:_ERROR_BODY_SHOWN] + "..."
    return DRPCError(status, f"HTTP_{status}", text or http.client.responses.get(status, ""))


def _charset(headers: http.client.HTTPMessage) -> str:
    """The Content-Type's charset when Python knows it, else UTF-8 (what the server writes)."""
    charset = headers.get_content_charset("utf-8")
    try:
        codecs.lookup(charset)
    except LookupError:
        return "utf-8"
    return charset


def _reason(exc: BaseException) -> str:
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror
    return str(exc) or type(exc).__name__
