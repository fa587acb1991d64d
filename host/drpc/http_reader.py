"""The incremental HTTP/1.1 request reader of the DRPC server, with its limits: bytes in,
`HttpRequest`s out, malformed input as `HttpError`.

Apart from host/drpc/http.py (the responses and Storm's routes) because it is a parser with a
state of its own, and the only part of the HTTP code that holds a connection's unread bytes. No
sockets and no I/O (docs/drpc.md §1): host/drpc/server.py feeds what a connection read into a
`RequestReader` and asks it for complete requests; everything here is incremental and never
blocks. The request line and headers are decoded as Latin-1 (every byte maps to one character,
so nothing is lost).

Speed matters (this is on the path of every DRPC call): the end of a head is found with one
`bytes.find`, the request line and the header block are checked and split by compiled regular
expressions, and the slow, careful diagnosis of a bad header runs only once it is known to be bad.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

MAX_HEAD = 16 * 1024  # bytes of request line + headers (docs/drpc.md §1: "over 16 KiB" is 431)

# A chunk-size line (hex size, optional ;extensions) longer than this is refused, so that a
# client cannot make the reader buffer without bound while it waits for the line's end.
MAX_CHUNK_LINE = 4096

_TOKEN = r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+"  # RFC 9110 §5.6.2
_REQUEST_LINE = re.compile(rf"({_TOKEN}) ([\x21-\x7e\x80-\xff]+) (HTTP/[0-9]\.[0-9])")
# The header block (every line after the request line, each with its line end) is validated whole
# with one fullmatch (possessive: no backtracking); its lines are then split with str methods,
# which is several times faster than a capturing findall.
_HEADER_BLOCK = re.compile(rf"(?:{_TOKEN}:[^\x00\r\n]*+\r?\n)*+")
TOKEN_ONLY = re.compile(_TOKEN)
_DIGITS = re.compile(r"[0-9]+")
_HEX = re.compile(rb"[0-9A-Fa-f]+")
_VERSIONS = frozenset({"HTTP/1.1", "HTTP/1.0"})


@dataclass(frozen=True)
class HttpRequest:
    """One complete request as read from a connection."""

    method: str  # as sent, e.g. "GET"
    target: str  # the raw request-target, e.g. "/drpc/exclaim/hello%20x?y=1"
    version: str  # "HTTP/1.1" or "HTTP/1.0"
    headers: dict[str, str]  # names lower-cased; repeated headers joined with ", "
    body: bytes
    keep_alive: bool  # HTTP/1.1 unless "Connection: close"; HTTP/1.0 only with "keep-alive"


class HttpError(Exception):
    """A request that cannot be served; after its response the connection is closed when
    `close` is True (unparseable input: the stream cannot be resynchronised).

    `headers` are extra response headers the error calls for (`Allow` on a 405)."""

    def __init__(
        self,
        status: int,
        message: str,
        *,
        close: bool,
        headers: Sequence[tuple[str, str]] = (),
    ) -> None:
        super().__init__(f"{status} {message}")
        self.status = status
        self.message = message
        self.close = close
        self.headers = tuple(headers)


def _bad(message: str, status: int = 400) -> HttpError:
    """An error in the byte stream itself: the connection cannot go on after it."""
    return HttpError(status, message, close=True)


def shown(text: str | bytes, limit: int = 80) -> str:
    """Bad input quoted in an error message, cut short: a message stays one short line."""
    quoted = repr(text[:limit])
    return quoted + "..." if len(text) > limit else quoted


class _Head:
    """A parsed head whose body has not fully arrived yet."""

    __slots__ = ("method", "target", "version", "headers", "keep_alive", "length", "chunked")

    def __init__(
        self,
        method: str,
        target: str,
        version: str,
        headers: dict[str, str],
        keep_alive: bool,
        length: int,
        chunked: bool,
    ) -> None:
        self.method = method
        self.target = target
        self.version = version
        self.headers = headers
        self.keep_alive = keep_alive
        self.length = length  # Content-Length; unused when chunked
        self.chunked = chunked


# The states of a chunked body (RFC 9112 §7.1)
_CHUNK_SIZE, _CHUNK_DATA, _CHUNK_DATA_END, _CHUNK_TRAILER = range(4)


class RequestReader:
    """Incremental parser for one connection.

    `feed` what the socket gave; call `next_request` until it returns None. The reader holds at
    most one request's head and body plus what was fed and not yet asked for: a server that stops
    reading its socket while `buffered` is high keeps the memory of a connection bounded
    (roughly max_head + max_body + MAX_CHUNK_LINE, when `next_request` is called after each feed).
    After an HttpError the reader is finished: it raises the same error again and ignores input.
    """

    def __init__(self, max_body: int, max_head: int = MAX_HEAD) -> None:
        if max_body < 0:
            raise ValueError(f"max_body must be >= 0, got {max_body}")
        if max_head < 16:
            raise ValueError(f"max_head must be >= 16 bytes, got {max_head}")
        self._max_body = max_body
        self._max_head = max_head
        self._buf = bytearray()
        self._scan = 0  # where the search for the end of the head resumes
        self._line_checked = False  # the request line of the incomplete head was found good
        self._head: _Head | None = None
        self._continue = False
        self._error: HttpError | None = None
        # chunked body state
        self._chunk_state = _CHUNK_SIZE
        self._chunk_left = 0
        self._trailer_bytes = 0
        self._body = bytearray()

    def feed(self, data: bytes) -> None:
        if self._error is None:
            self._buf += data

    @property
    def buffered(self) -> int:
        """Bytes held: unparsed input plus the decoded part of a chunked body."""
        return len(self._buf) + len(self._body)

    def take_continue(self) -> bool:
        """True once per request whose head (parsed, body not complete yet) carries
        `Expect: 100-continue`: the server writes CONTINUE then."""
        if self._continue:
            self._continue = False
            return True
        return False

    def next_request(self) -> HttpRequest | None:
        """The next complete request, or None when more bytes are needed. Raises HttpError
        (close=True) for malformed input, a head over max_head (431), a body over max_body (413),
        an unsupported Transfer-Encoding (501), both Content-Length and Transfer-Encoding, a bad
        or repeated-and-different Content-Length (400), a version other than HTTP/1.0 / 1.1
        (505)."""
        if self._error is not None:
            raise self._error
        try:
            head = self._head
            if head is None:
                parsed = self._read_head()
                if parsed is None or isinstance(parsed, HttpRequest):
                    return parsed
                head = self._head = parsed
                # RFC 9110 §10.1.1: an HTTP/1.0 client's expectation is ignored
                if head.version == "HTTP/1.1":
                    expect = head.headers.get("expect")
                    self._continue = expect is not None and expect.lower() == "100-continue"
            body = self._read_chunked() if head.chunked else self._read_sized(head.length)
            if body is None:
                return None
            self._head = None
            self._continue = False
            return HttpRequest(
                head.method, head.target, head.version, head.headers, body, head.keep_alive
            )
        except HttpError as error:
            self._error = error
            self._buf = bytearray()
            self._body = bytearray()
            self._head = None
            self._continue = False
            raise

    # --- the head -----------------------------------------------------------------------------

    def _read_head(self) -> _Head | HttpRequest | None:
        """A head, or a whole request when it has no body; None until the head is complete."""
        buf = self._buf
        if not buf:
            return None
        if buf[0] in b"\r\n":
            # RFC 9112 §2.2: empty lines before a request line are ignored (some clients send a
            # CRLF after a POST body)
            del buf[: len(buf) - len(buf.lstrip(b"\r\n"))]
            self._scan = 0
            if not buf:
                return None
        limit = self._max_head  # the whole head, blank line included, lies in buf[:limit]
        start = self._scan
        end = buf.find(b"\n\r\n", start, limit)
        bare = buf.find(b"\n\n", start, end + 2 if end >= 0 else limit)
        if bare >= 0:
            end, size = bare, bare + 2
        elif end >= 0:
            size = end + 3
        else:
            if len(buf) >= limit:
                raise _bad(f"request head over {limit} bytes", 431)
            self._scan = max(0, len(buf) - 2)
            if not self._line_checked:
                # refuse garbage as soon as its first line is seen, not after max_head bytes
                nl = buf.find(b"\n")
                if nl >= 0:
                    self._request_line(buf[:nl].decode("latin-1"))
                    self._line_checked = True
            return None
        text = buf[: end + 1].decode("latin-1")
        del buf[:size]
        self._scan = 0
        self._line_checked = False

        nl = text.find("\n")
        method, target, version = self._request_line(text[:nl])
        headers: dict[str, str] = {}
        block = text[nl + 1 :]
        if block:
            if _HEADER_BLOCK.fullmatch(block) is None:
                raise _diagnose_headers(block)
            for line in block.split("\n")[:-1]:  # the block ends with a line end
                name, _, value = line.partition(":")
                name = name.lower()
                value = value.strip(" \t\r")  # OWS, and the CR of a CRLF
                if name in headers:
                    headers[name] += ", " + value
                else:
                    headers[name] = value

        connection = headers.get("connection")
        if connection is None:
            keep_alive = version == "HTTP/1.1"
        else:
            tokens = {token.strip().lower() for token in connection.split(",")}
            keep_alive = "close" not in tokens and (version == "HTTP/1.1" or "keep-alive" in tokens)

        coding = headers.get("transfer-encoding")
        length_field = headers.get("content-length")
        if coding is not None:
            if length_field is not None:
                raise _bad("both Content-Length and Transfer-Encoding")
            if coding.strip().lower() != "chunked":
                raise _bad(f"unsupported Transfer-Encoding {shown(coding)}", 501)
            self._chunk_state = _CHUNK_SIZE
            self._trailer_bytes = 0
            return _Head(method, target, version, headers, keep_alive, 0, True)
        length = 0 if length_field is None else self._content_length(length_field)
        if length == 0:
            return HttpRequest(method, target, version, headers, b"", keep_alive)
        return _Head(method, target, version, headers, keep_alive, length, False)

    @staticmethod
    def _request_line(line: str) -> tuple[str, str, str]:
        if line.endswith("\r"):
            line = line[:-1]
        match = _REQUEST_LINE.fullmatch(line)
        if match is None:
            raise _bad(f"malformed request line {shown(line)}")
        method, target, version = match.groups()
        if version not in _VERSIONS:
            raise _bad(f"HTTP version {version} not supported (HTTP/1.0 and 1.1 are)", 505)
        return method, target, version

    def _content_length(self, field: str) -> int:
        # a repeated header arrives joined with ", " (and "5, 5" in one header means the same):
        # RFC 9112 §6.3 allows the repetition only when every value is the same
        values = {value.strip() for value in field.split(",")}
        if len(values) != 1:
            raise _bad(f"Content-Length values differ: {shown(field)}")
        (value,) = values
        if _DIGITS.fullmatch(value) is None:
            raise _bad(f"bad Content-Length {shown(value)}")
        if len(value.lstrip("0")) > 18 or int(value) > self._max_body:
            raise _bad(f"body of {value} bytes over the limit of {self._max_body}", 413)
        return int(value)

    # --- the body -----------------------------------------------------------------------------

    def _read_sized(self, length: int) -> bytes | None:
        buf = self._buf
        if len(buf) < length:
            return None
        body = bytes(buf[:length])
        del buf[:length]
        return body

    def _read_chunked(self) -> bytes | None:
        """The decoded body once its last chunk and trailers are in; None until then. Input is
        consumed as it is decoded, so only the decoded body (at most max_body) and one partial
        line are held."""
        buf = self._buf
        while True:
            state = self._chunk_state
            if state == _CHUNK_DATA:
                take = min(self._chunk_left, len(buf))
                if take == 0:
                    return None
                self._body += buf[:take]
                del buf[:take]
                self._chunk_left -= take
                if self._chunk_left:
                    return None
                self._chunk_state = _CHUNK_DATA_END
            elif state == _CHUNK_SIZE:
                nl = buf.find(b"\n", 0, MAX_CHUNK_LINE)
                if nl < 0:
                    if len(buf) >= MAX_CHUNK_LINE:
                        raise _bad(f"chunk-size line over {MAX_CHUNK_LINE} bytes")
                    return None
                line = bytes(buf[:nl]).rstrip(b"\r")
                del buf[: nl + 1]
                size_text = line.split(b";", 1)[0].strip(b" \t")
                if _HEX.fullmatch(size_text) is None:
                    raise _bad(f"bad chunk size {shown(line)}")
                if len(size_text.lstrip(b"0")) > 16:
                    size = self._max_body + 1
                else:
                    size = int(size_text, 16)
                if len(self._body) + size > self._max_body:
                    raise _bad(f"chunked body over the limit of {self._max_body} bytes", 413)
                if size == 0:
                    self._chunk_state = _CHUNK_TRAILER
                else:
                    self._chunk_left = size
                    self._chunk_state = _CHUNK_DATA
            elif state == _CHUNK_DATA_END:
                if buf[:2] == b"\r\n":
                    del buf[:2]
                elif buf[:1] == b"\n":
                    del buf[:1]
                elif buf == b"\r" or not buf:
                    return None
                else:
                    raise _bad(f"chunk data not followed by CRLF: {shown(bytes(buf[:8]))}")
                self._chunk_state = _CHUNK_SIZE
            else:  # _CHUNK_TRAILER: header lines up to an empty one; their content is ignored
                room = self._max_head - self._trailer_bytes
                nl = buf.find(b"\n", 0, room)
                if nl < 0:
                    if buf and len(buf) >= room:
                        raise _bad(f"chunked trailers over {self._max_head} bytes", 431)
                    return None
                empty = nl == 0 or (nl == 1 and buf[0] == 13)
                del buf[: nl + 1]
                if empty:
                    body = bytes(self._body)
                    self._body = bytearray()
                    self._chunk_state = _CHUNK_SIZE
                    return body
                self._trailer_bytes += nl + 1


def _diagnose_headers(block: str) -> HttpError:
    """Why a header block that failed the fast check is bad, naming the first bad line."""
    for line in block.split("\n")[:-1]:  # the block ends with a line end
        line = line.removesuffix("\r")
        if line[:1] in (" ", "\t"):
            return _bad(f"obsolete line folding in header line {shown(line)}")
        name, colon, value = line.partition(":")
        if not colon:
            return _bad(f"header line without ':' {shown(line)}")
        if not name:
            return _bad(f"empty header name in {shown(line)}")
        if TOKEN_ONLY.fullmatch(name) is None:
            return _bad(f"invalid header name {shown(name)}")
        if "\r" in value or "\x00" in value:
            return _bad(f"invalid character in header {shown(line)}")
    return _bad(f"malformed header section {shown(block)}")  # not reached: a line is bad
