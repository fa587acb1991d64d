"""The benchmarks' spout written with pystorm (from PyPI, unmodified): `bench.per.next` sentences
per next_tuple with sequence numbers as message ids, failed ids replayed. It does not announce
`pipeline/1`, so the host keeps it in lock-step unless its `pipelining` switch is on
(docs/protocol.md §3.5)."""

from __future__ import annotations

from pystorm import Spout
from spout import SENTENCES


class PystormBenchSpout(Spout):
    def initialize(self, conf, context):
        self.per_next = max(1, int(conf.get("bench.per.next", 1)))
        self.seq = 0
        self.replay: list[int] = []

    def next_tuple(self):
        for _ in range(self.per_next):
            if self.replay:
                msg_id = self.replay.pop()
            else:
                msg_id = self.seq
                self.seq += 1
            self.emit([SENTENCES[msg_id % len(SENTENCES)]], tup_id=msg_id)

    def fail(self, tup_id):
        self.replay.append(tup_id)


if __name__ == "__main__":
    PystormBenchSpout().run()
