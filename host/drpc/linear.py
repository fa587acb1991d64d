"""The request layer of a linear DRPC topology (docs/drpc.md §3.2): each request is a batch of the
finish-batch layer (host/batch/finish_layer.py) — request R is the attempt (txid R, attempt 1) —
so a bolt with `finish_batch` is told once it has all of a request, as Storm's `CoordinatedBolt`
tells the bolts `LinearDRPCTopologyBuilder` wraps. Requests are independent: any number open at
once (up to `max_open`), none waits for another, nothing is stored or replayed.

A request is over when every task of the chain has finished it (then the service answers it,
with an error if no result came); it fails when one of its tuples or finishes fails, a task
holding part of it dies, or it is open longer than `topology.message.timeout.secs`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from host.batch.finish_layer import FinishLayer, group_of
from host.batch.tracker import Attempt, Phase
from host.batch.wire import BatchTag
from host.topology.model import Topology
from multilang.messages import Emit

if TYPE_CHECKING:
    from host.drpc.links import LinearRequestLink
    from host.drpc.table import PendingRequest
    from host.runtime.data_path import DataPath


class RequestLayer(FinishLayer):
    def __init__(
        self,
        topology: Topology,
        path: DataPath,
        tasks_of: Callable[[str], tuple[int, ...]],
        *,
        max_open: int | None,
        timeout_secs: float,
        on_over: Callable[[Attempt], None],
        on_failed: Callable[[Attempt, str], None],
    ) -> None:
        super().__init__(path, group_of(topology, tasks_of))
        self.function = topology.linear_drpc
        self.max_open = max_open
        self.timeout_secs = timeout_secs
        self.on_over = on_over  # every task finished it
        self.on_failed = on_failed
        self.open: dict[int, Attempt] = {}  # by request number, oldest first
        self.completed = self.aborted_count = 0

    def context(self) -> dict[str, Any]:
        """The `batch` key of a finish-batch bolt's handshake context (docs/drpc.md §3.2)."""
        return {
            "protocol": 1,
            "role": "bolt",
            "transactional_id": None,
            "committed_txid": 0,
            "drpc": self.function,
        }

    def room(self) -> bool:
        return self.max_open is None or len(self.open) < self.max_open

    def open_request(self, link: LinearRequestLink, request: PendingRequest) -> Attempt:
        """Emit a request as its own batch: [request number, args] from `drpc-request`."""
        number = int(request.id)
        a = Attempt(number, 1, None, False, self.path.now)
        a.tag = BatchTag(a)
        self.tracker.opened(a)
        self.open[number] = a
        link.stats.emitted += 1
        self.route(link, Emit([number, request.args], need_task_ids=False), a)
        self.tracker.spout_emitted(a, link.task)
        if self.tracker.finishes:
            self.send_finishes()
        if a.phase is not Phase.PROCESSING:
            self.progressed(a)
        return a

    # -- FinishLayer -----------------------------------------------------------------------------
    def open_attempts(self) -> Iterable[Attempt]:
        return self.open.values()

    def progressed(self, a: Attempt) -> None:
        if a.phase is Phase.PROCESSED and self.open.get(a.txid) is a:
            del self.open[a.txid]
            self.completed += 1
            self.on_over(a)

    def fail(self, a: Attempt, why: str) -> None:
        if a.dead or self.open.get(a.txid) is not a:
            return
        a.dead = True
        del self.open[a.txid]
        self.aborted_count += 1
        self.aborted([a])
        self.on_failed(a, why)

    def expire(self) -> None:
        deadline = self.path.now - self.timeout_secs
        for a in [a for a in self.open.values() if a.opened_at <= deadline]:
            self.fail(
                a, f"not finished within topology.message.timeout.secs ({self.timeout_secs:g}s)"
            )

    @property
    def idle(self) -> bool:
        return not self.open
