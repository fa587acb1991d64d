"""A spout for fault tests: emits messages 0..N-1 with their number as message id, replays every
failed id, and appends every acked id to a ledger file, which also lets a restarted spout resume.

conf: test.messages (N), test.ledger (path), test.per.next (emits per next_tuple, default 1),
test.start.file (optional: emit nothing until this file exists, so that a test can set up a
condition, such as stopped downstream tasks, before the first tuple).
"""

import os
from collections import deque

from multilang import Spout


class LedgerSpout(Spout):
    def initialize(self, conf, context):
        self.total = int(conf["test.messages"])
        self.path = conf["test.ledger"]
        self.per_next = int(conf.get("test.per.next", 1))
        self.start_file = conf.get("test.start.file")
        done = set()
        if os.path.exists(self.path):
            with open(self.path) as fh:
                done = {int(line.split()[1]) for line in fh if line.startswith("ack ")}
        self.todo = deque(i for i in range(self.total) if i not in done)
        self.ledger = open(self.path, "a", buffering=1)

    def next_tuple(self):
        if self.start_file is not None:
            if not os.path.exists(self.start_file):
                return  # not yet: the host backs off and asks again
            self.start_file = None
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
