"""A small topology of real Python components for tests that watch the processes a Supervisor
starts (their CPUs, their priority): a spout that emits a tuple every 10 ms and a bolt that
acks everything, a loop that steps the Supervisor until a condition holds, and a task killed and
restarted."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Callable
from pathlib import Path

from host.runtime.lifecycle import State
from host.runtime.supervisor import Supervisor
from host.topology import TopologyBuilder
from host.topology.model import Topology

WAIT_SECS = 60.0  # a bound for a loaded machine, not a measurement

BOLT = """
from multilang import BasicBolt

class Pass(BasicBolt):
    def process(self, tup):
        pass

Pass().run()
"""
SPOUT = """
import time
from multilang import Spout

class Slow(Spout):
    def next_tuple(self):
        time.sleep(0.01)
        self.emit(["x"])

Slow().run()
"""


def spout_and_bolts(directory: Path, name: str, config: dict, bolts: int = 2) -> Topology:
    """`spout` (one task) shuffling to `pass` (`bolts` tasks), the files written to `directory`."""
    (directory / "bolt.py").write_text(BOLT)
    (directory / "spout.py").write_text(SPOUT)
    b = TopologyBuilder(name, config=config)
    b.spout("spout", ["python", "spout.py"], outputs=["w"])
    b.bolt("pass", ["python", "bolt.py"], outputs=[], parallelism=bolts).shuffle("spout")
    return b.build(str(directory))


def step_until(sup: Supervisor, done: Callable[[], bool]) -> None:
    """Step the run until `done()`, at most WAIT_SECS; then assert it."""
    deadline = time.monotonic() + WAIT_SECS
    while not done() and time.monotonic() < deadline:
        sup.step(0.05)
    assert done()


def kill_and_restart(sup: Supervisor, component: str) -> int:
    """SIGKILL the process of the first task of `component`, step the run until a new process
    runs that task (and `sup.priority` has nothing pending); the new pid."""
    victim = next(t for t in sup.tasks.values() if t.link.cid == component)
    assert victim.child is not None
    old = victim.child.pid
    os.kill(old, signal.SIGKILL)
    step_until(
        sup,
        lambda: (
            victim.state is State.RUNNING
            and victim.child is not None
            and victim.child.pid != old
            and sup.priority.pending == 0
        ),
    )
    assert victim.child is not None
    return victim.child.pid
