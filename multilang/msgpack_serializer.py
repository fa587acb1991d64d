"""The MessagePack serializer (docs/protocol.md, "Serializer plug-in point"): pyleus's wire
format, spoken by pystorm and streamparse with `serializer="msgpack"`. Pure, no I/O; the same
interface as `serializers.JsonSerializer`.

On the wire: back-to-back msgpack values, no `end` lines and no newlines; maps for objects,
arrays for task-id lists. The handshake's context is reduced to `taskid` and `task->component`.

Reading a component (what pyleus's Java serializer does, and where we are kinder):
* an integer `id` in `ack` / `fail`, and integer `anchors`, become their decimal strings: bolt
  tuple ids are strings, and a msgpack bolt has no other way to get that wrong;
* spout message ids in `emit` are kept as they are, so `ack` / `fail` echo the value the spout
  emitted (pyleus's `MessagePackSerializer.java` stringifies those too, which breaks a spout
  whose ids are ints);
* bin inside an emit's `tuple` stays Python bytes: the host writes it as bin to msgpack
  components and as base64 text to JSON ones (codec.dumps), as Storm's msgpack serializer yields
  a Java byte[] and Jackson writes that as base64. Everywhere else (ids, anchors, stream, log
  text, metrics, map keys) bin becomes str (UTF-8), as before; map keys that are not strings,
  extension types and invalid UTF-8 there are a ProtocolError.
"""

from __future__ import annotations

from typing import Any

import msgpack

from . import codec
from .codec import DEFAULT_MAX_FRAME, EncodeError, ProtocolError
from .component_decoding import component_message
from .messages import Ack, ComponentMessage, HostMessage, Pid, SpoutCommand

__all__ = ["MsgpackSerializer", "MsgpackDecoder"]

_SCALARS = frozenset({str, int, float, bool, type(None)})
_RAW_LIMIT = 200  # bytes of an undecodable or oversized message kept for the error report


class _Unsupported(ValueError):
    pass


def _plain(value: Any, keep_bytes: bool = False) -> Any:
    """`value` with every bytes turned into str (kept as bytes with `keep_bytes`, but for map
    keys), checked to hold only what a tuple can carry. Lists and dicts are fixed in place: they
    were just unpacked and belong to nobody else."""
    t = type(value)
    if t in _SCALARS:
        return value
    if t is list:
        for i, item in enumerate(value):
            if type(item) not in _SCALARS:
                value[i] = _plain(item, keep_bytes)
        return value
    if t is dict:
        if any(type(k) is bytes for k in value):
            value = {(k.decode("utf-8") if type(k) is bytes else k): v for k, v in value.items()}
        for k, item in value.items():
            if type(item) not in _SCALARS:
                value[k] = _plain(item, keep_bytes)
        return value
    if t is bytes:
        return value if keep_bytes else value.decode("utf-8")
    raise _Unsupported(f"a value of msgpack type {t.__name__}, which a tuple cannot hold")


def _plain_message(value: dict[Any, Any]) -> dict[str, Any]:
    """A message through `_plain`, but an emit's tuple values keep their bytes."""
    if any(type(k) is bytes for k in value):
        value = {(k.decode("utf-8") if type(k) is bytes else k): v for k, v in value.items()}
    emit = value.get("command") in ("emit", b"emit")
    for k, item in value.items():
        if type(item) not in _SCALARS:
            value[k] = _plain(item, emit and k == "tuple")
    return value


# The bytes that start a bin or an extension value. Bytes read without any of them hold neither,
# so their messages skip the walk through `_plain`: the common case, checked at C speed. (They can
# also occur inside strings and numbers; the walk then finds nothing to change, which is harmless.)
_BIN_OR_EXT = (*range(0xC4, 0xCA), *range(0xD4, 0xD9))


def _may_hold_bin_or_ext(data: bytearray) -> bool:
    return any(b in data for b in _BIN_OR_EXT)  # memchr per byte value: faster than a regex


def _message(value: Any, awaiting_pid: bool, walk: bool) -> ComponentMessage:
    """One unpacked value -> its typed message (component_decoding.component_message after the
    msgpack fixes). `walk`: the value may hold bin or extension values, which `_plain` converts or
    refuses."""
    if type(value) is not dict:
        raise ProtocolError("message is not a msgpack map")
    if walk:
        try:
            value = _plain_message(value)
        except (UnicodeDecodeError, _Unsupported, RecursionError) as exc:
            raise ProtocolError(f"cannot read the message: {exc}") from None
    command = value.get("command")
    if command == "emit":
        anchors = value.get("anchors")
        if type(anchors) is list:
            for i, anchor in enumerate(anchors):
                if type(anchor) is int:
                    anchors[i] = str(anchor)
        elif type(anchors) is int:
            value["anchors"] = str(anchors)
    elif command == "ack" or command == "fail":
        if type(value.get("id")) is int:
            value["id"] = str(value["id"])
    return component_message(value, awaiting_pid)


class MsgpackDecoder:
    """What the host uses to read a msgpack component's stdout: `feed(bytes) -> [message, ...]`,
    the same messages as component_decoding.ComponentDecoder.

    Bounded: no message may be larger than `max_frame` bytes; a bigger one is a ProtocolError as
    soon as `max_frame` bytes of it have arrived, so memory never grows past that. A ProtocolError
    carries the offending bytes (`raw`) and the messages decoded before them (`decoded`); the
    decoder must not be fed after one (the host restarts the process).
    """

    __slots__ = (
        "_unpacker",
        "_buf",
        "_base",
        "_done",
        "max_frame",
        "awaiting_pid",
        "_carried",
        "_carried_len",
        "_data",
    )

    def __init__(self, max_frame: int = DEFAULT_MAX_FRAME, awaiting_pid: bool = True):
        if max_frame < 1:
            raise ValueError("max_frame must be positive")
        self.max_frame = max_frame
        self.awaiting_pid = awaiting_pid
        self._unpacker = msgpack.Unpacker(
            max_buffer_size=max_frame, raw=False, strict_map_key=True, use_list=True
        )
        # The bytes received that are not yet a complete message, kept only to show them in
        # errors; `_base` is the stream offset of its first byte, `_done` the offset just past
        # the last complete message (the unpacker's tell() is not that while it is mid-message:
        # it counts the bytes of an incomplete message it has already parsed).
        self._buf = bytearray()
        self._base = 0
        self._done = 0
        # the last `feed`'s input, for `frames`: the start of a message that earlier reads left
        # incomplete (copied when it completes; its length until then) and the data (a reference)
        self._carried = b""
        self._carried_len = 0
        self._data: bytes = b""

    def frames(self) -> list[bytes]:
        """The bytes of each message the last `feed` returned (or raised with, as `decoded`), in
        order, as the component wrote them. For failure reports: it unpacks them again, so it
        costs nothing until called."""
        # not yet copied if nothing completed it (or a ProtocolError came first): still in _buf
        carried = self._carried or bytes(self._buf[: self._carried_len])
        buf = carried + bytes(self._data)
        unpacker = msgpack.Unpacker(raw=True, strict_map_key=False, max_buffer_size=len(buf) + 1)
        unpacker.feed(buf)
        out: list[bytes] = []
        start = 0
        while True:
            try:
                unpacker.skip()
            except (msgpack.OutOfData, ValueError, TypeError):
                return out
            end = unpacker.tell()
            out.append(buf[start:end])
            start = end

    @property
    def pending(self) -> bytes:
        """Bytes received but not yet part of a complete message."""
        return bytes(self._buf)

    def feed(self, data: bytes) -> list[ComponentMessage]:
        messages: list[ComponentMessage] = []
        self._carried = b""
        self._carried_len = len(self._buf)
        self._data = data
        view = memoryview(data)
        while view:
            # Feed no more than the room left, so the unpacker's buffer never exceeds max_frame
            # and a message may be up to max_frame bytes wherever the reads happen to cut it.
            room = self.max_frame - len(self._buf)
            if room <= 0:
                raise ProtocolError(
                    f"message larger than the {self.max_frame}-byte frame limit",
                    bytes(self._buf[:_RAW_LIMIT]),
                    messages,
                )
            piece, view = view[:room], view[room:]
            try:
                self._unpacker.feed(piece)
            except msgpack.BufferFull:  # cannot happen while `room` is right; stay bounded anyway
                raise ProtocolError(
                    f"message larger than the {self.max_frame}-byte frame limit",
                    bytes(self._buf[:_RAW_LIMIT]),
                    messages,
                ) from None
            self._buf += piece
            self._drain(messages)
        return messages

    def _drain(self, messages: list[ComponentMessage]) -> None:
        unpacker = self._unpacker
        walk = _may_hold_bin_or_ext(self._buf)
        while True:
            start = self._done
            try:
                value = unpacker.unpack()
            except msgpack.OutOfData:
                break
            except (ValueError, TypeError) as exc:  # FormatError, StackError, bad UTF-8, keys
                raise ProtocolError(
                    f"invalid msgpack ({type(exc).__name__}: {exc})",
                    self._slice(start, start + _RAW_LIMIT),
                    messages,
                ) from None
            end = self._done = unpacker.tell()
            if not walk and type(value) is dict and value.get("command") == "ack":
                tuple_id = value.get("id")
                if type(tuple_id) is str:  # the data path's commonest message, decoded inline
                    messages.append(Ack(tuple_id))
                    continue
            try:
                msg = _message(value, self.awaiting_pid, walk)
            except ProtocolError as exc:
                raise ProtocolError(exc.reason, self._slice(start, end), messages) from None
            if type(msg) is Pid:
                self.awaiting_pid = False
            messages.append(msg)
        consumed = self._done - self._base
        if consumed:
            if self._carried_len:  # the message it began completed: `frames` needs its start
                self._carried = bytes(self._buf[: self._carried_len])
                self._carried_len = 0
            del self._buf[:consumed]
            self._base += consumed

    def _slice(self, start: int, end: int) -> bytes:
        return bytes(self._buf[start - self._base : end - self._base])


class MsgpackSerializer:
    """pyleus / pystorm msgpack framing; see serializers.Serializer for the contract."""

    name = "msgpack"

    def __init__(self) -> None:
        # use_bin_type: str as msgpack str, bytes as bin (what every msgpack >= 1.0 reader expects)
        self._packer = msgpack.Packer(use_bin_type=True, autoreset=True)
        self._prefixes: dict[tuple[str | None, str, int], bytes] = {}
        self._task_ids: dict[tuple[int, ...], bytes] = {}

    def _pack(self, value: Any) -> bytes:
        try:
            return self._packer.pack(value)
        except (TypeError, ValueError, OverflowError) as exc:  # UnicodeEncodeError is a ValueError
            raise EncodeError(
                f"cannot encode {codec.shorten(repr(value).encode())} as msgpack: {exc}"
            ) from exc

    def decoder(self, max_frame: int) -> MsgpackDecoder:
        return MsgpackDecoder(max_frame=max_frame, awaiting_pid=True)

    def encode(self, message: HostMessage) -> bytes:
        return self._pack(codec.to_wire(message))

    def spout_command(self, command: str, msg_id: Any) -> bytes:
        return self.encode(SpoutCommand(command, msg_id))

    def handshake_context(self, context: dict[str, Any]) -> dict[str, Any]:
        # pyleus sends only these two. Task ids stay string keys ("1"), as in JSON: pyleus's Java
        # map had int keys, which msgpack >= 1.0 readers (pystorm's included) refuse by default.
        return {
            "taskid": context.get("taskid"),
            "task->component": context.get("task->component", {}),
        }

    def tuple_prefix(self, comp: str | None, stream: str, task: int) -> bytes:
        key = (comp, stream, task)
        prefix = self._prefixes.get(key)
        if prefix is None:
            # a 5-entry fixmap; `tuple_frame` supplies the values and the `id` entry
            pack = self._pack
            prefix = b"".join(
                (
                    b"\x85",
                    pack("comp"),
                    pack(comp),
                    pack("stream"),
                    pack(stream),
                    pack("task"),
                    pack(task),
                    pack("tuple"),
                )
            )
            self._prefixes[key] = prefix
        return prefix

    def values(self, values: list[Any]) -> bytes:
        return self._pack(values)

    @staticmethod
    def tuple_frame(prefix: bytes, values: bytes, tuple_id: int) -> bytes:
        digits = b"%d" % tuple_id
        if len(digits) <= 31:  # always, for 64-bit ids: the id fits a fixstr
            return b"%b%b\xa2id%c%b" % (prefix, values, 0xA0 | len(digits), digits)
        return prefix + values + msgpack.packb("id") + msgpack.packb(digits.decode())

    join_frames = staticmethod(b"".join)

    def task_ids(self, tasks: list[int]) -> bytes:
        key = tuple(tasks)
        data = self._task_ids.get(key)
        if data is None:
            data = self._pack(list(tasks))
            if len(self._task_ids) < 4096:
                self._task_ids[key] = data
        return data
