"""When a task has all of an attempt (docs/transactional.md §2, rules 5 and 6): pure bookkeeping
of what the host delivered to each task of the batch group and what each acked, per attempt.

Storm's `CoordinatedBolt` learns this from `(id, count)` tuples that every upstream task sends
every downstream task on a direct stream once it has finished; here the host routes every tuple
and sees every ack, so it keeps the counts itself and nothing goes on the wire but `finish`.
A task is ready to finish attempt A when (i) every task of every component that feeds it has
finished A, (ii) every tuple of A delivered to it was acked, and (iii) for a committer, A is
committing. What "finished" means depends on the member's role: a spout task when it synced its
`batch_emit`, a plain member as soon as it is ready, a batch bolt or committer when it acks its
`finish`.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable
from typing import Any

SPOUT, BOLT, COMMITTER, PLAIN = "spout", "bolt", "committer", "plain"


class Phase(enum.Enum):
    PROCESSING = "processing"
    PROCESSED = "processed"
    COMMITTING = "committing"


class Member:
    """A component of the batch group."""

    __slots__ = ("cid", "role", "tasks", "sources", "downstream", "after_commit")

    def __init__(self, cid: str, role: str, tasks: list[int], sources: list[str]) -> None:
        self.cid = cid
        self.role = role
        self.tasks = tasks
        self.sources = sources  # the members that feed it
        self.downstream: list[Member] = []
        self.after_commit = False  # a committer, or fed (at any depth) by one


class Group:
    """The batch group's shape: which member feeds which, by component and task."""

    def __init__(self, members: Iterable[Member]) -> None:
        self.members = {m.cid: m for m in members}
        self.of_task: dict[int, Member] = {}
        for m in self.members.values():
            for t in m.tasks:
                self.of_task[t] = m
            for s in m.sources:
                self.members[s].downstream.append(m)
        for m in self._topological():
            m.after_commit = m.role == COMMITTER or any(
                self.members[s].after_commit for s in m.sources
            )
        self.spout = next(m for m in self.members.values() if m.role == SPOUT)
        self.task_count = len(self.of_task)
        # tasks that must be finished (or, for committers, ready) before an attempt is processed
        self.processing_tasks = sum(
            len(m.tasks) for m in self.members.values() if not m.after_commit or m.role == COMMITTER
        )
        self.aware_tasks = [
            t for m in self.members.values() if m.role in (BOLT, COMMITTER) for t in m.tasks
        ]

    def _topological(self) -> list[Member]:
        order: list[Member] = []
        seen: set[str] = set()

        def visit(m: Member) -> None:
            if m.cid in seen:
                return
            seen.add(m.cid)
            for s in m.sources:
                visit(self.members[s])
            order.append(m)

        for m in self.members.values():
            visit(m)
        return order


class Attempt:
    """One try at a txid, and what the host knows of its progress."""

    def __init__(self, txid: int, number: int, meta: Any, replay: bool, now: float) -> None:
        self.txid = txid
        self.number = number
        self.meta = meta
        self.replay = replay
        self.phase = Phase.PROCESSING
        self.opened_at = now
        self.phase_at = now  # when its current phase began (for its timeout)
        self.commit_at: float | None = None
        self.dead = False
        self.tuples = 0  # delivered, over all tasks
        self.spout_tuples = 0  # emitted by the spout tasks
        self.delivered: dict[int, int] = {}
        self.acked: dict[int, int] = {}
        self.finished: set[int] = set()
        self.done_count: dict[str, int] = {}  # member -> its tasks that finished
        self.owed: dict[int, str] = {}  # task -> the answer it owes about this attempt
        self.commit_ready: set[int] = set()  # committer tasks waiting for the commit phase
        self.spouts_told = False  # `batch_commit` went to the spout tasks
        self.processing_left = 0  # set by `Tracker.opened`
        self.tag: Any = None  # the runtime's marker on this attempt's tuples

    def __repr__(self) -> str:
        return f"<Attempt {self.txid}.{self.number} {self.phase.value}>"


class Tracker:
    """Moves attempts forward as deliveries, acks and finishes come in. Each call appends to
    `self.finishes` the (attempt, task, commit) `finish` messages that are now due; the caller
    sends them and clears the list."""

    def __init__(self, group: Group) -> None:
        self.group = group
        self.finishes: list[tuple[Attempt, int, bool]] = []

    def opened(self, a: Attempt) -> None:
        a.processing_left = self.group.processing_tasks

    def delivered(self, a: Attempt, task: int) -> None:
        a.delivered[task] = a.delivered.get(task, 0) + 1
        a.tuples += 1

    def acked(self, a: Attempt, task: int) -> None:
        acked = a.acked[task] = a.acked.get(task, 0) + 1
        if acked == a.delivered.get(task):
            self._try(a, task)

    def spout_emitted(self, a: Attempt, task: int) -> None:
        """A spout task answered the attempt's `batch_emit`: all its tuples are routed."""
        self._finished(a, task)

    def finish_acked(self, a: Attempt, task: int) -> None:
        a.owed.pop(task, None)
        self._finished(a, task)

    def start_commit(self, a: Attempt) -> None:
        """The attempt is the lowest open one and processed: committers may finish now."""
        a.phase = Phase.COMMITTING
        for task in sorted(a.commit_ready):
            self._send(a, task, True)
        a.commit_ready.clear()

    @property
    def complete(self) -> int:
        return self.group.task_count

    def held_by(self, a: Attempt, task: int) -> bool:
        """Whether a task's death loses part of the attempt: it owes an answer about it (a
        spout task its `batch_commit` too, after it finished), or it was given tuples of it and
        had not finished it."""
        return task in a.owed or (task not in a.finished and a.delivered.get(task, 0) > 0)

    # -- the rules -------------------------------------------------------------------------------
    def _sources_done(self, a: Attempt, m: Member) -> bool:
        members = self.group.members
        done = a.done_count
        return all(done.get(s, 0) == len(members[s].tasks) for s in m.sources)

    def _try(self, a: Attempt, task: int) -> None:
        if task in a.finished or task in a.owed or task in a.commit_ready:
            return
        m = self.group.of_task[task]
        if m.role == SPOUT or a.delivered.get(task, 0) != a.acked.get(task, 0):
            return
        if not self._sources_done(a, m):
            return
        if m.role == PLAIN:
            self._finished(a, task)
        elif m.role == BOLT:
            self._send(a, task, False)
        elif a.phase is Phase.COMMITTING:
            self._send(a, task, True)
        else:
            a.commit_ready.add(task)
            self._processing_done(a)

    def _send(self, a: Attempt, task: int, commit: bool) -> None:
        a.owed[task] = "commit" if commit else "finish"
        self.finishes.append((a, task, commit))

    def _finished(self, a: Attempt, task: int) -> None:
        if task in a.finished:
            return
        a.finished.add(task)
        m = self.group.of_task[task]
        count = a.done_count[m.cid] = a.done_count.get(m.cid, 0) + 1
        if not m.after_commit:
            self._processing_done(a)
        if count == len(m.tasks):
            for d in m.downstream:
                for t in d.tasks:
                    self._try(a, t)

    def _processing_done(self, a: Attempt) -> None:
        a.processing_left -= 1
        if a.processing_left == 0 and a.phase is Phase.PROCESSING:
            a.phase = Phase.PROCESSED
