"""An opaque partitioned spout for the batch/1 transcripts: two partitions of a topic whose
offsets grow by the txid (a replay may read more than the first try did); the metadata of a
partition's batch is the next offset to read."""

from multilang import OpaquePartitionedTransactionalSpout


class Topic(OpaquePartitionedTransactionalSpout):
    def partitions(self):
        return 2

    def emit_partition(self, tx, partition, last_meta):
        start = last_meta["next"] if last_meta else 0
        end = start + tx.attempt  # a replay reads further: opaque batches may differ
        for offset in range(start, end):
            self.emit([partition, offset], stream="records")
        return {"next": end}

    def commit(self, tx):
        self.log(f"offsets committed for txid {tx.txid}")


Topic().run()
