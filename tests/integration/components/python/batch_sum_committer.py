"""A committer for the batch/1 transcripts: sums the counts of each attempt and, in the commit
phase, applies the sum once per txid (a replayed txid that was applied already is skipped, as
an exactly-once sink does), then emits `[txid, total]`."""

from multilang import Committer


class Sum(Committer):
    def initialize(self, conf, context):
        self.total = 0
        self.applied_txid = 0  # stored with the total, in one transaction, in a real sink

    def begin(self, batch):
        batch.sum = 0

    def process(self, tup, batch):
        batch.sum += tup.values[1]

    def finish_batch(self, batch):
        if batch.tx.txid > self.applied_txid:
            self.total += batch.sum
            self.applied_txid = batch.tx.txid
        self.emit([batch.tx.txid, self.total])


Sum().run()
