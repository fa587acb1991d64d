"""The transactional benchmark's spout: batches of `bench.batch.size` sentences (the metadata: the
range of sequence numbers), the same sentences as spout.py's, endless. Task i of N emits the
sequence numbers n with n % N == i."""

from __future__ import annotations

from spout import SENTENCES  # type: ignore[import-not-found]

from multilang import TransactionalSpout


class BenchTxSpout(TransactionalSpout):
    def open(self, conf, context):
        self.size = max(1, int(conf.get("bench.batch.size", 1000)))

    def initialize(self, txid, prev_meta):
        start = prev_meta["end"] if prev_meta else 0
        return {"start": start, "end": start + self.size}

    def emit_batch(self, tx, meta):
        emit, n_sentences = self.emit, len(SENTENCES)
        step, first = self.task_count, self.task_index
        for n in range(meta["start"] + (first - meta["start"]) % step, meta["end"], step):
            emit([SENTENCES[n % n_sentences]])


if __name__ == "__main__":
    BenchTxSpout().run()
