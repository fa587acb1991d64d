"""The host's end of one task's pipes: what is queued for its stdin, and the messages every
component may send whatever its kind (`log`, `error`, `metrics`). `BoltLink` and `SpoutLink`
add their data paths. A link knows nothing of processes: the supervision starts and stops them
and tells the link when it may write (`running`) and where (`stdin_fd`).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from host.observe.metrics import MAX_METRIC_NAMES, ComponentStats, update_metric
from host.runtime.task_log import TaskLog, clip
from host.topology.model import Component
from multilang.codec import EncodeError, dumps, shorten
from multilang.messages import Ack, Emit, Error, Fail, Log, Metrics, Pid, UnknownCommand
from multilang.serializers import Serializer

if TYPE_CHECKING:
    from host.runtime.data_path import DataPath

log = logging.getLogger("host")

# Storm's log levels (the `log` command's `level`), see docs/protocol.md §7
LOG_LEVELS = {
    0: logging.DEBUG,
    1: logging.DEBUG,
    2: logging.INFO,
    3: logging.WARNING,
    4: logging.ERROR,
}


# how much of a message a failure report shows (then its size)
REPORT_BYTES = 300


class Fault(Exception):
    """A message that breaks the protocol or the topology's rules: its task is killed and
    restarted (with --strict, the message is reported and dropped instead). `message` is the
    typed message at fault, by which the report finds the bytes the component wrote
    (`Link.raw_of`); `raw` is the report's fallback: the message as parsed, re-encoded."""

    def __init__(self, reason: str, raw: bytes | str | None = None, message: Any = None):
        self.reason = reason
        self.raw = raw
        self.message = message
        super().__init__(reason)


class Link:
    is_spout = False
    inline_offer = False  # see BoltLink

    def __init__(
        self,
        path: DataPath,
        component: Component,
        task: int,
        ser: Serializer,
        stats: ComponentStats,
        log: TaskLog,
    ) -> None:
        self.path = path
        self.component = component
        self.cid = component.id
        self.task = task
        # what it is written in: its component's serializer (the handshake always), or shell
        # frames once its process took them (`use_serializer`; multilang/shell_frames.py)
        self.base_ser = ser
        self.ser = ser
        self.stats = stats
        self.log = log
        self.out: list[bytes] = []  # frames to write, in order
        self.out_pending = b""  # the unwritten rest of a partial write
        self.stdin_fd: int | None = None  # set while a process is alive
        self.running = False  # its pid reply came: tuples and commands may be written
        self.await_since: float | None = None  # since when it owes an answer (liveness)
        self.last_sent: bytes | None = None  # for failure reports
        self.last_received: bytes | None = None
        # the bytes its process wrote for a message of its latest read, or None (set by the
        # supervision; see `Fault`)
        self.raw_of: Callable[[Any], bytes | None] = lambda message: None
        # per output stream: the router's chooser, and (serializer, tuple prefix) of the last
        # serializer written to; filled on first use
        self.routes: dict[str, Any] = {}
        self.prefixes: dict[str, tuple[Serializer, bytes]] = {}
        self.metrics_capped = False  # the metric-name cap was reported

    def use_serializer(self, ser: Serializer) -> bool:
        """From its pid reply on, it is written in `ser` (False: what is queued for it cannot
        be, see BoltLink)."""
        self.ser = ser
        return True

    @property
    def name(self) -> str:
        return self.log.name

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name}>"

    # -- a new process ---------------------------------------------------------------------------
    def attach(self, stdin_fd: int) -> None:
        """A new process was started for this task: forget what the last one was owed."""
        self.stdin_fd = stdin_fd
        self.out.clear()
        self.out_pending = b""
        self.running = False
        self.await_since = None
        self.last_sent = self.last_received = None

    def detach(self) -> None:
        """The process is gone: nothing more is written, nothing owed."""
        self.stdin_fd = None
        self.running = False
        self.out.clear()
        self.out_pending = b""
        self.await_since = None

    # -- writing ---------------------------------------------------------------------------------
    def write(self, frame: bytes) -> None:
        self.out.append(frame)
        self.path.dirty.add(self)

    @property
    def has_output(self) -> bool:
        return bool(self.out or self.out_pending)

    def flush(self) -> bool:
        """Write what is queued without blocking. True when everything was written; raises
        OSError when the pipe is broken for a reason other than the process having exited."""
        fd = self.stdin_fd
        if fd is None:
            self.out.clear()
            self.out_pending = b""
            return True
        out = self.out
        data = self.out_pending
        if out:
            self.last_sent = out[-1]
            joined = self.ser.join_frames(out)
            data = data + joined if data else joined
            out.clear()
        if not data:
            return True
        try:
            written = os.write(fd, data)
        except BlockingIOError:
            written = 0
        except (BrokenPipeError, ConnectionResetError):
            written = len(data)  # it died: reading its stdout (or its exit) will say so
        self.out_pending = data[written:]
        return not self.out_pending

    # -- messages any component may send ---------------------------------------------------------
    def handle(self, messages: Any) -> None:
        raise NotImplementedError

    def common(self, m: Any, typ: type) -> None:
        if typ is Log:
            self.log.line(LOG_LEVELS.get(m.level, logging.INFO), m.msg)
        elif typ is Error:
            text = clip(m.msg)
            self.stats.error(text)
            self.log.observe.log(self.cid, self.task, "ERROR", text)
            log.error("%s pid=%s reported an error: %s", self.name, self.log.pid, text)
        elif typ is Metrics:
            if not update_metric(self.stats.metrics, m.name, m.params) and not self.metrics_capped:
                self.metrics_capped = True
                log.warning(
                    "%s pid=%s: more than %d metric names; new names are dropped",
                    self.name,
                    self.log.pid,
                    MAX_METRIC_NAMES,
                )
        elif typ is Pid:
            raise Fault("sent a second pid reply", dumps(m._asdict()), m)
        elif typ is UnknownCommand:
            if self.is_spout:  # Storm kills the spout; logging is kinder and loses nothing
                log.warning(
                    "%s pid=%s: ignoring unknown command %r", self.name, self.log.pid, m.command
                )
        elif typ in (Ack, Fail):  # only spouts get here
            raise Fault(
                f"a spout sent `{m.__class__.__name__.lower()}`, which only bolts may",
                dumps(m._asdict()),
                m,
            )

    def misuse(self, fault: Fault) -> None:
        """--strict: a message that breaks the protocol is reported and dropped; the component
        keeps running (Storm kills it; this is the kinder choice while developing)."""
        raw = self.raw_of(fault.message) if fault.message is not None else None
        text = f"protocol misuse: {fault.reason}{wrote_text(fault.raw if raw is None else raw)}"
        self.stats.error(text)
        self.log.observe.log(self.cid, self.task, "ERROR", text)
        log.error(
            "%s pid=%s: %s (--strict: reported, the component keeps running)",
            self.name,
            self.log.pid,
            text,
        )


def wrote_text(raw: bytes | str | None) -> str:
    """What a failure report says of the message at fault: the bytes the component wrote
    (escaped, cut, sized: `shorten`), or, when they are gone (a message it wrote before its pid
    reply, in an earlier read), the message as the host parsed it, said to be that."""
    if not raw:
        return ""
    if isinstance(raw, str):
        return f"; the message, as parsed: {raw}"
    return f"; it wrote {shorten(raw, REPORT_BYTES)}"


def emit_text(m: Emit) -> str:
    """An emit as the component wrote it, near enough, for error reports."""
    try:
        return shorten(
            dumps(
                {
                    "command": "emit",
                    "stream": m.stream,
                    "tuple": m.values,
                    **({"anchors": list(m.anchors)} if m.anchors else {}),
                    **({"task": m.task} if m.task is not None else {}),
                }
            ).encode("utf-8", "backslashreplace")  # lone surrogates: JSON allows them
        )
    except EncodeError:
        return repr(m)
