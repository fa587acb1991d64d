// A BasicBolt in callback style: done() acks, done(err) fails.
const { BasicBolt } = require('multilang');

new BasicBolt({
  process(tuple, emit, done) {
    setImmediate(() => {
      if (tuple.values[0] === 'bad') return done(new Error('callback boom'));
      emit([tuple.values[0]]);
      done();
    });
  },
}).run();
