"""The DRPC request table (docs/drpc.md §1, §2): every request from the moment it is read until it
is answered, exactly once. Pure bookkeeping, no I/O: the server hands requests in with the
callback that answers them; the in-host DRPC spouts take them in arrival order; results, failures
and timeouts answer them. The port of Storm's `DRPC.java` (`execute`, `fetchRequest`,
`returnResult`, `failRequest`, its timeout sweep), with a bound and immediate answers where
Storm's client would wait.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable
from typing import Any, NamedTuple

from host.observe.metrics import LatencyHistogram

# Storm's DRPCExceptionType names, and the host's own (docs/drpc.md §1)
FAILED_REQUEST = "FAILED_REQUEST"
SERVER_TIMEOUT = "SERVER_TIMEOUT"
SERVER_SHUTDOWN = "SERVER_SHUTDOWN"
INTERNAL_ERROR = "INTERNAL_ERROR"
UNKNOWN_FUNCTION = "UNKNOWN_FUNCTION"
SERVER_BUSY = "SERVER_BUSY"


class Answer(NamedTuple):
    """What a client is told: a result (`error` None, status 200) or an error."""

    status: int
    error: str | None
    text: str  # the result, or the error's message


def result(text: str) -> Answer:
    return Answer(200, None, text)


def failed(why: str) -> Answer:
    return Answer(400, FAILED_REQUEST, f"Request failed: {why}")


class PendingRequest:
    """One pending request. `reply` answers the client (the server's callback); `attempt` is a
    linear DRPC request's batch (host/drpc/linear.py) once it is emitted."""

    __slots__ = ("id", "function", "args", "started", "reply", "emitted", "done", "attempt")

    def __init__(
        self,
        request_id: str,
        function: str,
        args: str,
        started: float,
        reply: Callable[[PendingRequest, Answer], None],
    ) -> None:
        self.id = request_id
        self.function = function
        self.args = args
        self.started = started
        self.reply = reply
        self.emitted = False
        self.done = False
        self.attempt: Any = None

    def __repr__(self) -> str:
        return f"<PendingRequest {self.id} {self.function}>"


class RequestTable:
    def __init__(self, functions: Iterable[str], max_pending: int, timeout_secs: float) -> None:
        self.functions = tuple(sorted(functions))
        self.max_pending = max_pending
        self.timeout_secs = timeout_secs
        self.pending: dict[str, PendingRequest] = {}  # by id, in arrival order
        # not emitted yet, per function, in arrival order; may hold requests already done
        # (answered or abandoned), skipped by `take` and swept by `expire`
        self.queues: dict[str, deque[PendingRequest]] = {f: deque() for f in self.functions}
        self.waiting = 0  # requests in the queues that are not done
        self.stopping = False
        self._counter = 0
        self.latency = LatencyHistogram()
        self.answered = self.failed = self.timed_out = self.rejected = 0
        self.late = self.duplicate = self.abandoned = 0

    # -- in --------------------------------------------------------------------------------------
    def submit(
        self,
        function: str,
        args: str,
        now: float,
        reply: Callable[[PendingRequest, Answer], None],
    ) -> PendingRequest | Answer:
        """A request read by the server: pending (returned), or refused at once (the answer)."""
        if self.stopping:
            return Answer(503, SERVER_SHUTDOWN, "Server Shutting Down")
        queue = self.queues.get(function)
        if queue is None:
            self.rejected += 1
            served = ", ".join(self.functions)
            return Answer(
                404,
                UNKNOWN_FUNCTION,
                f"no topology on this host serves the function {function!r} (it serves: {served})",
            )
        if len(self.pending) >= self.max_pending:
            self.rejected += 1
            return Answer(
                503,
                SERVER_BUSY,
                f"{self.max_pending} requests are pending (host.drpc.max.pending); retry later",
            )
        self._counter += 1
        request = PendingRequest(str(self._counter), function, args, now, reply)
        self.pending[request.id] = request
        queue.append(request)
        self.waiting += 1
        return request

    def take(self, function: str) -> PendingRequest | None:
        """The next request of `function` to emit, oldest first (marked emitted)."""
        queue = self.queues[function]
        while queue:
            request = queue.popleft()
            if not request.done:
                request.emitted = True
                self.waiting -= 1
                return request
        return None

    def has_waiting(self, function: str) -> bool:
        queue = self.queues[function]
        while queue and queue[0].done:
            queue.popleft()
        return bool(queue)

    # -- out -------------------------------------------------------------------------------------
    def answer(self, request_id: str, text: str, now: float) -> PendingRequest | None:
        """A result for a request: the first one answers it (returned); a result for a request
        answered or timed out already is counted and dropped."""
        request = self.pending.pop(request_id, None)
        if request is None:
            if request_id.isdigit() and 0 < int(request_id) <= self._counter:
                self.duplicate += 1  # answered (or failed, timed out) before
            else:
                self.late += 1
            return None
        self.answered += 1
        self.latency.record(now - request.started)
        self._close(request, result(text))
        return request

    def fail(self, request_id: str, answer: Answer) -> PendingRequest | None:
        """An error for a pending request (returned); nothing when it is not pending."""
        request = self.pending.pop(request_id, None)
        if request is None:
            return None
        self.failed += 1
        self._close(request, answer)
        return request

    def abandon(self, request: PendingRequest) -> None:
        """Its client went away before it was emitted: it is dropped unanswered. An emitted one
        runs on (its answer goes nowhere)."""
        if request.done or request.emitted:
            return
        self.pending.pop(request.id, None)
        request.done = True
        self.waiting -= 1
        self.abandoned += 1

    def expire(self, now: float) -> list[PendingRequest]:
        """Requests older than the timeout get 504 (returned). Arrival order is timeout order,
        so this looks at the expired ones and one more."""
        expired: list[PendingRequest] = []
        deadline = now - self.timeout_secs
        pending = self.pending
        while pending:
            request = next(iter(pending.values()))
            if request.started > deadline:
                break
            del pending[request.id]
            self.timed_out += 1
            expired.append(request)
            self._close(request, Answer(504, SERVER_TIMEOUT, "Timed Out"))
        if expired:
            for function in self.functions:
                self.has_waiting(function)  # drop what timed out from the queues' fronts
        return expired

    def stop_taking(self) -> list[PendingRequest]:
        """The host drains: new requests get 503, and so do those not emitted yet (returned)."""
        self.stopping = True
        shut: list[PendingRequest] = []
        for queue in self.queues.values():
            while queue:
                request = queue.popleft()
                if not request.done:
                    self.pending.pop(request.id, None)
                    shut.append(request)
                    self._close(request, Answer(503, SERVER_SHUTDOWN, "Server Shutting Down"))
        return shut

    def close(self) -> None:
        """The host stops: every request still pending gets 503."""
        self.stopping = True
        while self.pending:
            _, request = self.pending.popitem()
            self._close(request, Answer(503, SERVER_SHUTDOWN, "Server Shutting Down"))
        for queue in self.queues.values():
            queue.clear()

    def _close(self, request: PendingRequest, answer: Answer) -> None:
        if not request.emitted and not request.done:
            self.waiting -= 1
        request.done = True
        request.reply(request, answer)
