"""What a bolt task writes while the Spark engine drives it (host/spark/component_process.py): its
stdout read, decoded and checked against what it owes -- its emits kept to be yielded, its acks
and fails settling the tuples in flight, its heartbeat answers, logs and pid reply -- apart from
the process's start, its input side and its end. A base class of `ComponentProcess` (the same
object: the hot path reads the process's dicts inline, with no call per message; see
host/spark/pending_tuples.py).

Whatever the bolt writes that breaks the run -- a failed tuple, a bad frame, an emit the
topology does not allow, an ack of nothing pending -- goes to `_fail`, which raises
`ComponentFailed` (component_process.py) naming the component, task, pid and the bytes at fault.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from typing import Any, NamedTuple

from host.errors import RoutingError
from host.runtime.link import emit_text
from host.runtime.process import Child
from host.runtime.router import Router
from host.spark.pending_tuples import Other, PendingTuples
from host.spark.stderr_tags import LOG_LEVELS, TaggedLog
from host.topology.model import Component
from multilang.codec import Framer, ProtocolError, parse_array
from multilang.component_decoding import plain_frames
from multilang.messages import (
    BATCH_EXT,
    Ack,
    Emit,
    Error,
    Fail,
    Log,
    Pid,
    Sync,
)
from multilang.serializers import Serializer

READ_CHUNK = 1 << 18  # a read of the bolt's stdout, at most

# Nearly all of a bolt's stdout is two frames, exactly as our client libraries (Python, Node,
# bash) write them: a plain emit anchored to one tuple, and an ack. A read made only of these is
# decoded without a dict or an Emit per message (multilang.component_decoding.plain_frames, in C
# where built; see _fast_frames); anything else -- another key order, another library, a stream,
# a direct task -- takes the general decoder (multilang.component_decoding.ComponentDecoder),
# which is the reference.


class PlainEmits(NamedTuple):
    """Plain emits decoded by the fast path: to the default stream, one anchor each."""

    values: list[list[Any]]
    anchors: list[str]


class BoltOutput:
    """The reading side of `ComponentProcess`; the attributes are the process's (set in its
    `__init__` and `_reset_process_state`)."""

    component: Component
    ser: Serializer
    log: TaggedLog
    decoder: Any
    max_frame: int
    clock: Callable[[], float]
    _router: Router
    _choosers: dict[str, Any]
    _counted: dict[str, int]
    _pending: PendingTuples
    _emits: list[Emit | PlainEmits]
    _carry: str
    _framer: Framer | None
    _fast_count: int | None
    _pid_reply: Pid | None
    _urgent: list[bytes]
    _tx_text: str

    def _fail(self, reason: str, raw: bytes = b"") -> Any:
        """Raises ComponentFailed (ComponentProcess's)."""
        raise NotImplementedError

    def _exited(self, what: str) -> None:
        """The process ended: raises ComponentFailed with its exit status (ComponentProcess's)."""
        raise NotImplementedError

    def _read_stdout(self, child: Child) -> None:
        try:
            data = os.read(child.stdout_fd, READ_CHUNK)
        except BlockingIOError:
            return
        if not data:
            self._exited("its stdout closed")
        framer = self._framer
        if framer is not None and self._pid_reply is not None and not framer.pending:
            if self._fast_frames(data):
                return
            data, self._carry = self._carry.encode() + data, ""  # the general decoder, from
            # the first byte the fast path did not take
        try:
            messages = self.decoder.feed(data)
        except ProtocolError as exc:
            self._handle(exc.decoded)
            self._fail(f"protocol error: {exc.reason}", exc.raw)
        self._handle(messages)

    def _fast_frames(self, data: bytes) -> bool:
        """Decode a read made only of plain emits and acks (multilang.component_decoding's
        plain_frames) as the general decoder and `_handle` would, without an object per message;
        False (nothing done) for a read holding anything else, which the general path then
        decodes from the start. The tuples must parse as one JSON array of exactly one value per
        emit, so each is one JSON array.

        `_handle` takes the messages in order; here the anchors are checked against the tuples
        in flight before the acks are applied, then the `late` ones (anchored to a tuple acked
        earlier in the read) after: the same verdicts, as an anchor's standing changes only by
        an ack of that very id."""
        try:
            text = self._carry + data.decode()
        except UnicodeDecodeError:
            return False
        cut = text.rfind("\nend\n") + 5
        if cut < 5:  # no frame ends in this read
            if len(text) > self.max_frame:
                return False  # the general decoder says so
            self._carry = text
            return True
        body = text[:cut]
        scanned = plain_frames(body)
        if scanned is None:
            return False
        values_json, anchors, ids, late, longest = scanned
        if anchors:
            count = self._fast_count
            if count is None:
                return False
            try:
                values = parse_array(values_json)
            except (ValueError, OverflowError):
                return False
            if len(values) != len(anchors) or (count >= 0 and set(map(len, values)) != {count}):
                return False
        else:
            values = []
        if len(body) > self.max_frame and longest > self.max_frame:
            return False
        pending = self._pending
        in_flight = pending.in_flight
        if anchors and not in_flight.keys() >= set(anchors):
            for a in anchors:
                if a not in in_flight and not pending.may_anchor(a):
                    self._not_pending(a)
        if ids:
            pending.answers += len(ids)
            pop = in_flight.pop
            for i in ids:
                if pop(i, None) is None:
                    self._answered_other(Ack(i))
            for a in late:
                if not pending.may_anchor(a):
                    self._not_pending(a)
        self._carry = text[cut:]
        pending.progressed = True
        if values:
            self._emits.append(PlainEmits(values, anchors))
        return True

    def _handle(self, messages: list[Any]) -> None:
        if not messages:
            return
        pending = self._pending
        in_flight = pending.in_flight
        emits = self._emits
        counted = self._counted.get
        pending.progressed = True  # only syncs and logs are not progress: near enough
        for m in messages:
            kind = type(m)
            if kind is Emit:
                # the usual emit, checked inline (our clients': one anchor, no task ids wanted)
                anchors = m.anchors
                if (
                    m.task is None
                    and not m.need_task_ids
                    and counted(m.stream) == len(m.values)
                    and (not anchors or (len(anchors) == 1 and anchors[0] in in_flight))
                ):
                    emits.append(m)
                    continue
                self._check_emit(m)
                emits.append(m)
            elif kind is Ack:
                pending.answers += 1
                if in_flight.pop(m.id, None) is None:
                    self._answered_other(m)
            elif kind is Fail:
                pending.answers += 1
                frame = in_flight.pop(m.id, None)
                if frame is not None:
                    self._fail(f"it failed tuple {m.id}", frame)
                self._answered_other(m)
            elif kind is Sync:
                self._synced()
            elif kind is Log:
                self.log.line(LOG_LEVELS.get(m.level, logging.INFO), m.msg)
            elif kind is Error:
                self.log.line(logging.ERROR, f"error: {m.msg}")
            elif kind is Pid:
                self._on_pid(m)
            # metrics and commands Storm does not define are ignored, as Storm's ShellBolt does

    def _answered_other(self, m: Ack | Fail) -> None:
        """An ack or fail of no tuple in flight: the finish's, a tick's, a forgotten tuple's, or a
        fault (PendingTuples.answered_other)."""
        other, frame = self._pending.answered_other(m.id)
        if other is Other.STRAY:
            self._fail(
                f"{type(m).__name__.lower()} of tuple {m.id!r}, which is not pending "
                "(never sent, or already acked or failed)"
            )
        if type(m) is Fail:
            if other is Other.FINISH:
                self._fail(f"it failed the finish of its batch ({self._tx_text})")
            elif other is Other.TICK:
                # what it does on a tick (a flush) failed: as a failed tuple, the run fails
                self._fail(f"it failed tick tuple {m.id}", frame)

    def _not_pending(self, anchor: str) -> None:
        """A fast-path emit's anchor that may not be anchored to (PendingTuples.may_anchor)."""
        self._fail(f"emit anchored to tuple {anchor!r}, which is not pending")

    def _check_emit(self, m: Emit) -> None:
        anchors = m.anchors
        if anchors:
            pending = self._pending
            in_flight = pending.in_flight
            for a in anchors:
                if a not in in_flight and not pending.may_anchor(a):
                    self._fail(f"emit anchored to tuple {a!r}, which is not pending", _raw(m))
        try:
            if m.task is not None:
                self._router.direct_target(self.component.id, m.stream, m.values, m.task)
            elif m.need_task_ids:
                choose = self._choosers.get(m.stream)
                if choose is None:
                    raise RoutingError(
                        f"emit to stream '{m.stream}', which '{self.component.id}' does not declare"
                    )
                self._urgent.append(self.ser.task_ids(list(choose(m.values))))
            else:
                count = self._counted.get(m.stream)
                if count is None:
                    if m.stream not in self.component.outputs:
                        raise RoutingError(
                            f"emit to stream '{m.stream}', which '{self.component.id}' does not "
                            "declare"
                        )
                elif len(m.values) != count:
                    raise RoutingError(
                        f"emit of {len(m.values)} values to stream '{m.stream}', which declares "
                        f"{count} fields"
                    )
        except RoutingError as exc:
            self._fail(str(exc), _raw(m))

    def _synced(self) -> None:
        """A heartbeat answered: what the bolt read past and will not answer is forgotten
        (PendingTuples.synced; docs/spark.md §4.3)."""
        self._forgot_ticks(self._pending.synced(self.clock()))

    def _forgot_ticks(self, doomed: list[str]) -> None:
        """Said once in the log, at the first tick forgotten."""
        if doomed and self._pending.ticks_forgotten == len(doomed):
            self.log.line(
                logging.WARNING,
                f"tick tuple {doomed[0]} was not acked: forgotten (docs/protocol.md §4.5); "
                "does the bolt ack its ticks?",
            )

    def _on_pid(self, reply: Pid) -> None:
        batch = self.component.batch
        if batch is not None and BATCH_EXT not in reply.ext:
            self._fail(
                f"it is declared `batch: {batch}`, and its library did not announce the "
                f"{BATCH_EXT} extension in its pid reply ({reply.ext or 'none'}) "
                "(docs/transactional.md §4)"
            )
        self._pid_reply = reply


def _raw(m: Emit) -> bytes:
    return emit_text(m).encode()
