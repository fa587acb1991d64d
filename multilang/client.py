"""The Python client library: write a Storm multilang spout or bolt as a small class.

```python
from multilang import BasicBolt

class Split(BasicBolt):
    def process(self, tup):
        for word in tup.values[0].split():
            self.emit([word])      # anchored to `tup`; `tup` is acked when process returns

Split().run()
```

The library owns the process: the handshake (pid file, pid reply), the read loop, heartbeats
(answered with `sync`, never shown to user code), tick tuples (`process_tick`, then acked), the
spout's `sync` after every command, and exit status 0 when the host closes stdin.

This module holds the classes user code subclasses, `Bolt`, `BasicBolt` and `Spout`, and
re-exports what user code imports beside them: `Tuple` and `detect_serializer`
(multilang/client_io.py), `EncodeError` (multilang.codec) and the log levels. Their base class
and what it does around the hooks, the I/O contract, `print()` and `logging` going to the host's
log, JSON or msgpack, is in multilang/client_base.py, whose docstring describes it.

Not thread-safe: call emit/ack/fail/log only from the thread that runs `run()` (typically from
inside the hooks). Records logged through `logging` by other threads go to stderr, not to the
protocol pipe.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from .client_base import _Component
from .client_io import (
    _ACK_FRAME,
    _ANCHORED_END,
    _EMIT_END,
    TRACKED_END,
    TRACKED_INT_END,
    Tuple,
    _emit_frame,
    _format_exception,
    _id_json,
    detect_serializer,
    tuple_id,
)
from .codec import EncodeError
from .messages import (
    DEBUG,
    DEFAULT_STREAM,
    ERROR,
    HEARTBEAT_STREAM,
    INFO,
    SYSTEM_TASK,
    TICK_STREAM,
    TRACE,
    WARN,
    SpoutCommand,
)

__all__ = [
    "Bolt",
    "BasicBolt",
    "Spout",
    "Tuple",
    "TRACE",
    "DEBUG",
    "INFO",
    "WARN",
    "ERROR",
    "EncodeError",
    "detect_serializer",
]


# ---- bolts --------------------------------------------------------------------------------------


class Bolt(_Component):
    """A bolt that acks and fails by hand: call `self.ack(tup)` / `self.fail(tup)`.

    If `process` raises, the traceback is sent as an `error` and the tuple is failed unless it was
    already acked or failed; the bolt keeps running. Tick tuples go to `process_tick` and are acked
    by the library.
    """

    #: Anchor every emit made inside `process` to the current tuple when no anchors are given.
    auto_anchor = False
    #: Ack the current tuple when `process` returns (unless user code acked or failed it).
    auto_ack = False
    _tuple_type = Tuple
    # the JSON fast paths (see `_pack`): a tuple id's JSON, and the unanchored emit's frame end
    _tuple_id_json = staticmethod(_id_json)
    _idle_emit_end: bytes | None = _EMIT_END

    def __init__(self) -> None:
        super().__init__()
        self._current_id: Any = None  # id of the tuple being processed
        self._settled = False  # user code acked/failed the current tuple
        self._anchors: list[Any] | None = None  # automatic anchors while processing
        # How a plain emit's frame ends (after the values): with the automatic anchors while
        # processing; None when they cannot be encoded (emits then take the general path).
        self._emit_end: bytes | None = _EMIT_END

    # ---- hooks ---------------------------------------------------------------------------------
    def process(self, tup: Tuple) -> None:
        """Called for every input tuple (not heartbeats, not ticks)."""
        raise NotImplementedError("a bolt must define process(self, tup)")

    def process_tick(self, tup: Tuple) -> None:
        """Called for every tick tuple; the library acks it afterwards. Default: nothing."""

    def cleanup(self) -> None:
        """Called once when the host closes stdin, before the process exits."""

    # ---- what user code can send ---------------------------------------------------------------
    def emit(
        self,
        values: Iterable[Any],
        stream: str = DEFAULT_STREAM,
        anchors: Iterable[Any] = (),
        direct_task: int | None = None,
        need_task_ids: bool = False,
    ) -> list[int] | None:
        """Emit a tuple. `anchors`: Tuples or tuple ids (BasicBolt: the current tuple by default).
        With `direct_task`, the tuple goes to that task only. With `need_task_ids=True`, waits for
        and returns the list of receiving task ids (tuples arriving meanwhile are handled later).
        Raises EncodeError if the values are not JSON-serialisable."""
        if type(values) is not list:
            values = list(values)
        end = self._emit_end
        if (
            end is not None
            and not anchors
            and direct_task is None
            and not need_task_ids
            and stream == DEFAULT_STREAM
        ):
            self._out.append(_emit_frame(values, end))
            return None
        wire: dict[str, Any] = {"command": "emit", "tuple": values}
        if stream != DEFAULT_STREAM:
            wire["stream"] = stream
        if anchors:
            wire["anchors"] = [tuple_id(a) for a in anchors]
        elif self._anchors is not None:
            wire["anchors"] = self._anchors
        return self._send_emit(wire, direct_task, need_task_ids)

    def ack(self, tup: Any) -> None:
        """Ack an input tuple (a Tuple or its id)."""
        tid = tuple_id(tup)
        if tid == self._current_id:
            self._settled = True
        self._out.append(self._pack({"command": "ack", "id": tid}))

    def fail(self, tup: Any) -> None:
        """Fail an input tuple (a Tuple or its id): its spout tuple will be replayed."""
        tid = tuple_id(tup)
        if tid == self._current_id:
            self._settled = True
        self._out.append(self._pack({"command": "fail", "id": tid}))

    # ---- dispatch ------------------------------------------------------------------------------
    def _handle(self, msg: Any) -> None:
        if type(msg) is Tuple:
            if msg.task == SYSTEM_TASK:
                if msg.stream == HEARTBEAT_STREAM:
                    self._out.append(self._sync_frame)
                    return
                if msg.stream == TICK_STREAM:
                    self._run(self.process_tick, msg, anchored=False, auto_ack=True)
                    return
            self._run(self.process, msg, self.auto_anchor, self.auto_ack)
        else:
            self._unexpected(msg)

    def _run(
        self, hook: Callable[[Tuple], None], tup: Tuple, anchored: bool, auto_ack: bool
    ) -> None:
        tid = tup.id
        id_json = self._tuple_id_json(tid)  # once per tuple: its emits and its ack share it
        self._current_id = tid
        self._settled = False
        if anchored:
            self._anchors = [tid]
            self._emit_end = None if id_json is None else _ANCHORED_END % id_json
        try:
            hook(tup)
        except Exception:
            # error first, then fail: the order storm.py uses, so the reason is logged first
            self.error(_format_exception())
            if not self._settled:
                self._out.append(self._pack({"command": "fail", "id": tid}))
        else:
            if auto_ack and not self._settled:
                self._out.append(
                    _ACK_FRAME % id_json
                    if id_json is not None
                    else self._pack({"command": "ack", "id": tid})
                )
        finally:
            self._current_id = None
            self._anchors = None
            self._emit_end = self._idle_emit_end

    def _shutdown(self) -> None:
        self.cleanup()


class BasicBolt(Bolt):
    """A bolt whose emits are anchored to the tuple being processed, which is acked when
    `process` returns and failed (with an `error` giving the traceback) when it raises."""

    auto_anchor = True
    auto_ack = True


# ---- spouts -------------------------------------------------------------------------------------


class Spout(_Component):
    """A spout: the host calls `next_tuple` when it wants tuples, `ack`/`fail` with the message
    id of a completed/failed tuple tree, `activate`/`deactivate`. The library answers every
    command with `sync` after the hook returns. If a hook raises, the traceback is sent as an
    `error` and the spout keeps running."""

    # ---- hooks ---------------------------------------------------------------------------------
    def next_tuple(self) -> None:
        """Emit zero or more tuples. Must not block: with nothing to emit, just return (the host
        backs off before asking again)."""

    def ack(self, msg_id: Any) -> None:
        """The tuple tree of the emit with this message id completed."""

    def fail(self, msg_id: Any) -> None:
        """The tuple tree of the emit with this message id failed or timed out: replay it."""

    def activate(self) -> None:
        """The topology was activated (sent before the first `next_tuple`)."""

    def deactivate(self) -> None:
        """The topology was deactivated: no `next_tuple` until the next `activate`."""

    def close(self) -> None:
        """Called once when the host closes stdin, before the process exits."""

    # ---- what user code can send ---------------------------------------------------------------
    def emit(
        self,
        values: Iterable[Any],
        id: Any = None,
        stream: str = DEFAULT_STREAM,
        direct_task: int | None = None,
        need_task_ids: bool = False,
    ) -> list[int] | None:
        """Emit a tuple; with a message `id` (any JSON value) it is tracked and `ack`/`fail` is
        called with that id later; without one it is not tracked. `direct_task` and
        `need_task_ids` as for Bolt.emit. Raises EncodeError for non-JSON values."""
        if type(values) is not list:
            values = list(values)
        if direct_task is None and not need_task_ids and stream == DEFAULT_STREAM:
            if id is None:
                end: bytes | None = _EMIT_END
            elif type(id) is int:
                end = TRACKED_INT_END % id
            else:
                id_json = _id_json(id)
                end = None if id_json is None else TRACKED_END % id_json
            if end is not None:
                self._out.append(_emit_frame(values, end))
                return None
        wire: dict[str, Any] = {"command": "emit", "tuple": values}
        if id is not None:
            wire["id"] = id
        if stream != DEFAULT_STREAM:
            wire["stream"] = stream
        return self._send_emit(wire, direct_task, need_task_ids)

    # ---- dispatch ------------------------------------------------------------------------------
    def _handle(self, msg: Any) -> None:
        if type(msg) is not SpoutCommand:
            self._unexpected(msg)
            return
        command = msg.command
        try:
            if command == "ack":  # the most frequent: one per tuple, `next` one per batch
                self.ack(msg.id)
            elif command == "next":
                self.next_tuple()
            elif command == "fail":
                self.fail(msg.id)
            elif command == "activate":
                self.activate()
            elif command == "deactivate":
                self.deactivate()
            else:
                self.log(f"ignoring unknown spout command {command!r}", WARN)
        except Exception:
            self.error(_format_exception())
        self._out.append(self._sync_frame)  # the host waits for it whatever happened

    def _shutdown(self) -> None:
        self.close()
