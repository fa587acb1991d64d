"""`run_component`: one component process through a scripted exchange with a `ComponentPeer`
(handshake; a bolt's tuples one by one, or a spout's commands), recorded in a `ComponentResult`."""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from host.testing.peer import ComponentPeer
from host.testing.results import ComponentResult
from host.topology import settings as cfg
from multilang.codec import EncodeError, ProtocolError
from multilang.messages import (
    ACKER_COMPONENT,
    DEFAULT_STREAM,
    SYSTEM_TASK,
    Ack,
    Emit,
    Error,
    Fail,
    Handshake,
    Log,
    Metrics,
    Pid,
    SpoutCommand,
    Sync,
    TupleMessage,
    UnknownCommand,
)

# the reply to emits that ask for task ids: fixed, or computed per emit (None: from the context)
TaskIdReply = Sequence[int] | Callable[[Emit], Sequence[int]] | None
# a spout's answer to each message id it emits: "ack", "fail", None, or a function of the id
Respond = str | Callable[[Any], str | None] | None


class _Exchange:
    """The state of one run_component exchange: what was sent, and reading with timeouts."""

    def __init__(
        self,
        peer: ComponentPeer,
        result: ComponentResult,
        context: dict[str, Any],
        task_ids: TaskIdReply,
        reply_timeout: float,
        deadline: float,
    ):
        self.peer = peer
        self.result = result
        self.context = context
        self.task_ids = task_ids
        self.reply_timeout = reply_timeout
        self.deadline = deadline
        self.unsettled: dict[str, None] = {}  # bolt tuple ids sent, not yet acked or failed
        self.settled: set[str] = set()
        self.syncs = 0
        self.over = False  # the component is gone, or the overall timeout passed

    def next_message(self, wait: float | None = None) -> Any:
        """The next message within `wait` (default: the reply timeout) seconds, else None
        (noted as `(timeout)`)."""
        if self.over:
            return None
        left = self.deadline - time.monotonic()
        if left <= 0:
            self._timeout_overall()
            return None
        try:
            msg = self.peer.poll(min(self.reply_timeout if wait is None else wait, left))
        except ProtocolError as exc:
            for m in exc.decoded:  # what came before the bad bytes still counts
                self.handle(m)
            self.result.protocol_error = f"{exc.reason}: {exc.raw!r}"
            self.peer.note(f"protocol error: {exc.reason}")
            self.over = True
            return None
        if msg is None:
            if self.peer.stdout_closed:
                self.over = True
                self.peer.note("the component closed its stdout")
            elif time.monotonic() >= self.deadline:
                self._timeout_overall()
            else:
                self.peer.transcript.append("<- (timeout)")
            return None
        self.handle(msg)
        return msg

    def _timeout_overall(self) -> None:
        self.result.timed_out = True
        self.over = True
        self.peer.transcript.append("<- (timeout)")
        self.peer.note("the run's timeout passed")

    def handle(self, msg: Any) -> None:
        r = self.result
        r.messages.append(msg)
        typ = type(msg)
        if typ is Emit:
            r.emits.append(msg)
            for anchor in msg.anchors:
                if anchor not in self.unsettled:
                    self.problem(f"emit anchored to {anchor!r}, which is not pending")
            if msg.task is None and msg.need_task_ids:
                tasks = self.reply_task_ids(msg)
                r.task_id_replies.append(tasks)
                self.peer.task_ids(tasks)
        elif typ is Ack or typ is Fail:
            (r.acked if typ is Ack else r.failed).append(msg.id)
            if msg.id in self.unsettled:
                del self.unsettled[msg.id]
                self.settled.add(msg.id)
            else:
                what = "already acked or failed" if msg.id in self.settled else "never sent"
                self.problem(f"{typ.__name__.lower()} of tuple {msg.id!r}, {what}")
        elif typ is Log:
            r.logs.append(msg)
        elif typ is Error:
            r.errors.append(msg.msg)
        elif typ is Metrics:
            r.metrics.append(msg)
        elif typ is Sync:
            self.syncs += 1
        elif typ is UnknownCommand:
            self.problem(f"unknown command {msg.command!r}")
        elif typ is Pid and r.pid is not None:
            self.problem("a second pid reply")

    def problem(self, text: str) -> None:
        self.result.problems.append(text)
        self.peer.note(f"problem: {text}")

    def reply_task_ids(self, emit: Emit) -> list[int]:
        if callable(self.task_ids):
            return list(self.task_ids(emit))
        if self.task_ids is not None:
            return list(self.task_ids)
        # the tasks of the components the context says subscribe to the stream
        targets = self.context.get("stream->target->grouping", {}).get(emit.stream, {})
        tasks = self.context.get("task->component", {})
        return sorted(int(t) for t, c in tasks.items() if c in targets)


def _tuple_message(item: Any, n: int) -> TupleMessage:
    """A run_component tuple: a list of values, a mapping, or a TupleMessage (tick/heartbeat)."""
    if isinstance(item, TupleMessage):
        return item if item.id else item._replace(id=f"{item.stream}-{n}")
    if isinstance(item, Mapping):
        unknown = set(item) - {"values", "stream", "comp", "task", "id"}
        if unknown or "values" not in item:
            raise ValueError(
                f"tuple {n}: expected a list of values or an object with "
                f"'values' (and optionally 'stream', 'comp', 'task', 'id'), "
                f"got {item!r}"
            )
        values = item["values"]
        comp, stream = item.get("comp", "spout"), item.get("stream", DEFAULT_STREAM)
        task, tid = item.get("task", 1), str(item.get("id", n))
    else:
        values, comp, stream, task, tid = item, "spout", DEFAULT_STREAM, 1, str(n)
    if isinstance(values, (str, bytes, Mapping)) or not isinstance(values, Sequence):
        raise TypeError(f"tuple {n}: a tuple is a list of values, got {values!r}")
    return TupleMessage(tid, comp, stream, int(task), list(values))


def _default_conf(conf: Mapping[str, Any] | None) -> dict[str, Any]:
    return {
        **cfg.DEFAULTS,
        "topology.name": "test",
        "storm.id": "test-1",
        "storm.cluster.mode": "local",
        "topology.debug": False,
        **(conf or {}),
    }


def _default_context(kind: str, tuples: list[TupleMessage]) -> dict[str, Any]:
    """A context like the host's for a bolt fed by the sources the tuples name (fields f0, f1,
    ... by the number of values), or for a spout; each component is given one task."""
    me = "bolt" if kind == "bolt" else "spout"
    sources: dict[str, dict[str, list[str]]] = {}
    for t in tuples:
        if t.task != SYSTEM_TASK and t.comp is not None:
            sources.setdefault(t.comp, {}).setdefault(
                t.stream, [f"f{i}" for i in range(len(t.values))]
            )
    names = sorted({*sources, me, ACKER_COMPONENT})
    task_of = {name: i + 1 for i, name in enumerate(names)}
    return {
        "taskid": task_of[me],
        "componentid": me,
        "task->component": {str(task_of[n]): n for n in names},
        "streams": [DEFAULT_STREAM],
        "stream->outputfields": {DEFAULT_STREAM: []},
        "stream->target->grouping": {},
        "source->stream->grouping": {
            s: {st: {"type": "SHUFFLE"} for st in streams} for s, streams in sources.items()
        },
        "source->stream->fields": sources,
    }


def run_component(
    command: Sequence[str],
    tuples: Iterable[Any] = (),
    *,
    kind: str = "bolt",
    conf: Mapping[str, Any] | None = None,
    context: Mapping[str, Any] | None = None,
    cwd: str | os.PathLike[str] | None = None,
    timeout: float = 10,
    env: Mapping[str, str] | None = None,
    serializer: str = "json",
    nexts: int = 5,
    respond: Respond = "ack",
    task_ids: TaskIdReply = None,
    reply_timeout: float = 2.0,
) -> ComponentResult:
    """Run one bolt (or spout) process through a scripted exchange.

    `tuples` (bolts): lists of values, or mappings {"values", "stream", "comp", "task", "id"}
    (defaults: stream "default" from component "spout", task 1, ids "1", "2", ...), or
    `tick()` / `heartbeat()`. Each is sent when the previous one was acked or failed (a
    heartbeat: answered with `sync`), or after `reply_timeout` seconds of silence.
    `nexts` (spouts): how many `next` commands to send. `respond` (spouts): what to answer for
    each message id emitted: "ack", "fail", None (nothing), or a function of the id returning
    one of those. `task_ids`: the reply to emits that ask for task ids (default: the tasks of
    the stream's subscribers in `context`, usually none). `conf` is merged over the host's
    defaults; `context` (default: one built like the host's) is sent as is. `timeout` bounds
    the whole exchange in real seconds. See `host.testing`."""
    if kind not in ("bolt", "spout"):
        raise ValueError(f"kind must be 'bolt' or 'spout', got {kind!r}")
    messages = (
        [] if kind == "spout" else [_tuple_message(t, n) for n, t in enumerate(tuples, start=1)]
    )
    context = dict(context) if context is not None else _default_context(kind, messages)
    peer = ComponentPeer(
        list(command),
        cwd=None if cwd is None else str(cwd),
        env=None if env is None else dict(env),
        serializer=serializer,
    )
    result = ComponentResult(list(command), kind)
    ex = _Exchange(peer, result, context, task_ids, reply_timeout, time.monotonic() + timeout)
    try:
        if _handshake(ex, _default_conf(conf), context):
            if kind == "bolt":
                _feed_bolt(ex, messages)
            else:
                _drive_spout(ex, nexts, respond)
        _close(ex)
    finally:
        result.exit_code = peer.close(timeout=2)
        peer.kill_group()  # children it started must not outlive the run
        result.pending = list(ex.unsettled)
        result.stderr = peer.stderr.decode("utf-8", "replace")
        peer.note(f"exit code: {result.exit_code}")
        result.transcript = peer.transcript
    return result


def _handshake(ex: _Exchange, conf: dict[str, Any], context: dict[str, Any]) -> bool:
    peer = ex.peer
    try:
        peer.send(Handshake(peer.pid_dir, conf, peer.serializer.handshake_context(context)))
    except (BrokenPipeError, EncodeError) as exc:
        ex.problem(f"cannot send the handshake: {exc}")
        return False
    while True:
        msg = ex.next_message(wait=ex.deadline - time.monotonic())  # start-up may be slow
        if msg is None:
            ex.problem("no pid reply to the handshake")
            return False
        if type(msg) is Pid:
            ex.result.pid = msg.pid
            if not peer.wait_pid_file(msg.pid, timeout=min(2.0, ex.reply_timeout)):
                ex.problem(f"no pid file {msg.pid} in the pid directory")
            peer.note(f"pid files: {sorted(os.listdir(peer.pid_dir))}")
            return True


def _send(ex: _Exchange, message: TupleMessage | SpoutCommand) -> bool:
    try:
        if type(message) is TupleMessage:
            ex.peer.tuple(message.id, message.values, message.comp, message.stream, message.task)
        else:
            ex.peer.send(message)
        ex.result.sent.append(message)
        return True
    except (BrokenPipeError, ConnectionResetError):
        ex.peer.note("the component's stdin is closed")
        ex.over = True
        return False


def _feed_bolt(ex: _Exchange, tuples: list[TupleMessage]) -> None:
    for tup in tuples:
        if ex.over or not _send(ex, tup):
            return
        if tup.is_heartbeat:
            before = ex.syncs
            while ex.syncs == before and ex.next_message() is not None:
                pass
            continue
        ex.unsettled[tup.id] = None
        while tup.id in ex.unsettled and ex.next_message() is not None:
            pass


def _command(ex: _Exchange, command: str, msg_id: Any = "") -> list[Emit]:
    """Send a spout command and read up to its sync; the emits made meanwhile."""
    if ex.over or not _send(ex, SpoutCommand(command, msg_id)):
        return []
    first = len(ex.result.emits)
    before = ex.syncs
    while ex.syncs == before and ex.next_message() is not None:
        pass
    return ex.result.emits[first:]


def _drive_spout(ex: _Exchange, nexts: int, respond: Respond) -> None:
    _command(ex, "activate")
    for _ in range(nexts):
        for emit in _command(ex, "next"):
            if emit.id is None:
                continue
            answer = respond(emit.id) if callable(respond) else respond
            if answer in ("ack", "fail"):
                (ex.result.acked if answer == "ack" else ex.result.failed).append(emit.id)
                _command(ex, answer, emit.id)
            elif answer is not None:
                raise ValueError(f"respond must give 'ack', 'fail' or None, got {answer!r}")
    _command(ex, "deactivate")


def _close(ex: _Exchange) -> None:
    """Close stdin (the host's way of stopping a component) and read what it still writes."""
    peer = ex.peer
    peer.close_stdin()
    peer.note("stdin closed")
    end = min(ex.deadline, time.monotonic() + ex.reply_timeout)
    while not peer.stdout_closed and time.monotonic() < end:
        try:
            msg = peer.poll(max(0.0, end - time.monotonic()))
        except ProtocolError as exc:
            for m in exc.decoded:
                ex.handle(m)
            ex.result.protocol_error = f"{exc.reason}: {exc.raw!r}"
            peer.note(f"protocol error: {exc.reason}")
            return
        if msg is not None:
            ex.handle(msg)
    while peer.inbox:
        ex.handle(peer.inbox.pop(0))
