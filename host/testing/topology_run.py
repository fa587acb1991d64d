"""`run_topology`: one topology run through the real Supervisor, driven step by step by
`_TopologyRun`, which decides when the run is over and moves a FakeClock."""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from host.runtime.lifecycle import State
from host.runtime.spout_link import SpoutLink
from host.testing.clock import FakeClock
from host.testing.inputs import with_inputs
from host.testing.log_capture import CapturedLogs
from host.testing.results import TopologyResult
from host.topology.model import Topology
from multilang.messages import Emit

if TYPE_CHECKING:
    from host.runtime.supervisor import Supervisor
    from host.topology.builder import TopologyBuilder

REAL_STEP_WAIT = 0.05  # real seconds a turn of the loop may wait, so `until` is checked often
IDLE_NEXTS = 3  # empty `next`s in a row after which a spout counts as idle


class _TopologyRun:
    """Drives one Supervisor step by step: taps its emits and spout outcomes, decides when the
    run is over, and moves a FakeClock.

    Reads supervisor internals (task state, timers) that have no public accessor; see
    `_spout_idle` and `_next_due`."""

    def __init__(
        self,
        sup: Supervisor,
        result: TopologyResult,
        fixed: dict[str, list[Any]],
        clock: FakeClock | None,
        until: Callable[[TopologyResult], bool] | None,
        timeout: float,
    ):
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
                if sup.phase == "draining":  # quiescent when its processes are told to stop?
                    self.final_quiescent = self.quiescent()
                if self.clock is not None:
                    self._maybe_advance()
            finished = True
        finally:
            if sup.phase in ("running", "draining"):  # ended without stopping its processes
                self.final_quiescent = self.quiescent()
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
            link = t.link
            if t.state is not running or link.has_output:
                return False
            if isinstance(link, SpoutLink):
                if link.outstanding or link.commands or not self._spout_idle(link):
                    return False
            elif link.in_flight or link.backlog:
                return False
        return True

    def _spout_idle(self, link: SpoutLink) -> bool:
        if link.cid in self.fixed:
            return self.emitted_by.get(link.cid, 0) >= len(self.fixed[link.cid])
        return link.backoff.empty >= IDLE_NEXTS

    # -- fake time -------------------------------------------------------------------------------
    def _maybe_advance(self) -> None:
        clock = self.clock
        assert clock is not None  # called only with a FakeClock
        if self.sup.phase == "stopping":
            # processes exit in real time after their stdin closed: the grace periods follow it
            clock.follow_real_time()
            return
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
            state = t.state
            if state is starting:
                return True
            if state is not running:
                continue
            link = t.link
            if link.has_output:
                return True
            if isinstance(link, SpoutLink):
                if link.outstanding:
                    return True
            elif link.await_since is not None and t.reading:
                # no tuple pending: it owes a heartbeat's sync; tuples pending: it has said
                # nothing since the last heartbeat (a bolt holding tuples on purpose still
                # answers heartbeats, so fake time moves on for it)
                if not link.in_flight:
                    return True
                if link.component.heartbeats and link.await_since < heartbeat_at:
                    return True
        return False

    def _next_due(self, now: float) -> float:
        """When the host next has something to do by the clock, at most one housekeeping period
        away (so heartbeats, ticks and liveness checks happen at their fake times); idle spouts
        are not waited for."""
        return self.sup.next_due(skip_spout=self._spout_idle)


def _as_topology(topology: Topology | TopologyBuilder | str | os.PathLike[str]) -> Topology:
    if isinstance(topology, Topology):
        return topology
    if isinstance(topology, (str, os.PathLike)):
        from host.topology.files import load

        return load(topology)
    build = getattr(topology, "build", None)
    if callable(build):  # a TopologyBuilder
        return build()
    raise TypeError(f"expected a Topology, a TopologyBuilder or a path, got {topology!r}")


def run_topology(
    topology: Topology | TopologyBuilder | str | os.PathLike[str],
    inputs: Mapping[str, Iterable[Any]] | None = None,
    until: Callable[[TopologyResult], bool] | None = None,
    timeout: float = 30.0,
    clock: FakeClock | None = None,
    *,
    config: Mapping[str, Any] | None = None,
    strict: bool = False,
) -> TopologyResult:
    """Run `topology` with real subprocess components until it is quiescent (or `until` is
    true, or `timeout` real seconds pass) and return what happened. See `host.testing`.

    `config`: Storm config keys merged over the topology's (like `python -m host local -c`).
    `strict`: run the host in strict mode (`--strict`: protocol misuse is reported, and the
    component is not restarted for it)."""
    from host.runtime.supervisor import Supervisor
    from host.topology.overrides import with_overrides

    model = _as_topology(topology)
    if config:
        model = with_overrides(model, dict(config))
    workdir = Path(tempfile.mkdtemp(prefix="host-testing-"))
    try:
        model, fixed = with_inputs(model, inputs or {}, workdir)
        sup = Supervisor(model, clock=clock if clock is not None else time.monotonic, strict=strict)
        result = TopologyResult(model, sup, sup.clock(), sup.clock)
        result.inputs = {cid: items for cid, items in fixed.items()}
        run = _TopologyRun(sup, result, fixed, clock, until, timeout)
        result._run = run
        with CapturedLogs(result):
            try:
                run.run()
            finally:
                result._finish(sup.snapshot(), run.final_quiescent, sup.now - result._started)
        return result
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
