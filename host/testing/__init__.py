"""Test a topology, or one component, without a cluster: real subprocesses, deterministic inputs.

Public API (also available as pytest fixtures, see `host.testing.pytest_plugin`):

`run_topology(topology, inputs=None, until=None, timeout=30.0, clock=None, *, config=None,
              strict=False)`
    Runs `topology` (a Topology, a TopologyBuilder, or the path of a topology file) through the
    real `host.runtime.supervisor.Supervisor`, every component a real subprocess, and returns a
    `TopologyResult`: what every component emitted, per stream; which spout message ids were
    acked, failed and timed out; the host's log lines (component logs, errors, faults); restarts;
    the final stats snapshot.

    `inputs` maps a component id to a list of tuples fed *in place of that component*: the
    component's command is replaced (in a copy of the frozen topology, `dataclasses.replace`) by a
    small Python spout, started by the harness like any component, that emits exactly those
    tuples with message ids 0..n-1, one after another, and does nothing else (a failed or
    timed-out tuple is reported in the result, never replayed). Its id, streams, fields,
    parallelism and every subscription to it are unchanged, so downstream components see the
    same source component, stream and fields as in production. Each tuple is a list of values
    (on the component's `default` stream, or on its only stream when it declares just one) or a
    mapping `{"values": [...], "stream": "name"}`. With parallelism > 1 the tasks share the
    tuples (task k emits tuples k, k+p, k+2p, ...). Inputs for a *bolt* replace that bolt the
    same way: it becomes a spout emitting the given tuples as if the bolt had emitted them, so
    the part of the topology downstream of it can be tested alone. A spout left with no
    subscriber because everything it fed was replaced is silenced (it emits nothing), so an
    endless spout upstream cannot keep the run from ending.

    The run ends at the first of the following, and then stops as `python -m host local` does:
    the spouts are deactivated, what is in flight gets the drain grace period, and every process
    is stopped in stages (stdin closed, SIGTERM, SIGKILL). `result.stopped_because` says which:
    - "quiescent", when `until` is not given: nothing in flight (the acker holds no tuple tree,
      no bolt task has a tuple pending or queued, no spout command is waiting for its `sync`,
      every task is running) and every spout idle (a replaced spout has emitted all its tuples;
      any other spout answered its last three `next`s without emitting). A bolt that never acks
      a tuple keeps the topology from ever being quiescent: give `until` then;
    - "until": `until(result_so_far)` returned true (checked after every turn of the event loop,
      so keep it cheap; `result.quiescent` tells whether the topology is quiet at that moment);
    - "failure": a component was declared fatal by the host (restarted too often);
    - "timeout": `timeout` real seconds passed; then nothing is drained (whatever is in flight is
      stuck) and nothing is raised.
    Ctrl-C (SIGINT) or SIGTERM during a run stops it the same graceful way.

`run_component(command, tuples=(), *, kind="bolt", conf=None, context=None, cwd=None,
               timeout=10, ...)`
    Runs one component process with a scripted stand-in host (`ComponentPeer`): handshake, then
    for a bolt each tuple in turn, waiting until the bolt acks or fails it (answering task-id
    requests meanwhile); for a spout `activate`, `nexts` times `next` followed by an `ack` (or
    `fail`, see `respond`) of every message id it emitted, then `deactivate`. Then stdin is
    closed and the exit status collected. Returns a `ComponentResult`: emits (with anchors,
    streams, direct tasks, task-id requests), acks, fails, logs, errors, metrics, stderr, exit
    code, and the transcript of the whole exchange (`->` host to component, `<-` component to
    host, as in the protocol spec's recorded transcripts).

`FakeClock`
    A clock that moves only when told (`advance(seconds)`) or when the harness moves it.
    `run_topology(..., clock=FakeClock())` runs the host on it: the harness then drives
    `Supervisor.step()` itself and, whenever the components have gone quiet, moves the fake time
    straight to the host's next timer, one housekeeping period (1 s) at most. So a tuple that
    times out after `topology.message.timeout.secs=30` does so in a fraction of a second of real
    time, with every heartbeat, tick and timeout happening at the fake times it would happen at.

    What the fake clock controls: every timer of the *host*: heartbeats and housekeeping (every
    second), tick tuples (`topology.tick.tuple.freq.secs`), message timeouts
    (`topology.message.timeout.secs`), liveness (`topology.subprocess.timeout.secs`), the
    handshake timeout, restart back-off, the back-off of idle spouts, the drain grace period at
    stop, and the times in the stats (uptime, complete latency).
    What it cannot control: the components' own time. A component that sleeps, reads its own
    clock or runs its own timers does so in real time; process start-up and pipe I/O take real
    time. Fake time moves only while every component is quiet (no message from any of them for
    `FakeClock.autojump_threshold` real seconds, 5 ms by default); while a component owes the
    host an answer (the handshake's pid, a heartbeat's `sync`, a spout command's `sync`) it is
    held for up to `FakeClock.stall_threshold` (0.25 s) of real time per fake second, so a slow
    component is not declared hung in fake time, yet a hung one still is (a 30 s
    `topology.subprocess.timeout.secs` then takes about 8 real seconds). Idle spouts are asked for
    their `next` once per fake-time step rather than every few fake milliseconds. After the
    run is stopped, fake time follows real time, so that the staged shutdown (grace, SIGTERM,
    SIGKILL) is bounded; it is frozen again when `run_topology` returns.

`ComponentPeer`, `make_context`
    The scripted host stand-in for one component process that `run_component` is built on, for
    tests that need to drive the exchange message by message.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import re
import selectors
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import multilang
from host.topology import settings as cfg
from host.topology.model import SPOUT, Component, Topology
from multilang.codec import (
    DEFAULT_MAX_FRAME,
    EncodeError,
    Framer,
    ProtocolError,
    dumps,
    to_wire,
)
from multilang.messages import (
    Ack,
    Emit,
    Error,
    Fail,
    Handshake,
    Log,
    Metrics,
    Pid,
    SpoutCommand,
    Sync,
    TaskIds,
    TupleMessage,
    UnknownCommand,
)
from multilang.paths import client_environment
from multilang.serializers import Serializer
from multilang.serializers import serializer as serializer_named

__all__ = [
    "ComponentPeer",
    "ComponentResult",
    "Emitted",
    "FakeClock",
    "LogLine",
    "TopologyResult",
    "heartbeat",
    "make_context",
    "run_component",
    "run_topology",
    "tick",
]

HOST_BIN = str(Path(sys.executable).parent)
_HOST_TUPLE_ID = re.compile(r"0|[1-9][0-9]{0,19}")  # what the host's own tuple ids look like
_COMPONENT_NAME = re.compile(r"^([^\s\[\]]+)\[(-?\d+)\] pid=\S*?(?:: |\s)")


# ================================================================================================
# The fake clock
# ================================================================================================


class FakeClock:
    """A monotonic clock that stands still until `advance` moves it (see the module docstring
    for what it controls when given to `run_topology`). Callable, like `time.monotonic`, so it
    can be given to `Supervisor(clock=...)` or `Acker(clock=...)` directly.

    `autojump_threshold`: real seconds of silence from every component before `run_topology`
    moves the fake time on. `stall_threshold`: the same while some component owes the host an
    answer."""

    def __init__(
        self,
        start: float = 1000.0,
        *,
        autojump_threshold: float = 0.005,
        stall_threshold: float = 0.25,
    ):
        self._now = float(start)
        self._real_base: float | None = None  # set while following real time
        self.autojump_threshold = autojump_threshold
        self.stall_threshold = stall_threshold

    def __call__(self) -> float:
        if self._real_base is not None:
            return self._now + (time.monotonic() - self._real_base)
        return self._now

    @property
    def now(self) -> float:
        return self()

    def advance(self, seconds: float) -> None:
        """Move the time forward by `seconds` (>= 0)."""
        if seconds < 0:
            raise ValueError(f"a clock cannot go back: advance({seconds})")
        self._now = self() + seconds
        if self._real_base is not None:
            self._real_base = time.monotonic()

    def follow_real_time(self) -> None:
        """From now on, move with real time (from the current fake time) until `freeze`."""
        if self._real_base is None:
            self._real_base = time.monotonic()

    def freeze(self) -> None:
        """Stop following real time; the clock keeps the time it had reached."""
        if self._real_base is not None:
            self._now = self()
            self._real_base = None

    def __repr__(self) -> str:
        return f"FakeClock(now={self():.3f})"


# ================================================================================================
# run_topology
# ================================================================================================


@dataclass(frozen=True)
class Emitted:
    """One emit, as the host routed it."""

    component: str
    task: int
    stream: str
    values: list
    anchors: tuple = ()  # bolts: the ids of the input tuples it was anchored to
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


def _log_line(record: logging.LogRecord, at: float) -> LogLine:
    message = record.getMessage()
    m = _COMPONENT_NAME.match(message)
    component = task = None
    text = message
    if m:
        component, task = m.group(1), int(m.group(2))
        if record.name == "host.component":
            text = message[m.end() :]
    return LogLine(record.name, record.levelno, message, component, task, text, at)


class TopologyResult:
    """What `run_topology` observed. Live while the run goes on (the object `until` gets), final
    once `run_topology` returns."""

    def __init__(self, topology: Topology, supervisor, started: float, clock):
        self.topology = topology
        #: every emit, in the order the host handled them
        self.emits: list[Emitted] = []
        #: component id -> stream -> values of every tuple it emitted on that stream, in order
        self.emitted: dict[str, dict[str, list[list]]] = {}
        #: spout component id -> message ids acked / failed (timeouts included) / timed out, in
        #: the order the host decided it
        self.acked: dict[str, list] = {}
        self.failed: dict[str, list] = {}
        self.timed_out: dict[str, list] = {}
        #: the `host` and `host.component` log records of the run
        self.logs: list[LogLine] = []
        #: why the run ended: "quiescent", "until", "timeout", "failure" or what stopped it
        self.stopped_because: str | None = None
        #: the host's own failure message (a component declared fatal), if any
        self.failure: str | None = None
        #: the Supervisor that ran it, for assertions on host internals (not a stable API)
        self.supervisor = supervisor
        self.inputs: dict[str, list[tuple[str, list]]] = {}  # component id -> (stream, values)
        self._clock = clock
        self._started = started
        self._real_started = time.monotonic()
        self._run: _TopologyRun | None = None
        self._final_snapshot: dict | None = None
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

    def _finish(self, snapshot: dict, quiescent: bool, uptime: float) -> None:
        self._final_snapshot = snapshot
        self._final_quiescent = quiescent
        self._final_uptime = uptime
        self._final_real = time.monotonic() - self._real_started
        self._run = None

    # -- reading ---------------------------------------------------------------------------------
    @property
    def snapshot(self) -> dict:
        """The host's stats (the `--stats-json` object, plus live gauges): live during the run,
        the final one after it."""
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

    def values(self, component: str, stream: str = "default") -> list[list]:
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


# ---- replacing components with fixed inputs -----------------------------------------------------

# Run by the harness in place of a component given `inputs`: emits the tuples of the JSON file
# named by argv[1] ([[stream, values], ...]) with message ids = their index, this task's share
# only, a few per `next`, and nothing else (no replay: outcomes are the host's to report).
_FIXED_SPOUT = '''\
"""A fixed-input spout started by host.testing: emits the tuples listed in argv[1]."""
import json
import sys

from multilang import Spout

PER_NEXT = 10


class FixedInputs(Spout):
    def initialize(self, conf, context):
        with open(sys.argv[1], encoding="utf-8") as fh:
            items = json.load(fh)
        me = context["componentid"]
        tasks = sorted(int(t) for t, c in context["task->component"].items() if c == me)
        share, index = len(tasks), tasks.index(int(context["taskid"]))
        self.todo = [(i, s, v) for i, (s, v) in enumerate(items) if i % share == index]
        self.todo.reverse()

    def next_tuple(self):
        for _ in range(PER_NEXT):
            if not self.todo:
                return
            msg_id, stream, values = self.todo.pop()
            self.emit(values, id=msg_id, stream=stream)


FixedInputs().run()
'''


def _as_topology(topology) -> Topology:
    if isinstance(topology, Topology):
        return topology
    if isinstance(topology, (str, os.PathLike)):
        from host.topology.loader import load

        return load(topology)
    build = getattr(topology, "build", None)
    if callable(build):  # a TopologyBuilder
        return build()
    raise TypeError(f"expected a Topology, a TopologyBuilder or a path, got {topology!r}")


def _input_items(comp: Component, tuples: Iterable) -> list[tuple[str, list]]:
    """`inputs` entries -> (stream, values), checked against what the component declares, so
    that a mistake is one clear error here rather than a fault in the run."""
    if isinstance(tuples, (str, bytes, Mapping)):
        raise TypeError(f"inputs[{comp.id!r}] must be a list of tuples, got {tuples!r}")
    default = (
        "default"
        if "default" in comp.outputs or len(comp.outputs) != 1
        else next(iter(comp.outputs))
    )
    items = []
    for i, item in enumerate(tuples):
        where = f"inputs[{comp.id!r}][{i}]"
        if isinstance(item, Mapping):
            unknown = set(item) - {"values", "stream"}
            if unknown or "values" not in item:
                raise ValueError(
                    f"{where}: expected {{'values': [...], 'stream': ...}}, got {item!r}"
                )
            values, stream = item["values"], item.get("stream", default)
        else:
            values, stream = item, default
        if isinstance(values, (str, bytes, Mapping)) or not isinstance(values, Sequence):
            raise TypeError(f"{where}: a tuple is a list of values, got {values!r}")
        fields = comp.outputs.get(stream)
        if fields is None:
            declared = ", ".join(repr(s) for s in comp.outputs) or "none"
            raise ValueError(
                f"{where}: {comp.id!r} does not declare stream {stream!r} (declared: {declared})"
            )
        if len(values) != len(fields):
            raise ValueError(
                f"{where}: {len(values)} values for stream {stream!r} of "
                f"{comp.id!r}, which declares {len(fields)} fields {list(fields)}"
            )
        try:
            json.dumps(list(values))
        except (TypeError, ValueError) as exc:
            raise ValueError(f"{where}: values must be JSON values: {exc}") from None
        items.append((stream, list(values)))
    return items


def _fixed_spout(comp: Component, items: list[tuple[str, list]], workdir: Path) -> Component:
    program = workdir / "fixed_inputs_spout.py"
    if not program.exists():
        program.write_text(_FIXED_SPOUT, encoding="utf-8")
    data = workdir / f"inputs-{len(list(workdir.iterdir()))}.json"
    data.write_text(json.dumps([[s, v] for s, v in items]), encoding="utf-8")
    # `multilang` must be importable by the child even when the host runs from a source tree
    pythonpath = str(Path(multilang.__file__).resolve().parent.parent)
    if os.environ.get("PYTHONPATH"):
        pythonpath += os.pathsep + os.environ["PYTHONPATH"]
    return dataclasses.replace(
        comp,
        kind=SPOUT,
        command=(sys.executable, str(program), str(data)),
        inputs=(),
        env={"PYTHONPATH": pythonpath},
        serializer="json",
        heartbeats=True,
        activate=True,
    )


def _with_inputs(
    topology: Topology, inputs: Mapping[str, Iterable], workdir: Path
) -> tuple[Topology, dict[str, list[tuple[str, list]]]]:
    """The topology with every component named in `inputs` replaced by a fixed-input spout, and
    spouts that now feed nobody silenced; plus the items per replaced component."""
    ids = [c.id for c in topology.components]
    fixed: dict[str, list[tuple[str, list]]] = {}
    for cid, tuples in inputs.items():
        if cid not in ids:
            raise ValueError(
                f"inputs names {cid!r}, which is not a component of topology "
                f"{topology.name!r} (components: {', '.join(ids)})"
            )
        fixed[cid] = _input_items(topology.component(cid), tuples)
    if not fixed:
        return topology, fixed
    replaced = [
        _fixed_spout(c, fixed[c.id], workdir) if c.id in fixed else c for c in topology.components
    ]
    feeds = {i.source for c in replaced for i in c.inputs}
    fed_before = {i.source for c in topology.components for i in c.inputs}
    for n, c in enumerate(replaced):
        if c.is_spout and c.id not in fixed and c.id in fed_before and c.id not in feeds:
            fixed[c.id] = []
            replaced[n] = _fixed_spout(c, [], workdir)
    return dataclasses.replace(topology, components=tuple(replaced)), fixed


# ---- capturing the host's logs ------------------------------------------------------------------


class _Capture(logging.Handler):
    def __init__(self, result: TopologyResult):
        super().__init__(logging.DEBUG)
        self.result = result

    def emit(self, record: logging.LogRecord) -> None:
        try:
            self.result.logs.append(_log_line(record, self.result.uptime))
        except Exception:  # noqa: BLE001 - a log call must never break the run
            self.handleError(record)


class _CapturedLogs:
    """Attach a handler to the `host` logger for the run; make sure component log lines (any
    level) and the host's INFO lines are produced, and put the levels back afterwards."""

    def __init__(self, result: TopologyResult):
        self.handler = _Capture(result)
        self.host = logging.getLogger("host")
        self.component = logging.getLogger("host.component")

    def __enter__(self) -> None:
        self.levels = (self.host.level, self.component.level)
        if self.host.getEffectiveLevel() > logging.INFO:
            self.host.setLevel(logging.INFO)
        if self.component.getEffectiveLevel() > logging.DEBUG:
            self.component.setLevel(logging.DEBUG)
        self.host.addHandler(self.handler)

    def __exit__(self, *exc) -> None:
        self.host.removeHandler(self.handler)
        self.host.setLevel(self.levels[0])
        self.component.setLevel(self.levels[1])


# ---- the run ------------------------------------------------------------------------------------

REAL_STEP_WAIT = 0.05  # real seconds a turn of the loop may wait, so `until` is checked often
IDLE_NEXTS = 3  # empty `next`s in a row after which a spout counts as idle


class _TopologyRun:
    """Drives one Supervisor step by step: taps its emits and spout outcomes, decides when the
    run is over, and moves a FakeClock.

    Reads supervisor internals (task state, timers) that have no public accessor; see
    `_spout_idle` and `_next_due`."""

    def __init__(
        self,
        sup,
        result: TopologyResult,
        fixed: dict[str, list],
        clock: FakeClock | None,
        until,
        timeout: float,
    ):
        from host.runtime.process import State

        self.State = State
        self.sup = sup
        self.result = result
        self.fixed = fixed
        self.clock = clock
        self.until = until
        self.timeout = timeout
        self.emitted_by: dict[str, int] = {}
        self.active = False  # some component wrote something during the last step
        self.final_quiescent = False
        self.quiet_since = time.monotonic()
        self._tap()

    def _tap(self) -> None:
        sup, result = self.sup, self.result

        def on_emit(component: str, task: int, m: Emit) -> None:
            self.emitted_by[component] = self.emitted_by.get(component, 0) + 1
            result._emit(component, task, m)

        sup.on_emit = on_emit

        def on_outcome(component: str, task: int, msg_id: Any, outcome: str) -> None:
            # a spout task's death drops its ids ("lost"): they count as failed here
            result._outcome(component, msg_id, outcome == "acked", outcome == "timed_out")

        sup.on_outcome = on_outcome

    # -- the loop --------------------------------------------------------------------------------
    def run(self) -> None:
        sup, result = self.sup, self.result
        deadline = time.monotonic() + self.timeout
        wait = self.clock.autojump_threshold if self.clock is not None else REAL_STEP_WAIT
        sup.start(None)
        finished = False
        try:
            while sup.step(max_wait=wait):
                # pipes were ready: the components are busy, and fake time must not move
                self.active = self.active or sup.last_step_events > 0
                if time.monotonic() >= deadline:
                    # in flight is stuck (or the drain overran): end without draining
                    result.stopped_because = result.stopped_because or "timeout"
                    break
                if result.stopped_because is None:
                    self._check_stop()
                if self.clock is not None:
                    self._maybe_advance()
            finished = True
        finally:
            self.final_quiescent = self.quiescent()
            if self.clock is not None:
                self.clock.follow_real_time()  # the staged shutdown waits on the clock
            try:
                sup.finish()
            finally:
                if self.clock is not None:
                    self.clock.freeze()
            result.failure = sup.failure
            if result.stopped_because is None:
                if not finished:
                    result.stopped_because = "error"
                elif sup.failure:
                    result.stopped_because = "failure"
                else:
                    result.stopped_because = sup.stop_reason or "stopped"

    def _check_stop(self) -> None:
        sup, result = self.sup, self.result
        if sup.failure:
            result.stopped_because = "failure"
            return  # the supervisor is stopping already
        if self.until is not None:
            if self.until(result):
                result.stopped_because = "until"
                sup.request_stop("the test's `until` condition is true")
        elif self.quiescent():
            result.stopped_because = "quiescent"
            sup.request_stop("quiescent: nothing in flight and every spout idle")

    # -- quiescence ------------------------------------------------------------------------------
    def quiescent(self) -> bool:
        sup = self.sup
        if len(sup.acker):
            return False
        running = self.State.RUNNING
        for t in sup.tasks.values():
            if t.proc.state is not running or t.proc.has_output:
                return False
            if t.is_spout:
                if t.outstanding or t.commands or not self._spout_idle(t):
                    return False
            elif t.pending or t.backlog:
                return False
        return True

    def _spout_idle(self, t) -> bool:
        if t.cid in self.fixed:
            return self.emitted_by.get(t.cid, 0) >= len(self.fixed[t.cid])
        return t.empty_nexts >= IDLE_NEXTS

    # -- fake time -------------------------------------------------------------------------------
    def _maybe_advance(self) -> None:
        clock = self.clock
        real_now = time.monotonic()
        if self.active:
            self.active = False
            self.quiet_since = real_now
            return
        threshold = clock.stall_threshold if self._owed() else clock.autojump_threshold
        if real_now - self.quiet_since < threshold:
            return
        now = clock()
        due = self._next_due(now)
        if due > now:
            clock.advance(due - now)
        self.quiet_since = real_now

    def _owed(self) -> bool:
        """Whether some component owes the host an answer to something it was sent: the pid
        reply, a spout command's sync, a heartbeat's sync."""
        sup = self.sup
        starting, running = self.State.STARTING, self.State.RUNNING
        heartbeat_at = sup.last_housekeeping
        for t in sup.tasks.values():
            state = t.proc.state
            if state is starting:
                return True
            if state is not running:
                continue
            if t.proc.has_output:
                return True
            if t.is_spout:
                if t.outstanding:
                    return True
            elif t.await_since is not None and t.reading:
                # no tuple pending: it owes a heartbeat's sync; tuples pending: it has said
                # nothing since the last heartbeat (a bolt holding tuples on purpose still
                # answers heartbeats, so fake time moves on for it)
                if not t.pending:
                    return True
                if t.comp.heartbeats and t.await_since < heartbeat_at:
                    return True
        return False

    def _next_due(self, now: float) -> float:
        """When the host next has something to do by the clock, at most one housekeeping period
        away (so heartbeats, ticks and liveness checks happen at their fake times); idle spouts
        are not waited for."""
        return self.sup.next_due(skip_spout=self._spout_idle)


def run_topology(
    topology: Topology | str | os.PathLike,
    inputs: Mapping[str, Iterable] | None = None,
    until: Callable[[TopologyResult], bool] | None = None,
    timeout: float = 30.0,
    clock: FakeClock | None = None,
    *,
    config: Mapping[str, Any] | None = None,
    strict: bool = False,
) -> TopologyResult:
    """Run `topology` with real subprocess components until it is quiescent (or `until` is
    true, or `timeout` real seconds pass) and return what happened. See the module docstring.

    `config`: Storm config keys merged over the topology's (like `python -m host local -c`).
    `strict`: run the host in strict mode (`--strict`: protocol misuse is reported, and the
    component is not restarted for it)."""
    from host.runtime.supervisor import Supervisor
    from host.topology.settings import with_overrides

    model = _as_topology(topology)
    if config:
        model = with_overrides(model, dict(config))
    workdir = Path(tempfile.mkdtemp(prefix="host-testing-"))
    try:
        model, fixed = _with_inputs(model, inputs or {}, workdir)
        sup = Supervisor(model, clock=clock if clock is not None else time.monotonic, strict=strict)
        result = TopologyResult(model, sup, sup.clock(), sup.clock)
        result.inputs = {cid: items for cid, items in fixed.items()}
        run = _TopologyRun(sup, result, fixed, clock, until, timeout)
        result._run = run
        with _CapturedLogs(result):
            try:
                run.run()
            finally:
                result._finish(sup.snapshot(), run.final_quiescent, sup.now - result._started)
        return result
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


# ================================================================================================
# The scripted host stand-in for one component
# ================================================================================================


def make_context(
    taskid: int = 3, componentid: str = "comp", outputs=None, sources=None, targets=None
) -> dict:
    """A handshake context for one task, in the shape Storm sends (spec §3.2)."""
    outputs = outputs if outputs is not None else {"default": ["word"]}
    sources = sources if sources is not None else {"spout": {"default": ["sentence"]}}
    task_to_component = {"1": "spout", "2": "__acker", str(taskid): componentid}
    return {
        "taskid": taskid,
        "componentid": componentid,
        "task->component": task_to_component,
        "streams": list(outputs),
        "stream->outputfields": outputs,
        "stream->target->grouping": targets or {},
        "source->stream->grouping": {
            s: {st: {"type": "SHUFFLE"} for st in streams} for s, streams in sources.items()
        },
        "source->stream->fields": sources,
    }


class ComponentPeer:
    """Starts one real component process (with the client-library environment the host gives
    every component) and exchanges messages with it over its real pipes, with timeouts so that a
    broken component fails a test instead of hanging it. Speaks JSON unless given another
    serializer (`serializer="msgpack"`), through the same `multilang.serializers` objects as the
    host: the same decoder, the same reduced handshake context, and tuples with decimal ids
    written as the host writes them (cached prefix + values + id).

    Everything written and read is also kept in `transcript` (`->` host to component, `<-`
    component to host, `   ` notes such as stderr lines), as in the spec's recorded transcripts.
    """

    def __init__(
        self,
        argv: list[str],
        cwd: str | None = None,
        env: dict | None = None,
        serializer: str | Serializer = "json",
    ):
        self.serializer = (
            serializer_named(serializer) if isinstance(serializer, str) else serializer
        )
        self.argv = list(argv)
        self.pid_dir = tempfile.mkdtemp(prefix="peer-pids-")
        full_env = client_environment(env)
        full_env["PATH"] = HOST_BIN + os.pathsep + full_env.get("PATH", "")
        self.transcript: list[str] = []
        self._json = getattr(self.serializer, "name", "") == "json"
        self._tee = Framer(DEFAULT_MAX_FRAME) if self._json else None
        self._stderr_partial = b""
        try:
            self.proc = subprocess.Popen(
                argv,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                cwd=cwd,
                env=full_env,
                start_new_session=True,
            )
        except OSError:
            shutil.rmtree(self.pid_dir, ignore_errors=True)
            raise
        os.set_blocking(self.proc.stdout.fileno(), False)
        os.set_blocking(self.proc.stderr.fileno(), False)
        self.decoder = self.serializer.decoder(DEFAULT_MAX_FRAME)
        self.inbox: list = []
        self.stderr = b""
        self.sel = selectors.DefaultSelector()
        self.sel.register(self.proc.stdout, selectors.EVENT_READ, "out")
        self.sel.register(self.proc.stderr, selectors.EVENT_READ, "err")
        self.stdout_closed = False

    # -- transcript ------------------------------------------------------------------------------
    def note(self, text: str) -> None:
        """Add a note (not a message) to the transcript."""
        self.transcript.append(f"   {text}")

    def _sent(self, data: bytes, message=None) -> None:
        if message is not None and not self._json:
            try:
                self.transcript.append(f"-> {dumps(to_wire(message))}")
            except (EncodeError, KeyError):
                self.transcript.append(f"-> {message!r}")
            return
        framer = Framer(max(DEFAULT_MAX_FRAME, len(data) + 1))
        for payload in framer.feed(data):
            self.transcript.append(f"-> {payload.decode('utf-8', 'replace')}")
        if framer.pending:
            self.transcript.append(f"-> {framer.pending!r} (no `end` line)")

    def _received(self, data: bytes, messages: list) -> None:
        if self._tee is None:
            for m in messages:
                try:
                    self.transcript.append(f"<- {dumps(to_wire(m))}")
                except (EncodeError, KeyError):
                    self.transcript.append(f"<- {m!r}")
            return
        try:
            payloads = self._tee.feed(data)
        except ProtocolError as exc:
            self.transcript.append(f"<- {exc.raw!r} ({exc.reason})")
            return
        for payload in payloads:
            self.transcript.append(f"<- {payload.decode('utf-8', 'replace')}")

    def _stderr_lines(self, data: bytes) -> None:
        data = self._stderr_partial + data
        *lines, self._stderr_partial = data.split(b"\n")
        for line in lines:
            text = line.rstrip(b"\r").decode("utf-8", "replace")
            self.note(f"stderr: {text}")

    # -- writing ---------------------------------------------------------------------------------
    def send(self, message) -> None:
        data = self.serializer.encode(message)
        self._write(data)
        self._sent(data, message)

    def send_raw(self, data: bytes) -> None:
        self._write(data)
        self._sent(data)

    def _write(self, data: bytes) -> None:
        self.proc.stdin.write(data)
        self.proc.stdin.flush()

    def handshake(
        self, conf: dict | None = None, context: dict | None = None, timeout: float = 10
    ) -> int:
        conf = {"topology.name": "test", "topology.debug": False, **(conf or {})}
        context = self.serializer.handshake_context(context or make_context())
        self.send(Handshake(self.pid_dir, conf, context))
        pid = self.read(timeout)
        assert isinstance(pid, Pid), f"expected the pid reply, got {pid!r}"
        self.wait_pid_file(pid.pid, timeout)
        assert str(pid.pid) in os.listdir(self.pid_dir), "pid file not created"
        return pid.pid

    def wait_pid_file(self, pid: int, timeout: float = 10) -> bool:
        deadline = time.monotonic() + timeout
        while str(pid) not in os.listdir(self.pid_dir) and time.monotonic() < deadline:
            time.sleep(0.01)
        return str(pid) in os.listdir(self.pid_dir)

    def tuple(
        self,
        id: str,
        values: list,
        comp: str | None = "spout",
        stream: str = "default",
        task: int = 1,
    ) -> None:
        if _HOST_TUPLE_ID.fullmatch(id) and int(id) < 2**64:
            ser = self.serializer  # the host's data path: these frames must be read the same
            data = ser.tuple_frame(
                ser.tuple_prefix(comp, stream, task), ser.values(values), int(id)
            )
            self._write(data)
            self._sent(data, TupleMessage(id, comp, stream, task, values))
        else:
            self.send(TupleMessage(id, comp, stream, task, values))

    def heartbeat(self, id: str = "hb-1") -> None:
        self.send(TupleMessage(id, None, "__heartbeat", -1, []))

    def tick(self, id: str = "tick-1", freq: int = 1) -> None:
        self.send(TupleMessage(id, "__system", "__tick", -1, [freq]))

    def command(self, command: str, id="") -> None:
        self.send(SpoutCommand(command, id))

    def task_ids(self, tasks: list[int]) -> None:
        self.send(TaskIds(tasks))

    # -- reading ---------------------------------------------------------------------------------
    def _pump(self, timeout: float) -> None:
        for key, _ in self.sel.select(timeout):
            try:
                data = os.read(key.fileobj.fileno(), 65536)
            except BlockingIOError:
                continue
            if key.data == "err":
                if data:
                    self.stderr += data
                    self._stderr_lines(data)
                else:
                    self.sel.unregister(key.fileobj)
                    if self._stderr_partial:
                        self._stderr_lines(b"\n")
                continue
            if not data:
                self.sel.unregister(key.fileobj)
                self.stdout_closed = True
                continue
            try:
                messages = self.decoder.feed(data)
            except ProtocolError as exc:
                self._received(data, exc.decoded)  # the transcript shows the bad bytes too
                raise
            self._received(data, messages)
            self.inbox.extend(messages)

    def poll(self, timeout: float = 10):
        """The next message, or None when none arrives within `timeout` seconds (or stdout is
        closed). Raises ProtocolError for bytes that break the protocol."""
        deadline = time.monotonic() + timeout
        while not self.inbox:
            left = deadline - time.monotonic()
            if left <= 0 or self.stdout_closed:
                return None
            self._pump(min(left, 0.5))
        return self.inbox.pop(0)

    def read(self, timeout: float = 10):
        """The next message, or AssertionError after `timeout` seconds."""
        msg = self.poll(timeout)
        if msg is None:
            raise AssertionError(
                f"no message within {timeout}s (exit={self.proc.poll()}); "
                f"stderr: {self.stderr[-2000:]!r}"
            )
        return msg

    def read_until(self, kind, timeout: float = 10) -> list:
        """Messages up to and including the first of type `kind`."""
        out = []
        while True:
            msg = self.read(timeout)
            out.append(msg)
            if isinstance(msg, kind):
                return out

    def quiet(self, seconds: float = 0.3) -> list:
        """Whatever arrives within `seconds` (to check that nothing unexpected is written)."""
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            self._pump(max(0.0, deadline - time.monotonic()))
        out, self.inbox = self.inbox, []
        return out

    # -- ending ----------------------------------------------------------------------------------
    def close(self, timeout: float = 5) -> int:
        """Close stdin (clients exit on EOF), wait, kill the group if needed; the exit status."""
        try:
            self.proc.stdin.close()
        except BrokenPipeError:
            pass
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            return self.proc.wait()
        finally:
            self.sel.close()
            self.proc.stdout.close()
            self.proc.stderr.close()
            shutil.rmtree(self.pid_dir, ignore_errors=True)

    def kill_group(self) -> None:
        """SIGKILL what is left of the component's process group (its own children)."""
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass


# ================================================================================================
# run_component
# ================================================================================================


def tick(freq: int = 1, id: str | None = None) -> TupleMessage:
    """A tick tuple, for `run_component`'s tuples."""
    return TupleMessage(id or "", "__system", "__tick", -1, [freq])


def heartbeat(id: str | None = None) -> TupleMessage:
    """A heartbeat tuple, for `run_component`'s tuples (answered with `sync`, not acked)."""
    return TupleMessage(id or "", None, "__heartbeat", -1, [])


@dataclass
class ComponentResult:
    """What `run_component` observed."""

    command: list[str]
    kind: str
    pid: int | None = None
    #: bolt: the tuples sent, in order; spout: the commands sent
    sent: list = field(default_factory=list)
    #: every emit, in order (values, stream, anchors, task = direct target, need_task_ids, id)
    emits: list[Emit] = field(default_factory=list)
    #: bolt: ids of the tuples it acked / failed; spout: message ids the harness acked / failed
    acked: list = field(default_factory=list)
    failed: list = field(default_factory=list)
    #: bolt: ids of tuples neither acked nor failed when the run ended
    pending: list = field(default_factory=list)
    logs: list[Log] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)  # `error` commands
    metrics: list[Metrics] = field(default_factory=list)
    #: everything the component wrote, decoded, in order (pid reply and syncs included)
    messages: list = field(default_factory=list)
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

    def values(self, stream: str = "default") -> list[list]:
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


class _Exchange:
    """The state of one run_component exchange: what was sent, and reading with timeouts."""

    def __init__(
        self,
        peer: ComponentPeer,
        result: ComponentResult,
        context: dict,
        task_ids,
        reply_timeout: float,
        deadline: float,
    ):
        self.peer = peer
        self.result = result
        self.context = context
        self.task_ids = task_ids
        self.reply_timeout = reply_timeout
        self.deadline = deadline
        self.unsettled: dict[str, None] = {}  # bolt tuple ids sent, not yet acked or failed
        self.settled: set[str] = set()
        self.syncs = 0
        self.over = False  # the component is gone, or the overall timeout passed

    def next_message(self, wait: float | None = None):
        """The next message within `wait` (default: the reply timeout) seconds, else None
        (noted as `(timeout)`)."""
        if self.over:
            return None
        left = self.deadline - time.monotonic()
        if left <= 0:
            self._timeout_overall()
            return None
        try:
            msg = self.peer.poll(min(self.reply_timeout if wait is None else wait, left))
        except ProtocolError as exc:
            for m in exc.decoded:  # what came before the bad bytes still counts
                self.handle(m)
            self.result.protocol_error = f"{exc.reason}: {exc.raw!r}"
            self.peer.note(f"protocol error: {exc.reason}")
            self.over = True
            return None
        if msg is None:
            if self.peer.stdout_closed:
                self.over = True
                self.peer.note("the component closed its stdout")
            elif time.monotonic() >= self.deadline:
                self._timeout_overall()
            else:
                self.peer.transcript.append("<- (timeout)")
            return None
        self.handle(msg)
        return msg

    def _timeout_overall(self) -> None:
        self.result.timed_out = True
        self.over = True
        self.peer.transcript.append("<- (timeout)")
        self.peer.note("the run's timeout passed")

    def handle(self, msg) -> None:
        r = self.result
        r.messages.append(msg)
        typ = type(msg)
        if typ is Emit:
            r.emits.append(msg)
            for anchor in msg.anchors:
                if anchor not in self.unsettled:
                    self.problem(f"emit anchored to {anchor!r}, which is not pending")
            if msg.task is None and msg.need_task_ids:
                tasks = self.reply_task_ids(msg)
                r.task_id_replies.append(tasks)
                self.peer.task_ids(tasks)
        elif typ is Ack or typ is Fail:
            (r.acked if typ is Ack else r.failed).append(msg.id)
            if msg.id in self.unsettled:
                del self.unsettled[msg.id]
                self.settled.add(msg.id)
            else:
                what = "already acked or failed" if msg.id in self.settled else "never sent"
                self.problem(f"{typ.__name__.lower()} of tuple {msg.id!r}, {what}")
        elif typ is Log:
            r.logs.append(msg)
        elif typ is Error:
            r.errors.append(msg.msg)
        elif typ is Metrics:
            r.metrics.append(msg)
        elif typ is Sync:
            self.syncs += 1
        elif typ is UnknownCommand:
            self.problem(f"unknown command {msg.command!r}")
        elif typ is Pid and r.pid is not None:
            self.problem("a second pid reply")

    def problem(self, text: str) -> None:
        self.result.problems.append(text)
        self.peer.note(f"problem: {text}")

    def reply_task_ids(self, emit: Emit) -> list[int]:
        if callable(self.task_ids):
            return list(self.task_ids(emit))
        if self.task_ids is not None:
            return list(self.task_ids)
        # the tasks of the components the context says subscribe to the stream
        targets = self.context.get("stream->target->grouping", {}).get(emit.stream, {})
        tasks = self.context.get("task->component", {})
        return sorted(int(t) for t, c in tasks.items() if c in targets)


def _tuple_message(item, n: int) -> TupleMessage:
    """A run_component tuple: a list of values, a mapping, or a TupleMessage (tick/heartbeat)."""
    if isinstance(item, TupleMessage):
        return item if item.id else item._replace(id=f"{item.stream}-{n}")
    if isinstance(item, Mapping):
        unknown = set(item) - {"values", "stream", "comp", "task", "id"}
        if unknown or "values" not in item:
            raise ValueError(
                f"tuple {n}: expected a list of values or an object with "
                f"'values' (and optionally 'stream', 'comp', 'task', 'id'), "
                f"got {item!r}"
            )
        values = item["values"]
        comp, stream = item.get("comp", "spout"), item.get("stream", "default")
        task, tid = item.get("task", 1), str(item.get("id", n))
    else:
        values, comp, stream, task, tid = item, "spout", "default", 1, str(n)
    if isinstance(values, (str, bytes, Mapping)) or not isinstance(values, Sequence):
        raise TypeError(f"tuple {n}: a tuple is a list of values, got {values!r}")
    return TupleMessage(tid, comp, stream, int(task), list(values))


def _default_conf(conf: Mapping | None) -> dict:
    return {
        **cfg.DEFAULTS,
        "topology.name": "test",
        "storm.id": "test-1",
        "storm.cluster.mode": "local",
        "topology.debug": False,
        **(conf or {}),
    }


def _default_context(kind: str, tuples: list[TupleMessage]) -> dict:
    """A context like the host's for a bolt fed by the sources the tuples name (fields f0, f1,
    ... by the number of values), or for a spout; each component is given one task."""
    me = "bolt" if kind == "bolt" else "spout"
    sources: dict[str, dict[str, list[str]]] = {}
    for t in tuples:
        if t.task != -1 and t.comp is not None:
            sources.setdefault(t.comp, {}).setdefault(
                t.stream, [f"f{i}" for i in range(len(t.values))]
            )
    names = sorted({*sources, me, "__acker"})
    task_of = {name: i + 1 for i, name in enumerate(names)}
    return {
        "taskid": task_of[me],
        "componentid": me,
        "task->component": {str(task_of[n]): n for n in names},
        "streams": ["default"],
        "stream->outputfields": {"default": []},
        "stream->target->grouping": {},
        "source->stream->grouping": {
            s: {st: {"type": "SHUFFLE"} for st in streams} for s, streams in sources.items()
        },
        "source->stream->fields": sources,
    }


def run_component(
    command: Sequence[str],
    tuples: Iterable = (),
    *,
    kind: str = "bolt",
    conf: Mapping[str, Any] | None = None,
    context: Mapping | None = None,
    cwd: str | os.PathLike | None = None,
    timeout: float = 10,
    env: Mapping[str, str] | None = None,
    serializer: str = "json",
    nexts: int = 5,
    respond: str | Callable[[Any], str | None] | None = "ack",
    task_ids: Sequence[int] | Callable[[Emit], Sequence[int]] | None = None,
    reply_timeout: float = 2.0,
) -> ComponentResult:
    """Run one bolt (or spout) process through a scripted exchange; see the module docstring.

    `tuples` (bolts): lists of values, or mappings {"values", "stream", "comp", "task", "id"}
    (defaults: stream "default" from component "spout", task 1, ids "1", "2", ...), or
    `tick()` / `heartbeat()`. Each is sent when the previous one was acked or failed (a
    heartbeat: answered with `sync`), or after `reply_timeout` seconds of silence.
    `nexts` (spouts): how many `next` commands to send. `respond` (spouts): what to answer for
    each message id emitted: "ack", "fail", None (nothing), or a function of the id returning
    one of those. `task_ids`: the reply to emits that ask for task ids (default: the tasks of
    the stream's subscribers in `context`, usually none). `conf` is merged over the host's
    defaults; `context` (default: one built like the host's) is sent as is. `timeout` bounds
    the whole exchange in real seconds."""
    if kind not in ("bolt", "spout"):
        raise ValueError(f"kind must be 'bolt' or 'spout', got {kind!r}")
    messages = (
        [] if kind == "spout" else [_tuple_message(t, n) for n, t in enumerate(tuples, start=1)]
    )
    context = dict(context) if context is not None else _default_context(kind, messages)
    peer = ComponentPeer(
        list(command),
        cwd=None if cwd is None else str(cwd),
        env=None if env is None else dict(env),
        serializer=serializer,
    )
    result = ComponentResult(list(command), kind)
    ex = _Exchange(peer, result, context, task_ids, reply_timeout, time.monotonic() + timeout)
    try:
        if _handshake(ex, _default_conf(conf), context):
            if kind == "bolt":
                _feed_bolt(ex, messages)
            else:
                _drive_spout(ex, nexts, respond)
        _close(ex)
    finally:
        result.exit_code = peer.close(timeout=2)
        peer.kill_group()  # children it started must not outlive the run
        result.pending = list(ex.unsettled)
        result.stderr = peer.stderr.decode("utf-8", "replace")
        peer.note(f"exit code: {result.exit_code}")
        result.transcript = peer.transcript
    return result


def _handshake(ex: _Exchange, conf: dict, context: dict) -> bool:
    peer = ex.peer
    try:
        peer.send(Handshake(peer.pid_dir, conf, peer.serializer.handshake_context(context)))
    except (BrokenPipeError, EncodeError) as exc:
        ex.problem(f"cannot send the handshake: {exc}")
        return False
    while True:
        msg = ex.next_message(wait=ex.deadline - time.monotonic())  # start-up may be slow
        if msg is None:
            ex.problem("no pid reply to the handshake")
            return False
        if type(msg) is Pid:
            ex.result.pid = msg.pid
            if not peer.wait_pid_file(msg.pid, timeout=min(2.0, ex.reply_timeout)):
                ex.problem(f"no pid file {msg.pid} in the pid directory")
            peer.note(f"pid files: {sorted(os.listdir(peer.pid_dir))}")
            return True


def _send(ex: _Exchange, message) -> bool:
    try:
        if type(message) is TupleMessage:
            ex.peer.tuple(message.id, message.values, message.comp, message.stream, message.task)
        else:
            ex.peer.send(message)
        ex.result.sent.append(message)
        return True
    except (BrokenPipeError, ConnectionResetError):
        ex.peer.note("the component's stdin is closed")
        ex.over = True
        return False


def _feed_bolt(ex: _Exchange, tuples: list[TupleMessage]) -> None:
    for tup in tuples:
        if ex.over or not _send(ex, tup):
            return
        if tup.is_heartbeat:
            before = ex.syncs
            while ex.syncs == before and ex.next_message() is not None:
                pass
            continue
        ex.unsettled[tup.id] = None
        while tup.id in ex.unsettled and ex.next_message() is not None:
            pass


def _command(ex: _Exchange, command: str, msg_id: Any = "") -> list[Emit]:
    """Send a spout command and read up to its sync; the emits made meanwhile."""
    if ex.over or not _send(ex, SpoutCommand(command, msg_id)):
        return []
    first = len(ex.result.emits)
    before = ex.syncs
    while ex.syncs == before and ex.next_message() is not None:
        pass
    return ex.result.emits[first:]


def _drive_spout(ex: _Exchange, nexts: int, respond) -> None:
    _command(ex, "activate")
    for _ in range(nexts):
        for emit in _command(ex, "next"):
            if emit.id is None:
                continue
            answer = respond(emit.id) if callable(respond) else respond
            if answer in ("ack", "fail"):
                (ex.result.acked if answer == "ack" else ex.result.failed).append(emit.id)
                _command(ex, answer, emit.id)
            elif answer is not None:
                raise ValueError(f"respond must give 'ack', 'fail' or None, got {answer!r}")
    _command(ex, "deactivate")


def _close(ex: _Exchange) -> None:
    """Close stdin (the host's way of stopping a component) and read what it still writes."""
    peer = ex.peer
    try:
        peer.proc.stdin.close()
    except OSError:
        pass
    peer.note("stdin closed")
    end = min(ex.deadline, time.monotonic() + ex.reply_timeout)
    while not peer.stdout_closed and time.monotonic() < end:
        try:
            msg = peer.poll(max(0.0, end - time.monotonic()))
        except ProtocolError as exc:
            for m in exc.decoded:
                ex.handle(m)
            ex.result.protocol_error = f"{exc.reason}: {exc.raw!r}"
            peer.note(f"protocol error: {exc.reason}")
            return
        if msg is not None:
            ex.handle(msg)
    while peer.inbox:
        ex.handle(peer.inbox.pop(0))
