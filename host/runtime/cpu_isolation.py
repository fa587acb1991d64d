"""Keeping the components off the host's CPU while that helps (`host.cpu.isolate`).

Why: the host is one loop that every tuple passes through twice; the components are many processes
that each run briefly when the host writes to them. On a few cores the scheduler keeps the host
queued behind the components it has just woken (it prefers not to move a task whose caches are
warm), even while another core idles: with 16 tasks per bolt of the word count on two cores the
host waited for a core a quarter of the time while the machine was a quarter idle, and
throughput followed (docs/architecture.md, "Many tasks"). With the components kept on the other
cores, the host runs whenever it has work.

That takes a core from the components, so `auto` does it only while they do not need it: when the
host is busy (at least half a core) and the rest of the machine uses at most 90 % of the cores
left to them. It gives the core back when the components are what limits the run: they use 95 %
of their cores while the host, with a core to itself, is mostly idle (under 60 %); then it waits
`RELEASE_HOLD` decisions (30 s) before it may isolate again, so that a load near the line does not flap.
(Both busy is a balanced run: the host's core is its share.) `true` always isolates (two cores
or more), `false` never.

`IsolationPolicy` is the decision (pure); `CpuIsolation` reads the figures at each tick (the
supervisor ticks four times a second) and sets
the CPU affinity of the host and of the task processes (new ones get it when they start;
processes a component started itself keep what they had when they started).
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable, Iterable

log = logging.getLogger("host")

AUTO = "auto"
HOST_BUSY_CORES = 0.5  # the host uses at least this much of a core: worth protecting
ISOLATE_BELOW = 0.9  # ... and the rest use at most this share of the cores left to them
RELEASE_AT = 0.95  # isolated, the rest use this share of their cores ...
HOST_WAITING_CORES = 0.6  # ... while the host uses less than this: give the core back
RELEASE_HOLD = 120  # after giving it back, decisions (30 s at 4 a second) before isolating again


class IsolationPolicy:
    def __init__(self, mode: str | bool, cpus: int) -> None:
        self.mode = mode
        self.cpus = cpus
        self.isolated = False
        self._hold = 0

    def decide(self, host_cores: float, other_cores: float) -> bool:
        """At each tick, given the CPU the host and everything else used (in cores) since the
        last: whether the components are to be kept off the host's CPU."""
        if self.cpus < 2 or self.mode is False:
            self.isolated = False
        elif self.mode is True:
            self.isolated = True
        elif self.isolated:
            if other_cores >= RELEASE_AT * (self.cpus - 1) and host_cores < HOST_WAITING_CORES:
                self.isolated = False
                self._hold = RELEASE_HOLD
        elif self._hold > 0:
            self._hold -= 1
        elif host_cores >= HOST_BUSY_CORES and other_cores <= ISOLATE_BELOW * (self.cpus - 1):
            self.isolated = True
        return self.isolated


def read_busy_secs() -> float | None:
    """Seconds of CPU the whole machine spent busy since boot (/proc/stat), or None."""
    try:
        with open("/proc/stat", "rb") as f:
            fields = f.readline().split()[1:]
    except OSError:
        return None
    ticks = [int(x) for x in fields]
    idle = ticks[3] + (ticks[4] if len(ticks) > 4 else 0)  # idle + iowait
    guest = sum(ticks[8:10]) if len(ticks) >= 10 else 0  # already counted in user and nice
    return (sum(ticks) - idle - guest) / os.sysconf("SC_CLK_TCK")


class CpuIsolation:
    def __init__(
        self,
        mode: str | bool,
        *,
        clock: Callable[[], float] = time.monotonic,
        host_secs: Callable[[], float] = time.process_time,
        busy_secs: Callable[[], float | None] = read_busy_secs,
        set_affinity: Callable[[int, set[int]], None] = os.sched_setaffinity,
        allowed: set[int] | None = None,
    ) -> None:
        self.all_cpus = set(os.sched_getaffinity(0) if allowed is None else allowed)
        self.host_cpu = max(self.all_cpus)
        self.others = self.all_cpus - {self.host_cpu}
        self.policy = IsolationPolicy(mode, len(self.all_cpus))
        self._clock, self._host_secs, self._busy_secs = clock, host_secs, busy_secs
        self._set_affinity = set_affinity
        self._last: tuple[float, float, float] | None = None
        self.changes = 0  # times isolation was switched on or off

    @property
    def child_cpus(self) -> set[int] | None:
        """The CPUs a new task process gets, or None for the host's own set."""
        return self.others if self.policy.isolated else None

    def tick(self, pids: Iterable[int]) -> None:
        """Decide, and apply a change to the host and the running `pids`."""
        busy = self._busy_secs()
        if busy is None:
            return
        now, host = self._clock(), self._host_secs()
        last, self._last = self._last, (now, host, busy)
        if last is None or now <= last[0]:
            return
        wall = now - last[0]
        host_cores = (host - last[1]) / wall
        other_cores = max(0.0, (busy - last[2]) / wall - host_cores)
        was = self.policy.isolated
        if self.policy.decide(host_cores, other_cores) != was:
            self._apply(pids)
            log.info(
                "tasks %s the host's CPU %d (host %.2f cores, the rest %.2f of %d)",
                "kept off" if self.policy.isolated else "allowed on",
                self.host_cpu,
                host_cores,
                other_cores,
                len(self.others),
            )

    def _apply(self, pids: Iterable[int]) -> None:
        self.changes += 1
        isolated = self.policy.isolated
        cpus = self.others if isolated else self.all_cpus
        try:
            self._set_affinity(0, {self.host_cpu} if isolated else self.all_cpus)
        except OSError:
            pass
        for pid in pids:
            try:
                self._set_affinity(pid, cpus)
            except OSError:
                pass  # it exited meanwhile

    def release(self, pids: Iterable[int]) -> None:
        """The run is over: the host gets its whole CPU set back."""
        if self.policy.isolated:
            self.policy.isolated = False
            self._apply(pids)
