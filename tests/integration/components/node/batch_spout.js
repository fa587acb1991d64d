// The batch spouts for the batch client tests; the argument picks the kind:
//   transactional  numbers: the metadata is {from, to}; task k of N emits the n with n % N == k
//   partitioned    partition p holds the words "p:0", "p:1", ...; a batch takes the next two
//   opaque         as partitioned, but every attempt reads on from the previous batch's metadata
// conf["test.async"]: every hook waits a turn before it answers (commands must stay in order).
const {
  TransactionalSpout, PartitionedTransactionalSpout, OpaquePartitionedTransactionalSpout,
} = require('multilang');

let slow = false;
const later = (value) => (slow ? new Promise((r) => setImmediate(() => r(value))) : value);

function open(conf) {
  slow = Boolean(conf['test.async']);
  this.log(`task ${this.taskIndex} of ${this.taskCount}`);
}

function readTwo(tx, partition, from, emit) {
  for (let i = from; i < from + 2; i++) emit([`${partition}:${i}`, tx.txid]);
  return { from, to: from + 2 };
}

const kinds = {
  transactional: () => new TransactionalSpout({
    open,
    initialize(txid, prevMeta) {
      if (txid === 3 && !this.waited) { // not ready the first time it is asked for txid 3
        this.waited = true;
        return later(null);
      }
      const from = prevMeta === null ? 0 : prevMeta.to;
      return later({ from, to: from + 4 });
    },
    async emitBatch(tx, meta, emit) {
      await later();
      for (let n = meta.from; n < meta.to; n++) {
        if (n % this.taskCount === this.taskIndex) emit([n, tx.txid, tx.attempt]);
      }
      if (meta.fail) throw new Error('emit boom');
    },
    async commit(tx) {
      await later();
      this.log(`commit ${tx.txid}.${tx.attempt}`);
    },
  }),

  partitioned: () => new PartitionedTransactionalSpout({
    open,
    partitions() { return later(3); },
    async emitNew(tx, partition, lastMeta, emit) {
      await later();
      return readTwo(tx, partition, lastMeta === null ? 0 : lastMeta.to, emit);
    },
    async emitAgain(tx, partition, meta, emit) {
      await later();
      readTwo(tx, partition, meta.from, emit);
    },
  }),

  opaque: () => new OpaquePartitionedTransactionalSpout({
    open,
    partitions() { return 2; },
    emitPartition(tx, partition, lastMeta, emit) {
      return later(readTwo(tx, partition, lastMeta === null ? 0 : lastMeta.to, emit));
    },
    commit(tx) { this.log(`commit ${tx.txid}.${tx.attempt}`); },
  }),
};

kinds[process.argv[2]]().run();
