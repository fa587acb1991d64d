// Uses the Node client's transactional batch classes as docs/transactional.md §5 shows them, so
// that `make lint` type-checks their declarations in multilang/node/multilang/index.d.ts: every
// line here must compile, and every `@ts-expect-error` line must be refused.
import {
  BatchBolt, Committer, OpaquePartitionedTransactionalSpout, PartitionedTransactionalSpout,
  TransactionalSpout,
} from 'multilang';
import type { Batch, BatchSpoutEmit, BatchTuple, BoltEmit, Tx } from 'multilang';

// a partial count per attempt: state on `batch`, emitted when the attempt is finished here
new BatchBolt({
  begin(batch) {
    batch.count = 0;
  },
  process(tuple, batch) {
    const txid: number = tuple.tx.txid;
    batch.count += txid > 0 ? 1 : 0;
  },
  finishBatch(batch, emit) {
    emit([batch.tx.txid, batch.count]);
  },
}).run();

// a committer with async hooks and state in its spec
new Committer({
  stored: new Map<string, { txid: number; total: number }>(),
  initialize(conf) {
    this.log(`committing for ${this.context?.batch?.transactional_id} ${conf['topology.name']}`);
  },
  async process(tuple: BatchTuple, batch: Batch, emit: BoltEmit) {
    batch.total = (batch.total ?? 0) + Number(tuple.values[1]);
    emit(['seen'], { stream: 'audit' });
  },
  async finishBatch(batch) {
    const prev = this.stored.get('total');
    if (prev?.txid === batch.tx.txid) return; // applied already: exactly once
    this.stored.set('total', { txid: batch.tx.txid, total: (prev?.total ?? 0) + batch.total });
  },
}).run();

// a transactional spout: metadata from task 0, every task emits its share
new TransactionalSpout({
  open(conf) {
    this.log(`task ${this.taskIndex} of ${this.taskCount} (${conf['topology.name']})`);
  },
  initialize(txid: number, prevMeta: { to: number } | null) {
    const from = prevMeta === null ? 0 : prevMeta.to;
    return txid > 1000 ? null : { from, to: from + 100 };
  },
  async emitBatch(tx: Tx, meta: { from: number; to: number }, emit: BatchSpoutEmit) {
    for (let n = meta.from; n < meta.to; n++) {
      if (n % this.taskCount === this.taskIndex) emit([n, tx.txid]);
    }
    const tasks: Promise<number[]> = emit(['asked'], { needTaskIds: true });
    await tasks;
  },
  commit(tx) {
    this.log(`committed ${tx.txid}.${tx.attempt}`);
  },
}).run();

// partitioned: emitNew returns the metadata that emitAgain replays
new PartitionedTransactionalSpout({
  partitions: () => 4,
  emitNew(tx, partition, lastMeta: { next: number } | null, emit) {
    const next = lastMeta === null ? 0 : lastMeta.next;
    emit([partition, next, tx.txid]);
    return { next: next + 1 };
  },
  async emitAgain(tx, partition, meta: { next: number }, emit) {
    emit([partition, meta.next - 1, tx.txid]);
  },
}).run();

// opaque: every attempt reads on from the previous batch's metadata
new OpaquePartitionedTransactionalSpout({
  async partitions() {
    return 2;
  },
  emitPartition(tx, partition, lastMeta: number | null, emit) {
    emit([partition, tx.attempt]);
    return (lastMeta ?? 0) + 1;
  },
  commit(tx) {
    this.log(`offsets committed up to txid ${tx.txid}`);
  },
}).run();

class Partial extends BatchBolt {
  process(tuple: BatchTuple, batch: Batch): void {
    batch.n = (batch.n ?? 0) + tuple.values.length;
  }
}
new Partial().run();

// @ts-expect-error a batch bolt's process gets the attempt's state second
new BatchBolt({ process(tuple: BatchTuple, batch: number) {} });
// @ts-expect-error a transactional spout needs emitBatch
new TransactionalSpout({ initialize: () => null });
// @ts-expect-error batch tuples have no message id
new TransactionalSpout({ initialize: () => 1, emitBatch(tx, meta, emit) { emit([1], { id: 3 }); } });
// @ts-expect-error a partitioned spout's partition count is a number
new OpaquePartitionedTransactionalSpout({ partitions: () => 'two', emitPartition: () => 1 });
