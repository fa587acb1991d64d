"""The event loop that owns every pipe of every component task.

One thread, one selector. Each turn: read what components wrote and handle it in order (route
emits, feed the acker, answer task ids), run the timers (heartbeats, ticks, liveness, timeouts,
restarts), give idle spouts their next `next`, then write everything queued, one write per task.
The router and the acker are plain objects called from here: no threads or locks on the data path.
"""

from __future__ import annotations

import gc
import logging
import os
import selectors
import shutil
import signal
import tempfile
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable
from random import getrandbits

from host.errors import RoutingError
from host.observe.metrics import MAX_METRIC_NAMES, ComponentStats, LatencyHistogram, update_metric
from host.observe.observations import Observations
from host.runtime.acker import Acker, Outcome
from host.runtime.context import assign_tasks, build_conf, build_context
from host.runtime.process import ComponentProcess, Launcher, State
from host.runtime.router import Router
from host.runtime.watchdog import ENV as WATCHDOG_ENV
from host.runtime.watchdog import Watchdog
from host.topology import settings as cfg
from host.topology.model import Component, Topology
from multilang.codec import EncodeError, ProtocolError, dumps, shorten
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
    TupleMessage,
    UnknownCommand,
)
from multilang.serializers import Serializer, serializer

log = logging.getLogger("host")
component_log = logging.getLogger("host.component")

READ_CHUNK = 1 << 18
GC_THRESHOLD = 70_000  # allocations between young-generation collections while running
HOUSEKEEPING_SECS = 1.0  # heartbeats, liveness, ticks, timeouts, restarts
STRICT_SYNC_SECS = 2.0  # --strict: a spout this long without `sync` is reported
# a `next` is written ahead of the previous one's sync only while the `next`s in flight are
# expected to emit fewer tuples than this: enough to keep a one-tuple-per-`next` spout busy, while a
# spout that emits batches per `next` is kept one batch ahead
AHEAD_TUPLES = 200
PRE_PID_MESSAGES = 1000  # messages a starting task may write before its pid reply (kept)
STDERR_LINES_PER_SEC = 200  # beyond this a task's stderr is counted, not logged line by line
_LOG_LEVELS = {
    0: logging.DEBUG,
    1: logging.DEBUG,
    2: logging.INFO,
    3: logging.WARNING,
    4: logging.ERROR,
}


class Fault(Exception):
    """A message that breaks the protocol or the topology's rules: its task is killed and
    restarted (with --strict, the message is reported and dropped instead)."""

    def __init__(self, reason: str, raw: bytes | str | None = None):
        self.reason = reason
        self.raw = raw
        super().__init__(reason)


class Task:
    """Per-task protocol state kept by the loop, around the task's ComponentProcess."""

    @property
    def waiting(self) -> bool:
        return bool(self.outstanding)

    def __init__(
        self,
        proc: ComponentProcess,
        comp: Component,
        ser: Serializer,
        stats: ComponentStats,
        conf: dict,
        context: dict,
    ):
        self.proc = proc
        self.ser = ser
        # a spout's lock-step commands, encoded once; compared by identity in the outstanding queue
        self.next_frame = ser.encode(SpoutCommand("next", ""))
        self.activate_frame = ser.encode(SpoutCommand("activate", ""))
        self.deactivate_frame = ser.encode(SpoutCommand("deactivate", ""))
        self.comp = comp
        self.cid = comp.id
        self.task = proc.task
        self.is_spout = comp.is_spout
        self.stats = stats
        self.conf = conf
        self.context = context
        self.out = proc.out  # the same list object for the process's whole life
        # per output stream: the router's chooser, and (serializer, tuple prefix) of the last
        # serializer written to; filled on first use (a dict lookup by stream on the data path)
        self.routes: dict[str, Callable[[list], list]] = {}
        self.prefixes: dict[str, tuple[Serializer, bytes]] = {}
        self.writing = False  # its stdin is registered for EVENT_WRITE (a write was partial)
        self.pre_pid: list = []
        self.await_since: float | None = None
        self.handshake_deadline = 0.0
        self.reading = False
        self.accepting = False  # running: tuples may be written to it
        self.busy_since: float | None = None  # bolts: since when it has had tuples in flight
        self.busy_total = 0.0  # seconds with tuples in flight, up to busy_since
        self.capacity_mark = (0.0, 0.0)  # (busy seconds, time) at the previous snapshot
        self.capacity = 0.0
        self.usage: tuple[float | None, int | None] = (None, None)  # CPU %, RSS bytes
        self.last_sent: bytes | None = None  # for failure reports
        self.last_received: bytes | None = None
        self.stderr_window = 0.0
        self.stderr_count = 0
        self.stderr_suppressed = 0
        self.last_sent: str | None = None
        # bolts
        self.pending: dict[int, list] = {}  # see "the data path" in Supervisor
        self.backlog: deque = deque()  # (tuple id, roots, frame) waiting for room in `pending`
        self.max_pending = 1000  # host.bolt.max.in.flight
        self.spout_max_pending: int | None = None
        self.blocked = False
        self.tick_freq: int | None = None
        self.next_tick = 0.0
        # spouts
        # commands written and not yet answered by `sync`, oldest first: an `activate` or
        # `deactivate` alone, or up to host.spout.next.depth exchanges (a `next`, or a batch of
        # `ack` / `fail`); see _pump_spouts
        self.outstanding: deque[bytes] = deque()
        self.nexts_out = 0  # `next`s among them
        # what its last `next` that emitted emitted: the estimate of what each `next` in flight
        # will emit (0: none emitted yet, so none is written ahead)
        self.emits_per_next = 0
        self.acks_out = 0  # `ack`s and `fail`s among them
        self.commands: deque[bytes] = deque()  # ack / fail / activate, ahead of `next`
        self.emitted_in_exchange = 0
        self.empty_nexts = 0  # `next`s in a row that emitted nothing (an idle spout)
        self.metrics_capped = False  # the metric-name cap was reported
        self.command_at = 0.0  # when the oldest outstanding command was written
        self.sync_reported = False  # --strict: "no sync" said once per exchange
        self.idle_sleep = 0.0
        self.next_at = 0.0


class Supervisor:
    def __init__(
        self,
        topology: Topology,
        *,
        clock: Callable[[], float] = time.monotonic,
        launcher: Launcher | None = None,
        strict: bool = False,
    ):
        self.topology = topology
        self.strict = strict
        self.clock = clock
        self.run_id = uuid.uuid4().hex[:8]
        conf = {**cfg.DEFAULTS, **topology.config}
        self.acking = cfg.acking_enabled(conf)
        self.max_frame = cfg.max_frame_bytes(conf)
        self.timeout_secs = float(cfg.subprocess_timeout_secs(conf))
        self.handshake_secs = float(cfg.handshake_timeout_secs(conf))
        self.grace_secs = float(cfg.shutdown_grace_secs(conf))
        self.backoff_initial = float(cfg.restart_backoff_initial_secs(conf))
        self.backoff_max = float(cfg.restart_backoff_max_secs(conf))
        self.restart_max = cfg.restart_max(conf)
        self.restart_window = float(cfg.restart_window_secs(conf))
        self.idle_max_sleep = float(cfg.spout_idle_max_sleep_ms(conf)) / 1000
        # a bolt task's queue: up to bolt_max_in_flight tuples written and not yet acked, then
        # up to topology.shellbolt.max.pending waiting to be written (Storm's bound), beyond
        # which the components that feed it are paused
        self.bolt_max_pending = cfg.shellbolt_max_pending(conf)
        self.bolt_max_in_flight = cfg.bolt_max_in_flight(conf)
        self.ack_batch = cfg.spout_ack_batch(conf)
        # --strict: one exchange at a time, so that a spout's missing `sync` shows (with two in
        # flight, the next exchange's sync would stand in for it)
        self.next_depth = 1 if strict else cfg.spout_next_depth(conf)
        self.acker = Acker(
            cfg.message_timeout_secs(conf),
            clock,
            cfg.message_timeouts_enabled(conf),
            cfg.acker_latency_sample(conf),
        )
        self.task_map = assign_tasks(topology)
        self.router = Router(
            topology, {c.id: self.task_map.tasks_of(c.id) for c in topology.components}
        )
        # one per serializer in use, shared by every task that speaks it (they cache per route)
        self._serializers: dict[str, Serializer] = {}
        self.pid_dir = ""  # made by start(), owner-only, removed by finish()
        # custom metrics (the `metrics` RPC) are kept per component, counters per task
        self._metrics: dict[str, dict] = {c.id: {} for c in topology.components}
        self.complete_latency = LatencyHistogram()
        self.observe = Observations()
        self.spout_acked = self.spout_failed = self.spout_timed_out = 0
        self.launcher = launcher or Launcher()
        self.tasks: dict[int, Task] = {}
        self.spouts: list[Task] = []
        self.bolts: list[Task] = []
        # backpressure: component -> number of its downstream bolt tasks whose backlog is full
        self._blocked_downstream: dict[str, int] = {c.id: 0 for c in topology.components}
        self._sources: dict[str, set[str]] = {
            c.id: {i.source for i in c.inputs} for c in topology.components
        }
        self._by_component: dict[str, list[Task]] = {c.id: [] for c in topology.components}
        for comp in topology.components:
            spout_pending = cfg.max_spout_pending(cfg.effective_config(topology, comp))
            conf = build_conf(topology, comp, self.run_id)
            for task_id in self.task_map.tasks_of(comp.id):
                ser = self._serializers.get(comp.serializer)
                if ser is None:
                    ser = self._serializers[comp.serializer] = serializer(comp.serializer)
                t = Task(
                    ComponentProcess(comp, task_id, self.launcher),
                    comp,
                    ser,
                    ComponentStats(tasks=1, metrics=self._metrics[comp.id]),
                    conf,
                    build_context(topology, self.task_map, comp, task_id),
                )
                t.max_pending = self.bolt_max_in_flight
                t.spout_max_pending = spout_pending
                if not comp.is_spout:
                    t.tick_freq = cfg.tick_freq(topology, comp)
                self.tasks[task_id] = t
                self._by_component[comp.id].append(t)
                (self.spouts if comp.is_spout else self.bolts).append(t)
        self.backlog_limit = self.bolt_max_pending
        self.sel = selectors.DefaultSelector()
        self._dirty: set[Task] = set()
        self._backoff_tasks: set[Task] = set()
        self._started = 0.0
        self._stopping = False
        self._drain_deadline: float | None = None
        self._stop_requested: str | None = None
        self.failure: str | None = None
        self.now = clock()
        self.on_report: Callable[[dict], None] | None = None
        self.report_every = 0.5
        # taps for tests and tracing, called when set:
        # on_emit(component id, task id, Emit) for every routed emit;
        # on_outcome(component id, task id, message id, "acked" | "failed" | "timed_out" |
        # "lost") for every spout tuple leaving the ledger ("lost": its spout task died)
        self.on_emit: Callable[[str, int, Emit], None] | None = None
        self.on_outcome: Callable[[str, int, object, str], None] | None = None
        self.last_step_events = 0  # how many pipes were ready in the last step()
        self.last_housekeeping = self.now  # clock time of the last heartbeat round

    # ---- lifecycle ------------------------------------------------------------------------------
    def request_stop(self, why: str = "stop requested") -> None:
        if self._stop_requested is None:
            self._stop_requested = why

    def run(self, duration: float | None = None) -> int:
        """Run until `duration` seconds pass, a stop is requested (SIGINT / SIGTERM) or a
        component goes fatal. Returns 0, or 1 after a runtime failure."""
        self.start(duration)
        thresholds = gc.get_threshold()
        # The data path allocates a few containers per tuple and makes no cycles: with the default
        # thresholds the collector runs every 700 of them and walks the pending tables in its
        # older generations (7 % of the host's CPU at 20 k sentences/s). Objects made so far are
        # frozen out of its sight, and it runs a hundredth as often.
        gc.freeze()
        gc.set_threshold(GC_THRESHOLD, *thresholds[1:])
        try:
            while self.step():
                pass
        finally:
            gc.set_threshold(*thresholds)
            gc.unfreeze()
            self.finish()
        return 1 if self.failure else 0

    def start(self, duration: float | None = None) -> None:
        """Launch every task. In the main thread, SIGINT and SIGTERM then request a graceful
        stop. Then call `step()` until it returns False, and `finish()` in any case."""
        self.pid_dir = tempfile.mkdtemp(prefix=f"multilang-{self.topology.name}-{self.run_id}-")
        os.chmod(self.pid_dir, 0o700)
        self._wake_r, self._wake_w = os.pipe()
        os.set_blocking(self._wake_r, False)
        os.set_blocking(self._wake_w, False)
        self.sel.register(self._wake_r, selectors.EVENT_READ, None)
        self._old_signals = {}
        if threading.current_thread() is threading.main_thread():
            self._old_wakeup = signal.set_wakeup_fd(self._wake_w)
            for sig in (signal.SIGINT, signal.SIGTERM):
                self._old_signals[sig] = signal.signal(
                    sig, lambda s, f: self.request_stop(f"received {signal.Signals(s).name}")
                )
        self._started = self.now = self.clock()
        self._duration = duration
        self._end_at = None if duration is None else self._started + duration
        self._start_watchdog()
        for t in self.tasks.values():
            self._start(t)
        self._next_housekeeping = self.now + HOUSEKEEPING_SECS
        self._next_report = self.now + self.report_every

    def step(self, max_wait: float | None = None) -> bool:
        """One turn of the loop: wait for the components (until the next timer is due, and at
        most `max_wait` real seconds), handle what they wrote, run the due timers, write what is
        queued. False once the run is over (stopped and drained)."""
        if self._stop_requested and not self._stopping:
            self._begin_drain(self._stop_requested)
        if self._stopping and self._drained():
            return False
        due = min(self._next_housekeeping, self._next_report, self._next_timer())
        if self._end_at is not None:
            due = min(due, self._end_at)
        wait = max(0.0, due - self.clock())
        if max_wait is not None:
            wait = min(wait, max_wait)
        events = self.sel.select(wait)
        self.last_step_events = len(events)
        registered = self.sel.get_map()
        for key, _ in events:
            if registered.get(key.fd) is not key:
                continue  # unregistered by an earlier event of this batch (a fault)
            data = key.data
            if data is None:  # the signal wake-up pipe
                try:
                    os.read(self._wake_r, 4096)
                except BlockingIOError:
                    pass
                continue
            t, kind = data
            self.now = self.clock()
            if kind == "out":
                self._on_stdout(t)
            elif kind == "err":
                self._on_stderr(t)
            else:
                self._flush(t)
        self.now = now = self.clock()
        if self._end_at is not None and now >= self._end_at and not self._stopping:
            self.request_stop(f"duration of {self._duration:g}s reached")
        if now >= self._next_housekeeping:
            self._housekeeping()
            self.last_housekeeping = now
            self._next_housekeeping = now + HOUSEKEEPING_SECS
        if self._backoff_tasks and not self._stopping:
            self._restart_due()
        self._pump_spouts()
        self._flush_dirty()
        if now >= self._next_report:
            self._next_report = now + self.report_every
            if self.on_report is not None:
                self.on_report(self.snapshot())
        return True

    def _start_watchdog(self) -> None:
        """A process that kills every process of this run (grandchildren too) once the host is
        gone, even after a SIGKILL of the host; see host.runtime.watchdog."""
        self._watchdog = None
        token = uuid.uuid4().hex
        try:
            self._watchdog = Watchdog(token, self.pid_dir)
        except OSError as exc:
            log.warning(
                "no watchdog (%s): processes started by components may outlive a killed host", exc
            )
            return
        self.launcher.extra_env = {WATCHDOG_ENV: token}

    def finish(self) -> None:
        """Stop every process (see _shutdown) and release the loop's resources."""
        try:
            self._shutdown()
            watchdog = getattr(self, "_watchdog", None)  # None: start() failed or never ran
            if watchdog is not None:
                watchdog.close()  # it sweeps what crashed incarnations left behind
        finally:
            if self._old_signals:
                signal.set_wakeup_fd(self._old_wakeup)
                for sig, handler in self._old_signals.items():
                    signal.signal(sig, handler)
            self.sel.close()
            os.close(self._wake_r)
            os.close(self._wake_w)

    @property
    def stop_reason(self) -> str | None:
        """Why the run is stopping (a signal, the duration, request_stop's reason), or None."""
        return self._stop_requested

    def next_due(self, skip_spout: Callable[[Task], bool] | None = None) -> float:
        """The clock time at which the loop next has work of its own (housekeeping, an idle
        spout's next `next`, a restart, the end of the drain). `skip_spout(task)` leaves out
        spouts the caller does not want to wait for (a test harness: spouts known to be idle)."""
        return min(self._next_housekeeping, self._next_timer(skip_spout))

    def _next_timer(self, skip_spout: Callable[[Task], bool] | None = None) -> float:
        soon = float("inf")
        for t in self.spouts:
            if (
                t.accepting
                and not t.outstanding
                and t.next_at > self.now
                and self._may_next(t, ignore_idle=True)
                and (skip_spout is None or not skip_spout(t))
            ):
                soon = min(soon, t.next_at)
        if not self._stopping:  # no restarts once stopping
            for t in self._backoff_tasks:
                soon = min(soon, t.proc.restart_at)
        if self._drain_deadline is not None:
            soon = min(soon, self._drain_deadline)
        return soon

    def _begin_drain(self, why: str) -> None:
        """Stop asking spouts for tuples and give what is in flight a grace period."""
        log.info("stopping: %s; draining in-flight tuples for up to %gs", why, self.grace_secs)
        self._stopping = True
        self._drain_deadline = self.now + self.grace_secs
        for t in self.spouts:
            if t.proc.state is State.RUNNING and t.comp.activate:
                t.commands.append(t.deactivate_frame)

    def _drained(self) -> bool:
        if self.now >= (self._drain_deadline or 0):
            return True
        if len(self.acker):
            return False
        return all(
            not t.waiting and not t.commands for t in self.spouts if t.proc.state is State.RUNNING
        )

    def _shutdown(self) -> None:
        """Close stdin (clients exit on EOF), SIGTERM the groups after a grace period, SIGKILL
        what is left; remove the pid directory."""
        procs = [t.proc for t in self.tasks.values() if t.proc.proc is not None]
        for t in self.tasks.values():
            if t.proc.alive:
                try:
                    t.proc.flush()
                except OSError:
                    pass
            t.proc.close_stdin()
        deadline = self.clock() + min(self.grace_secs, 2.0)
        for sig in (None, signal.SIGTERM, signal.SIGKILL):
            if sig is not None:
                for p in procs:
                    if p.poll() is None:
                        p.signal(sig)
                deadline = self.clock() + (self.grace_secs if sig == signal.SIGTERM else 2.0)
            while any(p.poll() is None for p in procs) and self.clock() < deadline:
                self._drain_stderr_at_exit(procs)
                time.sleep(0.02)
            if all(p.poll() is not None for p in procs):
                break
        for p in procs:
            # the group too: grandchildren a component started must not outlive the run
            p.launcher.signal_group(p.pid, signal.SIGKILL)
        self._drain_stderr_at_exit(procs)
        for t in self.tasks.values():
            self._report_suppressed(t)
            for line in t.proc.stderr_rest():
                self._component_line(t, logging.INFO, line)
            t.proc.release()
            if t.proc.state is not State.FATAL:
                t.proc.state = State.STOPPED
            t.accepting = False
        if self.pid_dir:
            shutil.rmtree(self.pid_dir, ignore_errors=True)

    def _drain_stderr_at_exit(self, procs) -> None:
        for t in self.tasks.values():
            p = t.proc
            if p.proc is None or p.proc.stderr is None or p.proc.stderr.closed:
                continue
            try:
                data = os.read(p.stderr_fd, READ_CHUNK)
            except (BlockingIOError, OSError):
                continue
            for line in p.stderr_lines(data):
                self._component_line(t, logging.INFO, line)

    # ---- starting and restarting -------------------------------------------------------------
    def _start(self, t: Task) -> None:
        proc = t.proc
        try:
            proc.launch(self.now, t.ser.decoder(self.max_frame))
        except OSError as exc:
            self._fault(t, f"cannot start {list(t.comp.command)!r}: {exc}")
            return
        self.sel.register(proc.stdout_fd, selectors.EVENT_READ, (t, "out"))
        self.sel.register(proc.stderr_fd, selectors.EVENT_READ, (t, "err"))
        t.reading = True
        t.accepting = False
        t.pre_pid = []
        t.outstanding.clear()
        t.nexts_out = t.acks_out = t.emits_per_next = 0
        t.commands.clear()
        t.idle_sleep = 0.0
        t.next_at = 0.0
        t.handshake_deadline = self.now + self.handshake_secs
        t.await_since = None
        try:
            t.out.append(
                t.ser.encode(Handshake(self.pid_dir, t.conf, t.ser.handshake_context(t.context)))
            )
        except EncodeError as exc:
            self._fault(t, f"the handshake cannot be encoded: {exc}")
            return
        self._dirty.add(t)

    def _on_pid(self, t: Task, msg: Pid) -> None:
        t.proc.state = State.RUNNING
        t.accepting = True
        t.await_since = None  # the handshake is answered
        log.debug("%s pid=%s: handshake done", t.proc.name, t.proc.pid)
        if t.is_spout:
            if t.comp.activate and not self._stopping:
                t.commands.appendleft(t.activate_frame)
        else:
            self._refill(t)
            if t.tick_freq:
                t.next_tick = self.now + t.tick_freq
        if self._blocked_downstream[t.cid]:
            self._set_reading(t, False)  # started while its downstream was full
        early, t.pre_pid = t.pre_pid, []
        for m in early:  # written before the pid (e.g. storm.js logging in initialize)
            self._handle(t, m)

    def _fault(self, t: Task, reason: str, raw: bytes | str | None = None) -> None:
        """Report a broken task, fail what it held, and schedule its restart."""
        proc = t.proc
        was_alive = proc.alive
        t.accepting = False
        if was_alive:
            self._drain_stderr(t)  # its last words (a traceback) belong in the report
        self._unregister(t)
        if proc.proc is not None and was_alive:
            if proc.poll() is None:
                proc.kill_now()
            else:
                # it died, but what it started lives on in its process group: end that too
                proc.launcher.signal_group(proc.pid, signal.SIGKILL)
                proc.release()
            for line in proc.stderr_rest():
                self._component_line(t, logging.INFO, line)
            self._remove_pid_file(proc.pid)
        detail = f"{proc.name} pid={proc.pid}: {reason}"
        if raw:
            detail += f"; it wrote {raw if isinstance(raw, str) else shorten(raw)}"
        if proc.proc is not None:
            detail += f"; {proc.describe_exit()}"
        if proc.stderr_tail:
            detail += "; last stderr lines:\n    " + "\n    ".join(proc.stderr_tail)
        t.stats.error(reason)
        self.observe.failure(
            component=t.cid,
            task=t.task,
            pid=proc.pid,
            reason=reason,
            exit_status=proc.describe_exit() if proc.proc is not None else None,
            stderr=list(proc.stderr_tail),
            last_sent=t.last_sent,
            last_received=t.last_received,
        )
        self.observe.forget(proc.pid)
        proc.stderr_tail.clear()
        failed_here = self._fail_in_flight(t)
        if failed_here:
            detail += f"\n    {failed_here} in-flight spout tuple(s) failed for replay"
        log.error("%s", detail)
        if self._stopping:
            proc.state = State.STOPPED
            return
        now = self.now
        proc.restart_times.append(now)
        while proc.restart_times and proc.restart_times[0] < now - self.restart_window:
            proc.restart_times.popleft()
        if len(proc.restart_times) > self.restart_max:
            proc.state = State.FATAL
            self.failure = (
                f"{proc.name} failed {len(proc.restart_times)} times within "
                f"{self.restart_window:g}s; giving up"
            )
            log.error("%s", self.failure)
            self.request_stop(self.failure)
            return
        proc.backoff = min(
            self.backoff_max, self.backoff_initial * 2 ** (len(proc.restart_times) - 1)
        )
        proc.restart_at = now + proc.backoff
        proc.state = State.BACKOFF
        self._backoff_tasks.add(t)

    def _fail_in_flight(self, t: Task) -> int:
        """Fail the spout tuples whose trees a dead task held, so they replay at once."""
        if t.is_spout:
            t.commands.clear()
            t.outstanding.clear()
            t.nexts_out = t.acks_out = 0
            lost = self.acker.drop_spout_task(t.task)
            if lost:
                t.stats.failed += len(lost)
                self.spout_failed += len(lost)
                if self.on_outcome is not None:
                    for o in lost:
                        self.on_outcome(t.cid, t.task, o.msg_id, "lost")
            return len(lost)
        outcomes: list[Outcome] = []
        for entry in t.pending.values():
            if entry[0]:
                outcomes.extend(self.acker.fail(entry[0]))
        t.stats.failed += len(t.pending)
        t.pending.clear()
        if t.busy_since is not None:
            t.busy_total += self.now - t.busy_since
            t.busy_since = None
        self._spout_outcomes(outcomes, ok=False)
        return len(outcomes)

    def _remove_pid_file(self, pid: int | None) -> None:
        if pid is not None:
            try:
                os.unlink(os.path.join(self.pid_dir, str(pid)))
            except OSError:
                pass

    def _unregister(self, t: Task) -> None:
        proc = t.proc
        if proc.proc is None:
            return
        for stream in (proc.proc.stdout, proc.proc.stderr, proc.proc.stdin):
            if stream is not None and not stream.closed:
                try:
                    self.sel.unregister(stream.fileno())
                except (KeyError, ValueError):
                    pass
        t.reading = False
        t.writing = False
        self._dirty.discard(t)

    # ---- reading --------------------------------------------------------------------------------
    def _on_stdout(self, t: Task) -> None:
        proc = t.proc
        try:
            data = os.read(proc.stdout_fd, READ_CHUNK)
        except BlockingIOError:
            return
        except OSError as exc:
            self._fault(t, f"reading its stdout failed: {exc}")
            return
        if not data:
            # exited, or closed its stdout while running: either way it cannot talk to us
            self._fault(t, "exited" if proc.wait_briefly() is not None else "closed its stdout")
            return
        t.last_received = data  # a reference, not a copy: failure reports show its tail
        try:
            messages = proc.decoder.feed(data)
        except ProtocolError as exc:
            try:
                for m in exc.decoded:
                    self._handle(t, m)
            except Fault as fault:
                self._fault(t, fault.reason, fault.raw)
                return
            self._fault(t, f"protocol error: {exc.reason}", exc.raw)
            return
        try:
            if not t.accepting:
                for m in messages:
                    self._handle(t, m)
            elif t.is_spout:
                self._spout_messages(t, messages)
            else:
                self._bolt_messages(t, messages)
        except Fault as fault:
            self._fault(t, fault.reason, fault.raw)

    def _handle(self, t: Task, m) -> None:
        """One message on the general path (handshake, spouts, anything unusual)."""
        state = t.proc.state
        if state is State.STARTING:
            if type(m) is Pid:
                self._on_pid(t, m)
            elif len(t.pre_pid) >= PRE_PID_MESSAGES:  # kept until the pid: bound them
                raise Fault(f"wrote more than {PRE_PID_MESSAGES} messages before its pid reply")
            else:
                t.pre_pid.append(m)
        elif state is State.RUNNING:
            if t.is_spout:
                self._spout_messages(t, (m,))
            else:
                self._bolt_messages(t, (m,))
        # otherwise the task faulted on an earlier message of the same read: drop the rest

    def _common(self, t: Task, m, typ) -> None:
        if typ is Log:
            self._component_line(t, _LOG_LEVELS.get(m.level, logging.INFO), m.msg)
        elif typ is Error:
            text = _clip(m.msg)
            t.stats.error(text)
            self.observe.log(t.cid, t.task, "ERROR", text)
            log.error("%s pid=%s reported an error: %s", t.proc.name, t.proc.pid, text)
        elif typ is Metrics:
            if not update_metric(t.stats.metrics, m.name, m.params) and not t.metrics_capped:
                t.metrics_capped = True
                log.warning(
                    "%s pid=%s: more than %d metric names; new names are dropped",
                    t.proc.name,
                    t.proc.pid,
                    MAX_METRIC_NAMES,
                )
        elif typ is Pid:
            raise Fault("sent a second pid reply", dumps(m._asdict()))
        elif typ is UnknownCommand:
            if t.is_spout:  # Storm kills the spout; logging is kinder and loses nothing
                log.warning(
                    "%s pid=%s: ignoring unknown command %r", t.proc.name, t.proc.pid, m.command
                )
        elif typ in (Ack, Fail):  # only spouts get here
            raise Fault(
                f"a spout sent `{m.__class__.__name__.lower()}`, which only bolts may",
                dumps(m._asdict()),
            )

    # ---- the data path ------------------------------------------------------------------------
    # A bolt task's `pending` maps the id (an int) of every tuple written to it and not yet acked
    # to [roots, XOR of the ids of the children it emitted anchored to it, time written]. The
    # children's XOR is applied to the roots together with the tuple's own ack, as Storm does.

    def _bolt_messages(self, t: Task, messages) -> None:
        """A bolt's messages, in order: acks and emits inline, the rest through `_common`."""
        pending = t.pending
        acker_ack = self.acker.ack
        latency = t.stats.process_latency
        bolt_emit = self._bolt_emit
        acked = emitted = 0
        try:
            for m in messages:
                typ = type(m)
                try:
                    if typ is Emit:
                        bolt_emit(t, m)
                        emitted += 1
                    elif typ is Ack:
                        try:
                            key = int(m.id) if type(m.id) is str else None
                            entry = pending.pop(key)
                        except (KeyError, ValueError):
                            self._pending_key(t, m.id, m)  # raises the Fault that says why
                        acked += 1
                        if not key & 7:  # a sample: the ids are random
                            latency.record(self.now - entry[2])
                        roots = entry[0]
                        if roots:
                            done = acker_ack(roots, key ^ entry[1])
                            if done:
                                self._spout_outcomes(done, ok=True)
                    elif typ is Fail:
                        key = self._pending_key(t, m.id, m)
                        roots = pending.pop(key)[0]
                        t.stats.executed += 1
                        t.stats.failed += 1
                        if roots:
                            self._spout_outcomes(self.acker.fail(roots), ok=False)
                    elif typ is not Sync:
                        self._common(t, m, typ)
                except Fault as fault:
                    if not self.strict:
                        raise
                    self._misuse(t, fault)
        finally:
            stats = t.stats
            stats.acked += acked
            stats.executed += acked
            stats.emitted += emitted
            if t.backlog:  # once per read, not per ack: the freed slots are written together
                self._refill(t)
            if pending:
                t.await_since = self.now
            else:
                t.await_since = None
                if t.busy_since is not None:
                    t.busy_total += self.now - t.busy_since
                    t.busy_since = None

    def _misuse(self, t: Task, fault: Fault) -> None:
        """--strict: a message that breaks the protocol is reported and dropped; the component
        keeps running (Storm kills it; this is the kinder choice while developing)."""
        text = f"protocol misuse: {fault.reason}"
        if fault.raw:
            text += f"; it wrote {fault.raw if isinstance(fault.raw, str) else shorten(fault.raw)}"
        t.stats.error(text)
        self.observe.log(t.cid, t.task, "ERROR", text)
        log.error(
            "%s pid=%s: %s (--strict: reported, the component keeps running)",
            t.proc.name,
            t.proc.pid,
            text,
        )

    def _pending_key(self, t: Task, tuple_id, m) -> int:
        """The pending-map key of a tuple id that bolt message `m` refers to; a Fault when it is
        not pending (Storm's ids are strings: a number never matches one)."""
        if type(tuple_id) is str:
            try:
                key = int(tuple_id)
                if key in t.pending:
                    return key
            except ValueError:
                pass
        if type(m) is Emit:
            what, raw = "emit anchored to tuple", _emit_text(m)
        else:
            what = f"{type(m).__name__.lower()} of tuple"
            raw = dumps({"command": type(m).__name__.lower(), "id": tuple_id})
        raise Fault(
            f"{what} {tuple_id!r}, which is not pending (never sent, or already acked or failed)",
            raw,
        )

    def _targets(self, t: Task, m: Emit) -> list[int]:
        """The tasks an emit goes to (the list may be shared: do not change it)."""
        try:
            if m.task is None:
                choose = t.routes.get(m.stream)
                if choose is None:
                    choose = t.routes[m.stream] = self.router.chooser(t.cid, m.stream)
                return choose(m.values)
            return [self.router.direct_target(t.cid, m.stream, m.values, m.task)]
        except RoutingError as exc:
            raise Fault(str(exc), _emit_text(m)) from None

    def _bolt_emit(self, t: Task, m: Emit) -> None:
        choose = t.routes.get(m.stream) if m.task is None else None
        if choose is not None:
            try:
                targets = choose(m.values)
            except RoutingError as exc:
                raise Fault(str(exc), _emit_text(m)) from None
        else:
            targets = self._targets(t, m)
        anchors = m.anchors
        parent = None
        if not anchors:
            roots = ()
        elif len(anchors) == 1:
            try:
                anchor = anchors[0]
                parent = t.pending[int(anchor) if type(anchor) is str else None]
            except (KeyError, ValueError):
                self._pending_key(t, anchors[0], m)  # raises the Fault that says why
            roots = parent[0]
        else:
            union: set = set()
            for anchor in anchors:
                union.update(t.pending[self._pending_key(t, anchor, m)][0])
            roots = tuple(union)
        if targets:
            if roots:
                xor = self._send_copies(t, m, targets, roots)
                if parent is not None:
                    parent[1] ^= xor  # applied to the roots with the parent's own ack
                else:
                    self.acker.add(roots, xor)
            else:
                self._send_copies(t, m, targets, roots)
        if m.task is None and m.need_task_ids:
            t.out.append(t.ser.task_ids(targets))
            self._dirty.add(t)
        if self.on_emit is not None:
            self.on_emit(t.cid, t.task, m)

    def _send_copies(self, t: Task, m: Emit, targets: list[int], roots: tuple) -> int:
        """One copy of the tuple per target task, each with its own random id; returns the XOR
        of those ids. A copy is written now if its task has room (`_deliver`, inlined: this runs
        once per routed tuple), else queued."""
        tasks = self.tasks
        dirty = self._dirty
        now = self.now
        xor = 0
        ser = None
        for target in targets:
            b = tasks[target]
            if b.ser is not ser:  # serialize once per serializer the targets speak
                ser = b.ser
                cached = t.prefixes.get(m.stream)
                if cached is None or cached[0] is not ser:
                    cached = t.prefixes[m.stream] = (ser, ser.tuple_prefix(t.cid, m.stream, t.task))
                prefix = cached[1]
                try:
                    values = ser.values(m.values)
                except EncodeError as exc:
                    raise Fault(
                        f"emitted values that cannot be written to {b.cid}: {exc}", _emit_text(m)
                    ) from None
                tuple_frame = ser.tuple_frame
            tid = getrandbits(64) or 1
            xor ^= tid
            if b.accepting and not b.backlog and len(b.pending) < b.max_pending:
                b.pending[tid] = [roots, 0, now]
                b.out.append(tuple_frame(prefix, values, tid))
                dirty.add(b)
                if b.busy_since is None:
                    b.busy_since = now
            else:
                self._queue(b, tid, roots, tuple_frame(prefix, values, tid))
        t.stats.transferred += len(targets)
        return xor

    def _deliver(self, b: Task, tid: int, roots: tuple, data: bytes) -> None:
        """Write a tuple to bolt task `b` now if it has room, else queue it (bounded: a full
        backlog stops the components that feed `b`)."""
        if b.accepting and not b.backlog and len(b.pending) < b.max_pending:
            b.pending[tid] = [roots, 0, self.now]
            b.out.append(data)
            self._dirty.add(b)
            if b.busy_since is None:
                b.busy_since = self.now
            return
        self._queue(b, tid, roots, data)

    def _queue(self, b: Task, tid: int, roots: tuple, data: bytes) -> None:
        b.backlog.append((tid, roots, data))
        if not b.blocked and len(b.backlog) >= self.backlog_limit:
            self._block(b, True)

    def _refill(self, b: Task) -> None:
        backlog, pending = b.backlog, b.pending
        if not backlog or not b.accepting:
            return
        now = self.now
        while backlog and len(pending) < b.max_pending:
            tid, roots, data = backlog.popleft()
            pending[tid] = [roots, 0, now]
            b.out.append(data)
        if b.busy_since is None and pending:
            b.busy_since = now
        self._dirty.add(b)
        if b.blocked and len(backlog) < self.backlog_limit // 2 + 1:
            self._block(b, False)

    def _block(self, b: Task, blocked: bool) -> None:
        """Backpressure: stop (or resume) reading the components that feed a full bolt task."""
        b.blocked = blocked
        for source in self._sources[b.cid]:
            before = self._blocked_downstream[source]
            after = before + (1 if blocked else -1)
            self._blocked_downstream[source] = after
            if (before == 0) != (after == 0):
                for t in self._by_component[source]:
                    self._set_reading(t, after == 0)

    def _set_reading(self, t: Task, on: bool) -> None:
        """Pause (or resume) reading a task's stdout. A paused spout gets no `next` either, and
        its ack / fail commands wait in `commands` (bounded by its pending roots); pausing its
        stdout too bounds what one `next` that emits a huge batch can make us hold."""
        proc = t.proc
        if not proc.alive or on == t.reading:
            return
        if not on and proc.state is State.STARTING:
            return  # its pid reply must get through; it is paused once running (_on_pid)
        if on:
            self.sel.register(proc.stdout_fd, selectors.EVENT_READ, (t, "out"))
            if t.await_since is not None:
                t.await_since = self.now  # time spent paused by us is not its silence
        else:
            self.sel.unregister(proc.stdout_fd)
        t.reading = on

    # ---- spouts ---------------------------------------------------------------------------------
    def _spout_messages(self, t: Task, messages) -> None:
        """A running spout's messages, in order."""
        try:
            for m in messages:
                typ = type(m)
                try:
                    if typ is Emit:
                        self._spout_emit(t, m)
                    elif typ is Sync:
                        self._spout_sync(t)
                    else:
                        self._common(t, m, typ)
                except Fault as fault:
                    if not self.strict:
                        raise
                    self._misuse(t, fault)
        finally:
            t.await_since = self.now if t.outstanding else None

    def _spout_emit(self, t: Task, m: Emit) -> None:
        targets = self._targets(t, m)
        t.stats.emitted += 1
        if m.id is None:
            if targets:
                self._send_copies(t, m, targets, ())
        elif self.acking and targets:
            root = self.acker.open(t.task, m.id, 0)
            self.acker.add((root,), self._send_copies(t, m, targets, (root,)))
        else:  # no acker, or nobody subscribes: complete at once, as Storm does
            if targets:
                self._send_copies(t, m, targets, ())
            self._spout_outcomes([Outcome(t.task, m.id, 0.0)], ok=True)
        if t.waiting:
            t.emitted_in_exchange += 1
        if m.task is None and m.need_task_ids:
            t.out.append(t.ser.task_ids(targets))
            self._dirty.add(t)
        if self.on_emit is not None:
            self.on_emit(t.cid, t.task, m)

    def _spout_sync(self, t: Task) -> None:
        if not t.outstanding:
            return  # a stray sync: nothing to end
        t.command_at = self.now
        t.sync_reported = False
        done = t.outstanding.popleft()
        if done is t.next_frame:
            t.nexts_out -= 1
            if t.emitted_in_exchange:
                t.emits_per_next = t.emitted_in_exchange
                t.idle_sleep = 0.0
                t.empty_nexts = 0
            else:
                t.empty_nexts += (
                    1  # nothing to emit: back off so an idle spout costs next to nothing
                )
                t.idle_sleep = min(self.idle_max_sleep, max(0.001, t.idle_sleep * 2))
                t.next_at = self.now + t.idle_sleep
        elif done is not t.activate_frame and done is not t.deactivate_frame:
            t.acks_out -= 1
        t.emitted_in_exchange = 0  # emits from now on belong to the next outstanding command

    def _spout_outcomes(self, outcomes: list[Outcome], ok: bool, timed_out: bool = False) -> None:
        command = "ack" if ok else "fail"
        tap = self.on_outcome
        for o in outcomes:
            t = self.tasks[o.spout_task]
            if tap is not None:
                tap(
                    t.cid,
                    t.task,
                    o.msg_id,
                    "acked" if ok else "timed_out" if timed_out else "failed",
                )
            if ok:
                t.stats.acked += 1
                self.spout_acked += 1
                if o.latency is not None:
                    self.complete_latency.record(o.latency)
            else:
                t.stats.failed += 1
                self.spout_failed += 1
                if timed_out:
                    self.spout_timed_out += 1
            if t.proc.alive:
                try:
                    t.commands.append(t.ser.spout_command(command, o.msg_id))
                except EncodeError:  # the id came from JSON, so this cannot happen; be loud
                    log.error("%s: cannot encode message id %r", t.proc.name, o.msg_id)

    def _may_next(self, t: Task, ignore_idle: bool = False) -> bool:
        if self._stopping or self._blocked_downstream[t.cid]:
            return False
        limit = t.spout_max_pending
        # every `next` already written will likely emit what the last one did (so that
        # max.spout.pending 1 keeps meaning one tuple at a time): count that as pending already
        if (
            limit is not None
            and self.acker.pending(t.task) + t.nexts_out * t.emits_per_next >= limit
        ):
            return False
        return ignore_idle or self.now >= t.next_at

    def _pump_spouts(self) -> None:
        """Give each spout its next commands. Storm writes one command and waits for its `sync`.
        We write `activate` and `deactivate` that way, but keep up to `host.spout.next.depth`
        exchanges in flight, an exchange being one `next` or one batch of up to
        `host.spout.ack.batch` queued `ack` / `fail` commands; their syncs are matched in order.
        Every multilang library reads its commands one by one and answers each before reading
        the next, so it cannot tell the difference; the spout no longer idles while the host
        handles what it emitted, and is not held to one round trip per acked tuple."""
        depth = self.next_depth
        for t in self.spouts:
            if not t.accepting:
                continue
            out = t.outstanding
            if out and (out[0] is t.activate_frame or out[0] is t.deactivate_frame):
                continue  # written alone: nothing else until its sync
            commands = t.commands
            was_idle = not out
            wrote = False
            if commands:
                first = commands[0]
                if first is t.activate_frame or first is t.deactivate_frame:
                    if out:
                        continue  # it waits for what is in flight, then goes alone
                    commands.popleft()
                    out.append(first)
                    t.out.append(first)
                    self._wrote_command(t)
                    continue
                if not t.acks_out and t.nexts_out < depth:
                    while (
                        commands
                        and t.acks_out < self.ack_batch
                        and commands[0] is not t.activate_frame
                        and commands[0] is not t.deactivate_frame
                    ):
                        data = commands.popleft()
                        out.append(data)
                        t.out.append(data)
                        t.acks_out += 1
                    wrote = True
            if not commands:  # queued acks go first: they free room under max.spout.pending
                while (
                    t.nexts_out + (1 if t.acks_out else 0) < depth
                    and (not t.nexts_out or 0 < t.nexts_out * t.emits_per_next < AHEAD_TUPLES)
                    and self._may_next(t)
                ):
                    out.append(t.next_frame)
                    t.out.append(t.next_frame)
                    t.nexts_out += 1
                    wrote = True
            if wrote and was_idle:
                self._wrote_command(t)
            elif wrote:
                self._dirty.add(t)

    def _wrote_command(self, t: Task) -> None:
        """A spout with nothing in flight was written a command: from now on it owes a sync."""
        t.emitted_in_exchange = 0
        t.await_since = t.command_at = self.now
        t.sync_reported = False
        self._dirty.add(t)

    # ---- writing --------------------------------------------------------------------------------
    def _flush_dirty(self) -> None:
        if not self._dirty:
            return
        dirty, self._dirty = self._dirty, set()
        for t in dirty:
            self._flush(t)

    def _flush(self, t: Task) -> None:
        proc = t.proc
        if not proc.alive:
            proc.out.clear()
            proc.out_pending = b""
            return
        if proc.out:
            t.last_sent = proc.out[-1]
        if t.await_since is None and not t.is_spout:
            t.await_since = self.now  # it owes us an answer (an ack, a heartbeat's sync)
        try:
            done = proc.flush()
        except (BrokenPipeError, ConnectionResetError):
            proc.out.clear()
            proc.out_pending = b""
            done = True  # it died; reading its stdout will show EOF and fault it
        except OSError as exc:
            self._fault(t, f"writing to its stdin failed: {exc}")
            return
        if done:
            if t.writing:
                self.sel.unregister(proc.stdin_fd)
                t.writing = False
        elif not t.writing:  # the pipe is full: write the rest when it has room
            self.sel.register(proc.stdin_fd, selectors.EVENT_WRITE, (t, "in"))
            t.writing = True

    # ---- stderr ---------------------------------------------------------------------------------
    def _on_stderr(self, t: Task) -> None:
        proc = t.proc
        try:
            data = os.read(proc.stderr_fd, READ_CHUNK)
        except BlockingIOError:
            return
        except OSError:
            data = b""
        if not data:
            try:
                self.sel.unregister(proc.stderr_fd)
            except (KeyError, ValueError):
                pass
            if not t.reading and proc.alive and proc.wait_briefly() is not None:
                # paused by backpressure, so its stdout's EOF is not seen: notice the exit here
                self._fault(t, "exited")
            return
        lines = proc.stderr_lines(data)
        if self.now - t.stderr_window >= 1.0:
            self._report_suppressed(t)
            t.stderr_window = self.now
            t.stderr_count = 0
        for line in lines:
            t.stderr_count += 1
            if t.stderr_count > STDERR_LINES_PER_SEC:
                t.stderr_suppressed += 1
            else:
                self._component_line(t, logging.INFO, line)

    def _component_line(self, t: Task, level: int, text: str) -> None:
        """A line from a component (its `log` messages and its stderr), as
        `component[task] pid=N: line`, also kept for the live view and the web UI."""
        text = _clip(text)
        component_log.log(level, "%s pid=%s: %s", t.proc.name, t.proc.pid, text)
        self.observe.log(t.cid, t.task, logging.getLevelName(level), text)

    def _report_suppressed(self, t: Task) -> None:
        if t.stderr_suppressed:
            component_log.warning(
                "%s pid=%s: %d stderr lines not shown (more than %d a second)",
                t.proc.name,
                t.proc.pid,
                t.stderr_suppressed,
                STDERR_LINES_PER_SEC,
            )
            t.stderr_suppressed = 0

    def _drain_stderr(self, t: Task, limit: int = 1 << 20) -> None:
        proc = t.proc
        if proc.proc is None or proc.proc.stderr is None or proc.proc.stderr.closed:
            return
        read = 0
        while read < limit:
            try:
                data = os.read(proc.stderr_fd, READ_CHUNK)
            except (BlockingIOError, OSError):
                return
            if not data:
                return
            read += len(data)
            for line in proc.stderr_lines(data):
                self._component_line(t, logging.INFO, line)

    # ---- timers ---------------------------------------------------------------------------------
    def _housekeeping(self) -> None:
        now = self.now
        expired = self.acker.expire()
        if expired:
            self._spout_outcomes(expired, ok=False, timed_out=True)
        for t in list(self.tasks.values()):
            if t.stderr_suppressed and now - t.stderr_window >= 1.0:
                self._report_suppressed(t)
            state = t.proc.state
            if state is State.STARTING:
                if now >= t.handshake_deadline:
                    self._fault(t, f"no pid reply within {self.handshake_secs:g}s of the handshake")
                continue
            if state is not State.RUNNING:
                continue
            if (
                self.strict
                and t.outstanding
                and not t.sync_reported
                and now - t.command_at > STRICT_SYNC_SECS
            ):
                t.sync_reported = True
                self._misuse(
                    t,
                    Fault(
                        f"no sync {now - t.command_at:.1f}s after a command "
                        f"({t.emitted_in_exchange} emits since): every command "
                        "must end with sync"
                    ),
                )
            if t.await_since is not None and t.reading and now - t.await_since > self.timeout_secs:
                self._fault(
                    t,
                    f"hung: silent for {now - t.await_since:.1f}s while it owed an "
                    f"answer (topology.subprocess.timeout.secs={self.timeout_secs:g})",
                )
                continue
            if not t.is_spout:
                if t.comp.heartbeats:
                    t.out.append(
                        t.ser.encode(
                            TupleMessage(str(getrandbits(63)), None, "__heartbeat", -1, [])
                        )
                    )
                    if t.await_since is None:
                        t.await_since = now
                    self._dirty.add(t)
                if t.tick_freq and now >= t.next_tick:
                    t.next_tick = now + t.tick_freq
                    tid = getrandbits(63) or 1
                    self._deliver(
                        t,
                        tid,
                        (),
                        t.ser.encode(
                            TupleMessage(str(tid), "__system", "__tick", -1, [t.tick_freq])
                        ),
                    )

    def _restart_due(self) -> None:
        for t in list(self._backoff_tasks):
            if self.now >= t.proc.restart_at:
                self._backoff_tasks.discard(t)
                t.stats.restarts += 1
                log.warning("restarting %s (after %.1fs back-off)", t.proc.name, t.proc.backoff)
                self._start(t)

    # ---- reporting ------------------------------------------------------------------------------
    def snapshot(self) -> dict:
        """The stats file of design.md, plus gauges: per component and task what is in flight
        and queued, capacity, process latency, CPU and memory; the rates; recent component log
        lines and failure reports."""
        now = self.now
        self.observe.rates(now, self.spout_acked, self.spout_failed, self.spout_timed_out)
        components = {}
        for cid, tasks in self._by_component.items():
            data = ComponentStats.combined([t.stats for t in tasks]).as_json()
            details = [self._task_detail(t, now) for t in tasks]
            data["in_flight"] = sum(d["in_flight"] for d in details)
            data["queued"] = sum(d["queued"] for d in details)
            data["states"] = sorted({d["state"] for d in details})
            if not tasks[0].is_spout:
                # as in Storm's UI: the busiest task's share of time with work in flight
                data["capacity"] = round(max(d["capacity"] for d in details), 3)
            cpu = [d["cpu_percent"] for d in details if d["cpu_percent"] is not None]
            rss = [d["rss_bytes"] for d in details if d["rss_bytes"] is not None]
            data["cpu_percent"] = round(sum(cpu), 1) if cpu else None
            data["rss_bytes"] = sum(rss) if rss else None
            data["tasks_detail"] = details
            components[cid] = data
        return {
            "topology": {
                "name": self.topology.name,
                "uptime_s": round(now - self._started, 3) if self._started else 0.0,
                "spout_tuples_acked": self.spout_acked,
                "spout_tuples_failed": self.spout_failed,
                "spout_tuples_timed_out": self.spout_timed_out,
                "spout_tuples_pending": len(self.acker),
                "acked_per_s": round(self.observe.acked_per_s, 1),
                "failed_per_s": round(self.observe.failed_per_s, 1),
                "timed_out_per_s": round(self.observe.timed_out_per_s, 1),
                "complete_latency_ms": {
                    "p50": self.complete_latency.percentile(50),
                    "p99": self.complete_latency.percentile(99),
                    "mean": self.complete_latency.mean_ms(),
                },
            },
            "components": components,
            **self.observe.as_json(),
        }

    def _task_detail(self, t: Task, now: float) -> dict:
        busy = t.busy_total + (now - t.busy_since if t.busy_since is not None else 0.0)
        mark_busy, mark_time = t.capacity_mark
        if now - mark_time >= 0.2:  # a window long enough to mean something
            t.capacity = min(1.0, (busy - mark_busy) / (now - mark_time)) if mark_time else 0.0
            t.capacity_mark = (busy, now)
        alive = t.proc.alive
        if alive:  # after the run, the last values measured stay in the stats file
            t.usage = self.observe.usage(t.proc.pid)
        cpu, rss = t.usage
        stats = t.stats
        return {
            "task": t.task,
            "pid": t.proc.pid if alive else None,
            "state": t.proc.state.value,
            "emitted": stats.emitted,
            "executed": stats.executed,
            "acked": stats.acked,
            "failed": stats.failed,
            "in_flight": len(t.pending),
            "queued": len(t.backlog),
            "restarts": stats.restarts,
            "errors": stats.errors,
            "last_error": stats.last_error,
            "last_error_at": stats.last_error_at,
            "capacity": round(t.capacity, 3),
            "cpu_percent": cpu,
            "rss_bytes": rss,
        }


def _clip(line: str, limit: int = 2000) -> str:
    return line if len(line) <= limit else f"{line[:limit]}... ({len(line)} chars)"


def _emit_text(m: Emit) -> str:
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
            ).encode("utf-8", "backslashreplace")
        )  # lone surrogates: JSON allows them
    except EncodeError:
        return repr(m)
