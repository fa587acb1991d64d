"""How far the task processes yield a busy CPU to the host (`host.task.nice`).

Why: every tuple passes through the host twice, so the host waiting for a core stalls every task
at once. Each task runs in a session of its own (its own process group, so that it can be killed
whole), and on Linux with autogroups (`/proc/sys/kernel/sched_autogroup_enabled`, on by default
on desktops and most servers) every session is a scheduling group of its own that the scheduler
treats as one process's worth. With 200 tasks per bolt that is 400-600 groups against the host's
one: the bash word count's host waited for a core 67 % of the time while it used 30 % of one,
and the run moved a quarter of its sentences with 2 tasks per bolt (docs/architecture.md, "Many
tasks"; `python -m benchmarks scaling-tasks`). A plain `nice` cannot help across groups; the
group's own niceness (`/proc/PID/autogroup`) can.

So a task process gets niceness N twice: its own (`os.nice` before exec: what counts where
autogroups are off), and its session's group's (`/proc/PID/autogroup`: what counts where they are
on). Raising a niceness needs no privilege, but the kernel lets a process without CAP_SYS_ADMIN
change an autogroup's niceness only once per 100 ms, machine-wide (`EAGAIN` otherwise): what
cannot be set at once is retried at each of the supervisor's ticks (four a second), oldest first.

`auto` (the default) lowers the tasks only when they crowd the CPUs: more than
`AUTO_PROCESSES_PER_CPU` task processes per CPU. A small topology keeps the priority it always had,
and so do its components against the rest of the machine; a large one gives the host the CPU it
needs and, as a whole, weighs on the rest of the machine less than its hundreds of groups at
niceness 0 did.
"""

from __future__ import annotations

import errno
import logging
import os
from collections import deque
from collections.abc import Callable

log = logging.getLogger("host")

AUTO = "auto"
AUTO_NICE = 19  # the lowest priority: measured best (10 did next to nothing at 64 or 200 tasks)
AUTO_PROCESSES_PER_CPU = 4
MAX_PENDING = 4096  # pids waiting for their group's niceness: bounded (a restart storm)


def nice_for(setting: str | int, task_processes: int, cpus: int) -> int:
    """The niceness for the task processes: `setting` (0-19), or for `auto` 19 when there are
    more than AUTO_PROCESSES_PER_CPU task processes per CPU, else 0."""
    if setting == AUTO:
        return AUTO_NICE if task_processes > AUTO_PROCESSES_PER_CPU * max(1, cpus) else 0
    return int(setting)


def write_group_nice(pid: int, nice: int) -> None:
    with open(f"/proc/{pid}/autogroup", "w", encoding="ascii") as fh:
        fh.write(str(nice))


class TaskPriority:
    """Sets the autogroup niceness of each task process the launcher starts (its own niceness is
    set by the launcher before exec: host/runtime/process.py)."""

    def __init__(
        self,
        nice: int,
        *,
        write: Callable[[int, int], None] = write_group_nice,
        groups_exist: Callable[[], bool] = lambda: os.path.exists("/proc/self/autogroup"),
    ) -> None:
        self.nice = nice
        self._write = write
        self._pending: deque[int] = deque(maxlen=MAX_PENDING)
        # no autogroups in this kernel: only the processes' own niceness counts
        self.supported = nice > 0 and groups_exist()
        self.set = 0  # groups whose niceness was set
        self.retries = 0  # writes refused for the rate limit, to be tried again

    @property
    def pending(self) -> int:
        return len(self._pending)

    def started(self, pid: int) -> None:
        """A task process started (in a session of its own)."""
        if self.supported:
            self._pending.append(pid)
            self.tick()

    def tick(self) -> None:
        """Set what can be set now, oldest first; stop at the kernel's rate limit."""
        pending = self._pending
        while pending:
            pid = pending[0]
            try:
                self._write(pid, self.nice)
            except OSError as exc:
                if exc.errno == errno.EAGAIN:
                    self.retries += 1
                    return  # the kernel's 100 ms limit: next tick
                if exc.errno not in (errno.ENOENT, errno.ESRCH):
                    # not ours to change (EPERM, EACCES: a setuid program, a security module):
                    # the process keeps its group's priority; nothing else depends on it
                    log.debug("cannot set the scheduling group of pid %d: %s", pid, exc)
                # ENOENT / ESRCH: it exited meanwhile
            else:
                self.set += 1
            pending.popleft()
