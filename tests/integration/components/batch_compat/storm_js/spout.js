// A storm.js Spout for tests/integration/test_batch_compat.py: logs each `next` (see
// ../README.md); storm.js syncs when a command's callback calls done().
const path = require('path');
const storm = require(path.join(__dirname, '..', 'storm', 'storm.js'));

function NextSpout() {
  storm.Spout.call(this);
}
NextSpout.prototype = Object.create(storm.Spout.prototype);
NextSpout.prototype.constructor = NextSpout;

NextSpout.prototype.nextTuple = function (done) {
  this.logInfo('next');
  done();
};
NextSpout.prototype.activate = function (done) { done(); };
NextSpout.prototype.deactivate = function (done) { done(); };
NextSpout.prototype.ack = function (id, done) { done(); };
NextSpout.prototype.fail = function (id, done) { done(); };

new NextSpout().run();
