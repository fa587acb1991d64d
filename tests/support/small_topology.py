"""A small topology of real Python components for tests that watch the processes a Supervisor
starts (their CPUs, their priority): a spout that emits a tuple every 10 ms and a bolt that
acks everything, and a loop that steps the Supervisor until a condition holds."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

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
