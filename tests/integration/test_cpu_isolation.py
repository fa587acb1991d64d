"""`host.cpu.isolate: true` keeps real task processes off the host's CPU, a restarted task too,
and the host gets its CPUs back at the end (host/runtime/cpu_isolation.py; the decisions of
`auto` are tests/unit/test_cpu_isolation.py)."""

from __future__ import annotations

import os

import pytest

from host.runtime.supervisor import Supervisor
from tests.support.small_topology import kill_and_restart, spout_and_bolts, step_until


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs two CPUs")
def test_tasks_are_kept_off_the_hosts_cpu_and_the_host_gets_its_cpus_back(tmp_path):
    before = os.sched_getaffinity(0)
    sup = Supervisor(spout_and_bolts(tmp_path, "isolated", {"host.cpu.isolate": True}))
    sup.start()
    try:
        step_until(sup, lambda: len(sup.pids()) == 3 and sup.cpu.child_cpus is not None)
        host_cpu = sup.cpu.host_cpu
        assert os.sched_getaffinity(0) == {host_cpu}
        for pid in sup.pids().values():
            assert host_cpu not in os.sched_getaffinity(pid)
        # a task started after the change gets the same CPUs from its start
        new = kill_and_restart(sup, "pass")
        assert host_cpu not in os.sched_getaffinity(new)
    finally:
        sup.request_stop("test over")
        while sup.step(0.05):
            pass
        sup.finish()
    assert os.sched_getaffinity(0) == before
