"""A batch bolt: the words of its share of an attempt, counted; one (word, count) per distinct
word goes to the committer when the task has all of the attempt."""

from multilang import BatchBolt


class Count(BatchBolt):
    def begin(self, batch):
        batch.counts = {}

    def process(self, tup, batch):
        word = tup.values[0]
        batch.counts[word] = batch.counts.get(word, 0) + 1

    def finish_batch(self, batch):
        for word, n in batch.counts.items():
            self.emit([word, n])


Count().run()
