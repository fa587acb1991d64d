"""DRPC in a run (docs/drpc.md): the request table, the HTTP server and the in-host DRPC tasks,
and the one interface the supervisor drives them through: `start` (listen, before any process
starts), `pump` (every loop turn: emit waiting requests, hand results over), `expire`
(housekeeping), `drain` / `stop` / `close` (the phases of a stop) and `snapshot`.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING

from host.batch.tracker import Attempt
from host.drpc.linear import RequestLayer
from host.drpc.links import (
    DrpcSpoutLink,
    InHostLink,
    LinearRequestLink,
    LinearResultLink,
    RequestSpout,
    ResultLink,
    ReturnResultsLink,
)
from host.drpc.server import DrpcServer
from host.drpc.table import INTERNAL_ERROR, Answer, PendingRequest, RequestTable, failed
from host.observe.observations import Observations
from host.observe.snapshot import DrpcStats
from host.runtime.link import Fault
from host.runtime.loop import EventLoop
from host.topology import settings as cfg
from host.topology.component_config import component_settings
from host.topology.model import DRPC_REQUEST, DRPC_RESULT, DRPC_SPOUT, RETURN_RESULTS, Topology
from multilang.codec import dumps

if TYPE_CHECKING:
    from host.runtime.data_path import DataPath

log = logging.getLogger("host")


class DrpcService:
    def __init__(
        self,
        topology: Topology,
        path: DataPath,
        loop: EventLoop,
        settings: cfg.Settings,
        tasks_of: Callable[[str], tuple[int, ...]],
        observe: Observations,
        blocked: Callable[[str], bool],
    ) -> None:
        self.path = path
        self.loop = loop
        self.observe = observe
        functions = topology.drpc_functions
        self.table = RequestTable(
            functions, settings.drpc_max_pending, settings.drpc_request_timeout_secs
        )
        self.server = DrpcServer(
            loop,
            self.table,
            bind=settings.drpc_bind,  # host.drpc.bind (--drpc-bind): 127.0.0.1 by default
            port=settings.drpc_port,
            max_body=settings.drpc_max_body,
            max_connections=settings.drpc_max_connections,
            on_request=lambda: None,  # emitted by `pump`, after the loop turn's handlers
        )
        self.links: dict[int, InHostLink] = {}
        self.spouts: dict[str, list[RequestSpout]] = {f: [] for f in functions}
        self._turn: dict[str, int] = {f: 0 for f in functions}
        self.ready: set[ResultLink] = set()  # in-host bolts with tuples to handle
        for comp in topology.components:
            if comp.in_host is None:
                continue
            own = component_settings(topology, comp)
            for task in tasks_of(comp.id):
                link: InHostLink
                if comp.in_host in (DRPC_SPOUT, DRPC_REQUEST):
                    kind = DrpcSpoutLink if comp.in_host == DRPC_SPOUT else LinearRequestLink
                    cid = comp.id
                    spout = kind(
                        path,
                        comp,
                        task,
                        self,
                        max_pending=own.max_spout_pending,
                        blocked=lambda cid=cid: blocked(cid),  # type: ignore[misc]
                    )
                    assert comp.drpc_function is not None
                    self.spouts[comp.drpc_function].append(spout)
                    link = spout
                elif comp.in_host == RETURN_RESULTS:
                    link = ReturnResultsLink(path, comp, task, self)
                else:
                    assert comp.in_host == DRPC_RESULT
                    link = LinearResultLink(path, comp, task, self)
                self.links[task] = link

        path.links.update(self.links)  # routed to like any task
        self.linear: RequestLayer | None = None
        if topology.linear_drpc is not None:
            request = next(c for c in topology.components if c.in_host == DRPC_REQUEST)
            self.linear = RequestLayer(
                topology,
                path,
                tasks_of,
                max_open=component_settings(topology, request).max_spout_pending,
                timeout_secs=settings.message_timeout_secs,
                on_over=self._linear_over,
                on_failed=self._linear_failed,
            )

    # -- the run's phases ------------------------------------------------------------------------
    @property
    def listening(self) -> bool:
        return self.server.listener is not None

    def start(self) -> None:
        """Listen (OSError when the address cannot be bound: the run must not start)."""
        if self.listening:
            return
        self.server.listen()
        log.info(
            "DRPC server listening on %s (functions: %s)",
            self.server.url,
            ", ".join(self.table.functions),
        )

    def drain(self) -> None:
        """The host drains: no new request; those not emitted yet get 503 now."""
        self.table.stop_taking()

    def stop(self) -> None:
        """The drain is over: every request still pending gets 503; no new connection."""
        self.table.close()
        self.server.stop_accepting()

    def close(self) -> None:
        self.table.close()
        self.server.close()

    # -- every loop turn -------------------------------------------------------------------------
    def pump(self) -> None:
        """Emit the requests the spouts may take, and answer with the results the in-host bolts
        were given, until neither has anything more to do (an answer may let a client's next,
        pipelined request in)."""
        busy = True
        while busy:
            busy = bool(self.table.waiting) and self._emit_waiting()
            while self.ready:
                self.ready.pop().handle_queued()
                busy = True

    def _emit_waiting(self) -> bool:
        emitted = False
        table = self.table
        for function, spouts in self.spouts.items():
            count = len(spouts)
            turn = self._turn[function]
            while table.has_waiting(function):
                for i in range(count):
                    link = spouts[(turn + i) % count]
                    if link.may_emit():
                        break
                else:
                    break  # no task of it may emit now: the requests wait
                turn = (turn + i + 1) % count
                request = table.take(function)
                assert request is not None
                try:
                    link.emit(request)
                except Fault as fault:  # a topology the checks let through: loud, not fatal
                    log.error("%s cannot emit request %s: %s", link.name, request.id, fault)
                    table.fail(request.id, Answer(500, INTERNAL_ERROR, str(fault)))
                emitted = True
            self._turn[function] = turn
        return emitted

    def expire(self) -> None:
        for request in self.table.expire(self.loop.now):
            a = request.attempt
            if a is not None and self.linear is not None:
                self.linear.fail(a, "drpc.request.timeout.secs passed")

    # -- what the links and the layer report -----------------------------------------------------
    def return_info(self, request: PendingRequest) -> str:
        """Storm's DRPCSpout's return-info JSON (docs/drpc.md §3.1)."""
        return dumps({"id": request.id, "host": self.server.bind, "port": self.server.port})

    def result(self, request_id: str, text: str) -> None:
        self.table.answer(request_id, text, self.loop.now)

    def tuple_failed(self, request_id: str) -> None:
        self.table.fail(
            request_id,
            failed(
                "its DRPCSpout tuple failed: a bolt failed a tuple of its tree or died holding "
                "one, or the tree outlived topology.message.timeout.secs"
            ),
        )

    def linear_room(self) -> bool:
        return self.linear is not None and self.linear.room()

    def open_linear(self, link: LinearRequestLink, request: PendingRequest) -> None:
        assert self.linear is not None
        request.attempt = self.linear.open_request(link, request)

    def _linear_over(self, a: Attempt) -> None:
        self.table.fail(
            str(a.txid),
            Answer(500, INTERNAL_ERROR, "the topology finished the request without a result"),
        )

    def _linear_failed(self, a: Attempt, why: str) -> None:
        self.table.fail(str(a.txid), failed(why))

    # -- figures ---------------------------------------------------------------------------------
    def snapshot(self) -> DrpcStats:
        t = self.table
        latency = t.latency
        return {
            "url": self.server.url,
            "functions": list(t.functions),
            "pending": len(t.pending),
            "waiting": t.waiting,
            "connections": len(self.server.connections),
            "answered": t.answered,
            "failed": t.failed,
            "timed_out": t.timed_out,
            "rejected": t.rejected,
            "late": t.late,
            "duplicate": t.duplicate,
            "latency_ms": {
                "p50": latency.percentile(50),
                "p99": latency.percentile(99),
                "max": latency.percentile(100),
            },
        }
