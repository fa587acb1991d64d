"""Word-count spout: emits sentences from a fixed list, each with a unique message id, and
replays the ones the topology fails.

Configuration (topology conf, or argv for running by hand):
  wordcount.sentences.limit     stop after this many distinct sentences (default: never);
                                `--limit N` on the command line does the same
  wordcount.sentences.per.next  sentences emitted per next_tuple (default 1); `--per-next N`

With a limit, an end-to-end run can check exact counts: every word of the first `limit`
sentences is counted once per successful delivery, and a failed sentence is re-emitted (with the
same id) before any new one.
"""

from __future__ import annotations

import sys
from collections import deque

from multilang import Spout

SENTENCES = [
    "the cow jumped over the moon",
    "an apple a day keeps the doctor away",
    "four score and seven years ago",
    "snow white and the seven dwarfs",
    "i am at two with nature",
]


def _option(argv: list[str], name: str) -> int | None:
    if name in argv:
        i = argv.index(name)
        if i + 1 < len(argv):
            return int(argv[i + 1])
    return None


class Sentences(Spout):
    def initialize(self, conf, context):
        limit = _option(sys.argv, "--limit")
        if limit is None:
            limit = conf.get("wordcount.sentences.limit")
        self.limit: int | None = int(limit) if limit is not None else None
        per_next = _option(sys.argv, "--per-next") or conf.get("wordcount.sentences.per.next", 1)
        self.per_next = max(1, int(per_next))
        self.seq = 0  # the next sequence number = message id
        self.pending: dict[int, str] = {}  # emitted, not yet acked: id -> sentence
        self.replay: deque[int] = deque()  # failed ids waiting to be emitted again
        self.acked = 0
        self.replayed = 0

    def next_tuple(self):
        for _ in range(self.per_next):
            if self.replay:
                msg_id = self.replay.popleft()
                self.replayed += 1
                self.emit([self.pending[msg_id]], id=msg_id)
            elif self.limit is None or self.seq < self.limit:
                msg_id = self.seq
                self.seq += 1
                sentence = SENTENCES[msg_id % len(SENTENCES)]
                self.pending[msg_id] = sentence
                self.emit([sentence], id=msg_id)
            else:
                return  # all sentences out: the host backs off

    def ack(self, msg_id):
        if self.pending.pop(msg_id, None) is not None:
            self.acked += 1
            if self.limit is not None and self.acked == self.limit:
                self.log(f"all {self.limit} sentences acked ({self.replayed} replays)")

    def fail(self, msg_id):
        # a repeated fail of an id already waiting for its replay must not replay it twice
        if msg_id in self.pending and msg_id not in self.replay:
            self.replay.append(msg_id)


if __name__ == "__main__":
    Sentences().run()
