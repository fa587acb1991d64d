"""A transactional spout for the batch/1 transcripts: batch txid covers the numbers
[from, to) of its metadata, three per batch; no batch is ready after `test.last_txid` (conf).
Each task emits the numbers n with n % tasks == its index. `commit` logs the txid. With
`test.raise_in_emit`, emit_batch raises after its first emit (a fatal error for a batch spout)."""

from multilang import TransactionalSpout


class Numbers(TransactionalSpout):
    def open(self, conf, context):
        self.last_txid = conf.get("test.last_txid", 2)
        self.raise_in_emit = conf.get("test.raise_in_emit", False)

    def initialize(self, txid, prev_meta):
        if txid > self.last_txid:
            return None  # not ready
        start = prev_meta["to"] if prev_meta else 0
        return {"from": start, "to": start + 3}

    def emit_batch(self, tx, meta):
        for n in range(meta["from"], meta["to"]):
            if n % self.task_count == self.task_index:
                self.emit([n])
                if self.raise_in_emit:
                    raise OSError("the source went away")

    def commit(self, tx):
        self.log(f"committed txid {tx.txid} (attempt {tx.attempt})")


Numbers().run()
