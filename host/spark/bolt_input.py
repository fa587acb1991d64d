"""What the Spark engine writes to a bolt task (host/spark/component_process.py): the partition's
input tuples while the bolt's window has room, each frame built from a cached prefix, the
values' JSON and a counted id, joined into one write; ahead of them what is urgent (task-id
replies, heartbeats, ticks); after the last one the partition's end tick and a batch bolt's
finish. A base class of `ComponentProcess`, apart from its reading side
(host/spark/bolt_output.py): the same object, so that the hot loop reads the process's fields
with no call per tuple (host/spark/pending_tuples.py).
"""

from __future__ import annotations

import os
import select
from collections.abc import Iterator
from typing import Any

from host.batch import wire
from host.batch.tracker import Attempt
from host.runtime.process import Child
from host.spark.pending_tuples import PendingTuples
from host.spark.ticks import TickSchedule
from host.topology.model import Component
from multilang.codec import EncodeError, quick_values_json, ujson_dumps
from multilang.messages import SYSTEM_COMPONENT, SYSTEM_TASK, TICK_STREAM, Pid, TupleMessage
from multilang.serializers import Serializer

WRITE_CHUNK = 1 << 16  # input pulled into one write, at most

# (source component, stream, source task, values): a tuple of the partition's input
InputTuple = tuple[str, str, int, list[Any]]


class BoltInput:
    """The writing side of `ComponentProcess`; the attributes are the process's (set in its
    `__init__` and `_reset_process_state`)."""

    component: Component
    ser: Serializer
    window: int
    tick_freq: int | None
    child: Child | None
    _poll: select.poll | None
    _pending: PendingTuples
    _pid_reply: Pid | None
    _schedule: TickSchedule | None
    _input: Iterator[InputTuple] | None
    _tx: bytes | None
    _finish_due: Attempt | None
    _fast_write: bool
    _prefix_key: tuple[str, str, int] | None
    _prefix: bytes
    _urgent: list[bytes]
    _out: bytes
    _off: int
    _write_blocked: bool

    def _fail(self, reason: str, raw: bytes = b"") -> Any:
        """Raises ComponentFailed (ComponentProcess's)."""
        raise NotImplementedError

    def _exited(self, what: str) -> None:
        """The process ended: raises ComponentFailed with its exit status (ComponentProcess's)."""
        raise NotImplementedError

    def _tick(self) -> bytes:
        """A tick tuple's frame, as host local writes it (host/runtime/bolt_link.py `tick`),
        recorded as awaited."""
        tid = str(self._pending.new_id())
        frame = self.ser.encode(
            TupleMessage(tid, SYSTEM_COMPONENT, TICK_STREAM, SYSTEM_TASK, [self.tick_freq])
        )
        self._pending.tick_written(tid, frame)
        return frame

    def _write(self) -> None:
        child = self.child
        assert child is not None
        while not self._write_blocked:
            if self._off >= len(self._out):
                self._fill()
                if not self._out:
                    return
            try:
                n = os.write(child.stdin_fd, memoryview(self._out)[self._off :])
            except BlockingIOError:
                self._write_blocked = True
                assert self._poll is not None
                self._poll.register(child.stdin_fd, select.POLLOUT)
                return
            except (BrokenPipeError, ConnectionResetError):
                self._exited("its stdin closed (broken pipe)")
            self._off += n

    def _fill(self) -> None:
        """The next bytes for stdin: what is urgent, then input tuples while the window has room.
        The hot loop of the input side: one frame per tuple from a cached prefix, the values'
        JSON and a counted id, joined into one write of up to WRITE_CHUNK bytes. The pending
        tuples' bookkeeping is done inline (PendingTuples.tuple_written, a batch at a time)."""
        parts, self._urgent = self._urgent, []
        size = sum(map(len, parts))
        source = self._input
        if source is not None and self._pid_reply is not None:
            pending = self._pending
            in_flight, tx = pending.in_flight, self._tx
            room = self.window - len(in_flight)
            ser = self.ser
            fast_values = ujson_dumps if self._fast_write else None
            quick_values = quick_values_json if self._fast_write else None
            key, prefix, tid = self._prefix_key, self._prefix, pending.next_id
            append = parts.append
            try:
                while room > 0 and size < WRITE_CHUNK:
                    try:
                        comp, stream, task, values = next(source)
                    except StopIteration:
                        self._input = None
                        break
                    if key != (comp, stream, task):
                        key = (comp, stream, task)
                        prefix = ser.tuple_prefix(comp, stream, task)
                    try:
                        if quick_values is not None and (data := quick_values(values)):
                            pass
                        elif fast_values is not None and type(values) is list:
                            data = fast_values(values, False, False, False).encode()
                        else:
                            data = ser.values(values)
                    except (OverflowError, TypeError, ValueError, UnicodeEncodeError):
                        data = self._values(comp, task, values)  # the serializer says what is wrong
                    tid += 1
                    frame = (
                        b'%b%b,"id":"%d"}\nend\n' % (prefix, data, tid)
                        if tx is None and fast_values is not None
                        else ser.tuple_frame(prefix, data, tid)
                        if tx is None
                        else wire.tx_tuple(prefix, data, tid, tx)
                    )
                    in_flight[str(tid)] = frame
                    append(frame)
                    size += len(frame)
                    room -= 1
            finally:
                pending.written += tid - pending.next_id
                pending.next_id = tid
                self._prefix_key, self._prefix = key, prefix
        if self._input is None and self._schedule is not None and self._schedule.end_due():
            parts.append(self._tick())  # the partition's last tuple: before its finish, if any
        if self._input is None and self._finish_due is not None:
            attempt, self._finish_due = self._finish_due, None
            fid = self._pending.finish_written()
            commit = self.component.batch == "committer"
            parts.append(wire.finish(fid, attempt, commit))
        self._out = self.ser.join_frames(parts)
        self._off = 0

    def _values(self, comp: str, task: int, values: Any) -> bytes:
        try:
            return self.ser.values(values)
        except EncodeError as exc:
            return self._fail(f"an input tuple from {comp}[{task}] cannot be written: {exc}")
