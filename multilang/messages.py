"""Typed multilang messages, one class per message kind of Storm's protocol.

Messages are NamedTuples: immutable, typed, and cheap to build, which matters because the host
builds one per message on the data path. Wire field names differ from attribute names only where
the wire name is a Python keyword or builtin (`tuple` -> `values`).

Host -> component: Handshake, TupleMessage, SpoutCommand, TaskIds.
Component -> host: Pid, Emit, Ack, Fail, Log, Error, Metrics, Sync, UnknownCommand.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

DEFAULT_STREAM = "default"
HEARTBEAT_STREAM = "__heartbeat"
TICK_STREAM = "__tick"
SYSTEM_COMPONENT = "__system"
SYSTEM_TASK = -1
ACKER_COMPONENT = "__acker"

# Log levels of the `log` command (docs/protocol.md, "Logging").
TRACE, DEBUG, INFO, WARN, ERROR = 0, 1, 2, 3, 4


# ---- host -> component -------------------------------------------------------------------------


class Handshake(NamedTuple):
    pid_dir: str
    conf: dict[str, Any]
    context: dict[str, Any]


class TupleMessage(NamedTuple):
    """An input tuple for a bolt; also heartbeats and ticks (see is_heartbeat / is_tick)."""

    id: str
    comp: str | None
    stream: str
    task: int
    values: list[Any]

    @property
    def is_heartbeat(self) -> bool:
        return self.task == SYSTEM_TASK and self.stream == HEARTBEAT_STREAM

    @property
    def is_tick(self) -> bool:
        return self.task == SYSTEM_TASK and self.stream == TICK_STREAM


class SpoutCommand(NamedTuple):
    """`next`, `activate`, `deactivate` (id "") or `ack` / `fail` (id = the emitted message id)."""

    command: str
    id: Any = ""


class TaskIds(NamedTuple):
    tasks: list[int]


# ---- component -> host -------------------------------------------------------------------------


# The pid-reply extension by which a library says that it answers spout commands strictly in the
# order they came, one `sync` each, whatever it is given ahead: the host may then write commands
# ahead of the syncs (docs/protocol.md, "Protocol extensions"). Without it, one command at a time,
# as Storm's ShellSpout does.
PIPELINE_EXT = "pipeline/1"
# The pid-reply extension by which a library says that it speaks transactional batches
# (docs/transactional.md §4): only components that announce it get batch messages.
BATCH_EXT = "batch/1"


class Pid(NamedTuple):
    pid: int
    # protocol extensions the component announces in its pid reply (docs/protocol.md, "Protocol
    # extensions"); Storm reads only `pid`, so a library may add them and still run under Storm
    ext: tuple[str, ...] = ()


class Emit(NamedTuple):
    values: list[Any]
    stream: str = DEFAULT_STREAM
    anchors: Sequence[str] = ()  # a list as decoded, or a tuple
    task: int | None = None  # set = direct emit to that task
    need_task_ids: bool = True
    id: Any = None  # spouts only: the message id; None = unreliable


class Ack(NamedTuple):
    id: Any


class Fail(NamedTuple):
    id: Any


class Log(NamedTuple):
    msg: str
    level: int = INFO


class Error(NamedTuple):
    msg: str


class Metrics(NamedTuple):
    name: str
    params: Any = None


class Sync(NamedTuple):
    pass


class UnknownCommand(NamedTuple):
    """A command Storm does not define: bolts ignore it, spouts treat it as a protocol error."""

    command: str
    raw: dict[str, Any]


HostMessage = Handshake | TupleMessage | SpoutCommand | TaskIds
ComponentMessage = Pid | Emit | Ack | Fail | Log | Error | Metrics | Sync | UnknownCommand
