"""Supervision: starting each task's process, the handshake, reading what it writes, noticing that
it broke (exit, bad bytes, silence while it owes an answer, a broken pipe), the failure report,
restarting it with back-off, and stopping a task's process at the end of the run (the phases: host/runtime/supervisor.py).

Nothing here waits: an exit is learnt from the child's exit descriptor, grace periods and back-off
are deadlines. What a task may be in is `Lifecycle`'s table; whether it is restarted is
`RestartPolicy`'s decision.
"""

from __future__ import annotations

import logging
import os
import signal
from collections import deque
from collections.abc import Callable
from typing import Any

from host.observe.observations import Observations
from host.runtime.bolt_link import BoltLink
from host.runtime.data_path import DataPath
from host.runtime.lifecycle import State
from host.runtime.link import REPORT_BYTES, Fault, Link, wrote_text
from host.runtime.loop import EventLoop
from host.runtime.process import Child, Launcher, child_environment, describe_exit
from host.runtime.reaping import reap
from host.runtime.spout_link import SpoutLink
from host.runtime.task import Task
from host.topology.settings import Settings
from multilang import shell_frames
from multilang.codec import EncodeError, ProtocolError, shorten
from multilang.messages import BATCH_EXT, Handshake, Pid

log = logging.getLogger("host")

READ_CHUNK = 1 << 18
PRE_PID_MESSAGES = 1000  # messages a starting task may write before its pid reply (kept)
EXIT_WAIT_SECS = 0.2  # after its stdout closed, how long a process has to exit before we say so
STRICT_SYNC_SECS = 2.0  # --strict: a spout this long without `sync` is reported
STARTED_PIDS_KEPT = 1000  # for tests and tools that check that none outlives the run


class Supervision:
    def __init__(
        self,
        loop: EventLoop,
        path: DataPath,
        settings: Settings,
        observe: Observations,
        launcher: Launcher,
    ) -> None:
        self.loop = loop
        self.path = path
        self.settings = settings
        self.observe = observe
        self.launcher = launcher
        self.pid_dir = ""
        self.stopping = False  # the run is ending: nothing is restarted
        self.failure: str | None = None  # a task restarted too often: the run fails
        self.on_failure: Callable[[str], None] = lambda why: None
        self.is_paused: Callable[[Link], bool] = lambda link: False  # by backpressure
        self.started_pids: deque[int] = deque(maxlen=STARTED_PIDS_KEPT)
        self.on_stopping_exit: Callable[[Task], None] = lambda task: None  # see shutdown.py

    # -- starting --------------------------------------------------------------------------------
    def start(self, task: Task) -> None:
        link = task.link
        env = child_environment(link.component)
        if link.base_ser.name == "json":  # our bash library may take them (`_on_pid`)
            env[shell_frames.OFFER_ENV] = shell_frames.EXT
        try:
            child = self.launcher.start(list(link.component.command), link.component.cwd, env)
        except OSError as exc:
            task.lifecycle.to(State.STARTING)
            self.fault(task, f"cannot start {list(link.component.command)!r}: {exc}")
            return
        task.child = child
        self.started_pids.append(child.pid)
        task.lifecycle.to(State.STARTING)
        task.decoder = link.base_ser.decoder(self.settings.max_frame_bytes)
        task.pre_pid = []
        link.attach(child.stdin_fd)
        link.log.new_process(child.pid)
        self.loop.watch_read(child.stdout_fd, lambda: self.on_stdout(task))
        self.loop.watch_read(child.stderr_fd, lambda: self.on_stderr(task))
        if child.exit_fd is not None:
            self.loop.watch_read(child.exit_fd, lambda: self.on_exit(task))
        task.reading = True
        task.writing = False
        self.loop.deadlines.at(
            ("handshake", link.task),
            self.loop.now + self.settings.handshake_timeout_secs,
            lambda: self._handshake_overdue(task),
        )
        try:
            ser = link.base_ser  # whatever its predecessor took: its pid reply decides
            link.write(
                ser.encode(Handshake(self.pid_dir, task.conf, ser.handshake_context(task.context)))
            )
        except EncodeError as exc:
            self.fault(task, f"the handshake cannot be encoded: {exc}")

    def _handshake_overdue(self, task: Task) -> None:
        if task.state is State.STARTING:
            self.fault(
                task,
                f"no pid reply within {self.settings.handshake_timeout_secs:g}s of the handshake",
            )

    def _on_pid(self, task: Task, reply: Pid) -> None:
        link = task.link
        batches = self.path.batches
        if link.component.batch is not None and BATCH_EXT not in reply.ext:
            self.refuse(
                task,
                f"it is declared `batch: {link.component.batch}`, and its library did not "
                f"announce the {BATCH_EXT} extension in its pid reply ({reply.ext or 'none'}): "
                "it cannot take part in transactional batches (docs/transactional.md §4)",
            )
            return
        # shell-frames/1 (multilang/shell_frames.py): from now on it is written bash commands
        frames = shell_frames.taken(reply.ext) if link.base_ser.name == "json" else None
        ser = link.base_ser if frames is None else frames
        if not link.use_serializer(ser):
            self.refuse(
                task,
                f"its previous process took {shell_frames.EXT} and this one did not "
                f"({reply.ext or 'none'}): what is queued for it is written for the former",
            )
            return
        task.lifecycle.to(State.RUNNING)
        self.loop.deadlines.cancel(("handshake", link.task))
        link.running = True
        link.await_since = None  # the handshake is answered
        log.debug("%s pid=%s: handshake done", link.name, link.log.pid)
        if isinstance(link, SpoutLink):
            link.negotiate(reply.ext)
            link.activate()
        else:
            link.refill()
            if link.tick_freq:
                self._schedule_tick(task)
        if self.is_paused(link):
            self.set_reading(task, False)  # started while its downstream was full
        if batches is not None:
            batches.task_ready(link)
        early, task.pre_pid = task.pre_pid, []
        for m in early:
            self._handle_one(task, m)

    def _schedule_tick(self, task: Task) -> None:
        link = task.link
        assert isinstance(link, BoltLink) and link.tick_freq

        def tick() -> None:
            if task.state is State.RUNNING:
                link.tick()
                self._schedule_tick(task)

        self.loop.deadlines.at(("tick", link.task), self.loop.now + link.tick_freq, tick)

    # -- reading ---------------------------------------------------------------------------------
    def on_stdout(self, task: Task) -> None:
        child = task.child
        assert child is not None
        try:
            data = os.read(child.stdout_fd, READ_CHUNK)
        except BlockingIOError:
            return
        except OSError as exc:
            self.fault(task, f"reading its stdout failed: {exc}")
            return
        if not data:
            self._stdout_closed(task)
            return
        self._feed(task, data)

    def _feed(self, task: Task, data: bytes) -> None:
        link = task.link
        link.last_received = data  # a reference, not a copy: failure reports show its tail
        try:
            messages = task.decoder.feed(data)
        except ProtocolError as exc:
            task.batch = exc.decoded
            try:
                for m in exc.decoded:
                    self._handle_one(task, m)
            except Fault as fault:
                self._fault_on(task, fault)
                return
            finally:
                task.batch = ()
            self.fault(task, f"protocol error: {exc.reason}", exc.raw)
            return
        task.batch = messages
        try:
            if link.running:
                link.handle(messages)
            else:
                for m in messages:
                    self._handle_one(task, m)
        except Fault as fault:
            self._fault_on(task, fault)
        finally:
            task.batch = ()

    def _fault_on(self, task: Task, fault: Fault) -> None:
        """A message broke the rules: the report shows the bytes it was, when still at hand."""
        raw = task.raw_of(fault.message) if fault.message is not None else None
        self.fault(task, fault.reason, fault.raw if raw is None else raw)

    def _handle_one(self, task: Task, m: Any) -> None:
        """One message off the data path: before the pid reply, or replayed after it."""
        state = task.state
        if state is State.STARTING:
            if type(m) is Pid:
                self._on_pid(task, m)
            elif len(task.pre_pid) >= PRE_PID_MESSAGES:  # kept until the pid: bound them
                raise Fault(
                    f"wrote more than {PRE_PID_MESSAGES} messages before its pid reply", message=m
                )
            else:
                task.pre_pid.append(m)
        elif state is State.RUNNING:
            task.link.handle((m,))
        # otherwise the task faulted on an earlier message of the same read: drop the rest

    def _stdout_closed(self, task: Task) -> None:
        """Its stdout closed: it exited, or is exiting, or closed stdout while running; either
        way it cannot talk to us. Give it a moment to exit, so the report can say how."""
        child = task.child
        assert child is not None
        self.loop.unwatch(child.stdout_fd)
        task.reading = False
        if child.poll() is not None:
            self.fault(task, "exited")
        elif child.exit_fd is None or not self.loop.watching(child.exit_fd):
            self.fault(task, "closed its stdout")
        else:  # on_exit, or this deadline, decides
            self.loop.deadlines.at(
                ("eof", task.link.task),
                self.loop.now + EXIT_WAIT_SECS,
                lambda: self._still_running_after_eof(task, child),
            )

    def _still_running_after_eof(self, task: Task, child: Child) -> None:
        if task.child is child and task.lifecycle.alive:
            self.fault(task, "exited" if child.poll() is not None else "closed its stdout")

    def on_exit(self, task: Task) -> None:
        """Its process exited (the exit descriptor is readable)."""
        child = task.child
        assert child is not None
        child.poll()
        if task.state is State.STOPPING:
            self.on_stopping_exit(task)
            return
        if task.reading:  # what it wrote before it exited comes first
            self._read_rest(task, child)
            if task.child is not child or not task.lifecycle.alive:
                return  # it faulted on what it wrote
        self.fault(task, "exited")

    def _read_rest(self, task: Task, child: Child) -> None:
        while task.child is child and task.lifecycle.alive:
            try:
                data = os.read(child.stdout_fd, READ_CHUNK)
            except OSError:
                return
            if not data:
                return
            self._feed(task, data)

    def on_stderr(self, task: Task) -> None:
        child = task.child
        assert child is not None
        try:
            data = os.read(child.stderr_fd, READ_CHUNK)
        except BlockingIOError:
            return
        except OSError:
            data = b""
        if not data:
            self.loop.unwatch(child.stderr_fd)
            return
        task.link.log.stderr(data, self.loop.now)

    def drain_stderr(self, task: Task, limit: int = 1 << 20) -> None:
        """What a dying task wrote to stderr (its traceback belongs in the report)."""
        child = task.child
        if child is None:
            return
        read = 0
        while read < limit:
            try:
                data = os.read(child.stderr_fd, READ_CHUNK)
            except OSError:
                return
            if not data:
                return
            read += len(data)
            task.link.log.stderr_unlimited(data)

    # -- writing ---------------------------------------------------------------------------------
    def flush(self, task: Task) -> None:
        link = task.link
        if not link.is_spout and link.await_since is None and link.running:
            link.await_since = self.loop.now  # it owes us an answer (an ack, a heartbeat's sync)
        try:
            done = link.flush()
        except OSError as exc:
            self.fault(task, f"writing to its stdin failed: {exc}")
            return
        if done:
            if task.writing:
                self.loop.unwatch(link.stdin_fd)
                task.writing = False
        elif not task.writing and link.stdin_fd is not None:  # full pipe: write when it drains
            self.loop.watch_write(link.stdin_fd, lambda: self.flush(task))
            task.writing = True

    # -- backpressure ----------------------------------------------------------------------------
    def set_reading(self, task: Task, on: bool) -> None:
        """Pause (or resume) reading a task's stdout. A paused spout gets no `next` either, and
        its ack / fail commands wait (bounded by its pending tuples); pausing its stdout too
        bounds what one `next` that emits a huge batch can make us hold."""
        child = task.child
        if child is None or not task.lifecycle.alive or on == task.reading:
            return
        if not on and task.state is State.STARTING:
            return  # its pid reply must get through; it is paused once running (_on_pid)
        if on:
            self.loop.watch_read(child.stdout_fd, lambda: self.on_stdout(task))
            if task.link.await_since is not None:
                task.link.await_since = self.loop.now  # time paused by us is not its silence
        else:
            self.loop.unwatch(child.stdout_fd)
        task.reading = on

    # -- liveness --------------------------------------------------------------------------------
    def check(self, task: Task, now: float, strict: bool) -> None:
        """The once-a-second liveness check of a running task."""
        link = task.link
        if (
            strict
            and isinstance(link, SpoutLink)
            and link.outstanding
            and not link.sync_reported
            and now - link.command_at > STRICT_SYNC_SECS
        ):
            link.sync_reported = True
            link.misuse(
                Fault(
                    f"no sync {now - link.command_at:.1f}s after a command "
                    f"({link.emitted_in_exchange} emits since): every command must "
                    "end with sync"
                )
            )
        timeout = self.settings.subprocess_timeout_secs
        if link.await_since is not None and task.reading and now - link.await_since > timeout:
            self.fault(
                task,
                f"hung: silent for {now - link.await_since:.1f}s while it owed an "
                f"answer (topology.subprocess.timeout.secs={timeout:g})",
            )

    # -- faults ----------------------------------------------------------------------------------
    def fault(
        self, task: Task, reason: str, raw: bytes | str | None = None, restart: bool = True
    ) -> None:
        """Report a broken task, fail what it held, and restart it after a back-off (or, not
        `restart`, give up on it and fail the run)."""
        link, child = task.link, task.child
        if child is not None:
            self.drain_stderr(task)  # its last words belong in the report
            killed = self._end_process(task, child)
            link.log.stderr_end()
            self._remove_pid_file(child.pid)
            exit_text = (
                "killed by SIGKILL (sent by the host)"
                if killed
                else describe_exit(child.exit_status)
            )
        else:
            exit_text = None
        link.detach()
        self.path.dirty.discard(link)
        self.loop.deadlines.cancel(("handshake", link.task))
        self.loop.deadlines.cancel(("tick", link.task))
        self.loop.deadlines.cancel(("eof", link.task))
        pid = link.log.pid if child is not None else None
        detail = f"{link.name} pid={pid}: {reason}{wrote_text(raw)}"
        if link.last_sent is not None:
            detail += f"; the host last wrote to it {shorten(link.last_sent, REPORT_BYTES)}"
        if exit_text:
            detail += f"; {exit_text}"
        tail = link.log.tail
        if tail:
            detail += "; last stderr lines:\n    " + "\n    ".join(tail)
        link.stats.error(reason)
        self.observe.failure(
            component=link.cid,
            task=link.task,
            pid=pid,
            reason=reason,
            exit_status=exit_text,
            stderr=list(tail),
            last_sent=link.last_sent,
            last_received=link.last_received,
        )
        self.observe.forget(pid)
        tail.clear()
        failed = self._fail_in_flight(link)
        if failed:
            detail += f"\n    {failed} in-flight spout tuple(s) failed for replay"
        log.error("%s", detail)
        self._lost(link)
        if restart:
            self._after_fault(task)
        else:
            self._give_up(task, f"{link.name}: {reason}")

    def refuse(self, task: Task, reason: str) -> None:
        """A task that can never work in this topology (its library lacks what the topology
        needs): reported as a fault, and the run fails at once, as no restart would help."""
        self.fault(task, reason, restart=False)

    def _after_fault(self, task: Task) -> None:
        if self.stopping:
            task.lifecycle.to(State.STOPPED)
            return
        backoff = task.policy.after_failure(self.loop.now)
        if backoff is None:
            self._give_up(
                task,
                f"{task.name} failed {task.policy.recent_failures} times within "
                f"{task.policy.window:g}s; giving up",
            )
            return
        task.lifecycle.to(State.BACKOFF)
        task.backoff = backoff
        self.loop.deadlines.at(
            ("restart", task.link.task), self.loop.now + backoff, lambda: self._restart(task)
        )

    def _give_up(self, task: Task, why: str) -> None:
        task.lifecycle.to(State.FATAL)
        self.failure = why
        log.error("%s", why)
        self.on_failure(why)

    def _restart(self, task: Task) -> None:
        if self.stopping or task.state is not State.BACKOFF:
            return
        task.link.stats.restarts += 1
        log.warning("restarting %s (after %.1fs back-off)", task.name, task.backoff)
        self.start(task)

    def _fail_in_flight(self, link: Link) -> int:
        """Fail the spout tuples whose trees a dead task held, so they replay at once."""
        if isinstance(link, SpoutLink):
            link.drop_in_flight()
            lost = self.path.acker.drop_spout_task(link.task)
            if lost:
                self.path.spout_lost(link, lost)
            return len(lost)
        assert isinstance(link, BoltLink)
        outcomes = link.fail_in_flight()
        self.path.spout_outcomes(outcomes, ok=False)
        return len(outcomes)

    def _lost(self, link: Link) -> None:
        if self.path.batches is not None:
            self.path.batches.task_lost(link)

    def _end_process(self, task: Task, child: Child) -> bool:
        """Stop watching a broken task's process and end its process group; its exit is
        reaped later. True if we had to kill it."""
        for fd in (child.stdout_fd, child.stderr_fd, child.stdin_fd, child.exit_fd):
            self.loop.unwatch(fd)
        task.reading = task.writing = False
        killed = child.poll() is None
        # killed or not, what it started lives on in its process group: end that too
        child.signal_group(signal.SIGKILL)
        reap(self.loop, child)
        task.child = None
        return killed

    def _remove_pid_file(self, pid: int | None) -> None:
        if pid is not None and self.pid_dir:
            try:
                os.unlink(os.path.join(self.pid_dir, str(pid)))
            except OSError:
                pass
