"""A batch bolt for the batch/1 transcripts (tests/transcripts/batch-*.txt): counts each attempt's
tuples, emits every word with its running count (anchored to the tuple) and, at the finish,
`[txid, count]` (anchored to the finish). The word "bad" makes `process` raise; "bad-finish"
makes the attempt's `finish_batch` raise."""

from multilang import BatchBolt


class PartialCount(BatchBolt):
    def begin(self, batch):
        batch.count = 0
        batch.fail_finish = False

    def process(self, tup, batch):
        word = tup.values[0]
        if word == "bad":
            raise ValueError("bad word")
        batch.fail_finish = batch.fail_finish or word == "bad-finish"
        batch.count += 1
        self.emit([word, batch.count])

    def finish_batch(self, batch):
        if batch.fail_finish:
            raise RuntimeError(f"cannot finish txid {batch.tx.txid}")
        self.emit([batch.tx.txid, batch.count])


PartialCount().run()
