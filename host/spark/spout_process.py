"""One task of a plain spout (storm.js, pystorm, our clients: any spout without `batch:`) as a
multilang subprocess driven from the Spark driver, for the staged source (host/spark/
staged_spouts.py; docs/spark.md, "Plain spouts").

    spout = SpoutProcess(topology, "sentences", 4)
    spout.start()                           # handshake as `host local` sends it; `activate`
    emits = spout.pump(want_next=True, wait=0.05)   # writes what is due, reads for up to `wait`
    spout.ack(msg_id); spout.fail(msg_id)   # queued, written by a later pump
    spout.close()                           # `deactivate`, then stdin closed, SIGTERM, SIGKILL

The process is started as `host local` starts it (host.runtime.process: its own process group, a
parent-death signal, so the thread that calls `start` must outlive it) and gets the same handshake
(host.runtime.context). Commands go as host/runtime/spout_link.py writes them
(docs/protocol.md §5.1): in lock-step -- one command, then its `sync` -- unless the library
announces `pipeline/1` in its pid reply (or the component's `pipelining` switch, or
`host.spout.pipelining`, says so); then up to `host.spout.next.depth` exchanges are in flight, an
exchange being one `next` or up to `host.spout.ack.batch` `ack` / `fail` commands, and `activate`
/ `deactivate` always go alone. A `next` that emitted nothing is followed by a back-off, doubling
from 1 ms up to `host.spout.idle.max.sleep.ms`.

Whatever breaks the process -- it exits, writes a bad frame, emits to a stream it does not
declare, says nothing for `topology.message.timeout.secs` while a command is outstanding --
raises ComponentFailed; the caller kills it and starts another (the tuples the dead process had
pending can be neither acked nor failed: docs/protocol.md §5.7).
"""

from __future__ import annotations

import logging
import os
import select
import tempfile
import time
from collections import deque
from collections.abc import Callable
from typing import Any

from host.runtime.context import assign_tasks, build_conf, build_context
from host.runtime.idle_backoff import IdleBackoff
from host.runtime.process import Child, Launcher, child_environment, describe_exit
from host.runtime.router import Router
from host.spark.component_process import ComponentFailed
from host.spark.process_end import end_gently, kill_now, release, wait_exit
from host.spark.stderr_tags import LOG_LEVELS, TaggedLog
from host.topology.component_config import component_settings
from host.topology.model import Topology
from multilang.codec import ProtocolError
from multilang.messages import (
    PIPELINE_EXT,
    Ack,
    Emit,
    Error,
    Fail,
    Handshake,
    Log,
    Pid,
    SpoutCommand,
    Sync,
)
from multilang.serializers import serializer

READ_CHUNK = 1 << 18
# a `next` is written ahead of the previous one's sync only while the `next`s in flight are
# expected to emit fewer tuples than this (host/runtime/spout_link.py's AHEAD_TUPLES, same reason)
AHEAD_TUPLES = 200
NEXT, OUTCOME, CONTROL = "next", "outcome", "control"  # what an outstanding command is


class SpoutProcess:
    """One task of a plain spout. Not thread-safe: one thread calls every method (the one that
    started it: the child's parent-death signal is tied to that thread). `clock` is
    injectable."""

    def __init__(
        self,
        topology: Topology,
        component_id: str,
        task_id: int,
        *,
        run_id: str | int = "spark",
        clock: Callable[[], float] = time.monotonic,
        launcher: Launcher | None = None,
    ) -> None:
        comp = topology.component(component_id)
        if not comp.is_spout or comp.batch is not None or not comp.command:
            raise ValueError(f"{component_id!r} is not a plain spout with a command")
        tasks = assign_tasks(topology)
        self.context = build_context(topology, tasks, comp, task_id)
        self.conf = build_conf(topology, comp, run_id)
        self.component = comp
        self.task = task_id
        self.name = f"{comp.id}[{task_id}]"
        settings = component_settings(topology, comp)
        self.timeout = float(settings.message_timeout_secs)
        self.handshake_timeout = float(settings.handshake_timeout_secs)
        self.max_frame = settings.max_frame_bytes
        self.max_pending = settings.max_spout_pending  # None: unlimited
        self.switch = settings.spout_pipelining if comp.pipelining is None else comp.pipelining
        self.pipelined_depth = settings.spout_next_depth
        self.pipelined_ack_batch = settings.spout_ack_batch
        self.backoff = IdleBackoff(settings.spout_idle_max_sleep_secs)
        self.ser = serializer(comp.serializer)
        router = Router(topology, {c: list(t) for c, t in tasks.component_tasks.items()})
        self._choosers = {s: router.chooser(comp.id, s) for s in comp.outputs}
        self.next_frame = self.ser.encode(SpoutCommand("next", ""))
        self.activate_frame = self.ser.encode(SpoutCommand("activate", ""))
        self.deactivate_frame = self.ser.encode(SpoutCommand("deactivate", ""))
        self.clock = clock
        self.launcher = launcher or Launcher()
        self.log = TaggedLog(comp.id, task_id)
        self.child: Child | None = None
        self.generation = 0  # counts processes: message ids belong to one of them
        self.pid_dir = ""
        self._reset()

    def _reset(self) -> None:
        self.pipelined = False
        self.next_depth = self.ack_batch = 1  # lock-step until the pid reply says otherwise
        self.commands: deque[tuple[str, bytes]] = deque()  # queued, not yet written
        self.outstanding: deque[str] = deque()  # written, waiting for their syncs, oldest first
        self.nexts_out = self.outcomes_out = 0
        self._out = b""  # bytes to write, from _off on
        self._off = 0
        self._emitted = 0  # emits since the oldest outstanding command was written
        self._per_next = 0  # what the last `next` that emitted emitted
        self.backoff.reset()
        self._next_at = 0.0
        self._heard_at = 0.0
        self._stderr_open = False  # polled until it ends (a closed pipe polls ready forever)
        self._pid_reply: Pid | None = None
        self._emits: list[Emit] = []

    # -- the process -----------------------------------------------------------------------------
    @property
    def pid(self) -> int | None:
        return None if self.child is None else self.child.pid

    def start(self) -> None:
        """Start the process, send the handshake, wait for its pid reply (ComponentFailed if it
        does not come within `host.handshake.timeout.secs`), queue `activate`."""
        if self.child is not None:
            raise RuntimeError(f"{self.name} is already started")
        comp = self.component
        self._reset()
        self.pid_dir = tempfile.mkdtemp(prefix=f"multilang-spark-{comp.id}-")
        try:
            child = self.launcher.start(list(comp.command), comp.cwd, child_environment(comp))
        except OSError as exc:
            os.rmdir(self.pid_dir)
            raise ComponentFailed(
                comp.id, self.task, None, f"cannot start {list(comp.command)!r}: {exc}"
            ) from None
        self.child = child
        self._stderr_open = True
        self.generation += 1
        self.log.new_process(child.pid)
        self.decoder = self.ser.decoder(self.max_frame)
        handshake = Handshake(self.pid_dir, self.conf, self.ser.handshake_context(self.context))
        self._write(self.ser.encode(handshake))
        deadline = self.clock() + self.handshake_timeout
        try:
            while self._pid_reply is None:
                left = deadline - self.clock()
                if left <= 0:
                    self._fail(f"no pid reply within {self.handshake_timeout:g}s of the handshake")
                self._turn(min(left, 1.0), awaiting_pid=True)
        except BaseException:
            self.kill()
            raise
        # `pipeline/1` in the pid reply, unless the component's switch says otherwise (as
        # SpoutLink.negotiate decides under `host local`)
        on = PIPELINE_EXT in self._pid_reply.ext if self.switch is None else self.switch
        if on:
            self.pipelined = True
            self.next_depth, self.ack_batch = self.pipelined_depth, self.pipelined_ack_batch
        if comp.activate:
            self.commands.appendleft((CONTROL, self.activate_frame))

    def kill(self) -> None:
        """SIGKILL the process group at once and release the pipes."""
        child = self.child
        if child is None:
            return
        kill_now(child)
        self._release(child)

    def close(self, grace: float = 2.0) -> None:
        """`deactivate` (if it takes it) once what is in flight is answered, then stdin closed,
        SIGTERM, SIGKILL, `grace` seconds each (docs/protocol.md §4.10). Whatever it emits
        meanwhile is dropped: call `pump` until `idle` first to keep it."""
        child = self.child
        if child is None:
            return
        try:
            if self.component.activate:
                self.commands = deque([(CONTROL, self.deactivate_frame)])
                deadline = self.clock() + grace
                while (self.commands or self.outstanding) and self.clock() < deadline:
                    self.pump(False, min(0.1, max(0.0, deadline - self.clock())))
        except ComponentFailed:
            pass  # it is going anyway
        end_gently(child, grace)
        self._release(child)

    def _release(self, child: Child) -> None:
        release(child, self.log, self.pid_dir, remove_dir=True)
        self.child = None

    # -- commands --------------------------------------------------------------------------------
    def ack(self, msg_id: Any) -> None:
        self.commands.append((OUTCOME, self.ser.spout_command("ack", msg_id)))

    def fail(self, msg_id: Any) -> None:
        self.commands.append((OUTCOME, self.ser.spout_command("fail", msg_id)))

    @property
    def idle(self) -> bool:
        """Nothing queued, nothing waiting for a sync."""
        return not self.commands and not self.outstanding

    def pump(self, want_next: bool, wait: float) -> list[Emit]:
        """Write the commands that are due (`next`s only while `want_next`), then read for up to
        `wait` seconds (less when an idle back-off ends sooner). The emits read, in order."""
        if self.child is None:
            raise RuntimeError(f"{self.name} is not started")
        self._write_due(want_next)
        if want_next and not self.outstanding and not self.commands:
            wait = min(wait, max(0.0, self._next_at - self.clock()))
        self._turn(wait)
        self._write_due(want_next)
        emits, self._emits = self._emits, []
        return emits

    def _write_due(self, want_next: bool) -> None:
        out, commands = self.outstanding, self.commands
        if out and out[0] == CONTROL:
            return  # written alone: nothing else until its sync
        was_idle = not out
        if commands and commands[0][0] == CONTROL:
            if not out:
                kind, frame = commands.popleft()
                self._send(kind, frame)
            return
        if commands and not self.outcomes_out and self.nexts_out < self.next_depth:
            if not (out and not self.pipelined):
                n = 0
                while commands and commands[0][0] == OUTCOME and n < self.ack_batch:
                    kind, frame = commands.popleft()
                    self._send(kind, frame)
                    self.outcomes_out += 1
                    n += 1
        while (
            want_next
            and not commands
            and self.nexts_out + (1 if self.outcomes_out else 0) < self.next_depth
            and self.nexts_out < self.backoff.window
            and (self.pipelined or not out)
            and (not self.nexts_out or 0 < self.nexts_out * self._per_next < AHEAD_TUPLES)
            and self.clock() >= self._next_at
        ):
            self._send(NEXT, self.next_frame)
            self.nexts_out += 1
            self.backoff.wrote()
        if was_idle and out:
            self._emitted = 0
            self._heard_at = self.clock()

    def _send(self, kind: str, frame: bytes) -> None:
        self.outstanding.append(kind)
        self._write(frame)

    def _write(self, data: bytes) -> None:
        if self._off:
            self._out = self._out[self._off :]
            self._off = 0
        self._out += data
        self._flush()

    def _flush(self) -> None:
        child = self.child
        assert child is not None
        while self._off < len(self._out):
            try:
                n = os.write(child.stdin_fd, memoryview(self._out)[self._off :])
            except BlockingIOError:
                return
            except (BrokenPipeError, ConnectionResetError):
                self._exited("its stdin closed")
            self._off += n
        self._out, self._off = b"", 0

    # -- reading ---------------------------------------------------------------------------------
    def _turn(self, wait: float, awaiting_pid: bool = False) -> None:
        child = self.child
        assert child is not None
        if self.outstanding and self.clock() - self._heard_at > self.timeout:
            self._fail(f"no sync within {self.timeout:g}s of its command")
        poll = select.poll()
        poll.register(child.stdout_fd, select.POLLIN)
        if self._stderr_open:
            poll.register(child.stderr_fd, select.POLLIN)
        if self._off < len(self._out):
            poll.register(child.stdin_fd, select.POLLOUT)
        for fd, _ in poll.poll(int(max(0.0, wait) * 1000)):
            if fd == child.stdin_fd:
                self._flush()
            elif fd == child.stderr_fd:
                self._stderr_open = self.log.read_from(fd)
            elif fd == child.stdout_fd:
                data = os.read(child.stdout_fd, READ_CHUNK)
                if not data:
                    self._exited("its stdout closed")
                self._heard_at = self.clock()
                try:
                    messages = self.decoder.feed(data)
                except ProtocolError as exc:
                    self._fail(f"protocol error: {exc.reason}", exc.raw)
                for m in messages:
                    self._handle(m)

    def _handle(self, m: Any) -> None:
        typ = type(m)
        if typ is Emit:
            self._on_emit(m)
        elif typ is Sync:
            self._synced()
        elif typ is Pid:
            self._pid_reply = m
        elif typ is Log:
            self.log.line(LOG_LEVELS.get(m.level, logging.INFO), m.msg)
        elif typ is Error:
            self.log.line(logging.ERROR, f"error: {m.msg}")
        elif typ is Ack or typ is Fail:
            self._fail(f"a spout may not send `{typ.__name__.lower()}` (docs/protocol.md §5.2)")
        # metrics and other commands are ignored, as host local ignores them

    def _on_emit(self, m: Emit) -> None:
        comp = self.component
        fields = comp.outputs.get(m.stream)
        if fields is None:
            self._fail(f"emit to stream {m.stream!r}, which it does not declare")
            return
        if len(m.values) != len(fields):
            self._fail(
                f"emit of {len(m.values)} values to stream {m.stream!r}, which declares "
                f"{len(fields)} fields"
            )
        if m.task is None and m.need_task_ids:
            self._write(self.ser.task_ids(list(self._choosers[m.stream](m.values))))
        self._emits.append(m)
        self._emitted += 1

    def _synced(self) -> None:
        if not self.outstanding:
            return  # a stray sync: nothing to end
        kind = self.outstanding.popleft()
        now = self.clock()
        self._heard_at = now
        if kind == NEXT:
            self.nexts_out -= 1
            if self._emitted:
                self._per_next = self._emitted
            # the back-off learns of every answered `next`: an empty one delays the next ask
            # (docs/protocol.md §5.1), an emitting one ends the wait
            again = self.backoff.synced(self._emitted > 0, now)
            if again is not None:
                self._next_at = again
        elif kind == OUTCOME:
            self.outcomes_out -= 1
        self._emitted = 0

    def _exited(self, what: str) -> Any:
        child = self.child
        assert child is not None
        status = child.poll()
        if status is None and wait_exit(child, 1.0):
            status = child.exit_status
        self.log.drain(child.stderr_fd)
        self._fail(f"{what}: {describe_exit(status)}")

    def _fail(self, reason: str, raw: bytes = b"") -> Any:
        raise ComponentFailed(
            self.component.id, self.task, self.pid, reason, raw, tuple(self.log.tail)
        )
