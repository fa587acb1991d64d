// [word] -> [word, count so far]. Fields grouping on `word` brings every word to one task.
const { BasicBolt } = require('multilang');

const counts = new Map();

new BasicBolt({
  process(tuple, emit) {
    const word = tuple.values[0];
    const count = (counts.get(word) || 0) + 1;
    counts.set(word, count);
    emit([word, count]); // anchored: the line is acked once its counts are written to Parquet
  },
}).run();
