"""The partial count, a batch bolt (3 tasks): how many numbers, and their sum, this task got of an
attempt; sent on to the committer when the task has all of them."""

from multilang import BatchBolt


class Partial(BatchBolt):
    def begin(self, batch):
        batch.count = batch.total = 0

    def process(self, tup, batch):
        batch.count += 1
        batch.total += tup.values[0]

    def finish_batch(self, batch):
        self.emit([batch.count, batch.total])


Partial().run()
