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

I/O contract, chosen for throughput: stdin is read with `os.read` in 64 KiB chunks and decoded with
`multilang.host_decoding.HostDecoder`; the frames produced while handling the messages of one read
are collected in a list and written with one `os.write` (looping on partial writes) just before the
next blocking read, and within a longer read after every `FLUSH_EVERY` messages and whenever
`FLUSH_SECS` have passed since the last write: the host acks and routes the first ones while we work
on the rest, and a slow component with a long queue never goes silent for longer than that plus one
message (the host takes silence while it owes answers for a hang). No threads, no locks.

While `run()` is active, `sys.stdout` is a writer that turns each printed line into a `log`
message (level INFO), and file descriptor 1 is pointed at stderr, so neither a stray `print()`
nor a child process writing to its inherited stdout can corrupt the protocol. A component that
really wants fd 1 to be the protocol pipe (say, to write raw bytes in a test) sets the class
attribute `protect_stdout = False`.

From the handshake until `run()` ends, Python's `logging` reaches the host's log too: the root
logger has a `multilang.log_handler.HostLogHandler`, so `logging.getLogger(__name__).info("x")`
becomes a `log` command at INFO, as with pystorm. The loggers' levels decide what is sent (the
root logger is at INFO unless the component configured logging before `run()`). Set the class
attribute `forward_logging = False` to leave logging alone.

Serializer: a component speaks whatever the host speaks to it, JSON (the default) or, when it is
declared `serializer: msgpack`, MessagePack (docs/protocol.md §11); no flag is needed, the first
byte of the host's setup message tells (`detect_serializer`). `self.serializer` says which
("json" or "msgpack") from the handshake on, so `initialize` can choose what to emit. Under
msgpack a `bytes` value is sent as msgpack bin and arrives as `bytes`; under JSON it is sent as
base64 text (codec.dumps), as the host also writes bytes to JSON components.
(`multilang/client_msgpack.py` holds the msgpack side.)

Not thread-safe: call emit/ack/fail/log only from the thread that runs `run()` (typically from
inside the hooks). Records logged through `logging` by other threads go to stderr, not to the
protocol pipe.
"""

from __future__ import annotations

import io
import os
import sys
import time
import traceback
from collections import deque
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, NoReturn

from .codec import (
    EncodeError,
    ProtocolError,
    dumps,
    frame,
    quick_values_json,
    ujson_dumps,
    values_json,
)
from .host_decoding import HostDecoder
from .log_handler import install as install_log_handler
from .messages import (
    DEBUG,
    DEFAULT_STREAM,
    ERROR,
    HEARTBEAT_STREAM,
    INFO,
    PIPELINE_EXT,
    SYSTEM_TASK,
    TICK_STREAM,
    TRACE,
    WARN,
    Handshake,
    HostMessage,
    SpoutCommand,
    TaskIds,
    TupleMessage,
)

if TYPE_CHECKING:  # at run time only msgpack components import it (and msgpack)
    from .client_msgpack import MsgpackHostDecoder

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

READ_SIZE = 64 * 1024  # the Linux pipe capacity: one read drains a full pipe
FLUSH_EVERY = 100  # input messages handled between writes when a read brings more
FLUSH_SECS = 0.05  # ... and the longest we keep output back while handling them
_SYNC_FRAME = frame(dumps({"command": "sync"}))
# The data path's frames are put together from these constant parts and the JSON of the values
# and ids: a dict and a dumps call per frame cost more than the rest of the emit. The keys and
# values are those the dicts of the general path give (see _send_emit).
_EMIT_HEAD = b'{"command":"emit","tuple":'
_EMIT_END = b',"need_task_ids":false}\nend\n'
_ANCHORED_END = b',"anchors":[%b],"need_task_ids":false}\nend\n'
_TRACKED_END = b',"id":%b,"need_task_ids":false}\nend\n'
_TRACKED_INT_END = b',"id":%d,"need_task_ids":false}\nend\n'  # the usual message id: a number
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


class _EndOfInput(BaseException):
    """The host closed our stdin or stdout. A BaseException so that user code's
    `except Exception` around an emit cannot swallow the end of the process."""


class _StdoutToLog(io.TextIOBase):
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


def _tuple_id(tup: Any) -> Any:
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


class _Component:
    """What spouts and bolts share: the handshake, the read loop, buffered output, log/error/
    metrics, and waiting for task ids."""

    #: While running, send print() to the host's log and point fd 1 at stderr. False keeps
    #: sys.stdout and fd 1 as they are (fd 1 is then the protocol pipe, and stray output breaks it).
    protect_stdout = True
    #: While running, send what is logged through Python's `logging` to the host's log (see the
    #: module's docstring). False leaves the root logger as it is.
    forward_logging = True
    #: What the decoder builds input tuples as.
    _tuple_type: type[TupleMessage] = TupleMessage

    def __init__(self) -> None:
        self.conf: dict[str, Any] = {}
        self.context: dict[str, Any] = {}
        self.pid = os.getpid()
        self.task_id: int | None = None
        self.component_id: str | None = None
        #: "json" or "msgpack": what the host speaks to this component, known from the handshake
        self.serializer = "json"
        self._decoder: HostDecoder | MsgpackHostDecoder = HostDecoder(tuple_type=self._tuple_type)
        self._pending: deque[HostMessage] = deque()  # host messages not handled yet, in order
        self._task_ids: deque[list[int]] = deque()  # task-id lists read before anyone asked
        self._out: list[bytes] = []  # frames to write at the next flush
        self._in_fd = 0
        self._out_fd = 1
        self._stdout_log: _StdoutToLog | None = None

    # ---- hooks ---------------------------------------------------------------------------------
    def before_wait(self) -> None:
        """Called whenever the library is about to block for more input, every message read so
        far being handled: the place to settle work done asynchronously (a Kafka producer's
        delivery reports, components/kafka_bolt) with the acks and emits it owes. Its output goes
        out with the rest, before the read."""

    def initialize(self, conf: dict[str, Any], context: dict[str, Any]) -> None:
        """Called once after the handshake, before any tuple or command."""

    # ---- what user code can send ---------------------------------------------------------------
    def log(self, msg: Any, level: int = INFO) -> None:
        """Log through the host: level 0..4 = TRACE, DEBUG, INFO, WARN, ERROR."""
        self._out.append(self._pack({"command": "log", "msg": str(msg), "level": int(level)}))

    def error(self, msg: Any) -> None:
        """Report an error to the host (shown as a component error; not fatal)."""
        self._out.append(self._pack({"command": "error", "msg": str(msg)}))

    def metrics(self, name: str, params: Any = None) -> None:
        """Update the host-side metric `name` with `params`."""
        self._out.append(self._pack({"command": "metrics", "name": name, "params": params}))

    def flush(self) -> None:
        """Write what is buffered now. The library flushes before every blocking read, so this
        is only for a component about to end on its own (say, `os._exit` after a fatal error)."""
        self._flush()

    # ---- running -------------------------------------------------------------------------------
    def run(self) -> NoReturn:
        """Run the component until the host closes stdin, then exit 0 (1 if start-up failed)."""
        code = 0
        started = False
        saved_stdout = sys.stdout
        uninstall_log_handler: Callable[[], None] | None = None
        try:
            if self.protect_stdout:
                self._protect_stdout()
            self._handshake()
            if self.forward_logging:  # after the pid reply, which must come first
                uninstall_log_handler = install_log_handler(self.log)
            self._start()
            started = True
            self._loop()
        except _EndOfInput:
            pass
        except _StartupError as exc:
            print(exc, file=sys.stderr)
            code = 1
        if started:
            code = self._finish()
        if uninstall_log_handler is not None:
            uninstall_log_handler()
        sys.stdout = saved_stdout
        sys.exit(code)

    def _protect_stdout(self) -> None:
        sys.stdout.flush()
        self._out_fd = os.dup(1)  # our private copy of the protocol pipe (not inherited)
        os.dup2(2, 1)  # fd-level writes to "stdout" now land on stderr
        self._stdout_log = _StdoutToLog(self)
        sys.stdout = self._stdout_log

    def _handshake(self) -> None:
        self.before_wait()
        self._flush()
        data = os.read(self._in_fd, READ_SIZE)
        if not data:
            raise _EndOfInput()
        if detect_serializer(data) == "msgpack":
            self._speak_msgpack()
        try:
            self._pending.extend(self._decoder.feed(data))
        except ProtocolError as exc:
            self._pending.extend(self._recover(exc))
        while not self._pending:
            self._read()
        msg = self._pending.popleft()
        if type(msg) is not Handshake:
            raise _StartupError(f"expected the handshake as the first message, got {msg!r}")
        self.conf, self.context = msg.conf, msg.context
        self.task_id = self.context.get("taskid")
        self.component_id = self.context.get("componentid") or self.context.get(
            "task->component", {}
        ).get(str(self.task_id))
        try:
            open(os.path.join(msg.pid_dir, str(self.pid)), "w").close()
        except OSError as exc:
            raise _StartupError(f"cannot create the pid file in {msg.pid_dir!r}: {exc}") from exc
        # pipeline/1: we answer spout commands one by one, in order, so the host may write them
        # ahead of our syncs (docs/protocol.md, "Protocol extensions")
        self._out.append(self._pid_reply())
        self._flush()  # the host waits for the pid before anything else; initialize may be slow

    def _speak_msgpack(self) -> None:
        """From now on read and write msgpack: the instance becomes its class's msgpack
        subclass (client_msgpack.msgpack_class), which only changes how messages are framed."""
        from .client_msgpack import MsgpackHostDecoder, msgpack_class  # needs msgpack

        self.__class__ = msgpack_class(type(self))
        self._decoder = MsgpackHostDecoder(tuple_type=self._tuple_type)
        self.serializer = "msgpack"
        self._emit_end = None  # Bolt's preformatted JSON emit: off

    def _pid_reply(self) -> bytes:
        return self._pack({"pid": self.pid, "ext": [PIPELINE_EXT]})

    # How a message is written: JSON here, msgpack in client_msgpack's subclasses, which override
    # these and nothing else; the JSON-only fast paths (preformatted frames) are switched off
    # there through `_emit_end` / `_tuple_id_json` / `_idle_emit_end`.
    _sync_frame = _SYNC_FRAME
    _emit_end: bytes | None  # Bolt's preformatted end of a plain emit's JSON frame

    def _pack(self, message: Any) -> bytes:
        return frame(dumps(message))

    def _start(self) -> None:
        try:
            self.initialize(self.conf, self.context)
        except Exception as exc:
            text = _format_exception()
            self.error(text)
            self._flush()
            raise _StartupError(f"initialize failed:\n{text}") from exc

    def _loop(self) -> None:
        pending = self._pending
        handle = self._handle
        read = self._read_messages
        flush = self._flush
        clock = time.monotonic
        every, secs = FLUSH_EVERY, FLUSH_SECS
        while True:
            # What a handler reads while waiting for task ids goes to `pending`, behind the rest
            # of this batch, so the batch need not pass through the queue.
            if pending:
                batch = list(pending)
                pending.clear()
            else:
                batch = read()  # writes what is buffered first
            # A long or slow batch is answered in parts (see the module's I/O contract).
            count = 0
            due = clock() + secs
            for msg in batch:
                handle(msg)
                count += 1
                if count == every or clock() >= due:
                    flush()
                    count = 0
                    due = clock() + secs

    def _handle(self, msg: Any) -> None:
        raise NotImplementedError

    def _finish(self) -> int:
        """End of input: the user's shutdown hook, then a last flush. The exit status."""
        code = 0
        try:
            self._shutdown()
        except Exception:
            text = _format_exception()
            print(text, file=sys.stderr)
            self.error(text)
            code = 1
        if self._stdout_log is not None:
            self._stdout_log.flush()
        try:
            self._flush()
        except _EndOfInput:
            pass
        return code

    def _shutdown(self) -> None:
        """Calls the subclass's shutdown hook (Bolt.cleanup / Spout.close)."""

    # ---- I/O -----------------------------------------------------------------------------------
    def _flush(self) -> None:
        out = self._out
        if self._stdout_log is not None and self._stdout_log._partial:
            self._stdout_log.flush()
        if not out:
            return
        data = out[0] if len(out) == 1 else b"".join(out)
        out.clear()
        fd = self._out_fd
        try:
            written = os.write(fd, data)
            if written < len(data):  # the pipe was full: finish the rest
                view = memoryview(data)
                while written < len(data):
                    written += os.write(fd, view[written:])
        except (BrokenPipeError, ConnectionResetError):
            raise _EndOfInput() from None

    def _read(self) -> None:
        """Flush, block for input, queue what was decoded. _EndOfInput at EOF."""
        self._pending.extend(self._read_messages())

    def _read_messages(self) -> list[HostMessage]:
        self.before_wait()
        self._flush()
        data = os.read(self._in_fd, READ_SIZE)
        if not data:
            raise _EndOfInput()
        try:
            return self._decoder.feed(data)
        except ProtocolError as exc:
            return self._recover(exc)

    def _recover(self, exc: ProtocolError) -> list[HostMessage]:
        """A host message we do not understand: log it and keep the ones around it."""
        messages = list(exc.decoded)
        while True:
            self.log(f"ignoring a host message we do not understand: {exc}", WARN)
            try:
                return messages + self._decoder.feed(b"")
            except ProtocolError as again:
                messages += again.decoded
                exc = again

    def _send_emit(
        self, wire: dict[str, Any], direct_task: int | None, need_task_ids: bool
    ) -> list[int] | None:
        """Queue an emit; with `need_task_ids`, wait for and return the receiving tasks. A
        direct emit never gets a reply from the host: its one task is the answer."""
        if direct_task is not None:
            wire["task"] = direct_task
            wire["need_task_ids"] = False
            self._out.append(self._pack(wire))
            return [direct_task] if need_task_ids else None
        if not need_task_ids:
            wire["need_task_ids"] = False
            self._out.append(self._pack(wire))
            return None
        self._out.append(self._pack(wire))
        return self._await_task_ids()

    def _await_task_ids(self) -> list[int]:
        """Block until the task-id list for the emit just queued arrives. Anything else that
        arrives meanwhile is queued behind the messages already pending, in order."""
        stash = self._task_ids
        pending = self._pending
        while not stash:
            for msg in self._read_messages():
                if type(msg) is TaskIds:
                    stash.append(msg.tasks)
                else:
                    pending.append(msg)
        return stash.popleft()

    def _unexpected(self, msg: Any) -> None:
        if type(msg) is TaskIds:
            self.log(f"ignoring task ids nobody asked for: {msg.tasks}", WARN)
        else:
            self.log(f"ignoring an unexpected host message: {msg!r}", WARN)


class _StartupError(Exception):
    """The component cannot start (bad handshake, pid file, initialize raised)."""


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
            wire["anchors"] = [_tuple_id(a) for a in anchors]
        elif self._anchors is not None:
            wire["anchors"] = self._anchors
        return self._send_emit(wire, direct_task, need_task_ids)

    def ack(self, tup: Any) -> None:
        """Ack an input tuple (a Tuple or its id)."""
        tid = _tuple_id(tup)
        if tid == self._current_id:
            self._settled = True
        self._out.append(self._pack({"command": "ack", "id": tid}))

    def fail(self, tup: Any) -> None:
        """Fail an input tuple (a Tuple or its id): its spout tuple will be replayed."""
        tid = _tuple_id(tup)
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
                end = _TRACKED_INT_END % id
            else:
                id_json = _id_json(id)
                end = None if id_json is None else _TRACKED_END % id_json
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
