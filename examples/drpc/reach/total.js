// total: the last bolt of the reach function, in Node, a batch bolt (`finish_batch: true`).
// Fed by a fields grouping on [request], so every partial count of a request reaches one task,
// which sums them and, once it has them all, emits [request, reach]: the DRPC answer. The other
// tasks also finish the request, with nothing of it: they must stay silent, since the first
// result of a request is the one the caller gets (docs/drpc.md §3.2). batch.tx.txid is the
// request id.
const { BatchBolt } = require('multilang');

new BatchBolt({
  begin(batch) {
    batch.parts = 0;
    batch.reach = 0;
  },
  process(tuple, batch) {
    batch.parts += 1;
    batch.reach += tuple.values[1];
  },
  finishBatch(batch, emit) {
    if (batch.parts > 0) emit([batch.tx.txid, batch.reach]);
  },
}).run();
