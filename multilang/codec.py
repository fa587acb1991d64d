"""The multilang JSON codec: bytes <-> typed messages, with no I/O. Here: what both directions
share, and the encoders; each side's decoder has a module of its own, which imports this one.

Framing (Storm's `JsonSerializer.java`; docs/protocol.md, "Framing"): a message is JSON text
followed by a line that is exactly `end`. The host always writes one line of JSON
(`<json>\\nend\\n`); components may spread JSON over several lines and end lines with `\\n`,
`\\r\\n` or `\\r`. `Framer` cuts a byte stream into message payloads; `ComponentDecoder` (the
host's side, multilang/component_decoding.py) and `HostDecoder` (a client's side,
multilang/host_decoding.py) turn payloads into the typed messages of `multilang.messages`.
`encode` turns any message back into bytes.
"""

from __future__ import annotations

import base64
import json
import os
import re
from collections.abc import Callable
from types import ModuleType
from typing import Any

from .messages import (
    DEFAULT_STREAM,
    Ack,
    ComponentMessage,
    Emit,
    Error,
    Fail,
    Handshake,
    HostMessage,
    Log,
    Metrics,
    Pid,
    SpoutCommand,
    Sync,
    TaskIds,
    TupleMessage,
    UnknownCommand,
)

# The optional libraries are modules or None: every use checks which (the C decoders: in
# multilang/component_decoding.py). json_values' signature is the one _speedups.pyi gives it.
_ujson: ModuleType | None
_orjson: ModuleType | None
_c_json_values: Callable[[Any], bytes | None] | None
try:  # ujson is the fast path; the stdlib keeps the clients usable without it
    import ujson as _ujson
except ImportError:  # pragma: no cover - exercised only where ujson is missing
    _ujson = None
# MULTILANG_PURE_PYTHON=1: every speed-up off (component_decoding's too), to compare or rule out
PURE_PYTHON = os.environ.get("MULTILANG_PURE_PYTHON", "") not in ("", "0")
try:  # `pip install 'multilang-host[fast]'`: batch parsing only, see parse_array
    import orjson as _orjson
except ImportError:
    _orjson = None
try:  # built with the package where a C compiler is found (setup.py)
    from ._speedups import json_values as _c_json_values
except ImportError:
    _c_json_values = None
if PURE_PYTHON:
    _orjson = _c_json_values = None
#: The values' JSON bytes, byte for byte what `dumps(values).encode()` writes, for a list of str,
#: int (64 bits), bool and None only; None for anything else, which the caller then encodes the
#: general way. A third of ujson's cost on the values of one emit (multilang/_json_values.c);
#: None itself when the C extension is not there.
quick_values_json = _c_json_values


DEFAULT_MAX_FRAME = 16 * 1024 * 1024
END = b"\nend\n"
# An `end` line: at the start of a line (the buffer start or after \n / \r) and followed by a
# line terminator. The `(?<![^\r\n])` look-behind also matches at the buffer's start.
_END_LINE = re.compile(rb"(?<![^\r\n])end(?:\r\n|\r|\n)")


class ProtocolError(ValueError):
    """Bytes that break the protocol. `raw` holds the offending bytes, `decoded` the messages that
    were complete before them (the caller should handle those first)."""

    def __init__(self, reason: str, raw: bytes = b"", decoded: list[Any] | None = None):
        self.reason = reason
        self.raw = bytes(raw)
        self.decoded = decoded or []
        super().__init__(f"{reason}: {shorten(self.raw)}" if raw else reason)


class EncodeError(ValueError):
    """A value that cannot be written as JSON (e.g. a lone surrogate or a non-JSON type)."""


def shorten(raw: bytes, limit: int = 200, newlines: bool = False) -> str:
    """Bytes for an error message or a failure report: `printable`, cut after `limit` bytes, with
    the total size when cut: `{"command":"em… (5000 bytes in all)`."""
    text = printable(raw[:limit], newlines)
    if len(raw) > limit:
        text += f"… ({len(raw)} bytes in all)"
    return text


def printable(data: bytes, newlines: bool = False) -> str:
    """Any bytes as readable text that shows each of them, on one line: UTF-8 text as it is; a
    byte that is not UTF-8 (msgpack's binary, invalid text) as `\\xff`; control and other
    unprintable characters escaped as Python writes them (`\\x00`, `\\n`, `\\u2028`), except
    `\\n` when `newlines` (for a reader that shows text line by line). A backslash is left as it
    is: in JSON it only ever starts an escape of JSON's own, never `\\x`."""
    text = data.decode("utf-8", "backslashreplace")
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() or (newlines and c == "\n") else _escape(c) for c in text)


def _escape(c: str) -> str:
    """One unprintable character; `\\xNN` only below 0x80, so that `\\x80`-`\\xff` always
    mean a byte that was not UTF-8 (`printable`)."""
    code = ord(c)
    if c in "\n\r\t":
        return repr(c)[1:-1]
    if code < 0x80:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


# ---- JSON ---------------------------------------------------------------------------------------


def loads(payload: bytes | str) -> Any:
    """Parse one JSON value. Falls back to the stdlib for what ujson refuses but Storm accepts
    (integers beyond 64 bits, NaN)."""
    if _ujson is not None:
        try:
            return _ujson.loads(payload)
        except (ValueError, OverflowError):
            pass
    return json.loads(payload)


def _positional_ujson_dumps() -> Callable[..., str] | None:
    """ujson.dumps, if passing our options positionally writes byte for byte what the keyword
    call writes; else None. Keyword arguments cost ujson about 500 ns a call, more than encoding
    a small tuple; the positional order is ujson's (obj, ensure_ascii, encode_html_chars,
    escape_forward_slashes), checked here once, so another ujson version falls back to keywords."""
    if _ujson is None:
        return None
    probe = ["é/\u2028<a href='x'>&amp;</a>", 0.1, 1 / 3, -7, None, True, {"k->v": [1.5e300]}]
    try:
        positional = _ujson.dumps(probe, False, False, False)
        if (
            positional == _ujson.dumps(probe, ensure_ascii=False, escape_forward_slashes=False)
            and json.loads(positional) == probe
        ):
            positional_dumps: Callable[..., str] = _ujson.dumps
            return positional_dumps
    except (TypeError, ValueError):
        pass
    return None


#: ujson.dumps, to be called as `ujson_dumps(value, False, False, False)` (what `dumps` writes,
#: minus its fallbacks: OverflowError for ints beyond 64 bits), or None. For hot paths that cannot
#: afford the extra call of `dumps`.
ujson_dumps = _positional_ujson_dumps()


def dumps(value: Any) -> str:
    """Compact single-line JSON, non-ASCII kept as UTF-8, '/' unescaped; bytes (a msgpack
    component's bin values, docs/protocol.md §11) as base64 text."""
    try:
        if _ujson is not None:
            try:
                if ujson_dumps is not None:
                    return ujson_dumps(value, False, False, False)
                text: str = _ujson.dumps(value, ensure_ascii=False, escape_forward_slashes=False)
                return text
            except OverflowError:  # ints beyond 64 bits: the stdlib writes them exactly
                pass
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=True)
    except (TypeError, ValueError) as exc:
        error = exc
    if _holds_bytes(value):  # only after a failure, off the hot path: values rarely hold bytes
        try:
            return json.dumps(
                value,
                ensure_ascii=False,
                separators=(",", ":"),
                allow_nan=True,
                default=_bytes_as_base64,
            )
        except (TypeError, ValueError) as exc:
            error = exc
    raise EncodeError(f"cannot encode {shorten(repr(value).encode())} as JSON: {error}") from error


def _holds_bytes(value: Any) -> bool:
    t = type(value)
    if t is bytes:
        return True
    if t is list or t is tuple:
        return any(_holds_bytes(v) for v in value)
    if t is dict:
        return any(_holds_bytes(v) for v in value.values())
    return False


def _bytes_as_base64(value: Any) -> str:
    """Bytes in JSON (a msgpack component's bin, docs/protocol.md §11): base64 text, as Storm's
    Jackson writes a Java byte[]. Anything else stays an error."""
    if type(value) is bytes:
        return base64.b64encode(value).decode("ascii")
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


def frame(text: str) -> bytes:
    try:
        return text.encode("utf-8") + END
    except UnicodeEncodeError as exc:
        raise EncodeError(f"cannot encode {text[:200]!r} as UTF-8: {exc}") from exc


# ---- framing ------------------------------------------------------------------------------------


class Framer:
    """Cuts a byte stream into message payloads at `end` lines. Incremental and bounded: a frame
    larger than `max_frame` bytes is a ProtocolError, never an unbounded buffer."""

    __slots__ = ("_buf", "_scan", "max_frame")

    def __init__(self, max_frame: int = DEFAULT_MAX_FRAME):
        self._buf = b""
        self._scan = 0  # where to resume looking for `end` in an incomplete frame
        self.max_frame = max_frame

    @property
    def pending(self) -> bytes:
        """Bytes received but not yet part of a complete frame."""
        return self._buf

    def carry(self, rest: bytes) -> None:
        """Hold `rest`, the bytes after the last complete frame, after a caller that parsed the
        complete frames itself (the decoders' one-call fast path)."""
        self._buf = rest
        self._scan = max(0, len(rest) - len(END))

    def feed(self, data: bytes) -> list[bytes]:
        buf = self._buf + data if self._buf else data
        if b"\r" in buf:
            payloads, rest = self._split_general(buf)
        else:
            payloads, rest = self._split_lf(buf)
        # On a frame-limit error, `decoded` carries the complete payloads before the bad one so
        # that the decoders can still hand over the messages that preceded it.
        for i, payload in enumerate(payloads):
            if len(payload) > self.max_frame:
                self._buf = rest
                raise ProtocolError(
                    f"message larger than the {self.max_frame}-byte frame limit",
                    payload[:200],
                    payloads[:i],
                )
        if len(rest) > self.max_frame:
            self._buf = b""
            raise ProtocolError(
                f"no `end` line within the {self.max_frame}-byte frame limit", rest[:200], payloads
            )
        self._buf = rest
        return payloads

    def _split_lf(self, buf: bytes) -> tuple[list[bytes], bytes]:
        # Fast path for the usual `\n`-only stream: one C-level split per chunk.
        parts = buf.split(END)
        rest = parts.pop()
        out = []
        for part in parts:
            # Every part starts at a line start, so leading `end` lines are empty messages:
            # "\nend\nend\n" leaves "end\n..." at the start of the next part, and a part that is
            # just "end" is an empty message followed by another (the separator's `end`).
            while part.startswith(b"end\n"):
                out.append(b"")
                part = part[4:]
            if part == b"end":
                out.append(b"")
                part = b""
            out.append(part)
        while rest.startswith(b"end\n"):  # empty messages right after the last one
            out.append(b"")
            rest = rest[4:]
        self._scan = max(0, len(rest) - 5)
        return out, rest

    def _split_general(self, buf: bytes) -> tuple[list[bytes], bytes]:
        out = []
        start = 0
        search_from = min(self._scan, len(buf))
        while True:
            m = _END_LINE.search(buf, search_from)
            if m is None:
                break
            out.append(buf[start : m.start()])
            start = search_from = m.end()
        rest = buf[start:]
        self._scan = max(0, len(rest) - 5)
        return out, rest


# ---- parsing whole reads (both decoders) --------------------------------------------------------


def as_bytes(raw: Any) -> bytes:
    if isinstance(raw, (bytes, bytearray)):
        return bytes(raw)
    try:
        return dumps(raw).encode("utf-8", "replace")
    except EncodeError:
        return repr(raw).encode()


def whole_frames(framer: Framer, data: bytes) -> tuple[list[Any], bytes] | None:
    """Both decoders' fast path, for the usual stream of one-line frames and `\\n` only: the
    values of every complete frame in the framer's bytes plus `data`, parsed by one call, and the
    bytes after them; the framer is left as it is. None for anything else (a `\\r`, the frame
    limit, an empty message, a frame spread over lines with `end` inside, bad JSON): the caller
    then takes the frame-by-frame path, which says what is wrong."""
    carried = framer.pending
    # only when a frame ends in this read (perhaps across the boundary with what the framer
    # holds): not while a long frame comes in over many reads, which this would copy each time
    if END not in data and not (carried and END in carried[-4:] + data[:4]):
        return None
    buf = carried + data if carried else data
    cut = buf.rfind(END)
    if cut < 0 or cut > framer.max_frame or len(buf) - cut > framer.max_frame or b"\r" in buf:
        return None
    body = buf[:cut]
    values = _loads_joined(body, body.count(END) + 1)
    return None if values is None else (values, buf[cut + len(END) :])


def _number_shapes() -> bytes:
    """A bytes.translate table: digits and `-` -> `0`; what may come just before a JSON number (`[`,
    `,`, `:`, whitespace) -> `:`; anything else -> `x`."""
    table = bytearray(b"x" * 256)
    for c in b"-0123456789":
        table[c] = ord("0")
    for c in b"[,: \t\n\r":
        table[c] = ord(":")
    return bytes(table)


_NUMBER_SHAPES = _number_shapes()
# A number of 19 digits or more may not fit in 64 bits (a negative one: its `-` counts as a digit).
# Digits inside strings (our tuple ids are signed 64-bit decimal strings) follow a `"` or `"-`, so
# they do not look like this; a string that holds such a run after a space or a comma only costs its
# batch the slower parser.
_LONG_NUMBER = b":" + b"0" * 19


def parse_array(text: bytes) -> list[Any]:
    """One JSON array, by orjson when it is installed and can be trusted with `text`, else by
    ujson. orjson parses our batches 2.5 times as fast, but reads integers beyond 64 bits as
    floats, silently (Storm reads them exactly); it never sees a batch that may hold one. What
    orjson refuses and ujson takes (NaN, 1e400, lone surrogates) is left to ujson too, so the
    values never depend on which library is installed. ValueError / OverflowError if ujson
    cannot parse it either."""
    if _orjson is not None and _LONG_NUMBER not in text.translate(_NUMBER_SHAPES):
        try:
            values: list[Any] = _orjson.loads(text)
            return values
        except ValueError:
            pass
    assert _ujson is not None  # the callers parse frame by frame without it
    values = _ujson.loads(text)
    return values


def _loads_joined(body: bytes, count: int) -> list[Any] | None:
    """`count` JSON texts separated by END -> their values, or None (the caller then parses frame
    by frame with `loads`, which also takes what ujson refuses)."""
    if _ujson is None:
        return None
    try:
        values = parse_array(b"[" + body.replace(END, b",") + b"]")
    except (ValueError, OverflowError):
        return None
    return values if len(values) == count else None


def loads_batch(payloads: list[bytes]) -> list[Any] | None:
    """Every payload parsed by one ujson call over `[p1,p2,...]` (a call per message costs more
    than the parsing), or None when that fails or yields a different number of values, i.e.
    when some payload is not exactly one JSON value; the caller then parses them one by one."""
    if len(payloads) == 1 or _ujson is None:
        try:
            return [loads(payloads[0])] if len(payloads) == 1 else None
        except ValueError:
            return None
    try:
        values = parse_array(b"[" + b",".join(payloads) + b"]")
    except (ValueError, OverflowError):
        return None
    return values if len(values) == len(payloads) else None


# ---- encoding -----------------------------------------------------------------------------------


def _emit_dict(m: Emit) -> dict[str, Any]:
    d: dict[str, Any] = {"command": "emit", "tuple": m.values}
    if m.stream != DEFAULT_STREAM:
        d["stream"] = m.stream
    if m.anchors:
        d["anchors"] = list(m.anchors)
    if m.task is not None:
        d["task"] = m.task
    if not m.need_task_ids:
        d["need_task_ids"] = False
    if m.id is not None:
        d["id"] = m.id
    return d


_TO_WIRE: dict[type, Callable[[Any], Any]] = {
    Handshake: lambda m: {"pidDir": m.pid_dir, "conf": m.conf, "context": m.context},
    TupleMessage: lambda m: {
        "id": m.id,
        "comp": m.comp,
        "stream": m.stream,
        "task": m.task,
        "tuple": m.values,
    },
    SpoutCommand: lambda m: {"command": m.command, "id": m.id},
    TaskIds: lambda m: list(m.tasks),
    Pid: lambda m: {"pid": m.pid, "ext": list(m.ext)} if m.ext else {"pid": m.pid},
    Emit: _emit_dict,
    Ack: lambda m: {"command": "ack", "id": m.id},
    Fail: lambda m: {"command": "fail", "id": m.id},
    Log: lambda m: {"command": "log", "msg": m.msg, "level": m.level},
    Error: lambda m: {"command": "error", "msg": m.msg},
    Metrics: lambda m: {"command": "metrics", "name": m.name, "params": m.params},
    Sync: lambda m: {"command": "sync"},
    UnknownCommand: lambda m: m.raw,
}


def to_wire(message: HostMessage | ComponentMessage) -> Any:
    """The JSON value (dict or list) of a message, as it goes on the wire."""
    return _TO_WIRE[type(message)](message)


def encode(message: HostMessage | ComponentMessage) -> bytes:
    """One message -> `<single-line json>\\nend\\n` (UTF-8). Raises EncodeError."""
    return frame(dumps(to_wire(message)))


class TupleEncoder:
    """Writes bolt input tuples without building a dict per tuple: the JSON that depends only on
    (source component, stream, source task) is cached, and each copy is one bytes format.

    Tuple ids are ints in the host and decimal strings on the wire (Storm's ids are strings)."""

    __slots__ = ("_prefixes",)

    def __init__(self) -> None:
        self._prefixes: dict[tuple[str | None, str, int], bytes] = {}

    def prefix(self, comp: str | None, stream: str, task: int) -> bytes:
        key = (comp, stream, task)
        prefix = self._prefixes.get(key)
        if prefix is None:
            prefix = (
                f'{{"comp":{dumps(comp)},"stream":{dumps(stream)},"task":{task:d},"tuple":'
            ).encode()
            self._prefixes[key] = prefix
        return prefix

    def encode(
        self, tuple_id: int, comp: str | None, stream: str, task: int, values_json: bytes
    ) -> bytes:
        """`values_json`: the tuple's values as UTF-8 JSON (see `values_json`)."""
        return tuple_frame(self.prefix(comp, stream, task), values_json, tuple_id)


def tuple_frame(prefix: bytes, values_json: bytes, tuple_id: int) -> bytes:
    """One input tuple: a cached `TupleEncoder.prefix`, the values, and the tuple's id."""
    return b'%b%b,"id":"%d"}\nend\n' % (prefix, values_json, tuple_id)


def values_json(values: list[Any]) -> bytes:
    """A tuple's values as single-line UTF-8 JSON, to be shared by every copy of the tuple."""
    if ujson_dumps is not None:  # once per routed tuple: no call through `dumps`
        try:
            return ujson_dumps(values, False, False, False).encode("utf-8")
        except (OverflowError, TypeError, ValueError):
            pass  # `dumps` has the fallbacks and the error that says what is wrong
    try:
        return dumps(values).encode("utf-8")
    except UnicodeEncodeError as exc:
        raise EncodeError(
            f"cannot encode {shorten(repr(values).encode())} as UTF-8: {exc}"
        ) from exc
