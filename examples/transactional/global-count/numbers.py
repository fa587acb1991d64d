"""The global count's transactional spout: the numbers 0 .. 9,999 in batches of 100 (Storm's
TransactionalGlobalCount has a batch of words per txid; numbers make the expected sum easy to
check). The metadata of a batch is its range, so a replayed batch emits the same numbers. Task i
of N emits the numbers n with n % N == i."""

from multilang import TransactionalSpout

LIMIT, BATCH = 10_000, 100


class Numbers(TransactionalSpout):
    def initialize(self, txid, prev_meta):
        start = prev_meta["end"] if prev_meta else 0
        if start >= LIMIT:
            return None  # all emitted: no batch until there is more
        return {"start": start, "end": min(LIMIT, start + BATCH)}

    def emit_batch(self, tx, meta):
        for n in range(meta["start"], meta["end"]):
            if n % self.task_count == self.task_index:
                self.emit([n])


Numbers().run()
