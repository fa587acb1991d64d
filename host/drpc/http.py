"""Storm's DRPC HTTP API as bytes: the responses the server writes, and `drpc_route`, which turns
a request into Storm's (function, arguments) the way Storm's `DRPCResource.java` routes them.

Apart from the request reader (host/drpc/http_reader.py) because this is what Storm's API says,
not how HTTP/1.1 is parsed. Pure like the reader: no sockets and no I/O (docs/drpc.md §1);
host/drpc/server.py writes what these return.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from http import HTTPStatus
from urllib.parse import unquote_to_bytes

from host.drpc.http_reader import TOKEN_ONLY, HttpError, HttpRequest, shown

CONTINUE = b"HTTP/1.1 100 Continue\r\n\r\n"
_BAD_PERCENT = re.compile(r"%(?![0-9A-Fa-f]{2})")


# --- responses --------------------------------------------------------------------------------

_STATUS_LINES: dict[int, str] = {}


def _status_line(status: int) -> str:
    line = _STATUS_LINES.get(status)
    if line is None:
        if not 100 <= status <= 999:
            raise ValueError(f"HTTP status must be three digits, got {status}")
        try:
            reason = HTTPStatus(status).phrase
        except ValueError:
            reason = "Unknown"
        line = _STATUS_LINES[status] = f"HTTP/1.1 {status} {reason}\r\n"
    return line


def _response(
    status: int,
    content_type: str,
    body: bytes,
    keep_alive: bool,
    extra_headers: Sequence[tuple[str, str]],
) -> bytes:
    head = (
        f"{_status_line(status)}Content-Type: {content_type}\r\nContent-Length: {len(body)}\r\n"
        f"Connection: {'keep-alive' if keep_alive else 'close'}\r\n"
    )
    for name, value in extra_headers:
        if TOKEN_ONLY.fullmatch(name) is None or any(c in value for c in "\r\n\x00"):
            raise ValueError(f"bad response header {name!r}: {value!r}")
        head += f"{name}: {value}\r\n"
    return (head + "\r\n").encode("latin-1") + body


def text_response(status: int, text: str, *, keep_alive: bool) -> bytes:
    """200 result: Content-Type: text/plain; charset=utf-8, Content-Length, Connection header.
    A lone surrogate in `text` (a JSON string can hold one) becomes "?": the body is UTF-8."""
    body = text.encode("utf-8", "replace") if not text.isascii() else text.encode("ascii")
    return _response(status, "text/plain; charset=utf-8", body, keep_alive, ())


def error_response(
    status: int,
    error: str,
    message: str,
    *,
    keep_alive: bool,
    extra_headers: Sequence[tuple[str, str]] = (),
) -> bytes:
    """JSON body {"error": error, "errorMessage": message} (Storm's DRPCExceptionMapper shape),
    Content-Type: application/json."""
    body = json.dumps({"error": error, "errorMessage": message}).encode("ascii")
    return _response(status, "application/json", body, keep_alive, extra_headers)


def http_error_response(error: HttpError, *, keep_alive: bool) -> bytes:
    """The response to an HttpError: BAD_REQUEST (docs/drpc.md §1) with the error's headers;
    `Connection: close` when the error closes the connection."""
    return error_response(
        error.status,
        "BAD_REQUEST",
        error.message,
        keep_alive=keep_alive and not error.close,
        extra_headers=error.headers,
    )


# --- routes -----------------------------------------------------------------------------------


def _route_error(status: int, message: str, allow: str = "") -> HttpError:
    return HttpError(status, message, close=False, headers=(("Allow", allow),) if allow else ())


def _percent_decode(segment: str, what: str) -> str:
    """A path segment (Latin-1 text of the raw bytes) percent-decoded as UTF-8; '+' stays."""
    if "%" not in segment:
        if segment.isascii():
            return segment
    elif _BAD_PERCENT.search(segment) is not None:
        raise _route_error(400, f"invalid percent-encoding in {what} {shown(segment)}")
    try:
        return unquote_to_bytes(segment.encode("latin-1")).decode("utf-8")
    except UnicodeDecodeError:
        raise _route_error(400, f"{what} {shown(segment)} is not UTF-8") from None


def drpc_route(req: HttpRequest) -> tuple[str, str]:
    """(function, args) per docs/drpc.md §1: GET /drpc/{func}/{args} (args = that ONE path
    segment, percent-decoded as UTF-8; '+' stays '+'; a query string is ignored), GET /drpc/{func}
    (args ""), POST /drpc/{func} (args = body decoded as UTF-8). Raises HttpError: 404 for any
    other path (including /drpc/f/a/b and an empty function), 405 for other methods on a DRPC
    path (the lead adds an Allow header), 400 for args or body that are not valid UTF-8 or
    percent-encoding. close=False for these (the request was read whole).

    The 405 carries its Allow header in `headers` already. The function name is percent-decoded
    too (Storm's @PathParam is). One trailing '/' is ignored, as Jersey's routes do:
    /drpc/f/ is /drpc/f. An absolute-form target (http://host/drpc/f) is routed by its path."""
    target = req.target
    if not target.startswith("/"):
        scheme_end = target.find("://")
        if scheme_end < 0 or target[:scheme_end].lower() not in ("http", "https"):
            raise _route_error(404, f"no DRPC route for {shown(target)}")
        slash = target.find("/", scheme_end + 3)
        target = "/" if slash < 0 else target[slash:]
    path = target.partition("?")[0].partition("#")[0]
    if not path.startswith("/drpc/"):
        raise _route_error(404, f"no DRPC route for {shown(path)}: use /drpc/FUNCTION[/ARGS]")
    rest = path[6:]
    if rest.endswith("/"):
        rest = rest[:-1]
    parts = rest.split("/")
    if len(parts) > 2 or not all(parts):
        raise _route_error(
            404, f"no DRPC route for {shown(path)}: use /drpc/FUNCTION or /drpc/FUNCTION/ARGS"
        )
    method = req.method
    if len(parts) == 2:
        if method != "GET":
            raise _route_error(405, f"method {method} not allowed on {shown(path)}", "GET")
        return _percent_decode(parts[0], "function"), _percent_decode(parts[1], "arguments")
    if method == "GET":
        return _percent_decode(parts[0], "function"), ""
    if method == "POST":
        function = _percent_decode(parts[0], "function")
        try:
            return function, req.body.decode("utf-8")
        except UnicodeDecodeError as error:
            raise _route_error(400, f"request body is not UTF-8 ({error.reason})") from None
    raise _route_error(405, f"method {method} not allowed on {shown(path)}", "GET, POST")
