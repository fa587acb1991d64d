"""A finish-batch bolt in Python: the sum of a request's numbers, once it has all of them; a
task that got none of them says nothing (another task of the bolt got them all)."""

from multilang import BatchBolt


class Sum(BatchBolt):
    def begin(self, batch):
        batch.total = batch.seen = 0

    def process(self, tup, batch):
        batch.total += tup.values[1]
        batch.seen += 1

    def finish_batch(self, batch):
        if batch.seen:
            self.emit([batch.tx.txid, f"python:{batch.total}"])


Sum().run()
