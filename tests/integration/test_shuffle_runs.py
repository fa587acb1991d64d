"""Shuffle runs against real processes (host/runtime/run_length.py): a bolt that answers a run in
one go earns the longest runs; a bolt that takes milliseconds a tuple is measured and gets runs of
one (Storm's round robin), whichever of our clients it uses. The rules themselves are tested with
fake children and the fake clock in tests/unit/test_shuffle_runs.py."""

from __future__ import annotations

import time

import pytest

from host.runtime.supervisor import Supervisor
from host.topology import TopologyBuilder

SPOUT = """
from multilang import Spout

class Burst(Spout):
    def initialize(self, conf, context):
        self.sent = 0
        self.pending = 0

    def next_tuple(self):
        if self.pending < 256:
            for _ in range(64):
                self.sent += 1
                self.pending += 1
                self.emit([self.sent], id=self.sent)

    def ack(self, msg_id):
        self.pending -= 1

    def fail(self, msg_id):
        self.pending -= 1

Burst().run()
"""

# each takes `SECS` seconds a tuple, blocking (Node: a synchronous wait, as an await would let
# the library write between tuples)
BOLTS = {
    "python": (
        ["python", "bolt.py"],
        "bolt.py",
        """
import sys, time
from multilang import BasicBolt
SECS = float(sys.argv[1])

class Work(BasicBolt):
    def process(self, tup):
        if SECS:
            time.sleep(SECS)

Work().run()
""",
    ),
    "node": (
        ["node", "bolt.js"],
        "bolt.js",
        """
const { BasicBolt } = require('multilang');
const secs = Number(process.argv[2]);
const cell = new Int32Array(new SharedArrayBuffer(4));
new BasicBolt({
  process() { if (secs) Atomics.wait(cell, 0, 0, secs * 1000); },
}).run();
""",
    ),
}
SLOW_SECS = 0.02  # five times the default budget of 4 ms a run
MAX_RUN = 16
WAIT_SECS = 60.0  # a bound for a loaded machine, not a measurement


def _run_until(tmp_path, client: str, secs: float, done) -> Supervisor:  # type: ignore[no-untyped-def]
    argv, name, source = BOLTS[client]
    (tmp_path / name).write_text(source)
    (tmp_path / "spout.py").write_text(SPOUT)
    b = TopologyBuilder(
        "runs", config={"host.shuffle.run.max": MAX_RUN, "topology.message.timeout.secs": 120}
    )
    b.spout("spout", ["python", "spout.py"], outputs=["n"])
    b.bolt("work", [*argv, str(secs)], outputs=[], parallelism=4).shuffle("spout")
    sup = Supervisor(b.build(str(tmp_path)))
    sup.start()
    try:
        deadline = time.monotonic() + WAIT_SECS
        while not done(sup) and time.monotonic() < deadline:
            sup.step(0.05)
    finally:
        sup.request_stop("test over")
        while sup.step(0.05):
            pass
        sup.finish()
    assert sup.failure is None
    return sup


@pytest.mark.parametrize("client", list(BOLTS))
def test_a_fast_bolt_earns_the_longest_runs(tmp_path, client):
    sup = _run_until(tmp_path, client, 0.0, lambda s: s.run_lengths["work"].k == MAX_RUN)
    assert sup.run_lengths["work"].k == MAX_RUN
    assert sup.path.spout_failed == 0


@pytest.mark.parametrize("client", list(BOLTS))
def test_a_slow_bolt_is_measured_and_gets_round_robin(tmp_path, client):
    seen: list[int] = []

    def shrunk(s: Supervisor) -> bool:
        k = s.run_lengths["work"].k
        if not seen or seen[-1] != k:
            seen.append(k)
        return len(seen) >= 2 and k == 1  # it grew (or not), then shrank to one

    sup = _run_until(tmp_path, client, SLOW_SECS, shrunk)
    assert seen[-1] == 1, f"run lengths seen: {seen}"
    # it never got near the longest runs: a run of 8 at 20 ms a tuple already shows
    assert max(seen) <= 8, f"run lengths seen: {seen}"
    assert sup.path.spout_failed == 0
