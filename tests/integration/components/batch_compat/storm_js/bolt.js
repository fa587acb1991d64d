// A storm.js BasicBolt for tests/integration/test_batch_compat.py: logs what reached `process`
// (see ../README.md), then calls done(), on which storm.js acks.
const path = require('path');
const storm = require(path.join(__dirname, '..', 'storm', 'storm.js'));

function SeenBolt() {
  storm.BasicBolt.call(this);
}
SeenBolt.prototype = Object.create(storm.BasicBolt.prototype);
SeenBolt.prototype.constructor = SeenBolt;

SeenBolt.prototype.process = function (tup, done) {
  // undefined (a key the message lacked) becomes null inside a JSON array
  this.logInfo('process ' + JSON.stringify([tup.id, tup.component, tup.stream, tup.task, tup.values]));
  done();
};

new SeenBolt().run();
