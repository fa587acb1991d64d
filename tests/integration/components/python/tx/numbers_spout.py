"""A transactional spout over the numbers 0 .. LIMIT-1, STEP per batch (the metadata: the range).
Task i of N emits the numbers n with n % N == i, so a batch is split among the tasks."""

import os

from multilang import TransactionalSpout

LIMIT = int(os.environ.get("LIMIT", "100"))
STEP = int(os.environ.get("STEP", "7"))


class Numbers(TransactionalSpout):
    def initialize(self, txid, prev_meta):
        start = prev_meta["end"] if prev_meta else 0
        if start >= LIMIT:
            return None  # nothing left: "not ready"
        return {"start": start, "end": min(LIMIT, start + STEP)}

    def emit_batch(self, tx, meta):
        for n in range(meta["start"], meta["end"]):
            if n % self.task_count == self.task_index:
                self.emit([n])


Numbers().run()
