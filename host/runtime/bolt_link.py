"""The host's end of a bolt task: tuples in flight and queued, its acks and fails, its emits,
heartbeats and ticks.

A bolt task has two bounds, as in Storm: at most `host.bolt.max.in.flight` tuples written to it
and not yet acked (`in_flight`), then at most `topology.shellbolt.max.pending` waiting to be
written (`backlog`, Storm's `ShellBolt` queue). A full backlog pauses the components that feed the
bolt (backpressure, see `DataPath.on_backpressure`), so memory stays bounded however slow it is.

`in_flight` maps the id of every tuple written and not yet acked to
[spout tuples (roots), XOR of the ids of the children it emitted anchored to it, time written].
The children's XOR is applied to the roots together with the tuple's own ack, as Storm does.

A bolt that never acks (Storm's `storm.rb` `Storm::Bolt` does not by default) would fill
`in_flight` and stop the flow for good. Storm's `ShellBolt` keeps such tuples in a map for ever
and runs on; here, once the bound is reached, the oldest tuples whose ack can no longer change
anything are forgotten to make room (`_forget`, docs/protocol.md §4.5) and counted as
`never_acked`: memory stays bounded and the flow goes on at the rate the bolt reads.
"""

from __future__ import annotations

import logging
import math
from collections import deque
from typing import Any

from host.observe.metrics import ComponentStats
from host.runtime.acker import Outcome, new_id
from host.runtime.data_path import DataPath
from host.runtime.link import Fault, Link, emit_text
from host.runtime.run_length import RunLength
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
from multilang.shell_frames import ShellFrames

log = logging.getLogger("host")

MAX_BEATS = 64  # heartbeats written and not yet answered that are remembered


class BoltLink(Link):
    # `DataPath.send_copies` does `offer`'s first case itself; False on a link whose `offer` is
    # wrapped (host/runtime/debug_log.py)
    inline_offer = True

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
        # its component's shuffle run length (host/runtime/run_length.py), told how long the
        # task took over tuples written together whose acks came in more than one read: when
        # the latest such write was, and when the first of its acks was read
        self.run_length: RunLength | None = None
        self.group_written = -math.inf
        self.group_first_read = 0.0
        # never-acked tuples (`_forget`): when this process last acked or failed a tuple,
        # whether it had tuples forgotten, and whether its component was warned
        self.answered_at = -math.inf
        self.forgot = False
        self.warned = False
        # heartbeats: when each one not yet answered was written (oldest first), and when the
        # last one answered was (the bolt has read every tuple written before it)
        self.beats: deque[float] = deque()
        self.read_past = -math.inf
        # where its emits go: the data path, or the batch layer's router for a bolt of a
        # transactional topology's batch group (host/batch/layer.py)
        self.route = path.bolt_emit

    # -- a new process ---------------------------------------------------------------------------
    def attach(self, stdin_fd: int) -> None:
        super().attach(stdin_fd)
        self.answered_at = -math.inf
        self.forgot = False
        self.beats.clear()
        self.read_past = -math.inf
        self.group_written = -math.inf

    def use_serializer(self, ser: Serializer) -> bool:
        """Tuples queued before its pid reply were written in the serializer then in use; they
        are rewritten from JSON into shell frames. The other way (a process that does not take
        the shell frames its predecessor took) cannot be done: False."""
        old = self.ser
        super().use_serializer(ser)
        if old is ser or not self.backlog:
            return True
        if isinstance(old, ShellFrames) and isinstance(ser, ShellFrames):
            return old.chars == ser.chars  # joined or not, a tuple's frame is the same
        if not isinstance(ser, ShellFrames) or isinstance(old, ShellFrames):
            return False
        self.backlog = deque(
            (tid, roots, ser.from_json(frame)) for tid, roots, frame in self.backlog
        )
        return True

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
        backlog = self.backlog
        backlog.append((tid, roots, frame))
        if not self.full and len(backlog) >= self.max_queued:
            self.refill()  # once per full backlog: room may be made by forgetting (`_forget`)
            if len(backlog) >= self.max_queued:
                self.full = True
                self.path.on_backpressure(self, True)

    def refill(self) -> None:
        """Write queued tuples while there is room in flight, forgetting stale tuples in flight
        (`_forget`) when there is not room enough. Called when the bolt answers, when the
        backlog fills, when a full pipe drains, and every second (after timeouts)."""
        backlog, in_flight = self.backlog, self.in_flight
        if not backlog or not self.running:
            return
        short = len(in_flight) + len(backlog) - self.max_in_flight
        if short > 0:
            self._forget(short)
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

    def _forget(self, most: int) -> None:
        """Forget up to `most` of the oldest tuples in flight that the bolt will not ack, or
        whose ack could change nothing, so that the flow goes on past a bolt that does not ack
        (Storm's `ShellBolt` keeps them for ever; here memory stays bounded). Oldest first (a
        dict keeps the order written), stopping at the first that must still be waited for, so
        the cost is the tuples forgotten plus one. A tuple may be forgotten when:
        - it is tracked and none of its spout tuples is pending any more (timed out, failed,
          or their spout task died): the acker would ignore its ack;
        - it is not tracked (no spout tuple waits for it), and the bolt has read past it (it
          answered a heartbeat written after it: components read their input in order) and has
          acked and failed nothing since it was written; or it has been in flight for
          `topology.message.timeout.secs` (it would have timed out, had it been tracked), or
          the bolt has had tuples in flight and acked and failed none for that long (a
          component without heartbeats).
        A tracked tuple whose spout tuples are pending is waited for (that is backpressure),
        and so is an untracked one that a slow bolt has not reached yet, or while the bolt acks
        others: without that patience a slow bolt that does ack would lose its bound. When the
        first tuple to wait for may be one the bolt read past without acking, a heartbeat is
        written to find out (a probe: its `sync` says so). Nothing is forgotten while the
        bolt's stdin pipe is full (it is not reading): what is written in place of forgotten
        tuples must not pile up here."""
        if self.out_pending:
            return
        path = self.path
        pending = path.acker.pending_any
        patience = path.acker.timeout_secs
        now = path.now
        answered_at, read_past = self.answered_at, self.read_past
        since = self.busy_since
        silent = since is not None and now - max(answered_at, since) >= patience
        written_before = now - patience
        in_flight = self.in_flight
        doomed: list[int] = []
        for tid, entry in in_flight.items():
            roots = entry[0]
            if roots:
                if pending(roots):
                    break
            elif type(roots) is not tuple:
                break  # a batch tuple (host/batch/layer.py): its ack finishes its batch
            elif not silent and entry[2] > written_before:
                written = entry[2]
                if answered_at >= written:
                    break  # it acked since: wait for this one
                if written >= read_past:  # not read past yet: ask, unless a heartbeat will say
                    beats = self.beats
                    if self.component.heartbeats and not (beats and beats[-1] >= written):
                        self.heartbeat()
                    break
            doomed.append(tid)
            if len(doomed) >= most:
                break
        if not doomed:
            return
        tracked = bool(in_flight[doomed[0]][0])
        held = len(in_flight)
        for tid in doomed:
            del in_flight[tid]
        self.stats.never_acked += len(doomed)
        self.forgot = True
        if not self.warned:
            self._warn(held, tracked)

    def _warn(self, held: int, tracked: bool) -> None:
        """One warning per component (the first of its tasks to forget a tuple), also shown
        among the component's log lines in the live view and the web UI."""
        self.warned = True
        for other in self.path.links.values():
            if other is not self and other.cid == self.cid and getattr(other, "warned", False):
                return
        why = (
            "whose spout tuples timed out or failed"
            if tracked
            else "that no spout tuple tracks and that it left unacked"
        )
        text = (
            f"bolt {self.name} has {held:,} tuples written and never acked {why}; forgetting "
            "the oldest so the flow goes on (counted as never_acked) — does it ack its tuples?"
        )
        log.warning("%s (pid %s)", text, self.log.pid)
        self.log.observe.log(self.cid, self.task, "WARNING", text)

    def flush(self) -> bool:
        stalled = bool(self.out_pending)
        done = super().flush()
        if stalled and done and self.backlog:
            self.refill()  # the pipe drained: what `_forget` held back may go now
            done = super().flush()
        return done

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
        route = self.route
        latency = self.stats.process_latency
        now = path.now
        acked = emitted = 0
        # acks, in this read, of tuples written together with some acked in an earlier read
        later = 0
        try:
            for m in messages:
                typ = type(m)
                try:
                    if typ is Emit:
                        route(self, m)
                        emitted += 1
                    elif typ is Ack:
                        try:  # ids are signed 64-bit: 2**64 (not a string) is never in flight
                            key = int(m.id) if type(m.id) is str else 1 << 64
                            entry = in_flight.pop(key)
                        except (KeyError, ValueError):
                            found = self._in_flight_key(m.id, m)  # or the Fault that says why
                            if found is None:  # a forgotten tuple's late ack: nothing to do
                                acked += 1
                                continue
                            key = found
                            entry = in_flight.pop(key)
                        acked += 1
                        written = entry[2]
                        if written == self.group_written:
                            if now > self.group_first_read:
                                later += 1
                        elif written > self.group_written:
                            if later:
                                self._measured(now, later)
                                later = 0
                            self.group_written = written
                            self.group_first_read = now
                        if not key & 7:  # a sample: the ids are random
                            latency.record(now - entry[2])
                        roots = entry[0]
                        if roots:
                            done = acker_ack(roots, key ^ entry[1])
                            if done:
                                path.spout_outcomes(done, ok=True)
                        elif type(roots) is not tuple:  # a batch tuple: counted by its batch
                            path.batches.acked(self, roots)  # type: ignore[union-attr]
                    elif typ is Fail:
                        found = self._in_flight_key(m.id, m)
                        self.stats.executed += 1
                        self.stats.failed += 1
                        self.answered_at = now
                        if found is None:
                            continue  # a forgotten tuple: its spout tuples are already gone
                        roots = in_flight.pop(found)[0]
                        if roots:
                            path.spout_outcomes(path.acker.fail(roots), ok=False)
                        elif type(roots) is not tuple:
                            path.batches.failed(self, roots)  # type: ignore[union-attr]
                    elif typ is Sync:  # a heartbeat's answer: components answer in order
                        if self.beats:
                            self.read_past = self.beats.popleft()
                    else:
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
            if acked:
                self.answered_at = now
                if later:
                    self._measured(now, later)
                if self.run_length is not None:
                    self.run_length.answered()
            if self.backlog:  # once per read, not per ack: the freed slots are written together
                self.refill()
            if in_flight:
                self.await_since = now
            else:
                self.await_since = None
                self._idle(now)

    def _measured(self, now: float, later: int) -> None:
        """`later` tuples of the latest write group were acked `now`, after the first of the
        group was: the task worked on them from then to now (host/runtime/run_length.py)."""
        if self.run_length is not None:
            self.run_length.measured(now - self.group_first_read, later)

    def in_flight_entry(self, tuple_id: Any, m: Emit) -> list:
        """The in-flight entry of an emit's anchor; a Fault when it is not in flight."""
        try:
            return self.in_flight[int(tuple_id) if type(tuple_id) is str else 1 << 64]
        except (KeyError, ValueError):
            key = self._in_flight_key(tuple_id, m)
            # anchored to a forgotten tuple: it has no spout tuple left to anchor to
            return [(), 0, 0.0] if key is None else self.in_flight[key]

    def _in_flight_key(self, tuple_id: Any, m: Any) -> int | None:
        """The key of a tuple id that message `m` refers to; a Fault when it is not in flight
        (Storm's ids are strings: a number never matches one). None instead of the Fault once
        this process had tuples forgotten (`_forget`): the id may be one of them, answered
        late, and ids are not kept to tell (see docs/protocol.md §4.5)."""
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
        if self.forgot:
            return None
        raise Fault(
            f"{what} {tuple_id!r}, which is not pending (never sent, or already acked or failed)",
            raw,
            m,
        )

    # -- timers ----------------------------------------------------------------------------------
    def heartbeat(self) -> None:
        """Storm's `ShellBolt` heartbeat: a tuple on `__heartbeat` that must be answered with
        `sync` (see docs/protocol.md §4.7). Also a probe (`_forget`)."""
        beats = self.beats
        if len(beats) < MAX_BEATS:  # else a later sync is taken for an older one: no harm
            beats.append(self.path.now)
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
