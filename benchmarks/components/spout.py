"""The benchmarks' spout. Everything is set through the topology config (`bench.*`):

  bench.per.next        tuples per next_tuple (default 1)
  bench.rate            tuples per second, paced from the first next (default 0: as fast as asked)
  bench.tuple.bytes     emit one string of this many bytes instead of a sentence
  bench.input.file      emit the lines of this file, in order, instead of the built-in sentences
  bench.limit           stop after this many distinct tuples
  bench.idle            true: never emit (the idle benchmark)
  bench.first.ack.file  write time.time() here when the first ack arrives (start-up benchmark)
  bench.done.file       with a limit: write {"first_emit", "all_acked"} (time.time()) here once
                        every tuple is acked

Message ids are sequence numbers, so a failed tuple is re-made from its id: no pending table.
"""

from __future__ import annotations

import json
import os
import time

from multilang import Spout

# four words each (the word count of the performance targets has about 4 words per sentence),
# 24 distinct words
SENTENCES = [
    "the cow jumped over",
    "an apple a day",
    "four score seven years",
    "snow white and dwarfs",
    "i am at two",
    "with nature the moon",
    "keeps doctor away now",
    "over the snow white",
]
RATE_SLACK = 100  # a paced spout that fell behind catches up at most this many tuples


def _write_atomically(path: str, text: str) -> None:
    tmp = f"{path}.{os.getpid()}.tmp"
    with open(tmp, "w", encoding="utf-8") as fh:
        fh.write(text)
    os.replace(tmp, path)


class BenchSpout(Spout):
    def initialize(self, conf, context):
        self.per_next = max(1, int(conf.get("bench.per.next", 1)))
        self.rate = float(conf.get("bench.rate", 0) or 0)
        self.limit = conf.get("bench.limit")
        self.idle = bool(conf.get("bench.idle", False))
        self.first_ack_file = conf.get("bench.first.ack.file")
        self.done_file = conf.get("bench.done.file")
        size = conf.get("bench.tuple.bytes")
        path = conf.get("bench.input.file")
        if path:
            with open(path, encoding="utf-8") as fh:
                self.lines = [line.rstrip("\n") for line in fh]
            if self.limit is None:
                self.limit = len(self.lines)
        elif size:
            self.lines = ["x" * int(size)]
        else:
            self.lines = SENTENCES
        self.seq = 0
        self.acked = 0
        self.started: float | None = None  # when pacing started
        self.first_emit: float | None = None
        self.replay: list[int] = []

    def next_tuple(self):
        if self.idle:
            return
        n = self.per_next
        if self.rate:
            now = time.monotonic()
            if self.started is None:
                self.started = now
            due = int((now - self.started) * self.rate) - self.seq
            if due > RATE_SLACK:  # fell behind (the host held us back): do not burst to catch up
                self.started = now - (self.seq + RATE_SLACK) / self.rate
                due = RATE_SLACK
            n = min(n, due)
        if self.first_emit is None and n > 0:
            self.first_emit = time.time()
        lines = self.lines
        count = len(lines)
        emit = self.emit
        for _ in range(n):
            if self.replay:
                msg_id = self.replay.pop()
            elif self.limit is None or self.seq < self.limit:
                msg_id = self.seq
                self.seq += 1
            else:
                return
            emit([lines[msg_id % count]], id=msg_id)

    def ack(self, msg_id):
        self.acked += 1
        if self.acked == 1 and self.first_ack_file:
            _write_atomically(self.first_ack_file, repr(time.time()))
        if self.limit is not None and self.acked == self.limit and self.done_file:
            _write_atomically(
                self.done_file,
                json.dumps(
                    {"first_emit": self.first_emit, "all_acked": time.time(), "acked": self.acked}
                ),
            )

    def fail(self, msg_id):
        self.replay.append(msg_id)


if __name__ == "__main__":
    BenchSpout().run()
