"""One run of a topology: every task's process, the links, the data path and the acker, driven by
one event loop (see docs/architecture.md for the map).

Each turn of the loop reads what components wrote and handles it in order (routes emits, feeds the
acker, answers task ids), runs the due deadlines (housekeeping, restarts, handshakes, ticks, idle
spouts, the phases of the stop), gives spouts their next commands, then writes everything queued,
one write per task.

A run ends in three phases: draining (no `next`; `deactivate`; what is in flight gets up to
`host.shutdown.grace.secs`), stopping (stdin closed, SIGTERM after a grace period, then SIGKILL),
done. `step()` returns False once done; nothing in it waits for a process.
"""

from __future__ import annotations

import gc
import logging
import os
import shutil
import signal
import tempfile
import time
import uuid
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from host.observe.metrics import LatencyHistogram
from host.observe.observations import Observations
from host.observe.snapshot import Snapshot
from host.runtime import debug_log, stats
from host.runtime.acker import Acker
from host.runtime.backpressure import Backpressure
from host.runtime.bolt_link import BoltLink
from host.runtime.context import assign_tasks
from host.runtime.cpu_isolation import CpuIsolation
from host.runtime.data_path import DataPath
from host.runtime.lifecycle import State
from host.runtime.loop import EventLoop
from host.runtime.process import Launcher
from host.runtime.router import Router
from host.runtime.run_build import build_batches, build_drpc, build_tasks
from host.runtime.run_length import RunLength
from host.runtime.shutdown import Shutdown
from host.runtime.spout_link import SpoutLink
from host.runtime.supervision import Supervision
from host.runtime.task_priority import TaskPriority, nice_for
from host.runtime.watchdog import ENV as WATCHDOG_ENV
from host.runtime.watchdog import Watchdog
from host.topology import settings as cfg
from host.topology.model import Topology
from multilang.messages import Emit

if TYPE_CHECKING:
    from host.drpc.service import DrpcService

log = logging.getLogger("host")

GC_THRESHOLD = 70_000  # allocations between young-generation collections while running
HOUSEKEEPING_SECS = 1.0  # heartbeats, liveness, message timeouts
ADAPT_SECS = 0.25  # shuffle run lengths and CPU isolation follow the load this often
STOP_TERM_AFTER_SECS = 2.0  # stdin closed: at most this long (and the grace) before SIGTERM
STOP_ABANDON_SECS = 2.0  # after SIGKILL: how long before the run ends without the exit


class Supervisor:
    def __init__(
        self,
        topology: Topology,
        *,
        clock: Callable[[], float] = time.monotonic,
        launcher: Launcher | None = None,
        strict: bool = False,
    ) -> None:
        self.topology = topology
        self.strict = strict
        self.clock = clock
        self.run_id = uuid.uuid4().hex[:8]
        self.settings = settings = cfg.settings_for(topology)
        self.acker = Acker(
            settings.message_timeout_secs,
            clock,
            settings.message_timeouts_enabled,
            settings.acker_latency_sample,
        )
        self.task_map = assign_tasks(topology)
        # per bolt component, the length of the runs its shuffle inputs give one task
        self.run_lengths = {
            c.id: RunLength(settings.shuffle_run_max, settings.shuffle_run_budget_secs)
            for c in topology.components
            if not c.is_spout and c.in_host is None
        }
        router = Router(
            topology,
            {c.id: list(self.task_map.tasks_of(c.id)) for c in topology.components},
            self.run_lengths,
        )
        self.path = DataPath(router, self.acker, settings.acking)
        self.path.strict = strict
        self.path.on_backpressure = self._backpressure
        self.loop = EventLoop(clock, [self.path])
        self.observe = Observations()
        self.launcher = launcher or Launcher()
        # only for real processes: a test's fake children have no CPUs to move
        self.cpu = CpuIsolation(settings.cpu_isolate if launcher is None else False)
        self.supervision = Supervision(self.loop, self.path, settings, self.observe, self.launcher)
        self.supervision.on_failure = self.request_stop
        self.backpressure = Backpressure(topology)
        self.supervision.is_paused = lambda link: self.backpressure.held(link.cid)
        self.shutdown = Shutdown(self.supervision)
        self.tasks, self.spouts, self.by_component = build_tasks(
            topology,
            settings,
            self.task_map,
            self.run_id,
            self.path,
            self.observe,
            self.run_lengths,
            strict,
        )
        if topology.transactional_id is not None:
            build_batches(topology, settings, self.task_map, self.path, self.tasks)
        self.drpc: DrpcService | None = None
        if topology.drpc_functions:
            self.drpc = build_drpc(
                topology,
                settings,
                self.task_map,
                self.path,
                self.loop,
                self.observe,
                self.backpressure.held,
                self.tasks,
            )
        # only for real processes, as the CPU isolation: how far they yield the CPU to the host
        self.priority = TaskPriority(
            nice_for(settings.task_nice, len(self.tasks), len(self.cpu.all_cpus))
            if launcher is None
            else 0
        )
        self.launcher.nice = self.priority.nice
        self.launcher.priority = self.priority
        debug_log.install(topology, self.path)  # topology.debug: nothing unless it is on
        self.phase = "new"  # new, running, draining, stopping, done
        self.started_at = 0.0
        self._end_at: float | None = None
        self._duration: float | None = None
        self._stop_requested: str | None = None
        self._watchdog: Watchdog | None = None
        self.on_report: Callable[[Snapshot], None] | None = None
        self.report_every = 0.5
        self.last_housekeeping = self.loop.now  # clock time of the last heartbeat round

    # -- taps and figures ------------------------------------------------------------------------
    @property
    def on_emit(self) -> Callable[[str, int, Emit], None] | None:
        return self.path.on_emit

    @on_emit.setter
    def on_emit(self, tap: Callable[[str, int, Emit], None] | None) -> None:
        self.path.on_emit = tap

    @property
    def on_outcome(self) -> Callable[[str, int, Any, str], None] | None:
        return self.path.on_outcome

    @on_outcome.setter
    def on_outcome(self, tap: Callable[[str, int, Any, str], None] | None) -> None:
        self.path.on_outcome = tap

    @property
    def complete_latency(self) -> LatencyHistogram:
        """Spout tuples' complete latency; a benchmark may replace it to measure a window."""
        return self.path.complete_latency

    @complete_latency.setter
    def complete_latency(self, histogram: LatencyHistogram) -> None:
        self.path.complete_latency = histogram

    @property
    def failure(self) -> str | None:
        return self.supervision.failure

    @property
    def pid_dir(self) -> str:
        return self.supervision.pid_dir

    @property
    def now(self) -> float:
        return self.loop.now

    @property
    def last_step_events(self) -> int:
        return self.loop.last_events

    @property
    def stop_reason(self) -> str | None:
        """Why the run is stopping (a signal, the duration, request_stop's reason), or None."""
        return self._stop_requested

    def snapshot(self) -> Snapshot:
        return stats.snapshot(self)

    # -- the run ---------------------------------------------------------------------------------
    def request_stop(self, why: str = "stop requested") -> None:
        if self._stop_requested is None:
            self._stop_requested = why

    def run(self, duration: float | None = None) -> int:
        """Run until `duration` seconds pass, a stop is requested (SIGINT / SIGTERM) or a
        component goes fatal. Returns 0, or 1 after a runtime failure."""
        self.start(duration)
        thresholds = gc.get_threshold()
        # The data path allocates a few containers per tuple and makes no cycles: with the default
        # thresholds the collector runs every 700 of them and walks the in-flight tables in its
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
        self.listen()
        pid_dir = tempfile.mkdtemp(prefix=f"multilang-{self.topology.name}-{self.run_id}-")
        os.chmod(pid_dir, 0o700)
        self.supervision.pid_dir = pid_dir
        self.loop.catch_signals(self.request_stop)
        now = self.loop.stamp()
        self.started_at = now
        self._duration = duration
        if duration is not None:
            self._end_at = now + duration
            self.loop.deadlines.at(
                "duration",
                self._end_at,
                lambda: self.request_stop(f"duration of {duration:g}s reached"),
            )
        self._start_watchdog()
        if self.priority.nice:
            log.info(
                "task processes at niceness %d, so that the host gets a CPU when it needs one "
                "(%s: %s; %d task processes on %d CPUs)",
                self.priority.nice,
                cfg.TASK_NICE,
                self.settings.task_nice,
                len(self.tasks),
                len(self.cpu.all_cpus),
            )
        self.phase = "running"
        for task in self.tasks.values():
            self.supervision.start(task)
        self.loop.deadlines.at("housekeeping", now + HOUSEKEEPING_SECS, self._housekeeping)
        self.loop.deadlines.at("adapt", now + ADAPT_SECS, self._adapt)
        self.loop.deadlines.at("report", now + self.report_every, self._report)

    def listen(self) -> None:
        """Open the run's servers (DRPC's) before any process starts; OSError when an address
        cannot be bound. `start` calls it; a caller may call it first to report the address."""
        if self.drpc is not None:
            self.drpc.start()

    def step(self, max_wait: float | None = None) -> bool:
        """One turn of the loop (see the module's docstring), waiting at most `max_wait` real
        seconds. False once the run is over."""
        if self._stop_requested and self.phase == "running":
            self._begin_drain(self._stop_requested)
        if self.phase == "draining" and self._drained():
            self._begin_stopping()
        if self.phase == "stopping" and not any(
            t.state is State.STOPPING for t in self.tasks.values()
        ):
            self.phase = "done"
        if self.phase == "done":
            return False
        self._schedule_idle_spouts()
        self.loop.turn(max_wait)
        if self.phase == "running" or self.phase == "draining":
            if self.drpc is not None:  # first: an in-host ack may queue a spout's `ack`
                self.drpc.pump()
            for link in self.spouts:
                if link.running:
                    link.pump()
        self._flush_dirty()
        return True

    def _start_watchdog(self) -> None:
        """A process that kills every process of this run (grandchildren too) once the host is
        gone, even after a SIGKILL of the host; see host/runtime/watchdog.py."""
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
        """End whatever is still running (when the loop did not reach its end: an error, or a
        harness that gave up), then release the loop's resources."""
        try:
            self.cpu.release(self.pids().values())
            self._end_now()
            if self.drpc is not None:
                self.drpc.close()
            if self._watchdog is not None:
                self._watchdog.close()  # it sweeps what crashed incarnations left behind
        finally:
            self.loop.close()
            if self.pid_dir:
                shutil.rmtree(self.pid_dir, ignore_errors=True)

    def _end_now(self) -> None:
        self.supervision.stopping = True
        self.path.stopping = True
        for task in self.tasks.values():
            if task.state is State.BACKOFF:
                task.lifecycle.to(State.STOPPED)
            elif task.child is not None:
                self.shutdown.abandon(task)
        self.phase = "done"

    # -- the phases of a stop --------------------------------------------------------------------
    def next_due(self, skip_spout: Callable[[SpoutLink], bool] | None = None) -> float:
        """The clock time at which the loop next has work of its own (housekeeping, an idle
        spout's next `next`, a restart, a phase of the stop). `skip_spout(link)` leaves out
        spouts the caller does not want to wait for (a test harness: spouts known to be idle)."""
        self._schedule_idle_spouts()
        links = self.path.links

        def skip(key: Any) -> bool:
            if key == "report":
                return True
            if skip_spout is not None and isinstance(key, tuple) and key[0] == "next":
                return skip_spout(links[key[1]])  # type: ignore[arg-type]
            return False

        return self.loop.deadlines.next_due(skip)

    def _schedule_idle_spouts(self) -> None:
        """An idle spout's next `next` is a deadline, so that the loop wakes for it."""
        deadlines = self.loop.deadlines
        for link in self.spouts:
            when = link.next_wanted_at()
            key = ("next", link.task)
            if when is None:
                if key in deadlines:
                    deadlines.cancel(key)
            elif deadlines.when(key) != when:
                deadlines.at(key, when, _nothing)

    def _begin_drain(self, why: str) -> None:
        """Stop asking spouts for tuples and give what is in flight a grace period."""
        grace = self.settings.shutdown_grace_secs
        log.info("stopping: %s; draining in-flight tuples for up to %gs", why, grace)
        self.phase = "draining"
        self.path.stopping = True
        self.supervision.stopping = True
        self.loop.deadlines.at("drain", self.loop.now + grace, self._begin_stopping)
        for link in self.spouts:
            link.deactivate()
        if self.drpc is not None:
            self.drpc.drain()

    def _drained(self) -> bool:
        if len(self.acker) or (self.path.batches is not None and not self.path.batches.idle):
            return False
        return all(not link.waiting and not link.commands for link in self.spouts if link.running)

    def _begin_stopping(self) -> None:
        if self.phase != "draining":
            return
        self.phase = "stopping"
        self.loop.deadlines.cancel("drain")
        if self.drpc is not None:
            self.drpc.stop()
        self._flush_dirty()
        for task in self.tasks.values():
            self.shutdown.begin(task)
        grace = self.settings.shutdown_grace_secs
        now = self.loop.now
        term_at = now + min(grace, STOP_TERM_AFTER_SECS)
        kill_at = term_at + grace
        self.loop.deadlines.at("stop:term", term_at, lambda: self._escalate(signal.SIGTERM))
        self.loop.deadlines.at("stop:kill", kill_at, lambda: self._escalate(signal.SIGKILL))
        self.loop.deadlines.at("stop:abandon", kill_at + STOP_ABANDON_SECS, self._end_now)

    def _escalate(self, sig: int) -> None:
        self.shutdown.escalate(list(self.tasks.values()), sig)

    # -- timers ----------------------------------------------------------------------------------
    def _housekeeping(self) -> None:
        now = self.loop.now
        self.last_housekeeping = now
        self.loop.deadlines.at("housekeeping", now + HOUSEKEEPING_SECS, self._housekeeping)
        expired = self.acker.expire()
        if expired:
            self.path.spout_outcomes(expired, ok=False, timed_out=True)
        if self.path.batches is not None:
            self.path.batches.expire()
        if self.drpc is not None:
            self.drpc.expire()
        for task in list(self.tasks.values()):
            link = task.link
            link.log.due_report(now)
            if task.state is not State.RUNNING:
                continue
            self.supervision.check(task, now, self.strict)
            if task.state is State.RUNNING and isinstance(link, BoltLink):
                link.refill()  # timeouts may have made tuples it never acked forgettable
                if link.component.heartbeats:
                    link.heartbeat()

    def _adapt(self) -> None:
        """The data path follows the load: shuffle run lengths (host/runtime/run_length.py) and
        the task processes' CPUs (host/runtime/cpu_isolation.py)."""
        self.loop.deadlines.at("adapt", self.loop.now + ADAPT_SECS, self._adapt)
        for run_length in self.run_lengths.values():
            run_length.update()
        self.cpu.tick(self.pids().values())
        self.launcher.cpus = self.cpu.child_cpus
        self.priority.tick()

    def _report(self) -> None:
        self.loop.deadlines.at("report", self.loop.now + self.report_every, self._report)
        if self.on_report is not None:
            self.on_report(self.snapshot())

    # -- writing ---------------------------------------------------------------------------------
    def _flush_dirty(self) -> None:
        path = self.path
        if not path.dirty:
            return
        dirty, path.dirty = path.dirty, set()
        tasks = self.tasks
        for link in dirty:
            self.supervision.flush(tasks[link.task])  # in-host links are never dirty

    # -- backpressure ----------------------------------------------------------------------------
    def _backpressure(self, bolt: BoltLink, full: bool) -> None:
        """Stop (or resume) reading the components that feed a full bolt task."""
        for source, held in self.backpressure.bolt_task(bolt.cid, full):
            for task in self.by_component.get(source, ()):
                if isinstance(task.link, SpoutLink):
                    task.link.paused = held
                self.supervision.set_reading(task, not held)

    def pids(self) -> dict[str, int]:
        """Task name -> pid, for every task whose process is running now."""
        return {
            t.name: t.child.pid
            for t in self.tasks.values()
            if t.child is not None and t.state is State.RUNNING
        }

    @property
    def started_pids(self) -> list[int]:
        """The pids of the processes this run started (the most recent ones, bounded)."""
        return list(self.supervision.started_pids)


def _nothing() -> None:
    """An idle spout's deadline only wakes the loop; the spouts are pumped every turn."""
