"""What the harness returns: `TopologyResult` (a `run_topology` run, with its `Emitted` tuples and
captured `LogLine`s) and `ComponentResult` (a `run_component` exchange)."""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from host.observe.snapshot import Snapshot
from host.topology.model import Topology
from multilang.messages import Emit, Log, Metrics

if TYPE_CHECKING:
    from host.runtime.supervisor import Supervisor
    from host.testing.topology_run import _TopologyRun

# how the host names a task in its log lines: `component[task] pid=N: ...`
_COMPONENT_NAME = re.compile(r"^([^\s\[\]]+)\[(-?\d+)\] pid=\S*?(?:: |\s)")


@dataclass(frozen=True)
class Emitted:
    """One emit, as the host routed it."""

    component: str
    task: int
    stream: str
    values: list[Any]
    anchors: tuple[str, ...] = ()  # bolts: the ids of the input tuples it was anchored to
    direct_task: int | None = None  # a direct emit's target task
    msg_id: Any = None  # spouts: the message id (None: not tracked)


@dataclass(frozen=True)
class LogLine:
    """A log record of the host (`host` logger) or of a component (`host.component`: lines it
    logged with `log`, and its stderr). `component`/`task` are set when the line is about one
    task; `text` is the component's own words for component lines, else the whole message; `at`
    is when the host logged it, in seconds since the start of the run on the run's clock (fake
    seconds with a FakeClock)."""

    logger: str
    level: int
    message: str
    component: str | None = None
    task: int | None = None
    text: str = ""
    at: float = 0.0

    @property
    def levelname(self) -> str:
        return logging.getLevelName(self.level)


def log_line(record: logging.LogRecord, at: float) -> LogLine:
    """A record of the `host` or `host.component` logger as a LogLine."""
    message = record.getMessage()
    m = _COMPONENT_NAME.match(message)
    component: str | None = None
    task: int | None = None
    text = message
    if m:
        component, task = m.group(1), int(m.group(2))
        if record.name == "host.component":
            text = message[m.end() :]
    return LogLine(record.name, record.levelno, message, component, task, text, at)


class TopologyResult:
    """What `run_topology` observed. Live while the run goes on (the object `until` gets), final
    once `run_topology` returns."""

    def __init__(
        self,
        topology: Topology,
        supervisor: Supervisor,
        started: float,
        clock: Callable[[], float],
    ):
        self.topology = topology
        #: every emit, in the order the host handled them
        self.emits: list[Emitted] = []
        #: component id -> stream -> values of every tuple it emitted on that stream, in order
        self.emitted: dict[str, dict[str, list[list[Any]]]] = {}
        #: spout component id -> message ids acked / failed (timeouts included) / timed out, in
        #: the order the host decided it
        self.acked: dict[str, list[Any]] = {}
        self.failed: dict[str, list[Any]] = {}
        self.timed_out: dict[str, list[Any]] = {}
        #: the `host` and `host.component` log records of the run
        self.logs: list[LogLine] = []
        #: why the run ended: "quiescent", "until", "timeout", "failure" or what stopped it
        self.stopped_because: str | None = None
        #: the host's own failure message (a component declared fatal), if any
        self.failure: str | None = None
        #: the Supervisor that ran it, for assertions on host internals (not a stable API)
        self.supervisor = supervisor
        #: component id -> (stream, values) of each tuple fed in its place
        self.inputs: dict[str, list[tuple[str, list[Any]]]] = {}
        self._clock = clock
        self._started = started
        self._real_started = time.monotonic()
        self._run: _TopologyRun | None = None
        self._final_snapshot: Snapshot | None = None
        self._final_quiescent = False
        self._final_uptime = 0.0
        self._final_real = 0.0

    # -- recording -------------------------------------------------------------------------------
    def _emit(self, component: str, task: int, m: Emit) -> None:
        values = list(m.values)
        self.emits.append(
            Emitted(component, task, m.stream, values, tuple(m.anchors), m.task, m.id)
        )
        self.emitted.setdefault(component, {}).setdefault(m.stream, []).append(values)

    def _outcome(self, component: str, msg_id: Any, ok: bool, timed_out: bool) -> None:
        (self.acked if ok else self.failed).setdefault(component, []).append(msg_id)
        if timed_out:
            self.timed_out.setdefault(component, []).append(msg_id)

    def _finish(self, snapshot: Snapshot, quiescent: bool, uptime: float) -> None:
        self._final_snapshot = snapshot
        self._final_quiescent = quiescent
        self._final_uptime = uptime
        self._final_real = time.monotonic() - self._real_started
        self._run = None

    # -- reading ---------------------------------------------------------------------------------
    @property
    def snapshot(self) -> Snapshot:
        """The host's stats (the `--stats-json` object, `host.observe.snapshot`): live during
        the run, the final one after it."""
        if self._final_snapshot is not None:
            return self._final_snapshot
        return self.supervisor.snapshot()

    @property
    def quiescent(self) -> bool:
        """Nothing in flight and every spout idle (see run_topology)."""
        if self._run is not None:
            return self._run.quiescent()
        return self._final_quiescent

    @property
    def uptime(self) -> float:
        """Seconds since the start on the run's clock (fake seconds with a FakeClock)."""
        if self._run is not None:
            return self._clock() - self._started
        return self._final_uptime

    @property
    def real_time(self) -> float:
        """Real seconds the run took (so far)."""
        if self._run is not None:
            return time.monotonic() - self._real_started
        return self._final_real

    @property
    def exit_code(self) -> int:
        """What `python -m host local` would exit with: 1 after a runtime failure, else 0."""
        return 1 if self.failure else 0

    def values(self, component: str, stream: str = "default") -> list[list[Any]]:
        """The values of every tuple `component` emitted on `stream`."""
        return self.emitted.get(component, {}).get(stream, [])

    @property
    def restarts(self) -> dict[str, int]:
        return {cid: c["restarts"] for cid, c in self.snapshot["components"].items()}

    @property
    def errors(self) -> list[str]:
        """The host's error reports: faults (a crash, a hang, protocol misuse, with the task's
        name, pid and what it wrote) and `error` commands components sent."""
        return [
            line.message
            for line in self.logs
            if line.logger == "host" and line.level >= logging.ERROR
        ]

    def component_logs(self, component: str) -> list[str]:
        """What `component`'s tasks logged (their `log` commands and stderr lines), in order."""
        return [
            line.text
            for line in self.logs
            if line.logger == "host.component" and line.component == component
        ]

    def report(self, log_lines: int = 40) -> str:
        """A readable summary, for failure messages."""
        out = [
            (
                f"run_topology({self.topology.name!r}): stopped because "
                f"{self.stopped_because}, after {self.uptime:.3f}s of clock time "
                f"({self.real_time:.3f}s real)"
            )
        ]
        if self.failure:
            out.append(f"failure: {self.failure}")
        for cid, streams in self.emitted.items():
            counts = ", ".join(f"{s}: {len(v)}" for s, v in streams.items())
            out.append(f"  {cid} emitted {counts}")
        for cid in sorted(set(self.acked) | set(self.failed)):
            out.append(
                f"  {cid}: {len(self.acked.get(cid, []))} acked, "
                f"{len(self.failed.get(cid, []))} failed "
                f"({len(self.timed_out.get(cid, []))} timed out)"
            )
        if self.logs:
            out.append(f"last {min(log_lines, len(self.logs))} log lines:")
            out.extend(f"  {line.levelname}: {line.message}" for line in self.logs[-log_lines:])
        return "\n".join(out)

    def __repr__(self) -> str:
        emitted = {c: {s: len(v) for s, v in st.items()} for c, st in self.emitted.items()}
        acked = {c: len(v) for c, v in self.acked.items()}
        failed = {c: len(v) for c, v in self.failed.items()}
        return (
            f"<TopologyResult {self.topology.name!r} stopped_because="
            f"{self.stopped_because!r} emitted={emitted} acked={acked} failed={failed}>"
        )


@dataclass
class ComponentResult:
    """What `run_component` observed."""

    command: list[str]
    kind: str
    pid: int | None = None
    #: bolt: the tuples sent, in order; spout: the commands sent
    sent: list[Any] = field(default_factory=list)
    #: every emit, in order (values, stream, anchors, task = direct target, need_task_ids, id)
    emits: list[Emit] = field(default_factory=list)
    #: bolt: ids of the tuples it acked / failed; spout: message ids the harness acked / failed
    acked: list[Any] = field(default_factory=list)
    failed: list[Any] = field(default_factory=list)
    #: bolt: ids of tuples neither acked nor failed when the run ended
    pending: list[Any] = field(default_factory=list)
    logs: list[Log] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)  # `error` commands
    metrics: list[Metrics] = field(default_factory=list)
    #: everything the component wrote, decoded, in order (pid reply and syncs included)
    messages: list[Any] = field(default_factory=list)
    #: task-id lists the harness sent back for emits that asked for them
    task_id_replies: list[list[int]] = field(default_factory=list)
    #: misuse the harness noticed (an ack of a tuple never sent or already settled, ...)
    problems: list[str] = field(default_factory=list)
    transcript: list[str] = field(default_factory=list)
    stderr: str = ""
    exit_code: int | None = None
    timed_out: bool = False  # the overall timeout ended the run
    protocol_error: str | None = None

    @property
    def transcript_text(self) -> str:
        return "\n".join(self.transcript) + "\n"

    def values(self, stream: str = "default") -> list[list[Any]]:
        """The values of every tuple emitted on `stream`."""
        return [list(e.values) for e in self.emits if e.stream == stream]

    @property
    def ok(self) -> bool:
        """Exited 0, broke no protocol rule, did not time out, reported no error."""
        return (
            self.exit_code == 0
            and self.protocol_error is None
            and not self.timed_out
            and not self.errors
            and not self.problems
        )
