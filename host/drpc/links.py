"""The host's DRPC tasks (docs/drpc.md §3): Storm's `DRPCSpout` and `ReturnResults`, and a linear
DRPC topology's request and result ends, as links that run inside the host. The data path routes
to and from them as it does for process tasks; they have no pipe.

A tuple for an in-host bolt is not written anywhere: its "serializer" (`InHostSerializer`) keeps
the values as they are, and the tuple waits in the link's queue until the loop turn's routing is
over (`DrpcService.pump`). It is not handled inside `offer`, because the emitter's own bookkeeping
(the XOR of the copies' ids, added to the acker after the copies are offered) must come first.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from host.batch.wire import BatchTag
from host.observe.metrics import ComponentStats
from host.runtime.link import Link
from host.runtime.task_log import TaskLog
from host.topology.model import Component
from multilang.codec import dumps, loads
from multilang.messages import Emit

if TYPE_CHECKING:
    from host.drpc.service import DrpcService
    from host.drpc.table import PendingRequest
    from host.runtime.data_path import DataPath


class InHostSerializer:
    """What the data path asks of a target task's serializer, for a task inside the host: the
    values are kept as they are (never copied or encoded; nobody changes them)."""

    name = "in-host"

    def tuple_prefix(self, component: str, stream: str, task: int) -> tuple[str, str, int]:
        return (component, stream, task)

    def values(self, values: list) -> list:
        return values

    def tuple_frame(self, prefix: tuple[str, str, int], values: list, tuple_id: int) -> Any:
        return (prefix, values, tuple_id)

    def task_ids(self, targets: list[int]) -> bytes:
        raise AssertionError("an in-host task asks for no task ids")

    def join_frames(self, frames: list[bytes]) -> bytes:
        raise AssertionError("nothing is written to an in-host task")


IN_HOST = InHostSerializer()


class InHostLink(Link):
    """A task without a process: always running, never written to."""

    def __init__(
        self, path: DataPath, component: Component, task: int, service: DrpcService
    ) -> None:
        super().__init__(
            path,
            component,
            task,
            IN_HOST,  # type: ignore[arg-type]
            ComponentStats(tasks=1),
            TaskLog(f"{component.id}[{task}]", component.id, task, service.observe),
        )
        self.service = service
        self.running = True

    def write(self, frame: bytes) -> None:
        raise AssertionError(f"{self.name} runs inside the host: nothing is written to it")

    def flush(self) -> bool:
        return True


# -- spouts ---------------------------------------------------------------------------------------


class RequestSpout(InHostLink):
    """Emits requests of its function, as the service hands them over."""

    is_spout = True

    def __init__(
        self,
        path: DataPath,
        component: Component,
        task: int,
        service: DrpcService,
        *,
        max_pending: int | None,
        blocked: Callable[[], bool],
    ) -> None:
        super().__init__(path, component, task, service)
        self.max_pending = max_pending
        self.blocked = blocked  # a bolt downstream is full (backpressure)

    def may_emit(self) -> bool:
        raise NotImplementedError

    def emit(self, request: PendingRequest) -> None:
        raise NotImplementedError


class DrpcSpoutLink(RequestSpout):
    """Storm's `DRPCSpout`: each request as [args, return-info], with the request id as its
    message id, tracked by the acker; a failed or timed-out tuple fails the request."""

    def may_emit(self) -> bool:
        path = self.path
        if path.stopping or self.blocked():
            return False
        limit = self.max_pending
        return limit is None or path.acker.pending(self.task) < limit

    def emit(self, request: PendingRequest) -> None:
        info = self.service.return_info(request)
        # the data path takes it for a spout task: it reads only what every link has, and
        # hands the tuple's outcome back through `outcome`
        emit = Emit([request.args, info], need_task_ids=False, id=request.id)
        self.path.spout_emit(self, emit)  # type: ignore[arg-type]

    def outcome(self, command: str, msg_id: Any) -> None:
        """The acker's word on a request's tuple (`DataPath.spout_outcomes`)."""
        if command == "fail":
            self.service.tuple_failed(str(msg_id))
        # acked: as Storm's DRPCSpout.ack, nothing; the result came, or will, through
        # ReturnResults (docs/drpc.md §2)


class LinearRequestLink(RequestSpout):
    """A linear DRPC topology's `drpc-request`: each request is a batch of the request layer
    (host/drpc/linear.py), emitted as [request, args]."""

    def may_emit(self) -> bool:
        if self.path.stopping or self.blocked():
            return False
        return self.service.linear_room()

    def emit(self, request: PendingRequest) -> None:
        self.service.open_linear(self, request)


# -- bolts ----------------------------------------------------------------------------------------


class ResultLink(InHostLink):
    """Takes tuples and answers requests with them; acks each."""

    def __init__(
        self, path: DataPath, component: Component, task: int, service: DrpcService
    ) -> None:
        super().__init__(path, component, task, service)
        self.queue: deque[tuple[int, tuple, Any]] = deque()

    def offer(self, tid: int, roots: tuple, frame: Any) -> None:
        self.queue.append((tid, roots, frame))
        self.service.ready.add(self)

    def handle_queued(self) -> None:
        queue = self.queue
        path = self.path
        stats = self.stats
        while queue:
            tid, roots, (_prefix, values, _tid) = queue.popleft()
            stats.executed += 1
            ok = self.answer(values)
            if ok:
                stats.acked += 1
                if type(roots) is BatchTag:
                    path.batches.acked(self, roots)  # type: ignore[union-attr]
                elif roots:
                    done = path.acker.ack(roots, tid)
                    if done:
                        path.spout_outcomes(done, ok=True)
            else:
                stats.failed += 1
                if type(roots) is BatchTag:
                    path.batches.failed(self, roots)  # type: ignore[union-attr]
                elif roots:
                    path.spout_outcomes(path.acker.fail(roots), ok=False)

    def answer(self, values: list) -> bool:
        raise NotImplementedError


def result_text(value: Any) -> str:
    """A result as the client gets it: a string as it is, any other value as JSON."""
    return value if type(value) is str else dumps(value)


class ReturnResultsLink(ResultLink):
    """Storm's `ReturnResults`: field 0 is the result, field 1 the return-info JSON naming the
    request. Return-info that is not such JSON fails the tuple, as Storm's does."""

    def answer(self, values: list) -> bool:
        info = values[1] if len(values) > 1 else None
        try:
            request_id = loads(info)["id"] if type(info) is str else None
        except (ValueError, TypeError, KeyError):
            request_id = None
        if request_id is None:
            self.log.line(
                40,
                f"return-info {str(info)[:200]!r} is not the JSON a DRPCSpout writes: "
                "the tuple is failed",
            )
            return False
        self.service.result(str(request_id), result_text(values[0]))
        return True


class LinearResultLink(ResultLink):
    """A linear DRPC topology's `drpc-result`: the last bolt's [request, result]."""

    def answer(self, values: list) -> bool:
        self.service.result(str(values[0]), result_text(values[1] if len(values) > 1 else None))
        return True
