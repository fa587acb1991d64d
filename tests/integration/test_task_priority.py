"""`host.task.nice` on real processes: a task process runs at the niceness asked for, and so does
its session's scheduling group where the kernel has autogroups, a restarted task too; the host
keeps its own; `auto` leaves a small topology alone (host/runtime/task_priority.py; the logic
with a fake /proc is tests/unit/test_task_priority.py)."""

from __future__ import annotations

import os

from host.runtime.supervisor import Supervisor
from tests.support.small_topology import kill_and_restart, spout_and_bolts, step_until

AUTOGROUPS = os.path.exists("/proc/self/autogroup")


def _nice(pid: int) -> int:
    """The process's own niceness: field 19 of /proc/PID/stat (after the command's parentheses)."""
    with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as fh:
        return int(fh.read().rsplit(")", 1)[1].split()[16])


def _group_nice(pid: int) -> int:
    """The niceness of the process's autogroup: '/autogroup-N nice K'."""
    with open(f"/proc/{pid}/autogroup", encoding="ascii") as fh:
        return int(fh.read().split()[-1])


def _run(sup: Supervisor, check) -> None:  # type: ignore[no-untyped-def]
    sup.start()
    try:
        step_until(sup, lambda: len(sup.pids()) == 3)
        check()
    finally:
        sup.request_stop("test over")
        while sup.step(0.05):
            pass
        sup.finish()


def test_tasks_run_at_the_niceness_asked_for_and_the_host_keeps_its_own(tmp_path):
    host_nice = os.nice(0)
    sup = Supervisor(
        spout_and_bolts(tmp_path, "priority", {"host.task.nice": 19, "host.cpu.isolate": False})
    )
    assert sup.priority.nice == 19

    def check() -> None:
        # groups the kernel's rate limit deferred are set at the next ticks
        step_until(sup, lambda: sup.priority.pending == 0)
        for pid in sup.pids().values():
            assert _nice(pid) == 19
            if AUTOGROUPS:
                assert _group_nice(pid) == 19
        assert os.nice(0) == host_nice
        # a restarted task starts at the same niceness
        new = kill_and_restart(sup, "pass")
        assert _nice(new) == 19
        if AUTOGROUPS:
            assert _group_nice(new) == 19

    _run(sup, check)


def test_auto_leaves_a_small_topology_at_the_hosts_priority(tmp_path):
    sup = Supervisor(spout_and_bolts(tmp_path, "priority", {"host.cpu.isolate": False}))
    assert len(sup.tasks) <= 4  # the precondition: not crowded on any machine
    assert sup.priority.nice == 0

    def check() -> None:
        host_nice = os.nice(0)
        for pid in sup.pids().values():
            assert _nice(pid) == host_nice

    _run(sup, check)
