// A finish-batch bolt in Node: the sum of a request's numbers, once it has all of them; a task
// that got none of them says nothing (another task of the bolt got them all).
const { BatchBolt } = require('multilang');

new BatchBolt({
  begin(batch) {
    batch.total = 0;
    batch.seen = 0;
  },
  process(tuple, batch) {
    batch.total += tuple.values[1];
    batch.seen += 1;
  },
  finishBatch(batch, emit) {
    if (batch.seen) emit([batch.tx.txid, `node:${batch.total}`]);
  },
}).run();
