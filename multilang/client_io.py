"""The pieces the Python client's classes are built from, apart from the classes: the I/O
constants and the preformatted JSON frames of the data path, `detect_serializer`, the input
`Tuple`, the stand-in for sys.stdout, and the exceptions that end start-up and input.

`READ_SIZE`, `FLUSH_EVERY` and `FLUSH_SECS` size the I/O contract described in
multilang/client_base.py. The frames are written by `multilang.client`'s Bolt and Spout and by the
batch components (multilang/batch.py, multilang/batch_spouts.py).
"""

from __future__ import annotations

import io
import traceback
from typing import TYPE_CHECKING, Any

from .codec import (
    EncodeError,
    dumps,
    frame,
    quick_values_json,
    ujson_dumps,
    values_json,
)
from .messages import INFO, TupleMessage

if TYPE_CHECKING:
    from .client_base import _Component

READ_SIZE = 64 * 1024  # the Linux pipe capacity: one read drains a full pipe
FLUSH_EVERY = 100  # input messages handled between writes when a read brings more
FLUSH_SECS = 0.05  # ... and the longest we keep output back while handling them
SYNC_FRAME = frame(dumps({"command": "sync"}))
# The data path's frames are put together from these constant parts and the JSON of the values
# and ids: a dict and a dumps call per frame cost more than the rest of the emit. The keys and
# values are those the dicts of the general path give (see client_base.py's _send_emit).
_EMIT_HEAD = b'{"command":"emit","tuple":'
_EMIT_END = b',"need_task_ids":false}\nend\n'
_ANCHORED_END = b',"anchors":[%b],"need_task_ids":false}\nend\n'
TRACKED_END = b',"id":%b,"need_task_ids":false}\nend\n'
TRACKED_INT_END = b',"id":%d,"need_task_ids":false}\nend\n'  # the usual message id: a number
_ACK_FRAME = b'{"command":"ack","id":%b}\nend\n'
# How a msgpack map starts (fixmap, map 16, map 32): the host's setup message under msgpack
_MSGPACK_MAP_STARTS = frozenset((*range(0x80, 0x90), 0xDE, 0xDF))


def detect_serializer(first: bytes) -> str:
    """The serializer the host speaks, from the first bytes it writes (its setup message): a
    msgpack map -> "msgpack"; anything else (JSON's `{`, or bytes the JSON decoder will report)
    -> "json"."""
    return "msgpack" if first and first[0] in _MSGPACK_MAP_STARTS else "json"


class Tuple(TupleMessage):
    """An input tuple as user code sees it: `id`, `component`, `stream`, `task`, `values`.

    A TupleMessage underneath (`comp` is the wire name of `component`), built directly by the
    decoder: no copy, no dict.
    """

    __slots__ = ()

    @property
    def component(self) -> str | None:
        return self.comp

    def __repr__(self) -> str:
        return (
            f"Tuple(id={self.id!r}, component={self.comp!r}, stream={self.stream!r}, "
            f"task={self.task!r}, values={self.values!r})"
        )


class EndOfInput(BaseException):
    """The host closed our stdin or stdout. A BaseException so that user code's
    `except Exception` around an emit cannot swallow the end of the process."""


class StdoutToLog(io.TextIOBase):
    """Stands in for sys.stdout: every complete printed line becomes a `log` message."""

    def __init__(self, component: _Component):
        super().__init__()
        self._component = component
        self._partial = ""

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return "utf-8"

    def writable(self) -> bool:
        return True

    def isatty(self) -> bool:
        return False

    def write(self, text: str) -> int:
        if not isinstance(text, str):
            raise TypeError(f"write() argument must be str, not {type(text).__name__}")
        if "\n" not in text:
            self._partial += text
            return len(text)
        lines = (self._partial + text).split("\n")
        self._partial = lines.pop()
        for line in lines:
            self._component.log(line, INFO)
        return len(text)

    def flush(self) -> None:
        if self._partial:
            line, self._partial = self._partial, ""
            self._component.log(line, INFO)


def tuple_id(tup: Any) -> Any:
    """ack/fail/anchors accept a Tuple or the id itself."""
    return tup.id if isinstance(tup, TupleMessage) else tup


def _id_json(value: Any) -> bytes | None:
    """A tuple or message id as JSON, or None if it has none: the caller then takes the general
    path, which raises the usual EncodeError. Our host's tuple ids are decimal strings, signed:
    they skip dumps, as digits and `-` never need escaping."""
    if type(value) is int:
        return b"%d" % value
    if type(value) is str and (value.isdigit() or value[:1] == "-" and value[1:].isdigit()):
        return b'"%b"' % value.encode()
    try:
        return dumps(value).encode("utf-8")
    except (EncodeError, UnicodeEncodeError):
        return None


def _emit_frame(values: list[Any], end: bytes) -> bytes:
    """An emit: the values' JSON between constant parts. The C encoder takes the usual values
    (strings, ints, ...); ujson called here the rest, saving the two Python calls of
    values_json -> dumps on every emit; whatever ujson refuses goes through values_json, which
    writes big ints exactly and raises the usual EncodeError."""
    if quick_values_json is not None:
        data = quick_values_json(values)
        if data is not None:
            return _EMIT_HEAD + data + end
    if ujson_dumps is not None:
        try:
            return _EMIT_HEAD + ujson_dumps(values, False, False, False).encode() + end
        except (OverflowError, TypeError, ValueError):  # UnicodeEncodeError is a ValueError
            pass
    return _EMIT_HEAD + values_json(values) + end


def _format_exception() -> str:
    return traceback.format_exc()


class _StartupError(Exception):
    """The component cannot start (bad handshake, pid file, initialize raised)."""
