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
the reference. That reading side is host/spark/bolt_output.py's, a base class of the process.

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

import os
import select
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator
from typing import Any, NamedTuple

from host.batch import wire
from host.batch.tracker import Attempt
from host.runtime.context import assign_tasks, build_conf, build_context
from host.runtime.link import REPORT_BYTES
from host.runtime.process import Child, Launcher, child_environment, describe_exit
from host.runtime.router import Router
from host.spark.bolt_input import BoltInput, InputTuple
from host.spark.bolt_output import BoltOutput, PlainEmits
from host.spark.component_failure import ComponentFailed
from host.spark.pending_tuples import HEARTBEAT_SECS, PendingTuples
from host.spark.process_end import end_gently, kill_now, release
from host.spark.shipping import launch_dir
from host.spark.stderr_tags import TaggedLog
from host.spark.ticks import TickSchedule
from host.topology.component_config import component_settings, tick_freq
from host.topology.model import Topology
from multilang import shell_frames as frames
from multilang.codec import (
    EncodeError,
    Framer,
    shorten,
    ujson_dumps,
)
from multilang.messages import (
    DEFAULT_STREAM,
    HEARTBEAT_STREAM,
    SYSTEM_TASK,
    Emit,
    Handshake,
    Pid,
    TupleMessage,
)
from multilang.serializers import serializer

EXIT_WAIT_SECS = 1.0  # after its stdout closed, how long a process has to exit before we say so
_new_tuple = tuple.__new__  # skips Emit's generated __new__ (as multilang.component_decoding)


class Rows(NamedTuple):
    """Consecutive emits of a run to one stream (and one direct task, or None): their values.
    What `run_bolt_rows` yields; emits are in the order the bolt wrote them."""

    stream: str
    task: int | None
    values: list[list[Any]]


class Tx(NamedTuple):
    """A batch attempt, as docs/transactional.md §4.2 writes it: `{"txid": 7, "attempt": 2}`."""

    txid: int
    attempt: int = 1


class ComponentProcess(BoltInput, BoltOutput):
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
        # the handshake's and what is read; what is written may become shell frames (`start`)
        self.base_ser = self.ser = serializer(comp.serializer)
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
        self._emits: list[Emit | PlainEmits] = []  # read and not yet yielded
        self._carry = ""  # the fast path's bytes after the last complete frame, decoded
        self._fast = self.ser.name == "json" and ujson_dumps is not None
        self._fast_write = self._fast  # JSON frames built inline (bolt_input.py `_fill`)
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
        # the finish to write once the input is written: its attempt (host/batch/wire.py's)
        self._finish_due: Attempt | None = None
        self._poll: select.poll | None = None

    def start(self) -> None:
        """Start the process and complete the handshake (ComponentFailed if it does not)."""
        if self.child is not None:
            raise RuntimeError(f"{self.name} is already started")
        comp = self.component
        self.ser = self.base_ser  # whatever its predecessor took: its pid reply decides
        self._reset_process_state()
        self.broken = False
        try:
            if self._own_pid_dir:
                self.pid_dir = tempfile.mkdtemp(prefix=f"multilang-spark-{comp.id}-")
            cwd = launch_dir(comp.cwd)  # a cluster's executor: the shipped copy
            env = child_environment(comp)
            if self.base_ser.name == "json":  # our bash library takes them (as under host local)
                env[frames.OFFER_ENV] = frames.EXT
            child = self.launcher.start(list(comp.command), cwd, env)
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
            shell = frames.taken(self._pid_reply.ext) if self.base_ser.name == "json" else None
            if shell is not None:  # shell-frames/1: from now on it is written bash commands
                self.ser = shell
                self._fast_write = False
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
    def _each_emit(batches: Iterator[list[Emit | PlainEmits]]) -> Iterator[Emit]:
        for batch in batches:
            for item in batch:
                if type(item) is PlainEmits:
                    for values, anchor in zip(item.values, item.anchors):
                        yield _new_tuple(
                            Emit, (values, DEFAULT_STREAM, [anchor], None, False, None)
                        )
                else:
                    yield item  # type: ignore[misc]

    @staticmethod
    def _each_rows(batches: Iterator[list[Emit | PlainEmits]]) -> Iterator[Rows]:
        for batch in batches:
            rows: Rows | None = None
            for item in batch:
                if type(item) is PlainEmits:
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

    def _run(
        self, tuples: Iterator[InputTuple], tx: Tx | None
    ) -> Iterator[list[Emit | PlainEmits]]:
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
                self._finish_due = _attempt(tx)
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

    # -- reading ---------------------------------------------------------------------------------
    def _read_stderr(self, child: Child) -> None:
        if not self.log.read_from(child.stderr_fd):
            assert self._poll is not None
            self._poll.unregister(child.stderr_fd)  # ended: a closed pipe polls ready forever

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
