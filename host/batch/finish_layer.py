"""The finish-batch layer: what transactional batches (host/batch/layer.py) and linear DRPC
requests (host/drpc/linear.py) share. A group of components processes batches ("attempts", see
host/batch/tracker.py); the layer tags and counts every tuple of an attempt as the data path
delivers it, sends `finish` to a task once the tracker says it has all of an attempt, and aborts
an attempt that fails, outlives its time or loses a task that held part of it.

Storm builds the same on `CoordinatedBolt` (`storm-client/.../coordination/CoordinatedBolt.java`)
for both its transactional topologies and `LinearDRPCTopologyBuilder`; here the host routes every
tuple and sees every ack, so it keeps the counts itself (docs/transactional.md §2).

The runtime reaches a layer through a few calls: bolt links of the group route their emits
through `bolt_emit`; an ack or fail of a tuple whose in-flight entry carries a `BatchTag` (in
place of the acker's roots) comes to `acked` / `failed`; the supervision reports a task's death
(`task_lost`) and a task that became ready (`task_ready`); housekeeping calls `expire`. A subclass
says which attempts are open, what happens when one moves past processing (`progressed`) and how
one fails (`fail`).
"""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from host.batch import wire
from host.batch.tracker import SPOUT, Attempt, Group, Member, Phase, Tracker
from host.batch.wire import BatchTag
from host.runtime.acker import new_id
from host.runtime.bolt_link import BoltLink
from host.runtime.link import Fault, Link, emit_text
from host.topology.batch_group import batch_group, feeds, role
from host.topology.model import Topology
from multilang.codec import EncodeError
from multilang.messages import Emit

if TYPE_CHECKING:
    from host.observe.snapshot import BatchStats
    from host.runtime.data_path import DataPath

log = logging.getLogger("host")


def group_of(topology: Topology, tasks_of: Callable[[str], tuple[int, ...]]) -> Group:
    """The batch group's shape (host/topology/batch_group.py: a transactional topology's batch
    spout and what is downstream of it, or a linear DRPC topology's chain), by component and
    task."""
    return Group(
        Member(cid, role(topology.component(cid)), list(tasks_of(cid)), list(feeds(topology, cid)))
        for cid in batch_group(topology)
    )


class FinishLayer:
    def __init__(self, path: DataPath, group: Group) -> None:
        self.path = path
        self.group = group
        self.tracker = Tracker(group)
        self.aware: set[int] = set(group.aware_tasks)
        for m in group.members.values():
            if m.role != SPOUT:
                for task in m.tasks:
                    link = path.links[task]
                    if isinstance(link, BoltLink):
                        link.route = self.bolt_emit
        self.unsent: dict[int, list[tuple[Attempt, bool]]] = {}  # finishes for tasks not running

    # -- what a subclass says --------------------------------------------------------------------
    def open_attempts(self) -> Iterable[Attempt]:
        raise NotImplementedError

    def progressed(self, a: Attempt) -> None:
        """An ack or finish of `a` came and `a` is past its processing phase."""

    def fail(self, a: Attempt, why: str) -> None:
        raise NotImplementedError

    def expire(self) -> None:
        """Housekeeping: fail what outlived its time."""

    @property
    def idle(self) -> bool:
        raise NotImplementedError

    def snapshot(self) -> BatchStats | None:
        return None

    # -- tuples of the group ---------------------------------------------------------------------
    def bolt_emit(self, link: BoltLink, m: Emit) -> None:
        """An emit by a bolt of the group: its attempt is its anchors' (docs/transactional.md
        §4.2)."""
        tag: BatchTag | None = None
        for anchor in m.anchors:
            held = link.in_flight_entry(anchor, m)[0]
            if type(held) is BatchTag:
                if tag is not None and held.attempt is not tag.attempt:
                    raise Fault(
                        "an emit anchored to tuples of two attempts "
                        f"({tag.attempt.txid}.{tag.attempt.number} and "
                        f"{held.attempt.txid}.{held.attempt.number})",
                        emit_text(m),
                        m,
                    )
                tag = held
        if tag is not None:
            self.route(link, m, tag.attempt)
            return
        held_attempts = [a for a in self.open_attempts() if self._holds(a, link.task)]
        if len(held_attempts) != 1:
            raise Fault(
                "an unanchored emit in the batch group while "
                + (
                    "no attempt is open at this task"
                    if not held_attempts
                    else f"{len(held_attempts)} attempts are open at this task"
                )
                + ": anchor it to a tuple of its batch (docs/transactional.md §4.2)",
                emit_text(m),
                m,
            )
        self.route(link, m, held_attempts[0])

    @staticmethod
    def _holds(a: Attempt, task: int) -> bool:
        return task in a.owed or a.delivered.get(task, 0) > a.acked.get(task, 0)

    def route(self, link: Link, m: Emit, a: Attempt) -> None:
        """Deliver an emit of attempt `a`: each copy tagged with it and counted; a batch-aware
        target gets the attempt's `tx` key. An aborted attempt's emits go nowhere."""
        path = self.path
        targets = path.targets(link, m)
        if targets and not a.dead:
            links = path.links
            tracker = self.tracker
            tag = a.tag
            tx = wire.tx_json(a)
            values: Any = b""
            ser = None
            for target in targets:
                b: BoltLink = links[target]  # type: ignore[assignment]
                if b.ser is not ser:
                    ser = b.ser
                    try:
                        values = ser.values(m.values)
                    except EncodeError as exc:
                        raise Fault(
                            f"emitted values that cannot be written to {b.cid}: {exc}",
                            emit_text(m),
                            m,
                        ) from None
                prefix = ser.tuple_prefix(link.cid, m.stream, link.task)
                tid = new_id()
                if target in self.aware:
                    data = wire.tx_tuple(prefix, values, tid, tx)
                else:
                    data = ser.tuple_frame(prefix, values, tid)
                tracker.delivered(a, target)
                b.offer(tid, tag, data)
            link.stats.transferred += len(targets)
        if m.task is None and m.need_task_ids:
            link.write(link.ser.task_ids(targets))
        if path.on_emit is not None:
            path.on_emit(link.cid, link.task, m)

    def acked(self, link: Link, tag: BatchTag) -> None:
        a = tag.attempt
        if a.dead:
            return
        if tag.finish:
            self.tracker.finish_acked(a, link.task)
        else:
            self.tracker.acked(a, link.task)
        if self.tracker.finishes:
            self.send_finishes()
        if a.phase is not Phase.PROCESSING:
            self.progressed(a)

    def failed(self, link: Link, tag: BatchTag) -> None:
        what = "its finish" if tag.finish else "a tuple"
        self.fail(tag.attempt, f"{link.name} failed {what}")

    # -- finish ----------------------------------------------------------------------------------
    def send_finishes(self) -> None:
        due, self.tracker.finishes = self.tracker.finishes, []
        for a, task, commit in due:
            link: BoltLink = self.path.links[task]  # type: ignore[assignment]
            if link.running:
                self._write_finish(link, a, commit)
            else:
                self.unsent.setdefault(task, []).append((a, commit))

    def _write_finish(self, link: BoltLink, a: Attempt, commit: bool) -> None:
        tid = new_id()
        link.in_flight[tid] = [BatchTag(a, finish=True), 0, self.path.now]  # outside the bound
        link.write(wire.finish(tid, a, commit))
        if link.await_since is None:
            link.await_since = self.path.now

    def task_ready(self, link: Link) -> None:
        """A task's process answered its handshake: the finishes it was owed meanwhile go."""
        waiting = self.unsent.pop(link.task, None)
        if waiting:
            for a, commit in waiting:
                if not a.dead:
                    self._write_finish(link, a, commit)  # type: ignore[arg-type]

    # -- failures --------------------------------------------------------------------------------
    def aborted(self, attempts: list[Attempt]) -> None:
        """These attempts are over (marked dead): batch-aware tasks are told, and what of them
        was not written yet is dropped."""
        for task in self.group.aware_tasks:
            link = self.path.links[task]
            if link.running:
                for x in attempts:
                    link.write(wire.abort(new_id(), x))
        self.purge()

    def purge(self) -> None:
        """Tuples and finishes of dead attempts that were not written yet are dropped."""
        path = self.path
        for m in self.group.members.values():
            for task in m.tasks:
                bolt = path.links[task]
                if not isinstance(bolt, BoltLink):
                    continue
                if bolt.backlog:
                    bolt.backlog = deque(
                        e
                        for e in bolt.backlog
                        if type(e[1]) is not BatchTag or not e[1].attempt.dead
                    )
                    if bolt.full and len(bolt.backlog) < bolt.max_queued // 2 + 1:
                        bolt.full = False
                        path.on_backpressure(bolt, False)
                waiting = self.unsent.get(task)
                if waiting:
                    self.unsent[task] = [(a, c) for a, c in waiting if not a.dead]

    def task_lost(self, link: Link) -> None:
        """A task of the group died: the attempts it held part of fail (docs/transactional.md
        §2, rule 4)."""
        task = link.task
        for a in list(self.open_attempts()):
            if not a.dead and self.tracker.held_by(a, task):
                self.fail(a, f"{link.name} died holding part of it")
