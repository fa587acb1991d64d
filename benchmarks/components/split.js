// [sentence] -> one [word] per word, each anchored to the sentence (acked when process returns).
const { BasicBolt } = require('multilang');

new BasicBolt({
  process(tuple, emit) {
    for (const word of tuple.values[0].split(' ')) {
      if (word) emit([word]);
    }
  },
}).run();
