"""One task of a transactional batch spout as a multilang subprocess, driven from the Spark driver
(its coordinator's `batch_init`, every task's `batch_commit`) or from an executor partition (its
`batch_emit`): docs/transactional.md §4.3, docs/spark.md §4.

    spout = BatchSpoutProcess(topology, "lines", 4, committed_txid=7)
    answer = spout.init(8, prev_meta)          # None: not ready; else InitAnswer(meta, txid)
    for emit in spout.emit(Tx(8, 1), meta, task_meta=None, prev_task_meta=..., committed=7):
        ...
    spout.reported                             # its `batch_meta` for the txid, or NO_META
    spout.commit(Tx(8, 1))

The process is started as `host local` starts it (host.runtime.process: its own process group, a
parent-death signal) and gets the same handshake, with the `batch` context of role `spout`.
The commands go one at a time, each answered by `sync` (lock-step, as host/batch/spout_link.py):
a batch spout has no `next`, so there is nothing to pipeline. Emits that want task ids are
answered with the local router's choice (the ids are what `host local` would answer; on Spark the
tuple goes where the plan's exchange sends it).

Whatever breaks a command -- the process exiting, a bad frame, no `sync` within
`topology.message.timeout.secs`, an emit outside `batch_emit`, a command abandoned half-way (a
cancelled Spark task) -- raises ComponentFailed (host.spark.component_process) and kills the
process: a batch spout whose state is unknown is never asked again; the next command starts a new
one. `shared_spout` keeps one per task in this Python process, across micro-batches.
"""

from __future__ import annotations

import atexit
import logging
import os
import select
import tempfile
import time
from collections.abc import Callable, Iterator
from typing import Any, NamedTuple

from host.batch import wire
from host.batch.tracker import Attempt
from host.runtime.context import assign_tasks, build_conf, build_context
from host.runtime.process import Child, Launcher, child_environment, describe_exit
from host.runtime.router import Router
from host.spark.component_process import ComponentFailed, Tx
from host.spark.process_end import end_gently, kill_now, release
from host.spark.shipping import launch_dir
from host.spark.stderr_tags import LOG_LEVELS, TaggedLog
from host.topology.component_config import component_settings
from host.topology.model import BATCH_SPOUT, Topology
from multilang.codec import ProtocolError
from multilang.messages import BATCH_EXT, Emit, Error, Handshake, Log, Pid, Sync, UnknownCommand
from multilang.serializers import serializer

READ_CHUNK = 1 << 18
NO_META: Any = object()  # the task reported no `batch_meta` for the txid


class InitAnswer(NamedTuple):
    """The coordinator's `batch_meta` for a `batch_init`: the metadata, and the txid it numbered
    the batch with when it numbers its batches itself (None otherwise)."""

    meta: Any
    txid: int | None


class BatchSpoutProcess:
    """One task of a `batch: spout`, as a process that lives across commands until one breaks
    or it is closed. Not thread-safe; one command at a time. `clock` is injectable."""

    def __init__(
        self,
        topology: Topology,
        component_id: str,
        task_id: int,
        *,
        committed_txid: int = 0,
        run_id: str | int = "spark",
        clock: Callable[[], float] = time.monotonic,
        launcher: Launcher | None = None,
    ) -> None:
        comp = topology.component(component_id)
        if comp.batch != BATCH_SPOUT or not comp.command:
            raise ValueError(f"{component_id!r} is not a batch spout with a command")
        tasks = assign_tasks(topology)
        self.context = build_context(topology, tasks, comp, task_id)
        self.context["batch"] = {
            "protocol": 1,
            "role": BATCH_SPOUT,
            "transactional_id": topology.transactional_id,
            "committed_txid": committed_txid,
        }
        self.conf = build_conf(topology, comp, run_id)
        self.component = comp
        self.task = task_id
        self.name = f"{comp.id}[{task_id}]"
        settings = component_settings(topology, comp)
        self.timeout = float(settings.message_timeout_secs)
        self.handshake_timeout = float(settings.handshake_timeout_secs)
        self.max_frame = settings.max_frame_bytes
        self.ser = serializer(comp.serializer)
        router = Router(topology, {c: list(t) for c, t in tasks.component_tasks.items()})
        self._choosers = {s: router.chooser(comp.id, s) for s in comp.outputs}
        self.clock = clock
        self.launcher = launcher or Launcher()
        self.log = TaggedLog(comp.id, task_id)
        self.child: Child | None = None
        self.pid_dir = ""
        self.reported: Any = NO_META
        self._pid_reply: Pid | None = None
        self._emitting = False

    @property
    def pid(self) -> int | None:
        return None if self.child is None else self.child.pid

    @property
    def usable(self) -> bool:
        return self.child is not None and self.child.poll() is None

    # -- the commands ----------------------------------------------------------------------------
    def init(self, txid: int, prev_meta: Any) -> InitAnswer | None:
        """`batch_init` (the coordinator, task index 0): the next batch's metadata, or None when
        the spout is not ready (a bare `sync`)."""
        self.reported = NO_META
        for _ in self._command(wire.batch_init(txid, prev_meta), "batch_init"):
            pass
        if self.reported is NO_META:
            return None
        raw = self.reported
        numbered = raw.get("txid")
        if numbered is not None and type(numbered) is not int:
            self._fail(f"`txid` in its `batch_meta` is not an integer: {numbered!r}")
        return InitAnswer(raw.get("meta"), numbered)

    def emit(
        self,
        tx: Tx,
        meta: Any,
        task_meta: Any,
        prev_task_meta: Any,
        committed: int,
        replay: bool = False,
    ) -> Iterator[Emit]:
        """`batch_emit`: yields the task's emits as they come. Afterwards `reported` holds its
        `batch_meta` for the txid (NO_META when it sent none). Lazy: nothing is written until
        iterated; abandoning the iterator half-way kills the process."""
        attempt = Attempt(tx.txid, tx.attempt, meta, replay, 0.0)
        frame = wire.batch_emit(attempt, task_meta, prev_task_meta, committed)
        return self._emit_run(frame)

    def _emit_run(self, frame: bytes) -> Iterator[Emit]:
        self.reported = NO_META
        self._emitting = True
        try:
            yield from self._command(frame, "batch_emit")
        finally:
            self._emitting = False
        if self.reported is not NO_META:
            self.reported = self.reported.get("meta")

    def commit(self, tx: Tx) -> None:
        """`batch_commit`: the batch is stored by every committer (opaque spouts advance their
        committed position here)."""
        attempt = Attempt(tx.txid, tx.attempt, None, False, 0.0)
        for _ in self._command(wire.batch_commit(attempt), "batch_commit"):
            pass

    # -- the process -----------------------------------------------------------------------------
    def start(self) -> None:
        comp = self.component
        self.pid_dir = tempfile.mkdtemp(prefix=f"multilang-spark-{comp.id}-")
        try:
            cwd = launch_dir(comp.cwd)  # a cluster's executor: the shipped copy
            child = self.launcher.start(list(comp.command), cwd, child_environment(comp))
        except OSError as exc:
            os.rmdir(self.pid_dir)
            raise ComponentFailed(
                comp.id, self.task, None, f"cannot start {list(comp.command)!r}: {exc}"
            ) from None
        self.child = child
        self.log.new_process(child.pid)
        self.decoder = self.ser.decoder(self.max_frame)
        self._pid_reply = None
        handshake = Handshake(self.pid_dir, self.conf, self.ser.handshake_context(self.context))
        try:
            for _ in self._exchange(self.ser.encode(handshake), self.handshake_timeout, "pid"):
                pass
        except BaseException:
            self.kill()
            raise

    def kill(self) -> None:
        """SIGKILL the process group at once and release the pipes."""
        child = self.child
        if child is None:
            return
        kill_now(child)
        self._release(child)

    def close(self, grace: float = 1.0) -> None:
        """stdin closed, then SIGTERM, then SIGKILL, `grace` seconds each."""
        child = self.child
        if child is None:
            return
        end_gently(child, grace)
        self._release(child)

    def _release(self, child: Child) -> None:
        release(child, self.log, self.pid_dir, remove_dir=True)
        self.child = None

    # -- one command, in lock-step ---------------------------------------------------------------
    def _command(self, frame: bytes, what: str) -> Iterator[Emit]:
        if self.child is None or not self.usable:
            self.kill()
            self.start()
        done = False
        try:
            yield from self._exchange(frame, self.timeout, what)
            done = True
        finally:
            if not done:  # failed or abandoned half-way: its state is unknown
                self.kill()

    def _exchange(self, frame: bytes, timeout: float, what: str) -> Iterator[Emit]:
        """Write `frame`, then read until its answer: the pid reply for the handshake, `sync` for
        a command. Yields emits. `timeout` counts from the last message read."""
        child = self.child
        assert child is not None
        out = memoryview(frame)
        poll = select.poll()
        poll.register(child.stdout_fd, select.POLLIN)
        poll.register(child.stderr_fd, select.POLLIN)
        stdin_registered = False
        deadline = self.clock() + timeout
        answered = False
        while not answered:
            if out:
                try:
                    out = out[os.write(child.stdin_fd, out) :]
                except BlockingIOError:
                    pass
                except (BrokenPipeError, ConnectionResetError):
                    self._exited(f"its stdin closed during {what}")
                if out and not stdin_registered:
                    poll.register(child.stdin_fd, select.POLLOUT)
                    stdin_registered = True
                elif not out and stdin_registered:
                    poll.unregister(child.stdin_fd)
                    stdin_registered = False
            left = deadline - self.clock()
            if left <= 0:
                self._fail(f"no answer to {what} within {timeout:g}s")
            for fd, _ in poll.poll(int(min(left, 1.0) * 1000) + 1):
                if fd == child.stderr_fd and not self.log.read_from(fd):
                    poll.unregister(fd)  # a closed pipe polls ready forever
                elif fd == child.stdout_fd:
                    data = os.read(child.stdout_fd, READ_CHUNK)
                    if not data:
                        self._exited(f"its stdout closed during {what}")
                    deadline = self.clock() + timeout
                    try:
                        messages = self.decoder.feed(data)
                    except ProtocolError as exc:
                        self._fail(f"protocol error: {exc.reason}", exc.raw)
                    for m in messages:
                        if isinstance(m, Emit):
                            reply = self._on_emit(m, what)
                            if reply:
                                out = memoryview(bytes(out) + reply)
                            yield m
                        elif isinstance(m, Sync):
                            if what != "pid":
                                answered = True
                        elif isinstance(m, Pid):
                            self._on_pid(m)
                            answered = what == "pid"
                        elif isinstance(m, UnknownCommand) and m.command == "batch_meta":
                            if what not in ("batch_init", "batch_emit") or "meta" not in m.raw:
                                self._fail(f"a `batch_meta` it may not send now ({what})")
                            self.reported = m.raw
                        elif isinstance(m, Log):
                            self.log.line(LOG_LEVELS.get(m.level, logging.INFO), m.msg)
                        elif isinstance(m, Error):
                            self.log.line(logging.ERROR, f"error: {m.msg}")
                        # metrics and anything else are ignored, as host local ignores them

    def _on_emit(self, m: Emit, what: str) -> bytes:
        """Checks a spout emit; the task-id reply it wants, if any."""
        if what != "batch_emit":
            self._fail(f"it emitted during {what} (a batch spout emits only in batch_emit)")
        if m.id is not None:
            self._fail("a batch spout's emits carry no message id (docs/transactional.md §4.3)")
        choose = self._choosers.get(m.stream)
        if choose is None:
            return self._fail(f"emit to stream {m.stream!r}, which it does not declare")
        fields = self.component.outputs[m.stream]
        if len(m.values) != len(fields):
            self._fail(
                f"emit of {len(m.values)} values to stream {m.stream!r}, which declares "
                f"{len(fields)} fields"
            )
        if m.task is not None or not m.need_task_ids:
            return b""
        return self.ser.task_ids(list(choose(m.values)))

    def _on_pid(self, reply: Pid) -> None:
        if BATCH_EXT not in reply.ext:
            self._fail(
                f"it is declared `batch: spout`, and its library did not announce the "
                f"{BATCH_EXT} extension in its pid reply (docs/transactional.md §4)"
            )
        self._pid_reply = reply

    def _exited(self, what: str) -> Any:
        child = self.child
        assert child is not None
        try:
            status = child.popen.wait(1.0)
        except Exception:
            status = None
        self.log.drain(child.stderr_fd)
        self._fail(f"{what}: {describe_exit(status)}")

    def _fail(self, reason: str, raw: bytes = b"") -> Any:
        raise ComponentFailed(
            self.component.id, self.task, self.pid, reason, raw, tuple(self.log.tail)
        )


# ---- one process per task, kept across micro-batches in this Python process ----------------------

_spouts: dict[tuple[int, str, int], BatchSpoutProcess] = {}
_owner = os.getpid()
_registered = False


def shared_spout(
    topology: Topology, component_id: str, task_id: int, **options: Any
) -> BatchSpoutProcess:
    """This Python process's BatchSpoutProcess for the task (Spark reuses its Python workers, so
    a spout task's process serves several micro-batches). `options` apply when one is made."""
    global _owner, _registered
    if os.getpid() != _owner:  # a forked worker: the parent's processes are not ours
        _owner = os.getpid()
        _spouts.clear()
        _registered = False
    if not _registered:
        _registered = True
        atexit.register(_close_at_exit)
    key = (hash(repr(topology)), component_id, task_id)
    spout = _spouts.get(key)
    if spout is None:
        spout = _spouts[key] = BatchSpoutProcess(topology, component_id, task_id, **options)
    return spout


def close_spouts() -> None:
    """End every spout process this Python process started."""
    spouts = list(_spouts.values())
    _spouts.clear()
    for s in spouts:
        s.close()


def _close_at_exit() -> None:
    if os.getpid() == _owner:
        close_spouts()
