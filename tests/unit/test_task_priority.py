"""`host.task.nice` (host/runtime/task_priority.py): the niceness chosen, and the autogroup writes
with the kernel's rate limit, over a fake /proc writer. Real processes:
tests/integration/test_task_priority.py."""

from __future__ import annotations

import errno

import pytest

from host.errors import TopologyError
from host.runtime.task_priority import (
    AUTO_NICE,
    AUTO_PROCESSES_PER_CPU,
    MAX_PENDING,
    TaskPriority,
    nice_for,
)
from host.topology.settings import Settings


def test_auto_lowers_the_tasks_only_when_they_crowd_the_cpus():
    crowd = AUTO_PROCESSES_PER_CPU * 2
    assert nice_for("auto", crowd, 2) == 0
    assert nice_for("auto", crowd + 1, 2) == AUTO_NICE
    assert nice_for("auto", 5, 1) == AUTO_NICE  # one CPU: 5 > 4
    assert nice_for("auto", 4, 0) == 0  # an unknown CPU count counts as one


@pytest.mark.parametrize("nice", [0, 7, 19])
def test_a_number_is_taken_as_it_is_whatever_the_tasks(nice):
    assert nice_for(nice, 1, 64) == nice
    assert nice_for(nice, 10_000, 1) == nice


@pytest.mark.parametrize("bad", [-1, 20, 1.5, True, "high"])
def test_the_setting_takes_auto_or_a_niceness(bad):
    with pytest.raises(TopologyError, match="host.task.nice"):
        Settings.from_config({"host.task.nice": bad})
    assert Settings.from_config({"host.task.nice": 0}).task_nice == 0
    assert Settings.from_config({"host.task.nice": 19}).task_nice == 19


class FakeProc:
    """/proc/PID/autogroup: refuses with EAGAIN while `limited`, ENOENT for gone pids."""

    def __init__(self) -> None:
        self.limited = False
        self.gone: set[int] = set()
        self.written: list[tuple[int, int]] = []

    def write(self, pid: int, nice: int) -> None:
        if pid in self.gone:
            raise FileNotFoundError(errno.ENOENT, "gone")
        if self.limited:
            raise BlockingIOError(errno.EAGAIN, "rate limit")
        self.written.append((pid, nice))


def test_each_started_process_gets_its_groups_niceness_at_once_when_the_kernel_allows():
    proc = FakeProc()
    p = TaskPriority(19, write=proc.write, groups_exist=lambda: True)
    for pid in (10, 11, 12):
        p.started(pid)
    assert proc.written == [(10, 19), (11, 19), (12, 19)]
    assert (p.set, p.pending, p.retries) == (3, 0, 0)


def test_the_rate_limit_defers_the_rest_to_the_next_ticks_oldest_first():
    proc = FakeProc()
    p = TaskPriority(19, write=proc.write, groups_exist=lambda: True)
    p.started(1)
    proc.limited = True
    p.started(2)
    p.started(3)
    assert proc.written == [(1, 19)] and p.pending == 2 and p.retries == 2
    p.tick()  # still limited: nothing is lost
    assert p.pending == 2
    proc.limited = False
    p.tick()
    assert proc.written == [(1, 19), (2, 19), (3, 19)] and p.pending == 0


def test_a_process_gone_before_its_turn_is_dropped():
    proc = FakeProc()
    p = TaskPriority(19, write=proc.write, groups_exist=lambda: True)
    proc.limited = True
    p.started(1)
    p.started(2)
    proc.limited = False
    proc.gone.add(1)
    p.tick()
    assert proc.written == [(2, 19)] and p.pending == 0 and p.set == 1


def test_a_process_not_ours_to_change_keeps_its_priority_and_the_rest_go_on():
    written = []

    def write(pid: int, nice: int) -> None:
        if pid == 1:
            raise PermissionError(errno.EPERM, "not permitted")
        written.append(pid)

    p = TaskPriority(19, write=write, groups_exist=lambda: True)
    p.started(1)
    p.started(2)
    assert written == [2] and p.pending == 0


def test_nothing_is_written_at_niceness_0_or_without_autogroups():
    proc = FakeProc()
    for p in (
        TaskPriority(0, write=proc.write, groups_exist=lambda: True),
        TaskPriority(19, write=proc.write, groups_exist=lambda: False),
    ):
        p.started(1)
        p.tick()
        assert p.pending == 0
    assert proc.written == []


def test_what_waits_is_bounded():
    proc = FakeProc()
    proc.limited = True
    p = TaskPriority(19, write=proc.write, groups_exist=lambda: True)
    for pid in range(MAX_PENDING + 10):
        p.started(pid)
    assert p.pending == MAX_PENDING
