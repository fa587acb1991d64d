"""Stopping a task's process at the end of a run, in stages: what is queued is written, stdin is
closed (our clients, and Storm's, exit on EOF), then the process group gets SIGTERM and SIGKILL on
the supervisor's deadlines until the process has exited. Whatever it writes meanwhile is read and
dropped, so that it never blocks on a full pipe while exiting; its stderr is still logged."""

from __future__ import annotations

import os
import signal

from host.runtime.lifecycle import State
from host.runtime.reaping import POLL_SECS
from host.runtime.supervision import READ_CHUNK, Supervision
from host.runtime.task import Task


class Shutdown:
    def __init__(self, supervision: Supervision) -> None:
        self.supervision = supervision
        self.loop = supervision.loop
        supervision.on_stopping_exit = self.stopped

    def begin(self, task: Task) -> None:
        """Close the task's stdin; it is STOPPING until it exits (see `escalate`)."""
        deadlines = self.loop.deadlines
        deadlines.cancel(("restart", task.link.task))
        deadlines.cancel(("tick", task.link.task))
        if task.state is State.BACKOFF:
            task.lifecycle.to(State.STOPPED)
            return
        child = task.child
        if child is None or not task.lifecycle.alive:
            return
        try:
            task.link.flush()
        except OSError:
            pass
        self.loop.unwatch(child.stdin_fd)
        task.writing = False
        child.close_stdin()
        task.link.detach()
        task.lifecycle.to(State.STOPPING)
        self.loop.unwatch(child.stdout_fd)
        self.loop.watch_read(child.stdout_fd, lambda: self._discard_stdout(task))
        if child.poll() is not None:
            self.stopped(task)
        elif child.exit_fd is None:
            self._poll(task)

    def escalate(self, tasks: list[Task], sig: int) -> None:
        """Signal the process groups of the tasks still stopping (SIGTERM, then SIGKILL)."""
        for task in tasks:
            if task.state is State.STOPPING and task.child is not None:
                if task.child.poll() is None:
                    task.child.signal_group(sig)
                else:
                    self.stopped(task)

    def stopped(self, task: Task) -> None:
        """A stopping task's process exited: its last stderr lines, then its group ends."""
        child = task.child
        assert child is not None
        self._forget(task)
        child.signal_group(signal.SIGKILL)  # grandchildren must not outlive the run
        child.close()
        task.lifecycle.to(State.STOPPED)

    def abandon(self, task: Task) -> None:
        """The run is over and this task's process has not exited: kill its group and leave it
        to the kernel (the watchdog sweeps what it started)."""
        child = task.child
        if child is None:
            return
        child.signal_group(signal.SIGKILL)
        self._forget(task)
        child.close()
        task.link.detach()
        if task.state in (State.STARTING, State.RUNNING, State.STOPPING):
            task.lifecycle.to(State.STOPPED)

    def _forget(self, task: Task) -> None:
        child = task.child
        assert child is not None
        self.supervision.drain_stderr(task)
        log = task.link.log
        log.stderr_end()
        log.report_suppressed()
        for fd in (child.stdout_fd, child.stderr_fd, child.stdin_fd, child.exit_fd):
            self.loop.unwatch(fd)
        self.loop.deadlines.cancel(("stopping", task.link.task))
        task.child = None
        task.reading = False

    def _poll(self, task: Task) -> None:
        child = task.child

        def poll() -> None:
            if task.child is child and child is not None and task.state is State.STOPPING:
                if child.poll() is None:
                    self._poll(task)
                else:
                    self.stopped(task)

        self.loop.deadlines.at(("stopping", task.link.task), self.loop.now + POLL_SECS, poll)

    def _discard_stdout(self, task: Task) -> None:
        child = task.child
        if child is None:
            return
        try:
            data = os.read(child.stdout_fd, READ_CHUNK)
        except BlockingIOError:
            return
        except OSError:
            data = b""
        if not data:
            self.loop.unwatch(child.stdout_fd)
