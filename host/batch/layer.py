"""The batch layer of one run (docs/transactional.md): it drives the batch spout's commands, tags
and counts the tuples of every attempt as the data path delivers them, sends `finish` when the
tracker says a task has all of an attempt, commits in txid order, and aborts and replays on
failures, timeouts and deaths.

The tagging, counting, `finish` and aborting are the finish-batch layer's
(host/batch/finish_layer.py), which linear DRPC shares; this adds the batch spout's commands, the
coordinator and the store. The batch spout's link hands its emits and answers to it.
"""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from host.batch import wire
from host.batch.coordinator import Coordinator
from host.batch.figures import BatchFigures
from host.batch.finish_layer import FinishLayer, group_of
from host.batch.spout_link import BatchSpoutLink, SpoutCommand
from host.batch.store import BatchStore
from host.batch.tracker import Attempt, Phase
from host.batch.wire import COMMIT, EMIT, INIT, BatchTag
from host.observe.snapshot import BatchStats
from host.runtime.link import Fault, Link, emit_text
from host.topology.model import Topology
from multilang.codec import dumps
from multilang.messages import Emit

if TYPE_CHECKING:
    from host.runtime.data_path import DataPath

log = logging.getLogger("host")


class BatchLayer(FinishLayer):
    def __init__(
        self,
        topology: Topology,
        path: DataPath,
        tasks_of: Callable[[str], tuple[int, ...]],
        store_root: str,
        *,
        max_open: int,
        timeout_secs: float,
        idle_max_sleep: float,
    ) -> None:
        self.topology = topology
        self.transactional_id = str(topology.config["topology.transactional.id"])
        super().__init__(path, group_of(topology, tasks_of))
        self.store = BatchStore(store_root)
        spout = self.group.spout
        self.store.check_parallelism(spout.cid, len(spout.tasks))
        self.coordinator = Coordinator(self.store, max_open)
        self.timeout_secs = timeout_secs
        self.idle_max_sleep = idle_max_sleep
        self.spout_links: list[BatchSpoutLink] = []
        for index, task in enumerate(spout.tasks):
            link = path.links[task]
            assert isinstance(link, BatchSpoutLink)
            link.layer, link.index = self, index
            self.spout_links.append(link)
        # batch_init: outstanding, and when the coordinator task may be asked again
        self.init_out = False
        self.init_at = 0.0
        self.init_sleep = 0.0
        self.figures = BatchFigures()  # for the stats (docs/transactional.md §6)

    # -- the handshake ---------------------------------------------------------------------------
    def context(self, component_id: str) -> dict[str, Any] | None:
        """The `batch` key of a batch component's handshake context (§4.1), else None."""
        role = self.topology.component(component_id).batch
        if role is None:
            return None
        return {
            "protocol": 1,
            "role": role,
            "transactional_id": self.transactional_id,
            "committed_txid": self.coordinator.committed_txid,
        }

    # -- opening and committing ------------------------------------------------------------------
    @property
    def open(self) -> dict[int, Attempt]:
        return self.coordinator.open

    def open_attempts(self) -> Iterable[Attempt]:
        return self.coordinator.open.values()

    def progressed(self, a: Attempt) -> None:
        self._maybe_commit_spouts(a)
        self.advance()

    def init_wanted_at(self) -> float | None:
        """When the coordinator task, idle and not ready last time, is to be asked again (a
        deadline for the loop; None when it is not waiting for the clock)."""
        c = self.coordinator
        if self.init_out or self.path.stopping or not c.room() or c.replay_due():
            return None
        return self.init_at if self.init_at > self.path.now else None

    def poll_init(self, link: BatchSpoutLink) -> None:
        """The coordinator task is idle: open stored txids (a restarted host's replays), else ask
        it for the next batch's metadata if one is wanted now."""
        c = self.coordinator
        if self.init_out or self.path.stopping or not c.room():
            return
        if c.replay_due():
            self.advance()
            return
        if self.path.now < self.init_at:
            return
        txid = c.next_txid
        self.init_out = True
        link.queue.append(SpoutCommand(INIT, None, txid, wire.batch_init(txid, c.prev_meta(txid))))

    def advance(self) -> None:
        """Commit what may commit, then open what may open (replays first, in txid order)."""
        coordinator = self.coordinator
        while True:
            a = coordinator.to_commit()
            if a is not None:
                self._start_commit(a)
                continue
            if coordinator.open:
                lowest = next(iter(coordinator.open.values()))
                if lowest.phase is Phase.COMMITTING and self._committed(lowest):
                    continue
            break
        while not self.path.stopping and coordinator.room() and coordinator.replay_due():
            self._emit(coordinator.open_next(self.path.now))
        if not self.init_out and coordinator.room() and not self.path.stopping:
            self.spout_links[0].pump()

    def _emit(self, a: Attempt) -> None:
        """An attempt is open (its metadata stored): every spout task is to emit its share."""
        a.tag = BatchTag(a)
        self.tracker.opened(a)
        for link in self.spout_links:
            a.owed[link.task] = EMIT
            link.send(SpoutCommand(EMIT, a, a.txid))

    def emit_frame(self, link: BatchSpoutLink, command: SpoutCommand) -> bytes:
        """A `batch_emit`, made as it is written: the task's commands go one at a time in txid
        order, so its answer to the txid before (its metadata) is stored by now."""
        a: Attempt = command.attempt
        store = self.store
        return wire.batch_emit(
            a,
            store.task_meta(link.index, a.txid),
            store.task_meta(link.index, a.txid - 1),
            self.coordinator.committed_txid,
        )

    def _start_commit(self, a: Attempt) -> None:
        a.phase_at = a.commit_at = self.path.now
        self.tracker.start_commit(a)
        self.send_finishes()
        self._maybe_commit_spouts(a)

    def _maybe_commit_spouts(self, a: Attempt) -> None:
        """Every task of the group has finished the attempt's commit phase: the spout tasks are
        told (`batch_commit`) once the committers have stored the batch."""
        if a.phase is not Phase.COMMITTING or len(a.finished) < self.tracker.complete:
            return
        if a.owed or a.spouts_told:
            return
        a.spouts_told = True
        body = wire.batch_commit(a)
        for link in self.spout_links:
            a.owed[link.task] = COMMIT
            link.send(SpoutCommand(COMMIT, a, a.txid, body))

    def _committed(self, a: Attempt) -> bool:
        """Whether the committing attempt is done; if so it is recorded as committed."""
        if len(a.finished) < self.tracker.complete or a.owed or not a.spouts_told:
            return False
        self.coordinator.committed(a)
        self.figures.committed(a, self.path.now)
        return True

    # -- the spout's answers ---------------------------------------------------------------------
    def spout_emit(self, link: BatchSpoutLink, m: Emit) -> None:
        command = link.current
        if command is None or command.kind != EMIT:
            raise Fault(
                "a batch spout emitted outside batch_emit (its tuples belong to no batch)",
                emit_text(m),
                m,
            )
        if m.id is not None:
            raise Fault(
                "a batch spout's emits carry no message id: a batch is replayed by its txid, "
                "not tuple by tuple",
                emit_text(m),
                m,
            )
        link.stats.emitted += 1
        command.attempt.spout_tuples += 1
        self.route(link, m, command.attempt)

    def spout_synced(self, link: BatchSpoutLink, command: SpoutCommand) -> None:
        a: Attempt | None = command.attempt
        if command.kind == INIT:
            self._initialized(link, command)
        elif a is None or a.dead:
            pass  # an attempt aborted while the command was out: nothing to record
        elif command.kind == EMIT:
            if a.spout_tuples:
                self.init_sleep = 0.0  # data flows: the next batch is asked for at once
            elif link.index == len(self.spout_links) - 1:
                self._idle_back_off()  # an empty batch: the next one waits a little longer
            if command.reported:
                self.store.put_task_meta(link.index, a.txid, command.meta.get("meta"))
            a.owed.pop(link.task, None)
            self.tracker.spout_emitted(a, link.task)
            self.send_finishes()
            if a.phase is not Phase.PROCESSING:
                self.advance()
        else:  # COMMIT
            a.owed.pop(link.task, None)
            self.advance()

    def _initialized(self, link: BatchSpoutLink, command: SpoutCommand) -> None:
        self.init_out = False
        coordinator = self.coordinator
        now = self.path.now
        if not command.reported:  # not ready (Storm's isReady() false): ask again later
            self._idle_back_off()
            return
        if (
            command.txid != coordinator.next_txid
            or coordinator.replay_due()
            or not coordinator.room()
            or self.path.stopping
        ):
            self.advance()  # a failure reordered things meanwhile: this answer is stale
            return
        reply = command.meta
        txid = reply.get("txid")
        if txid is not None and txid < command.txid:
            raise Fault(
                f"`batch_meta` numbered the batch {txid}, below the next txid {command.txid}",
                dumps(reply),
            )
        self._emit(coordinator.open_next(now, reply.get("meta"), txid))
        self.advance()

    def _idle_back_off(self) -> None:
        """No batch to give, or an empty one: the next `batch_init` waits, twice as long each
        time up to host.batch.idle.max.sleep.ms, so an idle topology costs next to nothing."""
        self.init_sleep = min(self.idle_max_sleep, max(0.001, self.init_sleep * 2))
        self.init_at = self.path.now + self.init_sleep

    # -- failures --------------------------------------------------------------------------------
    def fail(self, a: Attempt, why: str) -> None:
        """Abort `a` and every later open attempt; they are opened again (docs/transactional.md
        §2, rule 4)."""
        aborted = self.coordinator.fail(a)
        if not aborted:
            return
        txids = ", ".join(f"{x.txid}.{x.number}" for x in aborted)
        self.figures.last_abort = f"{why} (attempt {a.txid}.{a.number})"
        log.warning("batch %s.%s failed: %s; aborting %s to replay", a.txid, a.number, why, txids)
        self.aborted(aborted)
        self.advance()

    def purge(self) -> None:
        """Also the spout tasks' queued commands of dead attempts."""
        super().purge()
        for link in self.spout_links:
            link.queue = deque(c for c in link.queue if c.attempt is None or not c.attempt.dead)

    def task_lost(self, link: Link) -> None:
        if isinstance(link, BatchSpoutLink) and link.index == 0:
            self.init_out = False  # its batch_init died with it: asked again once it is back
        super().task_lost(link)

    def expire(self) -> None:
        """Housekeeping: an attempt whose phase outlived topology.message.timeout.secs fails."""
        now = self.path.now
        for a in list(self.coordinator.open.values()):
            if not a.dead and now - a.phase_at > self.timeout_secs:
                self.fail(a, f"timed out in its {a.phase.value} phase ({self.timeout_secs:g}s)")
                return  # the rest were aborted with it

    # -- the stats -------------------------------------------------------------------------------
    @property
    def idle(self) -> bool:
        return not self.coordinator.open

    def snapshot(self) -> BatchStats:
        return self.figures.snapshot(
            self.transactional_id, self.coordinator, self.tracker.complete, self.path.now
        )
