"""The transactional word count's counter, a batch bolt: the words of its share of an attempt,
counted; at finish one (word, count) per distinct word goes to the committer."""

from __future__ import annotations

from multilang import BatchBolt


class BatchCount(BatchBolt):
    def begin(self, batch):
        batch.counts = {}

    def process(self, tup, batch):
        word = tup.values[0]
        batch.counts[word] = batch.counts.get(word, 0) + 1

    def finish_batch(self, batch):
        for word, n in batch.counts.items():
            self.emit([word, n])


if __name__ == "__main__":
    BatchCount().run()
