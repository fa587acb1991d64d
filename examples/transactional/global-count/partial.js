// The partial count in Node, a batch bolt: how many numbers, and their sum, this task got of an
// attempt, sent on to the committer once the task has all of them.
const { BatchBolt } = require('multilang');

new BatchBolt({
  begin(batch) {
    batch.count = 0;
    batch.total = 0;
  },
  process(tuple, batch) {
    batch.count += 1;
    batch.total += tuple.values[0];
  },
  finishBatch(batch, emit) {
    emit([batch.count, batch.total]);
  },
}).run();
