"""The host's end of a bolt task: tuples in flight and queued, its acks and fails, its emits,
heartbeats and ticks.

A bolt task has two bounds, as in Storm: at most `host.bolt.max.in.flight` tuples written to it
and not yet acked (`in_flight`), then at most `topology.shellbolt.max.pending` waiting to be
written (`backlog`, Storm's `ShellBolt` queue). A full backlog pauses the components that feed the
bolt (backpressure, see `DataPath.on_backpressure`), so memory stays bounded however slow it is.

`in_flight` maps the id of every tuple written and not yet acked to
[spout tuples (roots), XOR of the ids of the children it emitted anchored to it, time written].
The children's XOR is applied to the roots together with the tuple's own ack, as Storm does.
"""

from __future__ import annotations

from collections import deque
from typing import Any

from host.observe.metrics import ComponentStats
from host.runtime.acker import Outcome, new_id
from host.runtime.data_path import DataPath
from host.runtime.link import Fault, Link, emit_text
from host.runtime.task_log import TaskLog
from host.topology.model import Component
from multilang.codec import dumps
from multilang.messages import (
    HEARTBEAT_STREAM,
    SYSTEM_COMPONENT,
    SYSTEM_TASK,
    TICK_STREAM,
    Ack,
    Emit,
    Fail,
    Sync,
    TupleMessage,
)
from multilang.serializers import Serializer


class BoltLink(Link):
    def __init__(
        self,
        path: DataPath,
        component: Component,
        task: int,
        ser: Serializer,
        stats: ComponentStats,
        log: TaskLog,
        *,
        max_in_flight: int,
        max_queued: int,
        tick_freq: int | None,
    ) -> None:
        super().__init__(path, component, task, ser, stats, log)
        self.in_flight: dict[int, list] = {}
        self.backlog: deque[tuple[int, tuple, bytes]] = deque()  # (tuple id, roots, frame)
        self.max_in_flight = max_in_flight
        self.max_queued = max_queued
        self.full = False  # the backlog reached max_queued: its sources are paused
        self.tick_freq = tick_freq
        self.busy_since: float | None = None  # since when it has had tuples in flight
        self.busy_total = 0.0  # seconds with tuples in flight, up to busy_since

    # -- delivery --------------------------------------------------------------------------------
    def offer(self, tid: int, roots: tuple, frame: bytes) -> None:
        """A tuple for this bolt: written now if it has room, else queued."""
        if self.running and not self.backlog and len(self.in_flight) < self.max_in_flight:
            now = self.path.now
            self.in_flight[tid] = [roots, 0, now]
            self.out.append(frame)
            self.path.dirty.add(self)
            if self.busy_since is None:
                self.busy_since = now
            return
        self.backlog.append((tid, roots, frame))
        if not self.full and len(self.backlog) >= self.max_queued:
            self.full = True
            self.path.on_backpressure(self, True)

    def refill(self) -> None:
        """Write queued tuples while there is room in flight."""
        backlog, in_flight = self.backlog, self.in_flight
        if not backlog or not self.running:
            return
        now = self.path.now
        while backlog and len(in_flight) < self.max_in_flight:
            tid, roots, frame = backlog.popleft()
            in_flight[tid] = [roots, 0, now]
            self.out.append(frame)
        if self.busy_since is None and in_flight:
            self.busy_since = now
        self.path.dirty.add(self)
        if self.full and len(backlog) < self.max_queued // 2 + 1:
            self.full = False
            self.path.on_backpressure(self, False)

    def busy_seconds(self, now: float) -> float:
        return self.busy_total + (now - self.busy_since if self.busy_since is not None else 0.0)

    def _idle(self, now: float) -> None:
        if self.busy_since is not None:
            self.busy_total += now - self.busy_since
            self.busy_since = None

    # -- what it writes --------------------------------------------------------------------------
    def handle(self, messages: Any) -> None:
        """A running bolt's messages, in order: acks and emits inline (the hot path), the rest
        through `common`."""
        path = self.path
        in_flight = self.in_flight
        acker_ack = path.acker.ack
        latency = self.stats.process_latency
        now = path.now
        acked = emitted = 0
        try:
            for m in messages:
                typ = type(m)
                try:
                    if typ is Emit:
                        path.bolt_emit(self, m)
                        emitted += 1
                    elif typ is Ack:
                        try:  # ids are positive: -1 (not a string) is never in flight
                            key = int(m.id) if type(m.id) is str else -1
                            entry = in_flight.pop(key)
                        except (KeyError, ValueError):
                            key = self._in_flight_key(m.id, m)  # raises the Fault that says why
                            entry = in_flight.pop(key)
                        acked += 1
                        if not key & 7:  # a sample: the ids are random
                            latency.record(now - entry[2])
                        roots = entry[0]
                        if roots:
                            done = acker_ack(roots, key ^ entry[1])
                            if done:
                                path.spout_outcomes(done, ok=True)
                    elif typ is Fail:
                        key = self._in_flight_key(m.id, m)
                        roots = in_flight.pop(key)[0]
                        self.stats.executed += 1
                        self.stats.failed += 1
                        if roots:
                            path.spout_outcomes(path.acker.fail(roots), ok=False)
                    elif typ is not Sync:
                        self.common(m, typ)
                except Fault as fault:
                    if not path.strict:
                        raise
                    self.misuse(fault)
        finally:
            stats = self.stats
            stats.acked += acked
            stats.executed += acked
            stats.emitted += emitted
            if self.backlog:  # once per read, not per ack: the freed slots are written together
                self.refill()
            if in_flight:
                self.await_since = now
            else:
                self.await_since = None
                self._idle(now)

    def in_flight_entry(self, tuple_id: Any, m: Emit) -> list:
        """The in-flight entry of an emit's anchor; a Fault when it is not in flight."""
        try:
            return self.in_flight[int(tuple_id) if type(tuple_id) is str else -1]
        except (KeyError, ValueError):
            return self.in_flight[self._in_flight_key(tuple_id, m)]

    def _in_flight_key(self, tuple_id: Any, m: Any) -> int:
        """The key of a tuple id that message `m` refers to; a Fault when it is not in flight
        (Storm's ids are strings: a number never matches one)."""
        if type(tuple_id) is str:
            try:
                key = int(tuple_id)
                if key in self.in_flight:
                    return key
            except ValueError:
                pass
        if type(m) is Emit:
            what, raw = "emit anchored to tuple", emit_text(m)
        else:
            what = f"{type(m).__name__.lower()} of tuple"
            raw = dumps({"command": type(m).__name__.lower(), "id": tuple_id})
        raise Fault(
            f"{what} {tuple_id!r}, which is not pending (never sent, or already acked or failed)",
            raw,
        )

    # -- timers ----------------------------------------------------------------------------------
    def heartbeat(self) -> None:
        """Storm's `ShellBolt` heartbeat: a tuple on `__heartbeat` that must be answered with
        `sync` (see docs/protocol.md §4.7)."""
        self.write(
            self.ser.encode(TupleMessage(str(new_id()), None, HEARTBEAT_STREAM, SYSTEM_TASK, []))
        )
        if self.await_since is None:
            self.await_since = self.path.now

    def tick(self) -> None:
        """A tick tuple (`topology.tick.tuple.freq.secs`), acked like any tuple."""
        tid = new_id()
        self.offer(
            tid,
            (),
            self.ser.encode(
                TupleMessage(str(tid), SYSTEM_COMPONENT, TICK_STREAM, SYSTEM_TASK, [self.tick_freq])
            ),
        )

    # -- its process died ------------------------------------------------------------------------
    def fail_in_flight(self) -> list[Outcome]:
        """Forget what was written to a dead process; the spout tuples it held fail at once."""
        outcomes: list[Outcome] = []
        for entry in self.in_flight.values():
            if entry[0]:
                outcomes.extend(self.path.acker.fail(entry[0]))
        self.stats.failed += len(self.in_flight)
        self.in_flight.clear()
        self._idle(self.path.now)
        return outcomes
