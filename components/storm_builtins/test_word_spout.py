"""`org.apache.storm.testing.TestWordSpout`: a random word every 100 ms.

As Storm's: the words are nathan, mike, jackson, golda and bertels, one per `next_tuple`, at most
one every 100 ms, on stream `default` with the single field `word`, and **without a message id**,
so the tuples are not tracked (acks and fails never come back; Storm's ack/fail do nothing).
Storm's sleeps 100 ms inside nextTuple; this one paces itself without blocking (a `next_tuple`
that comes early just returns and the host backs off), so the spout stays responsive.
"""

from __future__ import annotations

import random
import time

from multilang import Spout

WORDS = ("nathan", "mike", "jackson", "golda", "bertels")
INTERVAL_SECS = 0.1


class TestWordSpout(Spout):
    __test__ = False  # not a pytest test class, whatever its name

    def __init__(self) -> None:
        super().__init__()
        self.next_at = 0.0

    def next_tuple(self) -> None:
        now = time.monotonic()
        if now < self.next_at:
            return
        self.next_at = now + INTERVAL_SECS
        self.emit([random.choice(WORDS)])


if __name__ == "__main__":
    TestWordSpout().run()
