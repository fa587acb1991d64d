"""The DRPC server's HTTP/1.1 codec: requests from bytes (host/drpc/http_reader.py), routes and
responses (host/drpc/http.py)."""

from __future__ import annotations

import json
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from host.drpc.http import CONTINUE, drpc_route, error_response, http_error_response, text_response
from host.drpc.http_reader import MAX_CHUNK_LINE, MAX_HEAD, HttpError, HttpRequest, RequestReader

MAX_BODY = 1 << 20


def read_all(
    data: bytes, *, max_body: int = MAX_BODY, max_head: int = MAX_HEAD
) -> list[HttpRequest]:
    reader = RequestReader(max_body, max_head)
    reader.feed(data)
    requests = []
    while (request := reader.next_request()) is not None:
        requests.append(request)
    assert reader.buffered == 0, "bytes left over after the last request"
    return requests


def read_one(data: bytes, **limits: int) -> HttpRequest:
    (request,) = read_all(data, **limits)
    return request


def read_split(data: bytes, cuts: list[int], *, max_body: int = MAX_BODY) -> list[HttpRequest]:
    """The requests read when `data` arrives in pieces cut at `cuts`, asking after every piece."""
    reader = RequestReader(max_body)
    requests = []
    edges = [0, *sorted(cuts), len(data)]
    for start, end in zip(edges, edges[1:]):
        reader.feed(data[start:end])
        while (request := reader.next_request()) is not None:
            requests.append(request)
    assert reader.buffered == 0
    return requests


def http_error(data: bytes, **limits: int) -> HttpError:
    reader = RequestReader(limits.pop("max_body", MAX_BODY), **limits)
    reader.feed(data)
    with pytest.raises(HttpError) as caught:
        while reader.next_request() is not None:
            pass
    return caught.value


def get(
    target: str, version: str = "HTTP/1.1", method: str = "GET", body: bytes = b""
) -> HttpRequest:
    return HttpRequest(method, target, version, {}, body, True)


# --- parsing ----------------------------------------------------------------------------------


def test_a_get_is_parsed_with_lower_cased_headers() -> None:
    request = read_one(
        b"GET /drpc/exclaim/hello%20x?y=1 HTTP/1.1\r\nHost: 127.0.0.1:3774\r\n"
        b"User-Agent: curl/8.5.0\r\nX-Odd:   spaced value \t\r\n\r\n"
    )
    assert request == HttpRequest(
        "GET",
        "/drpc/exclaim/hello%20x?y=1",
        "HTTP/1.1",
        {"host": "127.0.0.1:3774", "user-agent": "curl/8.5.0", "x-odd": "spaced value"},
        b"",
        True,
    )


def test_repeated_headers_are_joined_and_empty_values_kept() -> None:
    request = read_one(b"GET / HTTP/1.1\r\nAccept: a\r\nX-Empty:\r\naccept: b\r\n\r\n")
    assert request.headers == {"accept": "a, b", "x-empty": ""}


def test_bare_lf_line_ends_are_tolerated() -> None:
    request = read_one(b"POST /drpc/f HTTP/1.1\nHost: h\nContent-Length: 3\n\nabc")
    assert (request.method, request.headers, request.body) == (
        "POST",
        {"host": "h", "content-length": "3"},
        b"abc",
    )
    assert read_one(b"GET / HTTP/1.1\r\nA: 1\n\r\n").headers == {"a": "1"}


def test_a_request_without_headers() -> None:
    assert read_one(b"GET /drpc/f HTTP/1.1\r\n\r\n") == HttpRequest(
        "GET", "/drpc/f", "HTTP/1.1", {}, b"", True
    )


def test_a_post_without_length_has_an_empty_body() -> None:
    assert read_one(b"POST /drpc/f HTTP/1.1\r\nHost: h\r\n\r\n").body == b""


def test_a_content_length_body_waits_for_its_last_byte() -> None:
    reader = RequestReader(MAX_BODY)
    reader.feed(b"POST /drpc/f HTTP/1.1\r\nContent-Length: 5\r\n\r\nabcd")
    assert reader.next_request() is None
    assert reader.buffered == 4
    reader.feed(b"eGET")
    request = reader.next_request()
    assert request is not None and request.body == b"abcde"
    assert reader.next_request() is None
    assert reader.buffered == 3  # the start of the next request stays


def test_pipelined_requests_come_out_in_order() -> None:
    stream = (
        b"GET /drpc/a/1 HTTP/1.1\r\n\r\n"
        b"POST /drpc/b HTTP/1.1\r\nContent-Length: 2\r\n\r\nxy"
        b"POST /drpc/c HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n1\r\nz\r\n0\r\n\r\n"
        b"GET /drpc/d HTTP/1.0\r\n\r\n"
    )
    requests = read_all(stream)
    assert [(r.target, r.body) for r in requests] == [
        ("/drpc/a/1", b""),
        ("/drpc/b", b"xy"),
        ("/drpc/c", b"z"),
        ("/drpc/d", b""),
    ]
    assert read_split(stream, list(range(1, len(stream)))) == requests


def test_empty_lines_before_a_request_line_are_ignored() -> None:
    stream = (
        b"POST /drpc/f HTTP/1.1\r\nContent-Length: 1\r\n\r\nx\r\n\r\nGET /drpc/g HTTP/1.1\r\n\r\n"
    )
    assert [r.target for r in read_all(stream)] == ["/drpc/f", "/drpc/g"]


@pytest.mark.parametrize(
    ("version", "connection", "keep_alive"),
    [
        ("HTTP/1.1", None, True),
        ("HTTP/1.1", "close", False),
        ("HTTP/1.1", "Close", False),
        ("HTTP/1.1", "keep-alive", True),
        ("HTTP/1.1", "Upgrade, CLOSE", False),
        ("HTTP/1.1", "upgrade", True),
        ("HTTP/1.0", None, False),
        ("HTTP/1.0", "keep-alive", True),
        ("HTTP/1.0", "Keep-Alive", True),
        ("HTTP/1.0", "foo,  keep-alive ", True),
        ("HTTP/1.0", "keep-alive, close", False),
        ("HTTP/1.0", "close", False),
    ],
)
def test_keep_alive(version: str, connection: str | None, keep_alive: bool) -> None:
    header = b"" if connection is None else f"Connection: {connection}\r\n".encode()
    request = read_one(f"GET /drpc/f {version}\r\n".encode() + header + b"\r\n")
    assert request.version == version
    assert request.keep_alive is keep_alive


# --- Expect: 100-continue ---------------------------------------------------------------------


def test_expect_continue_is_taken_once_while_the_body_is_awaited() -> None:
    reader = RequestReader(MAX_BODY)
    assert reader.take_continue() is False
    reader.feed(b"POST /drpc/f HTTP/1.1\r\nExpect: 100-Continue\r\nContent-Length: 3\r\n\r\n")
    assert reader.next_request() is None
    assert reader.take_continue() is True
    assert reader.take_continue() is False
    reader.feed(b"a")
    assert reader.next_request() is None
    assert reader.take_continue() is False  # once per request
    reader.feed(b"bc")
    request = reader.next_request()
    assert request is not None and request.body == b"abc"
    assert reader.take_continue() is False
    assert CONTINUE == b"HTTP/1.1 100 Continue\r\n\r\n"


def test_expect_continue_for_a_chunked_body() -> None:
    reader = RequestReader(MAX_BODY)
    reader.feed(b"PUT /x HTTP/1.1\r\nTransfer-Encoding: chunked\r\nExpect: 100-continue\r\n\r\n")
    assert reader.next_request() is None
    assert reader.take_continue() is True
    reader.feed(b"2\r\nhi\r\n0\r\n\r\n")
    request = reader.next_request()
    assert request is not None and request.body == b"hi"


@pytest.mark.parametrize(
    "head",
    [
        # the body came with the head: nothing to wait for
        b"POST /drpc/f HTTP/1.1\r\nExpect: 100-continue\r\nContent-Length: 1\r\n\r\nx",
        # no body at all
        b"POST /drpc/f HTTP/1.1\r\nExpect: 100-continue\r\nContent-Length: 0\r\n\r\n",
        b"GET /drpc/f HTTP/1.1\r\nExpect: 100-continue\r\n\r\n",
        # RFC 9110 §10.1.1: ignored from an HTTP/1.0 client
        b"POST /drpc/f HTTP/1.0\r\nExpect: 100-continue\r\nContent-Length: 1\r\n\r\n",
        # not an expectation we know
        b"POST /drpc/f HTTP/1.1\r\nExpect: something\r\nContent-Length: 1\r\n\r\n",
    ],
)
def test_no_continue_when_none_is_due(head: bytes) -> None:
    reader = RequestReader(MAX_BODY)
    reader.feed(head)
    reader.next_request()
    assert reader.take_continue() is False


# --- chunked bodies ---------------------------------------------------------------------------

CHUNKED = (
    b"POST /drpc/f HTTP/1.1\r\nTransfer-Encoding: Chunked\r\n\r\n"
    b"5;name=value\r\nhello\r\n"
    b"9\r\n, chunked\r\n"
    b"001 ; ext\r\n!\r\n"
    b"0\r\nX-Trailer: ignored\r\nAnother: one\r\n\r\n"
    b"GET /drpc/next HTTP/1.1\r\n\r\n"
)


def test_a_chunked_body_is_decoded_and_trailers_ignored() -> None:
    first, second = read_all(CHUNKED)
    assert first.body == b"hello, chunked!"
    assert first.headers == {"transfer-encoding": "Chunked"}
    assert second.target == "/drpc/next"


def test_a_chunked_body_split_at_every_byte() -> None:
    expected = read_all(CHUNKED)
    assert read_split(CHUNKED, list(range(1, len(CHUNKED)))) == expected
    for cut in range(1, len(CHUNKED)):
        assert read_split(CHUNKED, [cut]) == expected


def test_a_chunked_body_with_bare_lf() -> None:
    request = read_one(b"POST /drpc/f HTTP/1.1\nTransfer-Encoding: chunked\n\n3\nabc\n0\n\n")
    assert request.body == b"abc"


@pytest.mark.parametrize(
    ("body", "words"),
    [
        (b"x\r\nabc\r\n0\r\n\r\n", "bad chunk size"),
        (b"\r\nabc\r\n0\r\n\r\n", "bad chunk size"),
        (b"-3\r\nabc\r\n0\r\n\r\n", "bad chunk size"),
        (b"3\r\nabcd\r\n0\r\n\r\n", "not followed by CRLF"),
        (b"3\r\nabc0\r\n\r\n", "not followed by CRLF"),
    ],
)
def test_malformed_chunked_bodies(body: bytes, words: str) -> None:
    error = http_error(b"POST /drpc/f HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n" + body)
    assert (error.status, error.close) == (400, True)
    assert words in error.message


def test_a_chunk_size_line_is_capped() -> None:
    reader = RequestReader(MAX_BODY)
    reader.feed(b"POST /drpc/f HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n")
    assert reader.next_request() is None
    reader.feed(b"1;" + b"e" * (MAX_CHUNK_LINE - 3))
    assert reader.next_request() is None  # still under the cap
    reader.feed(b"ee")
    with pytest.raises(HttpError) as caught:
        reader.next_request()
    assert caught.value.status == 400 and "chunk-size line" in caught.value.message


def test_trailers_are_capped() -> None:
    reader = RequestReader(MAX_BODY, max_head=1024)
    reader.feed(b"POST /drpc/f HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n")
    for _ in range(100):
        reader.feed(b"X-Trailer: " + b"t" * 20 + b"\r\n")
        try:
            assert reader.next_request() is None
        except HttpError as error:
            assert error.status == 431
            break
    else:
        pytest.fail("endless trailers were accepted")


@pytest.mark.parametrize(
    "coding", [b"gzip", b"gzip, chunked", b"chunked, gzip", b"identity", b"deflate"]
)
def test_an_unsupported_transfer_encoding_is_501(coding: bytes) -> None:
    error = http_error(b"POST /drpc/f HTTP/1.1\r\nTransfer-Encoding: " + coding + b"\r\n\r\n")
    assert (error.status, error.close) == (501, True)


def test_both_content_length_and_transfer_encoding_is_400() -> None:
    error = http_error(
        b"POST /drpc/f HTTP/1.1\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n"
    )
    assert (error.status, error.close) == (400, True)
    assert "both Content-Length and Transfer-Encoding" in error.message


# --- Content-Length ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "fields",
    [
        [b"Content-Length: 3"],
        [b"Content-Length: 3", b"content-length: 3"],
        [b"Content-Length: 3, 3"],
        [b"Content-Length: 003"],
    ],
)
def test_a_good_content_length(fields: list[bytes]) -> None:
    head = b"POST /drpc/f HTTP/1.1\r\n" + b"".join(f + b"\r\n" for f in fields) + b"\r\n"
    assert read_one(head + b"abc").body == b"abc"


@pytest.mark.parametrize(
    "fields",
    [
        [b"Content-Length: abc"],
        [b"Content-Length: -1"],
        [b"Content-Length: +3"],
        [b"Content-Length: 0x3"],
        [b"Content-Length: 3 3"],
        [b"Content-Length:"],
        [b"Content-Length: 3", b"Content-Length: 4"],
        [b"Content-Length: 3, 4"],
        [b"Content-Length: 3,"],
    ],
)
def test_a_bad_content_length_is_400(fields: list[bytes]) -> None:
    head = b"POST /drpc/f HTTP/1.1\r\n" + b"".join(f + b"\r\n" for f in fields) + b"\r\n"
    error = http_error(head + b"abcd")
    assert (error.status, error.close) == (400, True)
    assert "Content-Length" in error.message


# --- limits -----------------------------------------------------------------------------------


def test_a_content_length_over_max_body_is_413_before_the_body() -> None:
    error = http_error(b"POST /drpc/f HTTP/1.1\r\nContent-Length: 11\r\n\r\n", max_body=10)
    assert (error.status, error.close) == (413, True)
    assert read_one(b"POST /drpc/f HTTP/1.1\r\nContent-Length: 10\r\n\r\n" + b"x" * 10, max_body=10)
    huge = b"POST /drpc/f HTTP/1.1\r\nContent-Length: " + b"9" * 100 + b"\r\n\r\n"
    assert http_error(huge).status == 413


def test_a_chunked_body_over_max_body_is_413() -> None:
    head = b"POST /drpc/f HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"
    fits = head + b"5\r\nabcde\r\n5\r\nfghij\r\n0\r\n\r\n"
    assert read_one(fits, max_body=10).body == b"abcdefghij"
    over = head + b"5\r\nabcde\r\n5\r\nfghij\r\n1\r\nk\r\n0\r\n\r\n"
    error = http_error(over, max_body=10)
    assert (error.status, error.close) == (413, True)
    # a chunk announcing more than the limit is refused before its data arrives
    assert http_error(head + b"b\r\n", max_body=10).status == 413
    assert http_error(head + b"f" * 40 + b"\r\n", max_body=10).status == 413


def test_a_head_over_max_head_is_431() -> None:
    request_line = b"GET /drpc/f HTTP/1.1\r\n"
    filler = b"X-Filler: " + b"f" * (200 - len(request_line) - 14) + b"\r\n\r\n"
    exact = request_line + filler
    assert len(exact) == 200
    assert read_one(exact, max_head=200).headers["x-filler"].startswith("fff")
    one_more = request_line + b"X" + filler
    assert http_error(one_more, max_head=200).status == 431
    # an incomplete head is refused once it passes the limit, without waiting for its end
    reader = RequestReader(MAX_BODY, max_head=200)
    reader.feed(b"GET /drpc/f HTTP/1.1\r\nX-Filler: " + b"f" * 150)
    assert reader.next_request() is None
    reader.feed(b"f" * 50)
    with pytest.raises(HttpError) as caught:
        reader.next_request()
    assert (caught.value.status, caught.value.close) == (431, True)


def _feed_garbage(reader: RequestReader, pieces: list[bytes]) -> int:
    """Feed pieces, asking for requests after each; the most bytes the reader ever held."""
    most = 0
    for piece in pieces:
        reader.feed(piece)
        most = max(most, reader.buffered)
        try:
            reader.next_request()
        except HttpError:
            pass
        most = max(most, reader.buffered)
    return most


@pytest.mark.parametrize(
    ("prefix", "piece"),
    [
        (b"", b"a" * 4096),  # no line end ever
        (b"GET /drpc/f HTTP/1.1\r\n", b"X-Header: " + b"h" * 4086),  # one endless header
        (b"GET /drpc/f HTTP/1.1\r\n", b"X: y\r\n" * 600),  # headers without end
        (b"POST /f HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n", b"1\r\nz\r\n" * 600),
        (b"POST /f HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n", b"f" * 4096),
        (b"POST /f HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n1;", b"e" * 4096),
        (b"POST /f HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n", b"T: t\r\n" * 600),
    ],
)
def test_buffered_stays_bounded_on_an_endless_stream(prefix: bytes, piece: bytes) -> None:
    max_body = 64 * 1024
    reader = RequestReader(max_body)
    most = _feed_garbage(reader, [prefix] + [piece] * 2000)  # about 8 MB
    assert most <= MAX_HEAD + max_body + MAX_CHUNK_LINE + len(piece)
    with pytest.raises(HttpError):
        reader.next_request()


def test_buffered_stays_bounded_on_random_bytes() -> None:
    rng = random.Random(7)
    reader = RequestReader(64 * 1024)
    pieces = [rng.randbytes(rng.randrange(1, 8192)) for _ in range(1000)]
    assert _feed_garbage(reader, pieces) <= MAX_HEAD + 8192


def test_an_error_is_final() -> None:
    reader = RequestReader(MAX_BODY)
    reader.feed(b"BAD\r\n\r\n")
    with pytest.raises(HttpError) as first:
        reader.next_request()
    reader.feed(b"GET /drpc/f HTTP/1.1\r\n\r\n")
    assert reader.buffered == 0
    with pytest.raises(HttpError) as second:
        reader.next_request()
    assert second.value is first.value


# --- malformed heads --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("head", "words"),
    [
        (b"GET\r\n\r\n", "malformed request line"),
        (b"GET /drpc/f\r\n\r\n", "malformed request line"),  # HTTP/0.9
        (b"GET  /drpc/f HTTP/1.1\r\n\r\n", "malformed request line"),
        (b"GET /drpc/f  HTTP/1.1\r\n\r\n", "malformed request line"),
        (b"GET /drpc/f HTTP/1.1 \r\n\r\n", "malformed request line"),
        (b"GET /drpc/f http/1.1\r\n\r\n", "malformed request line"),
        (b"GET /drpc/f HTTP/1\r\n\r\n", "malformed request line"),
        (b"G(T /drpc/f HTTP/1.1\r\n\r\n", "malformed request line"),
        (b"GET /a\x00b HTTP/1.1\r\n\r\n", "malformed request line"),
        (b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03\n\n", "malformed request line"),  # TLS
        (b"GET / HTTP/1.1\r\nHost: h\r\n  folded\r\n\r\n", "obsolete line folding"),
        (b"GET / HTTP/1.1\r\n\tfolded\r\n\r\n", "obsolete line folding"),
        (b"GET / HTTP/1.1\r\nNo colon here\r\n\r\n", "without ':'"),
        (b"GET / HTTP/1.1\r\n: no name\r\n\r\n", "empty header name"),
        (b"GET / HTTP/1.1\r\nHost : h\r\n\r\n", "invalid header name"),
        (b"GET / HTTP/1.1\r\nX(y): h\r\n\r\n", "invalid header name"),
        (b"GET / HTTP/1.1\r\nX: a\x00b\r\n\r\n", "invalid character"),
        (b"GET / HTTP/1.1\r\nX: a\rb\r\n\r\n", "invalid character"),
    ],
)
def test_a_malformed_head_is_400(head: bytes, words: str) -> None:
    error = http_error(head)
    assert (error.status, error.close) == (400, True)
    assert words in error.message


@pytest.mark.parametrize("version", [b"HTTP/2.0", b"HTTP/1.2", b"HTTP/0.9", b"HTTP/3.0"])
def test_an_unknown_version_is_505(version: bytes) -> None:
    error = http_error(b"GET /drpc/f " + version + b"\r\n\r\n")
    assert (error.status, error.close) == (505, True)


def test_garbage_is_refused_at_its_first_line_end() -> None:
    reader = RequestReader(MAX_BODY)
    reader.feed(b"SSH-2.0-OpenSSH_9.6\r\n")
    with pytest.raises(HttpError) as caught:
        reader.next_request()
    assert caught.value.status == 400


# --- the split-invariance property ------------------------------------------------------------

_TOKEN_CHARS = "!#$%&'*+-.^_`|~" + "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
_FRAMING = {"content-length", "transfer-encoding", "connection", "expect"}
tokens = st.text(_TOKEN_CHARS, min_size=1, max_size=12)
header_names = tokens.filter(lambda name: name.lower() not in _FRAMING)
header_values = st.text(
    st.characters(min_codepoint=0x20, max_codepoint=0xFF, exclude_characters="\x7f"), max_size=30
).map(lambda value: value.strip(" \t"))
targets = st.text(st.characters(min_codepoint=0x21, max_codepoint=0x7E), min_size=1, max_size=40)
line_ends = st.sampled_from([b"\r\n", b"\n"])


@st.composite
def chunked(draw: st.DrawFn, body: bytes) -> bytes:
    """`body` as chunks cut at random points, with random extensions and trailers."""
    cuts = sorted(draw(st.lists(st.integers(0, len(body)), max_size=4)))
    out = b""
    for start, end in zip([0, *cuts], [*cuts, len(body)]):
        if end > start:
            size = draw(st.sampled_from(["{:x}", "{:X}", "0{:x}"])).format(end - start).encode()
            extension = draw(st.sampled_from([b"", b";a=b", b" ;x"]))
            out += size + extension + draw(line_ends) + body[start:end] + draw(line_ends)
    out += b"0" + draw(line_ends)
    for name, value in draw(st.lists(st.tuples(header_names, header_values), max_size=2)):
        out += f"{name}: {value}".encode("latin-1") + draw(line_ends)
    return out + draw(line_ends)


@st.composite
def requests(draw: st.DrawFn) -> tuple[bytes, HttpRequest]:
    """A valid request as bytes, and the HttpRequest it must parse to."""
    method = draw(st.sampled_from(["GET", "POST", "PUT"]) | tokens)
    target = "/" + draw(targets)
    version = draw(st.sampled_from(["HTTP/1.1", "HTTP/1.0"]))
    fields = draw(st.lists(st.tuples(header_names, header_values), max_size=5))
    connection = draw(st.sampled_from([None, "close", "keep-alive", "Keep-Alive, foo"]))
    body = draw(st.binary(max_size=60))
    framing = draw(st.sampled_from(["length", "chunked"] if body else ["none", "length"]))
    if connection is not None:
        fields.append(("Connection", connection))
    if framing == "length":
        fields.append(("Content-Length", str(len(body))))
    elif framing == "chunked":
        fields.append(("Transfer-Encoding", "chunked"))
    fields = draw(st.permutations(fields))

    data = draw(st.sampled_from([b"", b"\r\n"]))  # an empty line before a request is allowed
    data += f"{method} {target} {version}".encode() + draw(line_ends)
    headers: dict[str, str] = {}
    for name, value in fields:
        space = draw(st.sampled_from(["", " ", "\t "]))
        data += f"{name}:{space}{value}".encode("latin-1") + draw(line_ends)
        key = name.lower()
        headers[key] = headers[key] + ", " + value if key in headers else value
    data += draw(line_ends)
    data += draw(chunked(body)) if framing == "chunked" else body
    tokens_ = {t.strip().lower() for t in (connection or "").split(",")}
    keep_alive = "close" not in tokens_ and (version == "HTTP/1.1" or "keep-alive" in tokens_)
    return data, HttpRequest(method, target, version, headers, body, keep_alive)


@settings(max_examples=300, deadline=None)
@given(st.lists(requests(), min_size=1, max_size=6), st.data())
def test_any_split_of_a_stream_gives_the_same_requests(
    stream: list[tuple[bytes, HttpRequest]], data: st.DataObject
) -> None:
    whole = b"".join(raw for raw, _ in stream)
    expected = [request for _, request in stream]
    assert read_all(whole) == expected
    cuts = data.draw(st.lists(st.integers(0, len(whole)), max_size=30))
    assert read_split(whole, cuts) == expected


# --- routes -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("request_", "route"),
    [
        (get("/drpc/exclaim/hello"), ("exclaim", "hello")),
        (get("/drpc/exclaim/hello%20world"), ("exclaim", "hello world")),
        (get("/drpc/exclaim/a+b"), ("exclaim", "a+b")),
        (get("/drpc/exclaim/a%2Fb"), ("exclaim", "a/b")),
        (get("/drpc/exclaim/a%2fb%25"), ("exclaim", "a/b%")),
        (get("/drpc/exclaim/%C3%A9t%C3%A9%20%E2%82%AC"), ("exclaim", "été €")),
        (get("/drpc/exclaim/\xc3\xa9"), ("exclaim", "é")),  # raw UTF-8 bytes, as Latin-1 text
        (get("/drpc/exclaim/hello?y=1&z=%zz"), ("exclaim", "hello")),
        (get("/drpc/exclaim/hello/"), ("exclaim", "hello")),
        (get("/drpc/exclaim"), ("exclaim", "")),
        (get("/drpc/exclaim/"), ("exclaim", "")),
        (get("/drpc/exclaim?x=1"), ("exclaim", "")),
        (get("/drpc/ex%20claim/x"), ("ex claim", "x")),
        (get("http://127.0.0.1:3774/drpc/exclaim/x"), ("exclaim", "x")),
        (get("/drpc/f/x", version="HTTP/1.0"), ("f", "x")),
        (get("/drpc/exclaim", method="POST", body=b"hello world"), ("exclaim", "hello world")),
        (get("/drpc/exclaim", method="POST"), ("exclaim", "")),
        (get("/drpc/exclaim?x=1", method="POST", body="é".encode()), ("exclaim", "é")),
        (get("/drpc/exclaim/", method="POST", body=b"a%20b+c"), ("exclaim", "a%20b+c")),
    ],
)
def test_drpc_routes(request_: HttpRequest, route: tuple[str, str]) -> None:
    assert drpc_route(request_) == route


@pytest.mark.parametrize(
    "target",
    [
        "/",
        "/drpc",
        "/drpc/",
        "/drpc//",
        "/drpc//x",
        "/drpc/f//",
        "/drpc/f/a/b",
        "/drpc/f/a/b/",
        "/DRPC/f",
        "/drpcx/f",
        "/other/f/a",
        "*",
        "ftp://h/drpc/f",
        "http://h",
    ],
)
def test_other_paths_are_404(target: str) -> None:
    for method in ("GET", "POST", "PUT"):
        with pytest.raises(HttpError) as caught:
            drpc_route(get(target, method=method))
        assert (caught.value.status, caught.value.close) == (404, False)


@pytest.mark.parametrize(
    ("method", "target", "allow"),
    [
        ("PUT", "/drpc/f", "GET, POST"),
        ("DELETE", "/drpc/f", "GET, POST"),
        ("HEAD", "/drpc/f", "GET, POST"),
        ("get", "/drpc/f", "GET, POST"),  # methods are case-sensitive
        ("POST", "/drpc/f/a", "GET"),
        ("OPTIONS", "/drpc/f/a", "GET"),
    ],
)
def test_other_methods_are_405_with_allow(method: str, target: str, allow: str) -> None:
    with pytest.raises(HttpError) as caught:
        drpc_route(get(target, method=method))
    error = caught.value
    assert (error.status, error.close, error.headers) == (405, False, (("Allow", allow),))
    assert method in error.message


@pytest.mark.parametrize(
    ("request_", "words"),
    [
        (get("/drpc/f/%zz"), "invalid percent-encoding"),
        (get("/drpc/f/a%4"), "invalid percent-encoding"),
        (get("/drpc/f/a%"), "invalid percent-encoding"),
        (get("/drpc/f%/a"), "invalid percent-encoding"),
        (get("/drpc/f/%ff"), "not UTF-8"),
        (get("/drpc/f/%C3"), "not UTF-8"),
        (get("/drpc/f/\xff"), "not UTF-8"),
        (get("/drpc/%80/a"), "not UTF-8"),
        (get("/drpc/f", method="POST", body=b"\xff\xfe"), "not UTF-8"),
        (get("/drpc/f", method="POST", body=b"\xed\xa0\x80"), "not UTF-8"),  # a surrogate
    ],
)
def test_bad_arguments_are_400(request_: HttpRequest, words: str) -> None:
    with pytest.raises(HttpError) as caught:
        drpc_route(request_)
    assert (caught.value.status, caught.value.close) == (400, False)
    assert words in caught.value.message


def test_a_parsed_request_routes() -> None:
    request = read_one(b"GET /drpc/exclaim/caf%C3%A9 HTTP/1.1\r\nHost: h\r\n\r\n")
    assert drpc_route(request) == ("exclaim", "café")
    request = read_one(b"POST /drpc/exclaim HTTP/1.1\r\nContent-Length: 5\r\n\r\ncaf\xc3\xa9")
    assert drpc_route(request) == ("exclaim", "café")


# --- responses --------------------------------------------------------------------------------


def test_text_response() -> None:
    assert text_response(200, "hello!", keep_alive=True) == (
        b"HTTP/1.1 200 OK\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: 6\r\n"
        b"Connection: keep-alive\r\n\r\nhello!"
    )
    response = text_response(200, "été\ud800", keep_alive=False)
    head, body = response.split(b"\r\n\r\n", 1)
    assert body == "été?".encode()
    assert b"Content-Length: 6\r\n" in head and head.endswith(b"Connection: close")


def _parse(response: bytes) -> tuple[str, dict[str, str], bytes]:
    head, body = response.split(b"\r\n\r\n", 1)
    status, *lines = head.decode("latin-1").split("\r\n")
    headers = dict(line.split(": ", 1) for line in lines)
    assert int(headers["Content-Length"]) == len(body)
    return status, headers, body


def test_error_response() -> None:
    status, headers, body = _parse(
        error_response(504, "SERVER_TIMEOUT", "no answer in 600 s", keep_alive=True)
    )
    assert status == "HTTP/1.1 504 Gateway Timeout"
    assert headers["Content-Type"] == "application/json"
    assert headers["Connection"] == "keep-alive"
    assert json.loads(body) == {"error": "SERVER_TIMEOUT", "errorMessage": "no answer in 600 s"}

    status, headers, body = _parse(
        error_response(
            503,
            "SERVER_BUSY",
            '1024 pending: "é" \ud800',
            keep_alive=False,
            extra_headers=[("Retry-After", "1")],
        )
    )
    assert status == "HTTP/1.1 503 Service Unavailable"
    assert (headers["Retry-After"], headers["Connection"]) == ("1", "close")
    assert json.loads(body)["errorMessage"] == '1024 pending: "é" \ud800'


def test_http_error_response() -> None:
    status, headers, body = _parse(
        http_error_response(
            HttpError(405, "method PUT", close=False, headers=[("Allow", "GET")]), keep_alive=True
        )
    )
    assert status == "HTTP/1.1 405 Method Not Allowed"
    assert (headers["Allow"], headers["Connection"]) == ("GET", "keep-alive")
    assert json.loads(body) == {"error": "BAD_REQUEST", "errorMessage": "method PUT"}
    status, headers, _ = _parse(
        http_error_response(HttpError(431, "too big", close=True), keep_alive=True)
    )
    assert status == "HTTP/1.1 431 Request Header Fields Too Large"
    assert headers["Connection"] == "close"


@pytest.mark.parametrize(
    ("status", "reason"),
    [(400, "Bad Request"), (404, "Not Found"), (413, "Request Entity Too Large"),
     (500, "Internal Server Error"), (501, "Not Implemented"),
     (505, "HTTP Version Not Supported"), (599, "Unknown")],
)  # fmt: skip
def test_reason_phrases(status: int, reason: str) -> None:
    response = error_response(status, "X", "y", keep_alive=True)
    assert response.startswith(f"HTTP/1.1 {status} {reason}\r\n".encode())


def test_a_bad_response_header_is_refused() -> None:
    with pytest.raises(ValueError, match="bad response header"):
        error_response(503, "X", "y", keep_alive=True, extra_headers=[("Retry-After", "1\r\nX: y")])
    with pytest.raises(ValueError, match="three digits"):
        text_response(20, "x", keep_alive=True)
