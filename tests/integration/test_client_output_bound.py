"""Each of our client libraries (Python, Node, bash) keeps output back while it works through a
read of many host messages, so that a burst costs few writes; but never for long. The host takes
a component that owes answers and stays silent for topology.subprocess.timeout.secs as hung, so
a slow bolt with a long queue must answer each tuple as it goes, not the whole queue at the end.
"""

from __future__ import annotations

import time

import pytest

from host.runtime.supervisor import Supervisor
from host.testing import ComponentPeer
from host.topology import TopologyBuilder
from host.topology.model import Topology
from multilang.codec import encode
from multilang.messages import Ack, TupleMessage

# Each bolt takes values[0] seconds per tuple, blocking its whole process (a synchronous wait in
# Node: an await would let the library write between tuples anyway).
SLOW_BOLTS = {
    "python": (
        "slow_bolt.py",
        ["python", "slow_bolt.py"],
        """
import time
from multilang import BasicBolt

class Slow(BasicBolt):
    def process(self, tup):
        time.sleep(float(tup.values[0]))

Slow().run()
""",
    ),
    "node": (
        "slow_bolt.js",
        ["node", "slow_bolt.js"],
        """
const { BasicBolt } = require('multilang');
const cell = new Int32Array(new SharedArrayBuffer(4));
new BasicBolt({
  process(tuple) { Atomics.wait(cell, 0, 0, Number(tuple.values[0]) * 1000); },
}).run();
""",
    ),
    "bash": (
        "slow_bolt.sh",
        ["bash", "slow_bolt.sh"],
        """
source "$MULTILANG_SH"
slow() { sleep "$1"; }
run_bolt slow
""",
    ),
}
N, SECS = 24, 0.25  # the whole queue takes 6 s; our clients write within 50 ms (bash: 1 s)


def _slow_bolt(tmp_path, client: str) -> list[str]:
    name, argv, source = SLOW_BOLTS[client]
    (tmp_path / name).write_text(source)
    return argv


@pytest.mark.parametrize("client", list(SLOW_BOLTS))
def test_a_slow_bolt_answers_each_tuple_of_a_long_read_as_it_goes(tmp_path, client):
    peer = ComponentPeer(_slow_bolt(tmp_path, client), cwd=str(tmp_path))
    try:
        peer.handshake()
        # one write, so that the whole queue arrives in one read
        peer.send_raw(
            b"".join(encode(TupleMessage(str(i), "spout", "default", 1, [SECS])) for i in range(N))
        )
        started = time.monotonic()
        first = peer.read_until(Ack, timeout=N * SECS + 10)[-1]
        waited = time.monotonic() - started
        assert first == Ack("0")
        # kept back for the whole read, the first ack would come with the last, after N * SECS
        assert waited < N * SECS / 2, f"the first ack came after {waited:.1f}s"
        acks = [first] + [peer.read_until(Ack, timeout=10)[-1] for _ in range(N - 1)]
        assert [a.id for a in acks] == [str(i) for i in range(N)]
    finally:
        assert peer.close() == 0


def _topology(tmp_path, client: str) -> Topology:
    b = TopologyBuilder(
        "slow", config={"topology.subprocess.timeout.secs": 3, "topology.max.spout.pending": N}
    )
    b.spout("spout", ["python", "spout.py"], outputs=["secs"])
    b.bolt("bolt", _slow_bolt(tmp_path, client), outputs=[]).shuffle("spout")
    return b.build(tmp_path)


SPOUT = f"""
from multilang import Spout

class Once(Spout):
    def initialize(self, conf, context):
        self.left = {N}

    def next_tuple(self):
        while self.left:
            self.left -= 1
            self.emit([{SECS}], id=self.left)

Once().run()
"""


@pytest.mark.parametrize("client", list(SLOW_BOLTS))
def test_a_slow_bolt_with_a_queue_longer_than_the_timeout_is_not_taken_for_hung(tmp_path, client):
    # 24 tuples of 0.25 s queued at a bolt with a 3 s subprocess timeout: answered as it goes it
    # is never silent for 3 s; answered all at once it would be, and be killed as hung
    (tmp_path / "spout.py").write_text(SPOUT)
    sup = Supervisor(_topology(tmp_path, client))
    sup.start()
    try:
        deadline = time.monotonic() + N * SECS + 20
        while sup.snapshot()["topology"]["spout_tuples_acked"] < N:
            assert time.monotonic() < deadline, "the slow bolt's tuples were not all acked"
            sup.step(0.1)
        snap = sup.snapshot()
    finally:
        sup.request_stop()
        while sup.step(0.1):
            pass
        sup.finish()
    bolt = snap["components"]["bolt"]
    assert (bolt["restarts"], bolt["failed"], snap["topology"]["spout_tuples_failed"]) == (0, 0, 0)
