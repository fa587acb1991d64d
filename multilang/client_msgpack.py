"""The Python client's MessagePack side (docs/protocol.md §11): what a component built on
`multilang.client` speaks when the host runs it with `serializer: msgpack`.

No flag is needed in the component: `component._Component._handshake` looks at the first byte the
host writes (`client_io.detect_serializer`), and for msgpack switches the instance to `msgpack_class(type(self))`, a
subclass made once per class that overrides only how messages are written and read. The JSON
code paths are not touched, so they cost nothing more for this.

The framing is pystorm's (`pystorm/serializers/msgpack_serializer.py`) and what the host's
`multilang/msgpack_serializer.py` reads: back-to-back msgpack values, no `end` lines; a map per
message, an array for a task-id list. str goes as msgpack str and `bytes` as bin, and bin comes
back as `bytes`, so a tuple value may be bytes end to end (the host writes it as base64 text to
JSON components).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import msgpack

from .client import Bolt, Spout
from .client_base import _Component
from .codec import DEFAULT_MAX_FRAME, EncodeError, ProtocolError, shorten
from .host_decoding import host_message
from .messages import (
    DEFAULT_STREAM,
    HostMessage,
    TupleMessage,
)

__all__ = ["MsgpackHostDecoder", "msgpack_class", "pack"]


class MsgpackHostDecoder:
    """A client's reader of host messages under msgpack; the interface of host_decoding.HostDecoder.

    A value that is not a host message raises ProtocolError (`decoded`: the messages before it)
    and the values after it are kept for the next `feed` (even `feed(b"")`). Bytes that are not
    msgpack, or a message beyond `max_frame`, raise ProtocolError and drop what was buffered:
    a msgpack stream cannot be resynchronised, and the host never writes such bytes.
    """

    __slots__ = ("_unpacker", "_backlog", "_tuple_type", "max_frame")

    def __init__(
        self, max_frame: int = DEFAULT_MAX_FRAME, tuple_type: type[TupleMessage] = TupleMessage
    ):
        self.max_frame = max_frame
        self._tuple_type = tuple_type
        self._backlog: list[Any] = []
        self._unpacker = self._new_unpacker()

    def _new_unpacker(self) -> msgpack.Unpacker:
        return msgpack.Unpacker(
            raw=False, strict_map_key=False, use_list=True, max_buffer_size=self.max_frame
        )

    def feed(self, data: bytes) -> list[HostMessage]:
        values, self._backlog = self._backlog, []
        if data:
            try:
                self._unpacker.feed(data)
                values.extend(self._unpacker)
            except (msgpack.BufferFull, ValueError, TypeError) as exc:
                self._unpacker = self._new_unpacker()
                out = self._messages(values)
                raise ProtocolError(
                    f"invalid msgpack from the host ({type(exc).__name__}: {exc})",
                    bytes(data[:200]),
                    out,
                ) from None
        return self._messages(values)

    def _messages(self, values: list[Any]) -> list[HostMessage]:
        out: list[HostMessage] = []
        tuple_type = self._tuple_type
        for i, value in enumerate(values):
            try:
                out.append(host_message(value, tuple_type))
            except ProtocolError as exc:
                self._backlog = values[i + 1 :]
                raise ProtocolError(exc.reason, exc.raw, out) from None
        return out


_packer = msgpack.Packer(use_bin_type=True, autoreset=True)


def pack(message: Any) -> bytes:
    """One message as msgpack (str as str, bytes as bin). EncodeError for what msgpack cannot
    hold (an object, an int beyond 64 bits, a lone surrogate)."""
    try:
        return _packer.pack(message)
    except (TypeError, ValueError, OverflowError) as exc:  # UnicodeEncodeError is a ValueError
        raise EncodeError(
            f"cannot encode {shorten(repr(message).encode())} as msgpack: {exc}"
        ) from exc


_SYNC = pack({"command": "sync"})


def _no_json(value: Any) -> None:
    return None  # no preformatted JSON frames under msgpack: every message goes through `pack`


class _MsgpackBolt(Bolt):
    """Bolt writing msgpack: only the framing differs (component._Component._pack)."""

    _sync_frame = _SYNC
    _tuple_id_json = staticmethod(_no_json)
    _idle_emit_end = None

    def _pack(self, message: Any) -> bytes:
        return pack(message)


class _MsgpackSpout(Spout):
    """Spout writing msgpack: only the framing differs, and `emit` skips the JSON fast path."""

    _sync_frame = _SYNC

    def _pack(self, message: Any) -> bytes:
        return pack(message)

    def emit(
        self,
        values: Iterable[Any],
        id: Any = None,
        stream: str = DEFAULT_STREAM,
        direct_task: int | None = None,
        need_task_ids: bool = False,
    ) -> list[int] | None:
        wire: dict[str, Any] = {"command": "emit", "tuple": list(values)}
        if id is not None:
            wire["id"] = id
        if stream != DEFAULT_STREAM:
            wire["stream"] = stream
        return self._send_emit(wire, direct_task, need_task_ids)


_classes: dict[type, type] = {}


def msgpack_class(cls: type[_Component]) -> type[_Component]:
    """`cls` speaking msgpack: a subclass whose MRO puts the msgpack overrides just above the
    library's Bolt / Spout, below the user's classes, so a user's `emit` override that calls
    `super().emit` still reaches the msgpack one."""
    made = _classes.get(cls)
    if made is None:
        side: type = _MsgpackBolt if issubclass(cls, Bolt) else _MsgpackSpout
        if not issubclass(cls, (Bolt, Spout)):
            raise TypeError(f"{cls.__name__} is neither a Bolt nor a Spout")
        if issubclass(side, cls):  # Bolt or Spout itself
            made = side
        else:
            made = type(cls.__name__, (cls, side), {"__module__": cls.__module__})
            made.__qualname__ = cls.__qualname__
        _classes[cls] = made
    return made
