"""One task's multilang component driven from inside a Spark executor partition (docs/spark.md;
issue 17, "Components inside executors").

`ComponentProcess(topology, component_id, task_id)` starts the component's command as `host local`
does (its cwd and environment, its own process group, a parent-death signal: host/runtime/process.py)
and sends it the handshake `host local` would send that task (host/runtime/context.py), so a bolt
cannot tell the two runtimes apart. `run_bolt(tuples)` then streams a partition through it and
yields what it emits:

    proc = ComponentProcess(topology, "split", 3)
    for emit in proc.run_bolt(("sentences", "default", 1, [s]) for s in sentences):
        emit.stream, emit.values, emit.task   # multilang.messages.Emit; task: a direct target

`run_bolt_rows` is the same run in batches, `Rows(stream, task, values)` per run of consecutive
emits, with no object per emit: what a Spark partition should use. A read made only of plain
emits and acks, as our client libraries write them, is decoded in bulk (`_fast_frames`); anything
else goes through multilang.component_decoding's decoder and the checks in `_handle`, which are
the reference.

Pipelined, never lock-step: one thread, one poll over the child's stdin, stdout and stderr, up to
`host.bolt.max.in.flight` tuples written ahead and not yet acked (docs/protocol.md §4.5), task-id
replies (§4.4) and heartbeats (§4.7) written ahead of tuples not yet written. Input is pulled
from `tuples` only when the window has room and emits are yielded as they are read, so a
partition is never held in memory, nor is the bolt's output.

A bolt whose config sets `topology.tick.tuple.freq.secs` gets tick tuples (`__system`, `__tick`,
task -1, `[freq]`) every that many seconds while the partition's input is being written, and one
more once it has all been written (host/spark/ticks.py; docs/spark.md §2.4). A tick is awaited
like a tuple (its ack, or its fail, which fails the run) without taking room in the window, so a
bolt that acks only on ticks always gets one; a tick the bolt read past without acking is
forgotten, as `host local` forgets a tuple no spout tuple tracks (docs/protocol.md §4.5). What is
awaited and when it stops being awaited -- input tuples, ticks, the finish, heartbeats, a bolt
that never acks -- is host/spark/pending_tuples.py's (pure: no process, the time given); this
module does the process and its pipes, and uses its dicts inline on the hot path.

The run ends when the input is exhausted and every tuple written is answered. A batch bolt or
committer (`batch: bolt | committer`) gets the batch's `tx` on each tuple and then `finish` (its
ack ends the run; `commit` is true for committers; docs/transactional.md §4.2). Whatever breaks the
run -- a failed tuple, the process exiting, a bad frame, an emit the topology does not allow, or
no answer for `topology.message.timeout.secs` while one is owed -- raises `ComponentFailed`
naming the component, the task, the pid and the bytes at fault, so that the Spark task fails and
Spark retries it. The process is then killed: a failed or abandoned run never leaves a process
whose state is unknown (host/spark/process_cache.py starts a new one for the next run).
"""

from __future__ import annotations

import logging
import os
import select
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator
from typing import Any, NamedTuple

from host.batch import wire
from host.batch.tracker import Attempt
from host.errors import HostError, RoutingError
from host.runtime.context import assign_tasks, build_conf, build_context
from host.runtime.link import emit_text
from host.runtime.process import Child, Launcher, child_environment, describe_exit
from host.runtime.router import Router
from host.spark.pending_tuples import HEARTBEAT_SECS, Other, PendingTuples
from host.spark.process_end import end_gently, kill_now, release
from host.spark.stderr_tags import LOG_LEVELS, TaggedLog
from host.spark.ticks import TickSchedule
from host.topology.component_config import component_settings, tick_freq
from host.topology.model import Topology
from multilang.codec import (
    EncodeError,
    Framer,
    ProtocolError,
    parse_array,
    quick_values_json,
    shorten,
    ujson_dumps,
)
from multilang.component_decoding import plain_frames
from multilang.messages import (
    BATCH_EXT,
    DEFAULT_STREAM,
    HEARTBEAT_STREAM,
    SYSTEM_COMPONENT,
    SYSTEM_TASK,
    TICK_STREAM,
    Ack,
    Emit,
    Error,
    Fail,
    Handshake,
    Log,
    Pid,
    Sync,
    TupleMessage,
)
from multilang.serializers import serializer

WRITE_CHUNK = 1 << 16  # input pulled into one write, at most
READ_CHUNK = 1 << 18
EXIT_WAIT_SECS = 1.0  # after its stdout closed, how long a process has to exit before we say so
REPORT_BYTES = 300

InputTuple = tuple[str, str, int, list[Any]]  # (source component, stream, source task, values)

END = b"\nend\n"
# Nearly all of a bolt's stdout is two frames, exactly as our client libraries (Python, Node,
# bash) write them: a plain emit anchored to one tuple, and an ack. A read made only of these is
# decoded without a dict or an Emit per message (multilang.component_decoding.plain_frames, in C
# where built; see _fast_frames); anything else -- another key order, another library, a stream,
# a direct task -- takes the general decoder (multilang.component_decoding.ComponentDecoder),
# which is the reference.
_new_tuple = tuple.__new__  # skips Emit's generated __new__ (as multilang.component_decoding)


class Rows(NamedTuple):
    """Consecutive emits of a run to one stream (and one direct task, or None): their values.
    What `run_bolt_rows` yields; emits are in the order the bolt wrote them."""

    stream: str
    task: int | None
    values: list[list[Any]]


class _Plain(NamedTuple):
    """Plain emits decoded by the fast path: to the default stream, one anchor each."""

    values: list[list[Any]]
    anchors: list[str]


class Tx(NamedTuple):
    """A batch attempt, as docs/transactional.md §4.2 writes it: `{"txid": 7, "attempt": 2}`."""

    txid: int
    attempt: int = 1


class ComponentFailed(HostError):
    """A run of a component's task broke; the Spark task must fail (and be retried)."""

    def __init__(
        self,
        component: str,
        task: int,
        pid: int | None,
        reason: str,
        raw: bytes = b"",
        stderr: tuple[str, ...] = (),
    ) -> None:
        self.component = component
        self.task = task
        self.pid = pid
        self.reason = reason
        self.raw = raw
        self.stderr = stderr
        text = f"{component}[{task}] pid={pid}: {reason}"
        if raw:
            text += f"; it wrote {shorten(raw, REPORT_BYTES)}"
        if stderr:
            text += "; its last stderr lines: " + " | ".join(stderr)
        super().__init__(text)

    def __reduce__(self) -> tuple[Any, ...]:  # picklable: Spark may ship it to the driver
        return (
            type(self),
            (self.component, self.task, self.pid, self.reason, self.raw, self.stderr),
        )


class ComponentProcess:
    """One task of one bolt, as a process that lives across runs (`run_bolt` calls) until it
    breaks or is closed. Not thread-safe; one run at a time. `clock` is injectable."""

    def __init__(
        self,
        topology: Topology,
        component_id: str,
        task_id: int,
        *,
        run_id: str | int = "spark",
        committed_txid: int = 0,
        pid_dir: str | None = None,
        clock: Callable[[], float] = time.monotonic,
        launcher: Launcher | None = None,
    ) -> None:
        try:
            comp = topology.component(component_id)
        except KeyError:
            raise ValueError(
                f"topology {topology.name!r} has no component {component_id!r}"
            ) from None
        if comp.is_spout or comp.in_host is not None or not comp.command:
            raise ValueError(
                f"{component_id!r} is not a bolt with a command: only bolts run inside Spark "
                "executors (spouts run in the driver, docs/spark.md)"
            )
        tasks = assign_tasks(topology)
        self.context = build_context(topology, tasks, comp, task_id)  # checks the task id
        self.conf = build_conf(topology, comp, run_id)
        if comp.batch is not None:  # as host local's batch layer adds it (host/batch/layer.py)
            self.context["batch"] = {
                "protocol": 1,
                "role": comp.batch,
                "transactional_id": topology.transactional_id,
                "committed_txid": committed_txid,
            }
        self.topology = topology
        self.component = comp
        self.task = task_id
        self.name = f"{comp.id}[{task_id}]"
        settings = component_settings(topology, comp)
        self.timeout = float(settings.message_timeout_secs)
        self.handshake_timeout = settings.handshake_timeout_secs
        self.window = settings.bolt_max_in_flight
        self.tick_freq = tick_freq(topology, comp)
        self.max_frame = settings.max_frame_bytes
        self.ser = serializer(comp.serializer)
        router = Router(topology, {c: list(t) for c, t in tasks.component_tasks.items()})
        self._router = router
        self._choosers = {s: router.chooser(comp.id, s) for s in comp.outputs}
        # declared field counts of the streams a bolt subscribes to (others are not checked,
        # as Storm checks a count only when it builds a copy for a target: docs/protocol.md §4.3)
        self._counted = {
            s: len(f) for s, f in comp.outputs.items() if not router.unsubscribed(comp.id, s)
        }
        self.clock = clock
        self.launcher = launcher or Launcher()
        self._own_pid_dir = pid_dir is None
        self.pid_dir = pid_dir or ""  # ours: made with each process, removed with it
        self.log = TaggedLog(comp.id, task_id)
        self.child: Child | None = None
        self.broken = False  # a run failed or was abandoned: the process is gone
        self._busy = False
        self._reset_process_state()

    # -- the process -----------------------------------------------------------------------------
    @property
    def pid(self) -> int | None:
        return None if self.child is None else self.child.pid

    @property
    def usable(self) -> bool:
        """Started, not broken, and still running (a new run may use it)."""
        return self.child is not None and not self.broken and self.child.poll() is None

    def _reset_process_state(self) -> None:
        self._pid_reply: Pid | None = None
        self._out = b""  # bytes being written to stdin, from _off on
        self._off = 0
        self._urgent: list[bytes] = []  # task-id replies, heartbeats, finish: before any tuple
        self._write_blocked = False
        # what the bolt owes and when it stops owing it (the hot path uses its dicts inline)
        self._pending = PendingTuples(
            window=self.window,
            timeout=self.timeout,
            ticking=self.tick_freq is not None,
            heartbeats=self.component.heartbeats,
        )
        self._schedule = None if self.tick_freq is None else TickSchedule(self.tick_freq)
        self._emits: list[Emit | _Plain] = []  # read and not yet yielded
        self._carry = ""  # the fast path's bytes after the last complete frame, decoded
        self._fast = self.ser.name == "json" and ujson_dumps is not None
        self._fast_count = (
            self._counted.get(DEFAULT_STREAM, -1)
            if DEFAULT_STREAM in self.component.outputs
            else None
        )
        self._prefix_key: tuple[str, str, int] | None = None
        self._prefix = b""
        self._input: Iterator[InputTuple] | None = None
        self._tx: bytes | None = None
        self._tx_text = ""
        self._finish_due: Tx | None = None  # the finish to write once the input is written
        self._poll: select.poll | None = None

    def start(self) -> None:
        """Start the process and complete the handshake (ComponentFailed if it does not)."""
        if self.child is not None:
            raise RuntimeError(f"{self.name} is already started")
        comp = self.component
        self._reset_process_state()
        self.broken = False
        try:
            if self._own_pid_dir:
                self.pid_dir = tempfile.mkdtemp(prefix=f"multilang-spark-{comp.id}-")
            child = self.launcher.start(list(comp.command), comp.cwd, child_environment(comp))
        except OSError as exc:
            self.broken = True
            if self._own_pid_dir and self.pid_dir:
                os.rmdir(self.pid_dir)
                self.pid_dir = ""
            raise ComponentFailed(
                comp.id, self.task, None, f"cannot start {list(comp.command)!r}: {exc}"
            ) from None
        self.child = child
        self.log.new_process(child.pid)
        self.decoder = self.ser.decoder(self.max_frame)
        # the JSON decoder's framer: the fast path runs only while it holds no partial frame
        self._framer: Framer | None = getattr(self.decoder, "framer", None) if self._fast else None
        poll = self._poll = select.poll()
        poll.register(child.stdout_fd, select.POLLIN)
        poll.register(child.stderr_fd, select.POLLIN)
        deadline = self.clock() + self.handshake_timeout
        try:
            try:
                self._out = self.ser.encode(
                    Handshake(self.pid_dir, self.conf, self.ser.handshake_context(self.context))
                )
            except EncodeError as exc:
                self._fail(f"the handshake cannot be encoded: {exc}")
            while self._pid_reply is None:
                if self.clock() > deadline:
                    self._fail(f"no pid reply within {self.handshake_timeout:g}s of the handshake")
                self._turn(min(1.0, max(0.0, deadline - self.clock())))
        except BaseException:
            self._discard()
            raise

    def close(self, grace: float = 2.0) -> None:
        """End the process in stages (docs/protocol.md §4.10): close its stdin (libraries exit on
        EOF), then SIGTERM, then SIGKILL to its process group, `grace` seconds each."""
        child = self.child
        if child is None:
            return
        end_gently(child, grace)
        self._release(child)

    def kill(self) -> None:
        """SIGKILL the process group at once (a broken task gets no grace: §4.9)."""
        child = self.child
        if child is None:
            return
        kill_now(child)
        self._release(child)

    def _release(self, child: Child) -> None:
        release(child, self.log, self.pid_dir, remove_dir=self._own_pid_dir)
        self.child = None
        self._poll = None
        if self._own_pid_dir:
            self.pid_dir = ""

    def _discard(self) -> None:
        self.broken = True
        self.kill()

    # -- a run -----------------------------------------------------------------------------------
    def run_bolt(self, tuples: Iterable[InputTuple], tx: Tx | None = None) -> Iterator[Emit]:
        """Stream `tuples` through the bolt; yield each `Emit` it writes (for a batch bolt, its
        finish's emits too). Lazy: nothing happens until iterated. Raises ComponentFailed."""
        self._check_tx(tx)
        return self._each_emit(self._run(iter(tuples), tx))

    def run_bolt_rows(self, tuples: Iterable[InputTuple], tx: Tx | None = None) -> Iterator[Rows]:
        """As `run_bolt`, in batches: `Rows(stream, task, values)` per run of consecutive emits
        to one stream and direct task (task None: not direct), as many as each read brings. The
        cheaper way for a Spark partition (no object per emit); anchors are not given."""
        self._check_tx(tx)
        return self._each_rows(self._run(iter(tuples), tx))

    def _check_tx(self, tx: Tx | None) -> None:
        batch = self.component.batch
        if batch is not None and tx is None:
            raise ValueError(f"{self.name} is a batch {batch}: run_bolt needs the batch's tx")
        if batch is None and tx is not None:
            raise ValueError(f"{self.name} is not a batch component: it takes no tx")

    @staticmethod
    def _each_emit(batches: Iterator[list[Emit | _Plain]]) -> Iterator[Emit]:
        for batch in batches:
            for item in batch:
                if type(item) is _Plain:
                    for values, anchor in zip(item.values, item.anchors):
                        yield _new_tuple(
                            Emit, (values, DEFAULT_STREAM, [anchor], None, False, None)
                        )
                else:
                    yield item  # type: ignore[misc]

    @staticmethod
    def _each_rows(batches: Iterator[list[Emit | _Plain]]) -> Iterator[Rows]:
        for batch in batches:
            rows: Rows | None = None
            for item in batch:
                if type(item) is _Plain:
                    if rows is not None and rows.stream == DEFAULT_STREAM and rows.task is None:
                        rows.values.extend(item.values)
                    else:
                        if rows is not None:
                            yield rows
                        rows = Rows(DEFAULT_STREAM, None, list(item.values))
                else:
                    m: Emit = item  # type: ignore[assignment]
                    if rows is not None and rows.stream == m.stream and rows.task == m.task:
                        rows.values.append(m.values)
                    else:
                        if rows is not None:
                            yield rows
                        rows = Rows(m.stream, m.task, [m.values])
            if rows is not None:
                yield rows

    def _run(self, tuples: Iterator[InputTuple], tx: Tx | None) -> Iterator[list[Emit | _Plain]]:
        if self._busy:
            raise RuntimeError(f"{self.name}: one run at a time")
        self._busy = True
        finished = False
        try:
            if self.child is None or not self.usable:
                if self.child is not None:
                    self.kill()  # it died while idle: a new one takes its place
                self.start()
            self._input = tuples
            if tx is not None:
                self._tx = wire.tx_json(_attempt(tx))
                self._tx_text = f"txid {tx.txid}, attempt {tx.attempt}"
                self._finish_due = tx
            now = self.clock()
            self._pending.start_run(now)
            if self._schedule is not None:
                self._schedule.start(now)
            while True:
                self._turn(self._wait_secs())
                if self._emits:
                    emits, self._emits = self._emits, []
                    yield emits
                if self._done():
                    break
            finished = True
        finally:
            self._busy = False
            self._input = None
            self._tx = None
            if not finished:  # failed, or abandoned half-way (a cancelled Spark task)
                self._discard()

    def _done(self) -> bool:
        return (
            self._input is None
            and self._pending.settled
            and self._finish_due is None
            and not self._urgent
            and self._off >= len(self._out)
        )

    def _wait_secs(self) -> float:
        if self._off < len(self._out) and not self._write_blocked:
            return 0.0
        if self._schedule is not None and self._input is not None:
            return min(HEARTBEAT_SECS / 2, self._schedule.secs_to_next(self.clock()))
        return HEARTBEAT_SECS / 2

    # -- one turn of the loop --------------------------------------------------------------------
    def _turn(self, timeout: float) -> None:
        child = self.child
        assert child is not None and self._poll is not None
        self._write()
        for fd, _ in self._poll.poll(int(timeout * 1000)):
            if fd == child.stdout_fd:
                self._read_stdout(child)
            elif fd == child.stderr_fd:
                self._read_stderr(child)
            elif fd == child.stdin_fd:
                self._write_blocked = False
                self._poll.unregister(fd)
        self._write()
        if self._pid_reply is not None:
            self._clocked()

    def _clocked(self) -> None:
        now = self.clock()
        pending = self._pending
        schedule = self._schedule
        if schedule is not None and self._input is not None and schedule.periodic_due(now):
            self._urgent.append(self._tick())  # ahead of input not yet written, as host local
        if not pending.owing(now):
            return
        if pending.overdue(now):
            doomed = pending.expire_ticks(now)
            if doomed is not None:  # only ticks were owed: forgotten
                self._forgot_ticks(doomed)
                return
            in_flight, ticks = pending.in_flight, pending.ticks
            oldest = next(iter(in_flight.values()), b"")
            self._fail(
                f"no answer for {self.timeout:g}s (topology.message.timeout.secs) with "
                f"{len(in_flight)} tuples in flight"
                + (f" and {len(ticks)} tick tuples" if ticks else "")
                + (" and its finish owed" if pending.finish_id is not None else "")
                + (f"; the oldest: {shorten(oldest, REPORT_BYTES)}" if oldest else "")
            )
        if pending.beat_due(now, self._input is None):
            hid = pending.beat_written(now)
            hb = TupleMessage(str(hid), None, HEARTBEAT_STREAM, SYSTEM_TASK, [])
            self._urgent.append(self.ser.encode(hb))

    # -- writing ---------------------------------------------------------------------------------
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
            fast_values = ujson_dumps if self._fast else None
            quick_values = quick_values_json if self._fast else None
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
            tx_due, self._finish_due = self._finish_due, None
            fid = self._pending.finish_written()
            commit = self.component.batch == "committer"
            parts.append(wire.finish(fid, _attempt(tx_due), commit))
        self._out = b"".join(parts)
        self._off = 0

    def _values(self, comp: str, task: int, values: Any) -> bytes:
        try:
            return self.ser.values(values)
        except EncodeError as exc:
            return self._fail(f"an input tuple from {comp}[{task}] cannot be written: {exc}")

    # -- reading ---------------------------------------------------------------------------------
    def _read_stderr(self, child: Child) -> None:
        if not self.log.read_from(child.stderr_fd):
            assert self._poll is not None
            self._poll.unregister(child.stderr_fd)  # ended: a closed pipe polls ready forever

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
            self._emits.append(_Plain(values, anchors))
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

    # -- the end of a process --------------------------------------------------------------------
    def _exited(self, what: str) -> None:
        child = self.child
        assert child is not None
        status = child.poll()
        if status is None:
            try:
                status = child.popen.wait(EXIT_WAIT_SECS)
            except Exception:  # still running with its stdout closed
                status = None
        self.log.drain(child.stderr_fd)  # a dying task's last words
        in_flight = self._pending.in_flight
        owed = f" with {len(in_flight)} tuples in flight" if in_flight else ""
        self._fail(f"{what}: {describe_exit(status)}{owed}")

    def _fail(self, reason: str, raw: bytes = b"") -> Any:
        """Raise ComponentFailed (the caller's `finally` kills the process)."""
        raise ComponentFailed(
            self.component.id, self.task, self.pid, reason, raw, tuple(self.log.tail)
        )


def _attempt(tx: Tx) -> Attempt:
    """The batch layer's Attempt, for host/batch/wire.py's frames (the same bytes as host local)."""
    return Attempt(tx.txid, tx.attempt, None, False, 0.0)


def _raw(m: Emit) -> bytes:
    return emit_text(m).encode()
