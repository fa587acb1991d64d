"""The event loop that owns every pipe of every component task.

One thread, one selector. Each turn: read what components wrote and handle it in order (route
emits, feed the acker, answer task ids), run the timers (heartbeats, ticks, liveness, timeouts,
restarts), give idle spouts their next `next`, then write everything queued, one write per task.
The router and the acker are plain objects called from here: no threads or locks on the data path.
"""

from __future__ import annotations

import logging
import os
import selectors
import shutil
import signal
import tempfile
import time
import uuid
from collections import deque
from random import getrandbits
from typing import Callable

from multilang.codec import EncodeError, ProtocolError, TupleEncoder, dumps, encode, frame, shorten
from multilang.messages import (Ack, Emit, Error, Fail, Handshake, Log, Metrics, Pid, SpoutCommand,
                                Sync, TaskIds, TupleMessage, UnknownCommand)

from . import config as cfg
from .acker import Acker, Outcome, new_id
from .context import assign_tasks, build_conf, build_context
from .errors import RoutingError
from .metrics import ComponentStats, LatencyHistogram, update_metric
from .model import Component, Topology
from .process import ComponentProcess, Launcher, State
from .router import Router

log = logging.getLogger("host")
component_log = logging.getLogger("host.component")

READ_CHUNK = 1 << 18
HOUSEKEEPING_SECS = 1.0  # heartbeats, liveness, ticks, timeouts, restarts
STDERR_LINES_PER_SEC = 200  # beyond this a task's stderr is counted, not logged line by line
_LOG_LEVELS = {0: logging.DEBUG, 1: logging.DEBUG, 2: logging.INFO, 3: logging.WARNING,
               4: logging.ERROR}
_NEXT = encode(SpoutCommand("next", ""))
_ACTIVATE = encode(SpoutCommand("activate", ""))
_DEACTIVATE = encode(SpoutCommand("deactivate", ""))


class Fault(Exception):
    """A task broke the protocol or the topology's rules; it is killed and restarted."""

    def __init__(self, reason: str, raw: bytes | str | None = None):
        self.reason = reason
        self.raw = raw
        super().__init__(reason)


class Task:
    """Per-task protocol state kept by the loop, around the task's ComponentProcess."""

    def __init__(self, proc: ComponentProcess, comp: Component, stats: ComponentStats,
                 conf: dict, context: dict):
        self.proc = proc
        self.comp = comp
        self.cid = comp.id
        self.task = proc.task
        self.is_spout = comp.is_spout
        self.stats = stats
        self.conf = conf
        self.context = context
        self.out = proc.out  # the same list object for the process's whole life
        self.pre_pid: list = []
        self.await_since: float | None = None
        self.handshake_deadline = 0.0
        self.reading = False
        self.stderr_window = 0.0
        self.stderr_count = 0
        self.stderr_suppressed = 0
        self.last_sent: str | None = None
        # bolts
        self.pending: dict[str, list] = {}  # tuple id -> [int id, roots, children's xor, sent at]
        self.backlog: deque = deque()  # (id, int id, roots, frame) waiting for room in `pending`
        self.max_pending = 100
        self.spout_max_pending: int | None = None
        self.blocked = False
        self.tick_freq: int | None = None
        self.next_tick = 0.0
        # spouts
        self.waiting = False  # a command is outstanding until `sync`
        self.current: bytes | None = None
        self.commands: deque[bytes] = deque()  # ack / fail / activate, ahead of `next`
        self.emitted_in_exchange = 0
        self.idle_sleep = 0.0
        self.next_at = 0.0


class Supervisor:
    def __init__(self, topology: Topology, *, clock: Callable[[], float] = time.monotonic,
                 launcher: Launcher | None = None):
        self.topology = topology
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
        self.bolt_max_pending = cfg.shellbolt_max_pending(conf)
        self.acker = Acker(cfg.message_timeout_secs(conf), clock,
                           cfg.message_timeouts_enabled(conf))
        self.task_map = assign_tasks(topology)
        self.router = Router(topology, {c.id: self.task_map.tasks_of(c.id)
                                        for c in topology.components})
        self.encoder = TupleEncoder()
        self.pid_dir = tempfile.mkdtemp(prefix=f"multilang-{topology.name}-{self.run_id}-")
        os.chmod(self.pid_dir, 0o700)
        self.stats = {c.id: ComponentStats(tasks=c.parallelism) for c in topology.components}
        self.complete_latency = LatencyHistogram()
        self.spout_acked = self.spout_failed = self.spout_timed_out = 0
        self.launcher = launcher or Launcher()
        self.tasks: dict[int, Task] = {}
        self.spouts: list[Task] = []
        self.bolts: list[Task] = []
        # backpressure: component -> number of its downstream bolt tasks whose backlog is full
        self._blocked_downstream: dict[str, int] = {c.id: 0 for c in topology.components}
        self._sources: dict[str, set[str]] = {c.id: {i.source for i in c.inputs}
                                              for c in topology.components}
        self._by_component: dict[str, list[Task]] = {c.id: [] for c in topology.components}
        for comp in topology.components:
            spout_pending = cfg.max_spout_pending(cfg.effective_config(topology, comp))
            conf = build_conf(topology, comp, self.run_id)
            for task_id in self.task_map.tasks_of(comp.id):
                t = Task(ComponentProcess(comp, task_id, self.launcher), comp,
                         self.stats[comp.id], conf,
                         build_context(topology, self.task_map, comp, task_id))
                t.max_pending = self.bolt_max_pending
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

    # ---- lifecycle ------------------------------------------------------------------------------
    def request_stop(self, why: str = "stop requested") -> None:
        if self._stop_requested is None:
            self._stop_requested = why

    def run(self, duration: float | None = None) -> int:
        """Run until `duration` seconds pass, a stop is requested (SIGINT / SIGTERM) or a
        component goes fatal. Returns 0, or 1 after a runtime failure."""
        wake_r, wake_w = os.pipe()
        os.set_blocking(wake_r, False)
        os.set_blocking(wake_w, False)
        self.sel.register(wake_r, selectors.EVENT_READ, None)
        old_wakeup = signal.set_wakeup_fd(wake_w)
        old_handlers = {}
        for sig in (signal.SIGINT, signal.SIGTERM):
            old_handlers[sig] = signal.signal(sig, lambda s, f: self.request_stop(
                f"received {signal.Signals(s).name}"))
        try:
            self._started = self.now = self.clock()
            end_at = None if duration is None else self._started + duration
            for t in self.tasks.values():
                self._start(t)
            next_housekeeping = self.now + HOUSEKEEPING_SECS
            next_report = self.now + self.report_every
            while True:
                if self._stop_requested and not self._stopping:
                    self._begin_drain(self._stop_requested)
                if self._stopping and self._drained():
                    break
                timeout = min(next_housekeeping, next_report, self._next_timer())
                if end_at is not None:
                    timeout = min(timeout, end_at)
                events = self.sel.select(max(0.0, timeout - self.clock()))
                registered = self.sel.get_map()
                for key, mask in events:
                    if registered.get(key.fd) is not key:
                        continue  # unregistered by an earlier event of this batch (a fault)
                    data = key.data
                    if data is None:
                        try:
                            os.read(wake_r, 4096)
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
                if end_at is not None and now >= end_at and not self._stopping:
                    self.request_stop(f"duration of {duration:g}s reached")
                if now >= next_housekeeping:
                    self._housekeeping()
                    next_housekeeping = now + HOUSEKEEPING_SECS
                if self._backoff_tasks and not self._stopping:
                    self._restart_due()
                self._pump_spouts()
                self._flush_dirty()
                if now >= next_report:
                    next_report = now + self.report_every
                    if self.on_report is not None:
                        self.on_report(self.snapshot())
        finally:
            self._shutdown()
            signal.set_wakeup_fd(old_wakeup)
            for sig, handler in old_handlers.items():
                signal.signal(sig, handler)
            self.sel.close()
            os.close(wake_r)
            os.close(wake_w)
        return 1 if self.failure else 0

    def _next_timer(self) -> float:
        soon = float("inf")
        for t in self.spouts:
            if (t.proc.state is State.RUNNING and not t.waiting and t.next_at > self.now
                    and self._may_next(t, ignore_idle=True)):
                soon = min(soon, t.next_at)
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
                t.commands.append(_DEACTIVATE)

    def _drained(self) -> bool:
        if self.now >= (self._drain_deadline or 0):
            return True
        if len(self.acker):
            return False
        return all(not t.waiting and not t.commands for t in self.spouts
                   if t.proc.state is State.RUNNING)

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
                component_log.info("%s pid=%s: %s", t.proc.name, t.proc.pid, line)
            t.proc.release()
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
                component_log.info("%s pid=%s: %s", p.name, p.pid, line)

    # ---- starting and restarting -------------------------------------------------------------
    def _start(self, t: Task) -> None:
        proc = t.proc
        try:
            proc.launch(self.now, self.max_frame)
        except OSError as exc:
            self._fault(t, f"cannot start {list(t.comp.command)!r}: {exc}")
            return
        self.sel.register(proc.stdout_fd, selectors.EVENT_READ, (t, "out"))
        self.sel.register(proc.stderr_fd, selectors.EVENT_READ, (t, "err"))
        t.reading = True
        t.pre_pid = []
        t.waiting = False
        t.current = None
        t.commands.clear()
        t.idle_sleep = 0.0
        t.next_at = 0.0
        t.handshake_deadline = self.now + self.handshake_secs
        t.await_since = None
        try:
            t.out.append(encode(Handshake(self.pid_dir, t.conf, t.context)))
        except EncodeError as exc:
            self._fault(t, f"the handshake cannot be encoded: {exc}")
            return
        self._dirty.add(t)
        if self._blocked_downstream[t.cid]:
            self._set_reading(t, False)

    def _on_pid(self, t: Task, msg: Pid) -> None:
        t.proc.state = State.RUNNING
        log.debug("%s pid=%s: handshake done", t.proc.name, t.proc.pid)
        if t.is_spout:
            if t.comp.activate and not self._stopping:
                t.commands.appendleft(_ACTIVATE)
        else:
            self._refill(t)
            if t.tick_freq:
                t.next_tick = self.now + t.tick_freq
        early, t.pre_pid = t.pre_pid, []
        for m in early:  # written before the pid (e.g. storm.js logging in initialize)
            self._dispatch(t, m)

    def _fault(self, t: Task, reason: str, raw: bytes | str | None = None) -> None:
        """Report a broken task, fail what it held, and schedule its restart."""
        proc = t.proc
        was_alive = proc.alive
        if was_alive:
            self._drain_stderr(t)  # its last words (a traceback) belong in the report
        self._unregister(t)
        if proc.proc is not None and was_alive:
            if proc.poll() is None:
                proc.kill_now()
            else:
                proc.release()
            for line in proc.stderr_rest():
                component_log.info("%s pid=%s: %s", proc.name, proc.pid, line)
            self._remove_pid_file(proc.pid)
        detail = f"{proc.name} pid={proc.pid}: {reason}"
        if raw:
            detail += f"; it wrote {raw if isinstance(raw, str) else shorten(raw)}"
        if proc.proc is not None:
            detail += f"; {proc.describe_exit()}"
        if proc.stderr_tail:
            detail += "; last stderr lines:\n    " + "\n    ".join(proc.stderr_tail)
        t.stats.errors += 1
        t.stats.last_error = reason
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
            self.failure = (f"{proc.name} failed {len(proc.restart_times)} times within "
                            f"{self.restart_window:g}s; giving up")
            log.error("%s", self.failure)
            self.request_stop(self.failure)
            return
        proc.backoff = min(self.backoff_max,
                           self.backoff_initial * 2 ** (len(proc.restart_times) - 1))
        proc.restart_at = now + proc.backoff
        proc.state = State.BACKOFF
        self._backoff_tasks.add(t)

    def _fail_in_flight(self, t: Task) -> int:
        """Fail the spout tuples whose trees a dead task held, so they replay at once."""
        if t.is_spout:
            t.commands.clear()
            t.waiting = False
            dropped = self.acker.drop_spout_task(t.task)
            if dropped:
                t.stats.failed += dropped
                self.spout_failed += dropped
            return dropped
        outcomes: list[Outcome] = []
        for entry in t.pending.values():
            if entry[1]:
                outcomes.extend(self.acker.fail(entry[1]))
        t.stats.failed += len(t.pending)
        t.pending.clear()
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
            status = proc.poll()
            if status is None:  # closed stdout but still running: it cannot talk to us any more
                reason = "closed its stdout"
            else:
                reason = "exited"
            self._fault(t, reason)
            return
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
            for m in messages:
                self._handle(t, m)
        except Fault as fault:
            self._fault(t, fault.reason, fault.raw)

    def _handle(self, t: Task, m) -> None:
        if t.proc.state is State.STARTING:
            if type(m) is Pid:
                self._on_pid(t, m)
            else:
                t.pre_pid.append(m)
            return
        if t.proc.state is not State.RUNNING:
            return  # a task faulted by an earlier message of the same chunk
        self._dispatch(t, m)

    def _dispatch(self, t: Task, m) -> None:
        typ = type(m)
        if t.is_spout:
            t.await_since = self.now if t.waiting else None
            if typ is Emit:
                self._spout_emit(t, m)
            elif typ is Sync:
                self._spout_sync(t)
            else:
                self._common(t, m, typ)
            return
        t.await_since = self.now if t.pending else None
        if typ is Emit:
            self._bolt_emit(t, m)
        elif typ is Ack:
            self._bolt_ack(t, m.id, True)
        elif typ is Fail:
            self._bolt_ack(t, m.id, False)
        elif typ is Sync:
            pass
        else:
            self._common(t, m, typ)

    def _common(self, t: Task, m, typ) -> None:
        if typ is Log:
            component_log.log(_LOG_LEVELS.get(m.level, logging.INFO), "%s pid=%s: %s",
                              t.proc.name, t.proc.pid, m.msg)
        elif typ is Error:
            t.stats.errors += 1
            t.stats.last_error = m.msg
            log.error("%s pid=%s reported an error: %s", t.proc.name, t.proc.pid, m.msg)
        elif typ is Metrics:
            update_metric(t.stats.metrics, m.name, m.params)
        elif typ is Pid:
            raise Fault("sent a second pid reply", dumps(m._asdict()))
        elif typ is UnknownCommand:
            if t.is_spout:  # Storm kills the spout; logging is kinder and loses nothing
                log.warning("%s pid=%s: ignoring unknown command %r", t.proc.name, t.proc.pid,
                            m.command)
        elif typ in (Ack, Fail):  # only spouts get here
            raise Fault(f"a spout sent `{m.__class__.__name__.lower()}`, which only bolts may",
                        dumps(m._asdict()))

    # ---- bolts ----------------------------------------------------------------------------------
    def _roots_of(self, t: Task, anchors) -> tuple[tuple, list | None]:
        """The roots a new tuple inherits from its anchors, and the single anchor's pending entry
        (whose children's XOR is deferred to its ack) when there is exactly one anchor."""
        pending = t.pending
        if len(anchors) == 1:
            entry = pending.get(anchors[0])
            if entry is None:
                raise Fault(f"emit anchored to tuple {anchors[0]!r}, which is not pending "
                            "(never sent, or already acked or failed)")
            return entry[1], entry
        roots: set = set()
        for anchor in anchors:
            entry = pending.get(anchor)
            if entry is None:
                raise Fault(f"emit anchored to tuple {anchor!r}, which is not pending "
                            "(never sent, or already acked or failed)")
            roots.update(entry[1])
        return tuple(roots), None

    def _route(self, t: Task, m: Emit) -> list[int]:
        try:
            if m.task is None:
                return self.router.targets(t.cid, m.stream, m.values)
            return [self.router.direct_target(t.cid, m.stream, m.values, m.task)]
        except RoutingError as exc:
            raise Fault(str(exc), _emit_text(m)) from None

    def _values_json(self, m: Emit) -> str:
        try:
            text = dumps(m.values)
            text.encode("utf-8")
            return text
        except (EncodeError, UnicodeEncodeError) as exc:
            raise Fault(f"emitted values that cannot be re-encoded: {exc}") from None

    def _bolt_emit(self, t: Task, m: Emit) -> None:
        targets = self._route(t, m)
        anchors = m.anchors
        if anchors:
            roots, anchor_entry = self._roots_of(t, anchors)
        else:
            roots, anchor_entry = (), None
        self._send_copies(t, m, targets, roots)
        if roots and self._last_xor:
            if anchor_entry is not None:
                anchor_entry[2] ^= self._last_xor
            else:
                self.acker.add(roots, self._last_xor)
        if m.task is None and m.need_task_ids:
            t.out.append(frame(dumps(targets)))
            self._dirty.add(t)

    def _send_copies(self, t: Task, m: Emit, targets: list[int], roots: tuple) -> None:
        """One copy per target task, each with its own random id; their XOR is left in
        `self._last_xor` for the caller to account to the roots."""
        stats = t.stats
        stats.emitted += 1
        xor = 0
        if targets:
            values_json = self._values_json(m)
            encode_tuple = self.encoder.encode
            tasks = self.tasks
            for target in targets:
                tid = getrandbits(64) or 1
                sid = str(tid)
                self._deliver(tasks[target], sid, tid, roots,
                              encode_tuple(sid, t.cid, m.stream, t.task, values_json))
                xor ^= tid
            stats.transferred += len(targets)
        self._last_xor = xor

    def _deliver(self, b: Task, sid: str, tid: int, roots: tuple, data: bytes) -> None:
        if b.proc.state is State.RUNNING and not b.backlog and len(b.pending) < b.max_pending:
            b.pending[sid] = [tid, roots, 0, self.now]
            b.out.append(data)
            if b.await_since is None:
                b.await_since = self.now
            self._dirty.add(b)
            return
        b.backlog.append((sid, tid, roots, data))
        if not b.blocked and len(b.backlog) >= self.backlog_limit:
            self._block(b, True)

    def _refill(self, b: Task) -> None:
        backlog, pending = b.backlog, b.pending
        if not backlog or b.proc.state is not State.RUNNING:
            return
        while backlog and len(pending) < b.max_pending:
            sid, tid, roots, data = backlog.popleft()
            pending[sid] = [tid, roots, 0, self.now]
            b.out.append(data)
        if b.await_since is None and pending:
            b.await_since = self.now
        self._dirty.add(b)
        if b.blocked and len(backlog) < self.backlog_limit // 2 + 1:
            self._block(b, False)

    def _bolt_ack(self, t: Task, tuple_id, ok: bool) -> None:
        entry = t.pending.pop(tuple_id, None) if type(tuple_id) is str else None
        if entry is None:
            word = "ack" if ok else "fail"
            raise Fault(f"{word} of tuple {tuple_id!r}, which is not pending (never sent, or "
                        "already acked or failed)", dumps({"command": word, "id": tuple_id}))
        stats = t.stats
        stats.executed += 1
        roots = entry[1]
        if ok:
            stats.acked += 1
            if roots:
                done = self.acker.ack(roots, entry[0] ^ entry[2])
                if done:
                    self._spout_outcomes(done, ok=True)
        else:
            stats.failed += 1
            if roots:
                self._spout_outcomes(self.acker.fail(roots), ok=False)
        if t.backlog:
            self._refill(t)
        if not t.pending:
            t.await_since = None

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
        if t.is_spout:
            return  # spouts are held by not sending `next`; their acks must keep flowing
        proc = t.proc
        if not proc.alive or on == t.reading:
            return
        if on:
            self.sel.register(proc.stdout_fd, selectors.EVENT_READ, (t, "out"))
            if t.await_since is not None:
                t.await_since = self.now  # time spent paused by us is not its silence
        else:
            self.sel.unregister(proc.stdout_fd)
        t.reading = on

    # ---- spouts ---------------------------------------------------------------------------------
    def _spout_emit(self, t: Task, m: Emit) -> None:
        targets = self._route(t, m)
        reliable = m.id is not None
        if reliable and self.acking and targets:
            # ids first: the root's initial value is the XOR of its copies' ids
            ids = [getrandbits(64) or 1 for _ in targets]
            xor = 0
            for tid in ids:
                xor ^= tid
            root = self.acker.open(t.task, m.id, xor)
            roots = (root,)
            t.stats.emitted += 1
            t.stats.transferred += len(targets)
            values_json = self._values_json(m)
            for target, tid in zip(targets, ids):
                sid = str(tid)
                self._deliver(self.tasks[target], sid, tid, roots,
                              self.encoder.encode(sid, t.cid, m.stream, t.task, values_json))
        else:
            self._send_copies(t, m, targets, ())
            if reliable:  # no acker or no subscriber: complete at once, as Storm does
                self._spout_outcomes([Outcome(t.task, m.id, 0.0)], ok=True)
        if t.waiting:
            t.emitted_in_exchange += 1
        if m.task is None and m.need_task_ids:
            t.out.append(frame(dumps(targets)))
            self._dirty.add(t)

    def _spout_sync(self, t: Task) -> None:
        if not t.waiting:
            return  # a stray sync: nothing to end
        t.waiting = False
        t.await_since = None
        if t.current is _NEXT:
            if t.emitted_in_exchange:
                t.idle_sleep = 0.0
            else:  # nothing to emit: back off so an idle spout costs next to nothing
                t.idle_sleep = min(self.idle_max_sleep, max(0.001, t.idle_sleep * 2))
                t.next_at = self.now + t.idle_sleep
        t.current = None

    def _spout_outcomes(self, outcomes: list[Outcome], ok: bool, timed_out: bool = False) -> None:
        command = "ack" if ok else "fail"
        for o in outcomes:
            t = self.tasks[o.spout_task]
            if ok:
                t.stats.acked += 1
                self.spout_acked += 1
                self.complete_latency.record(o.latency)
            else:
                t.stats.failed += 1
                self.spout_failed += 1
                if timed_out:
                    self.spout_timed_out += 1
            if t.proc.alive:
                try:
                    t.commands.append(encode(SpoutCommand(command, o.msg_id)))
                except EncodeError:  # the id came from JSON, so this cannot happen; be loud
                    log.error("%s: cannot encode message id %r", t.proc.name, o.msg_id)

    def _may_next(self, t: Task, ignore_idle: bool = False) -> bool:
        if self._stopping or self._blocked_downstream[t.cid]:
            return False
        limit = t.spout_max_pending
        if limit is not None and self.acker.pending(t.task) >= limit:
            return False
        return ignore_idle or self.now >= t.next_at

    def _pump_spouts(self) -> None:
        for t in self.spouts:
            if t.waiting or t.proc.state is not State.RUNNING:
                continue
            if t.commands:
                data = t.commands.popleft()
            elif self._may_next(t):
                data = _NEXT
            else:
                continue
            t.current = data
            t.waiting = True
            t.emitted_in_exchange = 0
            t.await_since = self.now
            t.out.append(data)
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
        try:
            done = proc.flush()
        except (BrokenPipeError, ConnectionResetError):
            proc.out.clear()
            proc.out_pending = b""
            done = True  # it died; reading its stdout will show EOF and fault it
        except OSError as exc:
            self._fault(t, f"writing to its stdin failed: {exc}")
            return
        fd = proc.stdin_fd
        try:
            key = self.sel.get_key(fd)
        except KeyError:
            key = None
        if done and key is not None:
            self.sel.unregister(fd)
        elif not done and key is None:
            self.sel.register(fd, selectors.EVENT_WRITE, (t, "in"))

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
                component_log.info("%s pid=%s: %s", proc.name, proc.pid, _clip(line))

    def _report_suppressed(self, t: Task) -> None:
        if t.stderr_suppressed:
            component_log.warning("%s pid=%s: %d stderr lines not shown (more than %d a second)",
                                  t.proc.name, t.proc.pid, t.stderr_suppressed,
                                  STDERR_LINES_PER_SEC)
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
                component_log.info("%s pid=%s: %s", proc.name, proc.pid, _clip(line))

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
                    self._fault(t, f"no pid reply within {self.handshake_secs:g}s of the "
                                   "handshake")
                continue
            if state is not State.RUNNING:
                continue
            if (t.await_since is not None and t.reading
                    and now - t.await_since > self.timeout_secs):
                self._fault(t, f"hung: silent for {now - t.await_since:.1f}s while it owed an "
                               f"answer (topology.subprocess.timeout.secs={self.timeout_secs:g})")
                continue
            if not t.is_spout:
                if t.comp.heartbeats:
                    t.out.append(encode(TupleMessage(str(getrandbits(63)), None, "__heartbeat",
                                                     -1, [])))
                    if t.await_since is None:
                        t.await_since = now
                    self._dirty.add(t)
                if t.tick_freq and now >= t.next_tick:
                    t.next_tick = now + t.tick_freq
                    sid = str(getrandbits(63))
                    self._deliver(t, sid, 0, (), encode(TupleMessage(
                        sid, "__system", "__tick", -1, [t.tick_freq])))

    def _restart_due(self) -> None:
        for t in list(self._backoff_tasks):
            if self.now >= t.proc.restart_at:
                self._backoff_tasks.discard(t)
                t.stats.restarts += 1
                log.warning("restarting %s (after %.1fs back-off)", t.proc.name, t.proc.backoff)
                self._start(t)

    # ---- reporting ------------------------------------------------------------------------------
    def snapshot(self) -> dict:
        """The stats of design.md's stats file, plus live per-component gauges."""
        components = {}
        for cid, stats in self.stats.items():
            data = stats.as_json()
            tasks = self._by_component[cid]
            data["in_flight"] = sum(len(t.pending) for t in tasks)
            data["queued"] = sum(len(t.backlog) for t in tasks)
            data["states"] = sorted({t.proc.state.value for t in tasks})
            components[cid] = data
        return {
            "topology": {
                "name": self.topology.name,
                "uptime_s": round(self.now - self._started, 3) if self._started else 0.0,
                "spout_tuples_acked": self.spout_acked,
                "spout_tuples_failed": self.spout_failed,
                "spout_tuples_timed_out": self.spout_timed_out,
                "spout_tuples_pending": len(self.acker),
                "complete_latency_ms": {
                    "p50": self.complete_latency.percentile(50),
                    "p99": self.complete_latency.percentile(99),
                    "mean": self.complete_latency.mean_ms(),
                },
            },
            "components": components,
        }


def _clip(line: str, limit: int = 2000) -> str:
    return line if len(line) <= limit else f"{line[:limit]}... ({len(line)} chars)"


def _emit_text(m: Emit) -> str:
    try:
        return shorten(dumps({"command": "emit", "stream": m.stream, "tuple": m.values,
                              **({"task": m.task} if m.task is not None else {})}).encode())
    except EncodeError:
        return repr(m)
