"""The data path between tasks: an emit is routed to its target tasks, each copy gets a random
tuple id that is XORed into its spout tuples' ledger entries (Storm's acker algorithm, see
host/runtime/acker.py and docs/architecture.md), and is offered to the target bolt's link; a spout
tuple's outcome goes back to its spout as an `ack` or `fail` command.

One instance per run, shared by every link: it also carries the clock reading of the current
loop turn (`now`) and the set of links with output to write this turn (`dirty`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from random import getrandbits
from typing import TYPE_CHECKING, Any

from host.errors import RoutingError
from host.observe.metrics import LatencyHistogram
from host.runtime.acker import ID_OFFSET, Acker, Outcome
from host.runtime.link import Fault, Link, emit_text
from host.runtime.router import Router
from multilang.codec import EncodeError
from multilang.messages import Emit

if TYPE_CHECKING:
    from host.batch.finish_layer import FinishLayer
    from host.runtime.bolt_link import BoltLink
    from host.runtime.spout_link import SpoutLink

log = logging.getLogger("host")

_NO_TARGETS: list[int] = []


def _nowhere(values: list) -> list[int]:
    """The route of a stream nobody subscribes to, once a wrong field count was seen on it."""
    return _NO_TARGETS


class DataPath:
    def __init__(self, router: Router, acker: Acker, acking: bool) -> None:
        self.router = router
        self.acker = acker
        self.acking = acking
        self.links: dict[int, Link] = {}  # by task id
        self.now = 0.0  # the clock reading of the current loop turn
        self.dirty: set[Link] = set()  # links with frames to write this turn
        self.stopping = False  # the run is draining: spouts get no `next`
        self.strict = False
        self.unchecked: set[tuple[str, str]] = set()  # (component, stream): see `_unsubscribed`
        self.spout_acked = self.spout_failed = self.spout_timed_out = 0
        self.complete_latency = LatencyHistogram()
        # the finish-batch layer (host/batch/finish_layer.py) of a transactional topology
        # (host/batch/layer.py) or of a linear DRPC one (host/drpc/linear.py), else None
        self.batches: FinishLayer | None = None
        # taps for tests and tracing, called when set: on_emit(component, task, Emit) for every
        # routed emit; on_outcome(component, task, message id, "acked" | "failed" | "timed_out"
        # | "lost") for every spout tuple leaving the ledger ("lost": its spout task died)
        self.on_emit: Callable[[str, int, Emit], None] | None = None
        self.on_outcome: Callable[[str, int, Any, str], None] | None = None
        # backpressure: called with a bolt link whose queue filled up (True) or drained (False)
        self.on_backpressure: Callable[[BoltLink, bool], None] = lambda link, full: None

    # -- emits -----------------------------------------------------------------------------------
    def targets(self, link: Link, m: Emit) -> list[int]:
        """The tasks an emit goes to (the list may be shared: do not change it)."""
        try:
            if m.task is None:
                choose = link.routes.get(m.stream)
                if choose is None:
                    choose = link.routes[m.stream] = self.router.chooser(link.cid, m.stream)
                return choose(m.values)
            return [self.router.direct_target(link.cid, m.stream, m.values, m.task)]
        except RoutingError as exc:
            if m.task is None and self.router.unsubscribed(link.cid, m.stream):
                return self._unsubscribed(link, m, str(exc))
            raise Fault(str(exc), emit_text(m), m) from None

    def _unsubscribed(self, link: Link, m: Emit, wrong: str) -> list[int]:
        """A wrong field count on a stream nobody subscribes to. Storm checks the count when it
        builds a copy of the tuple for a target task (`TupleImpl`, from `BoltOutputCollectorImpl`
        and `SpoutOutputCollectorImpl`), so there the emit goes nowhere, unnoticed; here too, and
        this task's emits on the stream skip the check from now on. --strict: one warning per
        component and stream."""
        link.routes[m.stream] = _nowhere
        key = (link.cid, m.stream)
        if key not in self.unchecked:
            self.unchecked.add(key)
            if self.strict:
                text = (
                    f"{wrong}; nobody subscribes to it, so the tuple goes nowhere and, as in "
                    "Storm, the count is not checked (said once per component and stream)"
                )
                link.log.observe.log(link.cid, link.task, "WARNING", text)
                log.warning("%s pid=%s: %s", link.name, link.log.pid, text)
        return _NO_TARGETS

    def bolt_emit(self, link: BoltLink, m: Emit) -> None:
        """An emit by a bolt, anchored to tuples it has in flight (or to none). The usual case
        (a known stream, one anchor written by the host) is inlined: this runs once per emit."""
        choose = link.routes.get(m.stream) if m.task is None else None
        if choose is None:
            targets = self.targets(link, m)
        else:
            try:
                targets = choose(m.values)
            except RoutingError:
                targets = self.targets(link, m)  # says what is wrong, or routes it nowhere
        anchors = m.anchors
        parent = None
        if not anchors:
            roots: tuple = ()
        elif len(anchors) == 1:
            anchor = anchors[0]
            try:
                parent = link.in_flight.get(int(anchor)) if type(anchor) is str else None
            except ValueError:
                parent = None
            if parent is None:  # not an id in flight: the slow path says why, or forgives
                parent = link.in_flight_entry(anchor, m)
            roots = parent[0]
        else:
            union: set = set()
            for anchor in anchors:
                union.update(link.in_flight_entry(anchor, m)[0])
            roots = tuple(union)
        if targets:
            xor = self.send_copies(link, m, targets, roots)
            if roots:
                if parent is not None:
                    parent[1] ^= xor  # applied to the roots with the parent's own ack
                else:
                    self.acker.add(roots, xor)
        if m.task is None and m.need_task_ids:
            link.write(link.ser.task_ids(targets))
        if self.on_emit is not None:
            self.on_emit(link.cid, link.task, m)

    def spout_emit(self, link: SpoutLink, m: Emit) -> None:
        targets = self.targets(link, m)
        link.stats.emitted += 1
        if m.id is None:
            if targets:
                self.send_copies(link, m, targets, ())
        elif self.acking and targets:
            root = self.acker.open(link.task, m.id, 0)
            self.acker.add((root,), self.send_copies(link, m, targets, (root,)))
        else:  # no acker, or nobody subscribes: complete at once, as Storm does
            if targets:
                self.send_copies(link, m, targets, ())
            self.spout_outcomes([Outcome(link.task, m.id, 0.0)], ok=True)
        if m.task is None and m.need_task_ids:
            link.write(link.ser.task_ids(targets))
        if self.on_emit is not None:
            self.on_emit(link.cid, link.task, m)

    def send_copies(self, link: Link, m: Emit, targets: list[int], roots: tuple) -> int:
        """One copy of the tuple per target task, each with its own tuple id; returns the XOR of
        those ids. Values are serialized once per serializer the targets speak."""
        links = self.links
        offset = ID_OFFSET
        now, dirty = self.now, self.dirty
        xor = 0
        ser = None
        prefix = values = b""
        for target in targets:
            b: BoltLink = links[target]  # type: ignore[assignment]
            if b.ser is not ser:
                ser = b.ser
                cached = link.prefixes.get(m.stream)
                if cached is None or cached[0] is not ser:
                    cached = link.prefixes[m.stream] = (
                        ser,
                        ser.tuple_prefix(link.cid, m.stream, link.task),
                    )
                prefix = cached[1]
                try:
                    values = ser.values(m.values)
                except EncodeError as exc:
                    raise Fault(
                        f"emitted values that cannot be written to {b.cid}: {exc}",
                        emit_text(m),
                        m,
                    ) from None
                tuple_frame = ser.tuple_frame
            tid = getrandbits(64) - offset or 1  # acker.new_id(), inlined: once per routed tuple
            xor ^= tid
            frame = tuple_frame(prefix, values, tid)
            if (
                b.inline_offer
                and b.running
                and not b.backlog
                and len(b.in_flight) < b.max_in_flight
            ):
                # BoltLink.offer's first case, inlined: once per routed tuple
                b.in_flight[tid] = [roots, 0, now]
                b.out.append(frame)
                dirty.add(b)
                if b.busy_since is None:
                    b.busy_since = now
            else:
                b.offer(tid, roots, frame)
        link.stats.transferred += len(targets)
        return xor

    # -- outcomes --------------------------------------------------------------------------------
    def spout_outcomes(self, outcomes: list[Outcome], ok: bool, timed_out: bool = False) -> None:
        """Spout tuples that left the ledger: counted, and `ack` / `fail` queued to their spout."""
        command = "ack" if ok else "fail"
        tap = self.on_outcome
        links = self.links
        for o in outcomes:
            s: SpoutLink = links[o.spout_task]  # type: ignore[assignment]
            if tap is not None:
                tap(
                    s.cid,
                    s.task,
                    o.msg_id,
                    "acked" if ok else "timed_out" if timed_out else "failed",
                )
            if ok:
                s.stats.acked += 1
                self.spout_acked += 1
                if o.latency is not None:
                    self.complete_latency.record(o.latency)
            else:
                s.stats.failed += 1
                self.spout_failed += 1
                if timed_out:
                    self.spout_timed_out += 1
            s.outcome(command, o.msg_id)

    def spout_lost(self, link: SpoutLink, lost: list[Outcome]) -> None:
        """A spout task died: its pending tuples are gone with it (counted as failed)."""
        link.stats.failed += len(lost)
        self.spout_failed += len(lost)
        if self.on_outcome is not None:
            for o in lost:
                self.on_outcome(link.cid, link.task, o.msg_id, "lost")
