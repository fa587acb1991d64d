"""Serializers: how one component's messages look on its pipes (`topology.multilang.serializer`;
docs/protocol.md, "Serializer plug-in point"). Pure, no I/O.

The host picks one per component (`serializer: json | msgpack`) and talks to each task through it:
decoding what the task writes, encoding what the host writes, and writing bolt input tuples in three
cached parts (a per-(source, stream, task) prefix, the values, the id) so a tuple that goes to many
tasks is serialized once.
"""

from __future__ import annotations

from typing import Any, Protocol

from . import codec
from .component_decoding import ComponentDecoder
from .messages import ComponentMessage, HostMessage, SpoutCommand


class MessageDecoder(Protocol):
    """An incremental decoder of one process's stdout."""

    def feed(self, data: bytes) -> list[ComponentMessage]:
        """The messages completed by `data`, in order; codec.ProtocolError (with `.raw` and
        `.decoded`) for bytes that break the protocol."""


class Serializer(Protocol):
    name: str

    def decoder(self, max_frame: int) -> MessageDecoder:
        """A fresh decoder for one process's stdout (frames of at most `max_frame` bytes)."""

    def encode(self, message: HostMessage) -> bytes:
        """A host -> component message (Handshake, TupleMessage, SpoutCommand, TaskIds)."""

    def handshake_context(self, context: dict[str, Any]) -> dict[str, Any]:
        """The context this serializer's components get (msgpack: reduced to what pyleus sends,
        see docs/protocol.md, "Serializer plug-in point")."""

    def spout_command(self, command: str, msg_id: Any) -> bytes:
        """A spout's `ack` / `fail` for message id `msg_id` (a hot path: one per spout tuple)."""

    def tuple_prefix(self, comp: str | None, stream: str, task: int) -> bytes:
        """Everything of an input tuple before its values, for this source component, stream
        and source task (cached by the implementation)."""

    def values(self, values: list[Any]) -> bytes:
        """A tuple's values, serialized once for every copy. Raises codec.EncodeError."""

    def tuple_frame(self, prefix: bytes, values: bytes, tuple_id: int) -> bytes:
        """One complete input tuple from a prefix, values and the tuple's (int) id."""

    def task_ids(self, tasks: list[int]) -> bytes:
        """A task-id reply."""

    def join_frames(self, frames: list[bytes]) -> bytes:
        """What one write of these frames holds: them, one after another (shell frames may
        join bolt tuples into one frame: multilang/shell_frames.py)."""


class JsonSerializer:
    """Storm's default (`JsonSerializer.java`): `<json>\\nend\\n` frames."""

    name = "json"

    def __init__(self) -> None:
        self._tuples = codec.TupleEncoder()
        self._task_ids: dict[tuple[int, ...], bytes] = {}

    def decoder(self, max_frame: int) -> ComponentDecoder:
        return ComponentDecoder(max_frame=max_frame, awaiting_pid=True)

    def encode(self, message: HostMessage) -> bytes:
        return codec.encode(message)

    def handshake_context(self, context: dict[str, Any]) -> dict[str, Any]:
        return context

    def spout_command(self, command: str, msg_id: Any) -> bytes:
        if type(msg_id) is int:  # the usual id: no dict, no JSON encoder
            return b'{"command":"%b","id":%d}\nend\n' % (command.encode(), msg_id)
        return codec.encode(SpoutCommand(command, msg_id))

    def tuple_prefix(self, comp: str | None, stream: str, task: int) -> bytes:
        return self._tuples.prefix(comp, stream, task)

    values = staticmethod(codec.values_json)

    tuple_frame = staticmethod(codec.tuple_frame)

    join_frames = staticmethod(b"".join)

    def task_ids(self, tasks: list[int]) -> bytes:
        # a handful of distinct replies per stream: cache them (bounded by the routes)
        key = tuple(tasks)
        data = self._task_ids.get(key)
        if data is None:
            data = codec.frame(codec.dumps(tasks))
            if len(self._task_ids) < 4096:
                self._task_ids[key] = data
        return data


def serializer(name: str) -> Serializer:
    """The serializer for a component's `serializer` setting."""
    if name == "json":
        return JsonSerializer()
    if name == "msgpack":
        from .msgpack_serializer import MsgpackSerializer  # msgpack is needed only here

        return MsgpackSerializer()
    raise ValueError(f"unknown serializer {name!r} (json or msgpack)")
