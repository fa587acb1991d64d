"""A partitioned transactional spout for the batch/1 transcripts: three partitions (files),
each read two lines per batch; the metadata of a partition's batch is the line range."""

from multilang import PartitionedTransactionalSpout


class Files(PartitionedTransactionalSpout):
    def partitions(self):
        return 3

    def emit_new(self, tx, partition, last_meta):
        start = last_meta["to"] if last_meta else 0
        meta = {"from": start, "to": start + 2}
        self.emit_again(tx, partition, meta)
        return meta

    def emit_again(self, tx, partition, meta):
        for line in range(meta["from"], meta["to"]):
            self.emit([f"file{partition}", line])


Files().run()
