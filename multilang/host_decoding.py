"""Decoding host -> component: what the client libraries read their stdin with (`HostDecoder`,
`host_message`). Apart from the host's decoder (multilang/component_decoding.py), so that a
component loads only the side it reads; the shared basics (framing, parsing whole reads) are
multilang/codec.py's.
"""

from __future__ import annotations

from typing import Any

from .codec import (
    DEFAULT_MAX_FRAME,
    Framer,
    ProtocolError,
    as_bytes,
    loads,
    loads_batch,
    whole_frames,
)
from .messages import (
    DEFAULT_STREAM,
    Handshake,
    HostMessage,
    SpoutCommand,
    TaskIds,
    TupleMessage,
)

# tuple.__new__ skips a NamedTuple's generated __new__, which costs more than decoding the fields
_new_tuple = tuple.__new__


def host_message(value: Any, tuple_type: type[TupleMessage] = TupleMessage) -> HostMessage:
    """One parsed JSON value from the host -> its typed message, or ProtocolError. Input tuples
    are built as `tuple_type`: TupleMessage or a subclass that adds no fields."""
    if type(value) is list:
        return _new_tuple(TaskIds, (value,))
    if type(value) is not dict:
        raise ProtocolError("host message is neither an object nor a task-id list", as_bytes(value))
    if "command" in value:
        return _new_tuple(SpoutCommand, (value["command"], value.get("id", "")))
    if "tuple" in value:
        return _new_tuple(
            tuple_type,
            (
                value.get("id"),
                value.get("comp"),
                value.get("stream", DEFAULT_STREAM),
                value.get("task"),
                value["tuple"],
            ),
        )
    if "pidDir" in value:
        return Handshake(value["pidDir"], value.get("conf") or {}, value.get("context") or {})
    raise ProtocolError("unrecognised host message", as_bytes(value))


class HostDecoder:
    """What a client uses to read its stdin: `feed(bytes) -> [message, ...]`.

    A bad message raises ProtocolError (`decoded` = the messages before it); the complete
    messages after it are kept, and the next `feed` (even `feed(b"")`) returns them, so a client
    can log the bad one and carry on. Input tuples are built as `tuple_type` (see host_message),
    so a client can have its own tuple class without copying each message.
    """

    __slots__ = ("_backlog", "_tuple_type", "framer")

    def __init__(
        self, max_frame: int = DEFAULT_MAX_FRAME, tuple_type: type[TupleMessage] = TupleMessage
    ):
        self.framer = Framer(max_frame)
        self._backlog: list[bytes] = []
        self._tuple_type = tuple_type

    def feed(self, data: bytes) -> list[HostMessage]:
        if not self._backlog:  # else the messages kept after a bad one go first
            parsed = whole_frames(self.framer, data)
            if parsed is not None:
                messages = self._messages(parsed[0])
                if messages is not None:
                    self.framer.carry(parsed[1])
                    return messages
        payloads, self._backlog = self._backlog, []
        if data:
            try:
                payloads = payloads + self.framer.feed(data) if payloads else self.framer.feed(data)
            except ProtocolError as exc:  # frame limit: hand over what came before it
                out = self._decode(payloads + exc.decoded)
                raise ProtocolError(exc.reason, exc.raw, out) from None
        return self._decode(payloads)

    def _decode(self, payloads: list[bytes]) -> list[HostMessage]:
        if not payloads:
            return []
        # One ujson call for all payloads (as the host's decoder does); if any payload is not
        # one valid message, the one-by-one path finds it and raises with the right details.
        values = loads_batch(payloads)
        if values is not None:
            messages = self._messages(values)
            if messages is not None:
                return messages
        return self._decode_one_by_one(payloads)

    def _messages(self, values: list[Any]) -> list[HostMessage] | None:
        """Parsed values -> messages; None if one of them is not a valid message."""
        tuple_type = self._tuple_type
        out: list[HostMessage] = []
        append = out.append
        for value in values:
            # the data path's two messages inline, exactly as host_message builds them
            if type(value) is dict:
                if "command" in value:
                    append(_new_tuple(SpoutCommand, (value["command"], value.get("id", ""))))
                    continue
                if "tuple" in value:
                    append(
                        _new_tuple(
                            tuple_type,
                            (
                                value.get("id"),
                                value.get("comp"),
                                value.get("stream", DEFAULT_STREAM),
                                value.get("task"),
                                value["tuple"],
                            ),
                        )
                    )
                    continue
            try:
                append(host_message(value, tuple_type))
            except ProtocolError:
                return None
        return out

    def _decode_one_by_one(self, payloads: list[bytes]) -> list[HostMessage]:
        out: list[HostMessage] = []
        tuple_type = self._tuple_type
        for i, payload in enumerate(payloads):
            try:
                value = loads(payload)
                out.append(host_message(value, tuple_type))
            except (ValueError, ProtocolError) as exc:
                self._backlog = payloads[i + 1 :]
                reason = (
                    exc.reason if isinstance(exc, ProtocolError) else "invalid JSON from the host"
                )
                raise ProtocolError(reason, payload, out) from None
        return out
