"""Decoding component -> host: what the host reads a component's stdout with (`ComponentDecoder`,
and `plain_frames` for the Spark component driver's fast path). Apart from the client libraries'
decoder (multilang/host_decoding.py), which never reads a component's messages, and from the
shared basics (multilang/codec.py), which must not import it; this is the only module that loads
the C decoders of multilang/_speedups.c.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from .codec import (
    DEFAULT_MAX_FRAME,
    PURE_PYTHON,
    Framer,
    ProtocolError,
    as_bytes,
    loads,
    loads_batch,
    whole_frames,
)
from .messages import (
    DEFAULT_STREAM,
    INFO,
    Ack,
    ComponentMessage,
    Emit,
    Error,
    Fail,
    Log,
    Metrics,
    Pid,
    Sync,
    UnknownCommand,
)

# The C decoders are functions or None: every use checks which. Their signatures are the ones
# _speedups.pyi gives them.
_c_component_messages: (
    Callable[
        [list[Any], type[Emit], type[Ack], Callable[[Any], ComponentMessage]],
        list[ComponentMessage] | None,
    ]
    | None
)
# plain_frames' result: (values_json, anchors, ids, late, longest); see plain_frames_py
PlainFrames = tuple[bytes, list[str], list[str], list[str], int]
_c_plain_frames: Callable[[str], PlainFrames | None] | None
try:  # built with the package where a C compiler is found (setup.py)
    from ._speedups import component_messages as _c_component_messages
except ImportError:
    _c_component_messages = None
try:  # apart: an extension built before plain_frames existed still gives component_messages
    from ._speedups import plain_frames as _c_plain_frames
except ImportError:
    _c_plain_frames = None
if PURE_PYTHON:  # MULTILANG_PURE_PYTHON=1 (multilang/codec.py)
    _c_component_messages = _c_plain_frames = None

# tuple.__new__ skips a NamedTuple's generated __new__, which costs more than decoding the fields
_new_tuple = tuple.__new__
_SYNC = Sync()


def _emit(d: dict[str, Any]) -> Emit:
    values = d.get("tuple")
    if type(values) is not list:
        raise ProtocolError("emit without a `tuple` array", as_bytes(d))
    stream = d.get("stream")
    if stream is None:
        stream = DEFAULT_STREAM
    elif type(stream) is not str:
        raise ProtocolError("emit with a `stream` that is not a string", as_bytes(d))
    anchors = d.get("anchors")
    if anchors is None:
        anchors = ()
    elif type(anchors) is list:
        for a in anchors:
            if type(a) is not str:
                raise ProtocolError("emit with an anchor that is not a string", as_bytes(d))
    elif type(anchors) is str:
        anchors = (anchors,)
    else:
        raise ProtocolError("emit with `anchors` that is not a list", as_bytes(d))
    task = d.get("task")
    if task is not None:
        if type(task) is not int:
            raise ProtocolError("emit with a `task` that is not an integer", as_bytes(d))
        if task == 0:  # Storm: 0 means "not direct"
            task = None
    need = d.get("need_task_ids")
    if need is None:
        need = True
    elif type(need) is not bool:
        raise ProtocolError("emit with `need_task_ids` that is not a boolean", as_bytes(d))
    return _new_tuple(Emit, (values, stream, anchors, task, need, d.get("id")))


def _ack(d: dict[str, Any]) -> Ack:
    if "id" not in d:
        raise ProtocolError("ack without an `id`", as_bytes(d))
    return Ack(d["id"])


def _fail(d: dict[str, Any]) -> Fail:
    if "id" not in d:
        raise ProtocolError("fail without an `id`", as_bytes(d))
    return Fail(d["id"])


def _log(d: dict[str, Any]) -> Log:
    msg = d.get("msg")
    level = d.get("level")
    if type(level) is float and level.is_integer():
        level = int(level)
    if type(level) is not int or not 0 <= level <= 4:
        level = INFO  # Storm: missing or unknown level -> INFO
    return Log(msg if type(msg) is str else str(msg), level)


def _error(d: dict[str, Any]) -> Error:
    msg = d.get("msg")
    return Error(msg if type(msg) is str else str(msg))


def _metrics(d: dict[str, Any]) -> Metrics:
    name = d.get("name")
    if type(name) is not str or not name:
        raise ProtocolError("metrics without a `name`", as_bytes(d))
    return Metrics(name, d.get("params"))


_COMMANDS: dict[str, Callable[[dict[str, Any]], ComponentMessage]] = {
    "emit": _emit,
    "ack": _ack,
    "fail": _fail,
    "sync": lambda d: _SYNC,
    "log": _log,
    "error": _error,
    "metrics": _metrics,
}


def _extensions(value: dict[str, Any]) -> tuple[str, ...]:
    ext = value.get("ext")
    if ext is None:
        return ()
    if type(ext) is not list or not all(type(e) is str for e in ext):
        raise ProtocolError("`ext` in the pid reply is not a list of strings", as_bytes(value))
    return tuple(ext)


def component_message(value: Any, awaiting_pid: bool = False) -> ComponentMessage:
    """One parsed JSON value from a component -> its typed message, or ProtocolError."""
    if type(value) is not dict:
        raise ProtocolError("message is not a JSON object", as_bytes(value))
    command = value.get("command")
    if command is None:
        if awaiting_pid and "pid" in value:
            return Pid(value["pid"], _extensions(value))
        raise ProtocolError("message without a `command`", as_bytes(value))
    if type(command) is not str:
        raise ProtocolError("`command` is not a string", as_bytes(value))
    parse = _COMMANDS.get(command)
    if parse is None:
        return UnknownCommand(command, value)
    return parse(value)


class ComponentDecoder:
    """What the host uses to read a component's stdout: `feed(bytes) -> [message, ...]`.

    Until the pid reply has been seen, a message with `pid` and no `command` is the pid reply;
    messages with a command that come before it are returned in order (the caller buffers them).
    """

    __slots__ = ("framer", "awaiting_pid", "_carried", "_data")

    def __init__(self, max_frame: int = DEFAULT_MAX_FRAME, awaiting_pid: bool = True):
        self.framer = Framer(max_frame)
        self.awaiting_pid = awaiting_pid
        self._carried = self._data = b""  # the last `feed`'s input, for `frames` (references)

    def frames(self) -> list[bytes]:
        """The bytes of each message the last `feed` returned (or raised with, as `decoded`),
        in order, as the component wrote them: its JSON text, up to its `end` line. For failure
        reports: it cuts the frames again, so it costs nothing until called."""
        buf = self._carried + self._data
        return (Framer()._split_general if b"\r" in buf else Framer()._split_lf)(buf)[0]

    def feed(self, data: bytes) -> list[ComponentMessage]:
        framer = self.framer
        self._carried = framer.pending
        self._data = data
        parsed = whole_frames(framer, data)
        if parsed is not None:
            messages = self._messages(parsed[0])
            if messages is not None:
                framer.carry(parsed[1])
                return messages
        try:
            payloads = framer.feed(data)
        except ProtocolError as exc:
            # The frames completed before the oversized one are still owed to the caller.
            messages = self._decode(exc.decoded)
            raise ProtocolError(exc.reason, exc.raw, messages) from None
        return self._decode(payloads)

    def _decode(self, payloads: list[bytes]) -> list[ComponentMessage]:
        values = loads_batch(payloads)
        messages = None if values is None else self._messages(values)
        if messages is None:  # some payload is bad: find which, keeping the ones before it
            return self._decode_one_by_one(payloads)
        return messages

    def _messages(self, values: list[Any]) -> list[ComponentMessage] | None:
        """Parsed values -> messages; None if one of them is not a valid message. In C when
        multilang._speedups is built (it is this method's reference version, `_messages_py`,
        for emits and acks, and calls back for the rest)."""
        if _c_component_messages is None:
            return self._messages_py(values)
        awaiting_pid = self.awaiting_pid

        def other(value: Any) -> ComponentMessage:
            nonlocal awaiting_pid
            msg = component_message(value, awaiting_pid)
            if type(msg) is Pid:
                awaiting_pid = False
            return msg

        try:
            messages = _c_component_messages(values, Emit, Ack, other)
        except ProtocolError:
            return None
        if messages is not None:  # kept as it was if we give up (the caller retries)
            self.awaiting_pid = awaiting_pid
        return messages

    def _messages_py(self, values: list[Any]) -> list[ComponentMessage] | None:
        messages: list[ComponentMessage] = []
        append = messages.append
        awaiting_pid = self.awaiting_pid  # kept as it was if we give up (the caller retries)
        for value in values:
            # the data path's two messages, decoded inline; everything else takes the long way
            if type(value) is dict:
                command = value.get("command")
                if command == "emit":
                    try:
                        append(_emit(value))
                    except ProtocolError:
                        return None
                    continue
                if command == "ack" and "id" in value:
                    append(_new_tuple(Ack, (value["id"],)))
                    continue
            try:
                msg = component_message(value, awaiting_pid)
            except ProtocolError:
                return None
            if type(msg) is Pid:
                awaiting_pid = False
            append(msg)
        self.awaiting_pid = awaiting_pid
        return messages

    def _decode_one_by_one(self, payloads: list[bytes]) -> list[ComponentMessage]:
        messages: list[ComponentMessage] = []
        for payload in payloads:
            try:
                value = loads(payload)
            except ValueError:
                reason = "empty message" if not payload.strip() else "invalid JSON"
                raise ProtocolError(reason, payload, messages) from None
            try:
                msg = component_message(value, self.awaiting_pid)
            except ProtocolError as exc:
                raise ProtocolError(exc.reason, payload, messages) from None
            if type(msg) is Pid:
                self.awaiting_pid = False
            messages.append(msg)
        return messages


# The two frames that make up nearly all of a bolt's stdout, exactly as our client libraries
# (Python, Node, bash) write them: a plain emit anchored to one tuple, and an ack. ASCII digits
# only in ids, as the C version reads them.
_PLAIN_FRAME = re.compile(
    r'\{"command":"emit","tuple":(\[[^\r\n]*?\]),"anchors":\["(-?\d+)"\],"need_task_ids":false\}'
    r'\nend\n|\{"command":"ack","id":"(-?\d+)"\}\nend\n',
    re.ASCII,
)
_EMIT_FIXED = len('{"command":"emit","tuple":,"anchors":[""],"need_task_ids":false}\nend\n')
_ACK_FIXED = len('{"command":"ack","id":""}\nend\n')


def plain_frames(body: str) -> PlainFrames | None:
    """`body` (complete frames) scanned as plain emits and acks only (see plain_frames_py), by
    the C version when it is built."""
    if _c_plain_frames is not None:
        return _c_plain_frames(body)
    return plain_frames_py(body)


def plain_frames_py(body: str) -> PlainFrames | None:
    """For the Spark component driver's fast path (host/spark/component_process.py): `body`
    must be nothing but plain emit and ack frames (_PLAIN_FRAME), else None. Returns the emits'
    tuples as one JSON array's UTF-8 text (`[t1,t2,...]`, for parse_array), their anchors and
    the acks' ids in order, `late` (the anchors of emits that come after an ack of the same id
    in `body`, in order: whoever checks anchors against tuples in flight before applying the
    acks must check these after), and the longest tuple text in characters.

    The matches must tile `body` exactly (their lengths add up to it), and no frame can hide
    another: a frame is one line (`[^\r\n]`). The reference for multilang/_speedups.c's
    plain_frames."""
    found = _PLAIN_FRAME.findall(body)
    tuples = [t for t, _, _ in found if t]
    anchors = [a for _, a, _ in found if a]
    ids = [i for _, _, i in found if i]
    if len(body) != (
        _EMIT_FIXED * len(tuples)
        + _ACK_FIXED * len(ids)
        + sum(map(len, tuples))
        + sum(map(len, anchors))
        + sum(map(len, ids))
    ):
        return None
    try:
        values_json = ("[" + ",".join(tuples) + "]").encode()
    except UnicodeEncodeError:  # lone surrogates: not ours to judge
        return None
    late: list[str] = []
    if ids and anchors:
        acked: set[str] = set()
        for _, a, i in found:
            if i:
                acked.add(i)
            elif a in acked:
                late.append(a)
    return values_json, anchors, ids, late, max(map(len, tuples), default=0)
