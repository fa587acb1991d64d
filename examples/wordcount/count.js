// Counts words. Input [word], output [word, count]. The topology routes by fields grouping on
// `word`, so each word always reaches the same task and a Map is all the state we need.
const { BasicBolt } = require('multilang');

const counts = new Map();

new BasicBolt({
  process(tuple, emit) {
    const word = tuple.values[0];
    const count = (counts.get(word) || 0) + 1;
    counts.set(word, count);
    emit([word, count]); // anchored to `tuple`; the tuple is acked when process returns
  },
}).run();
