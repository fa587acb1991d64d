"""What every Python component runs on: `_Component`, the base class of `multilang.client`'s
Bolt and Spout and of the batch components (multilang/batch_component.py). It owns the process
around the user's hooks: the handshake, the read/handle/flush loop, buffered output, log/error/
metrics, and waiting for task ids. Apart from the classes users subclass, which only add their
hooks and emits.

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
"""

from __future__ import annotations

import os
import sys
import time
from collections import deque
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, NoReturn

from .client_io import (
    FLUSH_EVERY,
    FLUSH_SECS,
    READ_SIZE,
    SYNC_FRAME,
    EndOfInput,
    StdoutToLog,
    _format_exception,
    _StartupError,
    detect_serializer,
)
from .codec import ProtocolError, dumps, frame
from .host_decoding import HostDecoder
from .log_handler import install as install_log_handler
from .messages import (
    INFO,
    PIPELINE_EXT,
    WARN,
    Handshake,
    HostMessage,
    TaskIds,
    TupleMessage,
)

if TYPE_CHECKING:  # at run time only msgpack components import it (and msgpack)
    from .client_msgpack import MsgpackHostDecoder


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
        self._stdout_log: StdoutToLog | None = None

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
        except EndOfInput:
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
        self._stdout_log = StdoutToLog(self)
        sys.stdout = self._stdout_log

    def _handshake(self) -> None:
        self.before_wait()
        self._flush()
        data = os.read(self._in_fd, READ_SIZE)
        if not data:
            raise EndOfInput()
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
    _sync_frame = SYNC_FRAME
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
        except EndOfInput:
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
            raise EndOfInput() from None

    def _read(self) -> None:
        """Flush, block for input, queue what was decoded. EndOfInput at EOF."""
        self._pending.extend(self._read_messages())

    def _read_messages(self) -> list[HostMessage]:
        self.before_wait()
        self._flush()
        data = os.read(self._in_fd, READ_SIZE)
        if not data:
            raise EndOfInput()
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
