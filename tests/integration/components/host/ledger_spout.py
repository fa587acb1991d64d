"""A spout for fault tests: emits messages 0..N-1 with their number as message id, replays every
failed id, and appends every acked id to a ledger file, which also lets a restarted spout resume.

conf: test.messages (N), test.ledger (path), test.per.next (emits per next_tuple, default 1).
"""

import os
from collections import deque

from multilang import Spout


class LedgerSpout(Spout):
    def initialize(self, conf, context):
        self.total = int(conf["test.messages"])
        self.path = conf["test.ledger"]
        self.per_next = int(conf.get("test.per.next", 1))
        done = set()
        if os.path.exists(self.path):
            with open(self.path) as fh:
                done = {int(line.split()[1]) for line in fh if line.startswith("ack ")}
        self.todo = deque(i for i in range(self.total) if i not in done)
        self.ledger = open(self.path, "a", buffering=1)

    def next_tuple(self):
        for _ in range(self.per_next):
            if not self.todo:
                return
            i = self.todo.popleft()
            self.emit([f"message {i} with some words in it"], id=i)

    def ack(self, msg_id):
        self.ledger.write(f"ack {msg_id}\n")

    def fail(self, msg_id):
        self.ledger.write(f"fail {msg_id}\n")
        self.todo.append(msg_id)


LedgerSpout().run()
