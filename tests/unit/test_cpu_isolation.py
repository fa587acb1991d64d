"""Keeping the task processes off the host's CPU (host/runtime/cpu_isolation.py): the decision, and
what is applied to whom, with the figures and the affinity calls played by the test. That it
keeps real processes off the CPU is tests/integration/test_cpu_isolation.py."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from host.runtime.cpu_isolation import RELEASE_HOLD, CpuIsolation, IsolationPolicy

# ---- the decision ----------------------------------------------------------------------------


def test_a_busy_host_with_components_that_fit_on_the_other_cores_is_isolated():
    policy = IsolationPolicy("auto", 2)
    assert policy.decide(host_cores=0.9, other_cores=0.7) is True


def test_an_idle_host_is_not_worth_a_core():
    policy = IsolationPolicy("auto", 2)
    assert policy.decide(host_cores=0.1, other_cores=0.2) is False


def test_components_that_need_more_than_the_other_cores_keep_every_core():
    policy = IsolationPolicy("auto", 2)
    assert policy.decide(host_cores=0.6, other_cores=1.4) is False


def test_isolated_components_that_limit_the_run_get_the_core_back_then_a_hold():
    policy = IsolationPolicy("auto", 2)
    assert policy.decide(0.9, 0.5)
    # both busy: a balanced run, the host's core is its share
    assert policy.decide(0.9, 0.99)
    # the components saturate their core while the host waits for them
    assert not policy.decide(0.4, 0.99)
    # however inviting, no isolation during the hold ...
    for _ in range(RELEASE_HOLD):
        assert not policy.decide(0.9, 0.5)
    # ... and then again
    assert policy.decide(0.9, 0.5)


def test_true_and_false_are_fixed_and_one_cpu_is_never_isolated():
    assert IsolationPolicy(True, 2).decide(0.0, 1.0) is True
    assert IsolationPolicy(False, 8).decide(1.0, 0.0) is False
    assert IsolationPolicy(True, 1).decide(1.0, 0.0) is False
    assert IsolationPolicy("auto", 1).decide(1.0, 0.0) is False


@given(
    cpus=st.integers(1, 64),
    figures=st.lists(st.tuples(st.floats(0, 1.2), st.floats(0, 64)), max_size=80),
)
def test_auto_never_isolates_on_one_cpu_nor_a_host_below_half_a_core(cpus, figures):
    policy = IsolationPolicy("auto", cpus)
    for host, others in figures:
        was = policy.isolated
        now = policy.decide(host, others)
        if now and not was:
            assert cpus >= 2 and host >= 0.5 and others <= 0.9 * (cpus - 1)


# ---- applying it -----------------------------------------------------------------------------


class Figures:
    def __init__(self) -> None:
        self.t = 100.0
        self.host = 0.0
        self.busy = 0.0
        self.calls: list[tuple[int, set[int]]] = []

    def second(self, host_cores: float, other_cores: float) -> None:
        self.t += 1.0
        self.host += host_cores
        self.busy += host_cores + other_cores


def isolation(figures: Figures, mode: str | bool = "auto") -> CpuIsolation:
    return CpuIsolation(
        mode,
        clock=lambda: figures.t,
        host_secs=lambda: figures.host,
        busy_secs=lambda: figures.busy,
        set_affinity=lambda pid, cpus: figures.calls.append((pid, set(cpus))),
        allowed={0, 1, 2, 3},
    )


def test_the_host_takes_the_highest_cpu_and_the_tasks_get_the_others():
    figures = Figures()
    cpu = isolation(figures)
    cpu.tick([11, 12])  # the first reading: nothing to compare with yet
    assert figures.calls == [] and cpu.child_cpus is None
    figures.second(host_cores=0.95, other_cores=1.0)
    cpu.tick([11, 12])
    assert figures.calls == [(0, {3}), (11, {0, 1, 2}), (12, {0, 1, 2})]
    assert cpu.child_cpus == {0, 1, 2}
    figures.calls.clear()
    figures.second(host_cores=0.95, other_cores=1.0)
    cpu.tick([11, 12, 13])
    assert figures.calls == []  # no change, no calls
    cpu.release([11, 12, 13])
    assert figures.calls == [
        (0, {0, 1, 2, 3}),
        (11, {0, 1, 2, 3}),
        (12, {0, 1, 2, 3}),
        (13, {0, 1, 2, 3}),
    ]
    assert cpu.child_cpus is None


def test_a_vanished_process_is_no_error():
    figures = Figures()

    def gone(pid: int, cpus: set[int]) -> None:
        if pid:
            raise ProcessLookupError(pid)

    cpu = CpuIsolation(
        True,
        clock=lambda: figures.t,
        host_secs=lambda: figures.host,
        busy_secs=lambda: figures.busy,
        set_affinity=gone,
        allowed={0, 1},
    )
    cpu.tick([5])
    figures.second(0.0, 0.0)
    cpu.tick([5])
    assert cpu.child_cpus == {0}


def test_without_proc_stat_nothing_changes():
    figures = Figures()
    cpu = CpuIsolation(
        True,
        clock=lambda: figures.t,
        host_secs=lambda: figures.host,
        busy_secs=lambda: None,
        set_affinity=lambda pid, cpus: figures.calls.append((pid, cpus)),
        allowed={0, 1},
    )
    for _ in range(3):
        figures.second(1.0, 0.0)
        cpu.tick([5])
    assert figures.calls == [] and cpu.child_cpus is None
