// The ledger spout in Node: emits ids 0..N-1 (conf test.messages), replays failed ids, appends
// "ack ID" / "fail ID" lines to conf test.ledger.
const fs = require('fs');
const { Spout } = require('multilang');

new Spout({
  initialize(conf) {
    this.todo = [];
    for (let i = 0; i < Number(conf['test.messages']); i++) this.todo.push(i);
    this.fd = fs.openSync(conf['test.ledger'], 'a');
    this.perNext = Number(conf['test.per.next'] || 1);
  },
  nextTuple(emit) {
    for (let n = 0; n < this.perNext && this.todo.length; n++) {
      const i = this.todo.shift();
      emit([`message ${i} with some words in it`], { id: i });
    }
  },
  ack(id) { fs.writeSync(this.fd, `ack ${id}\n`); },
  fail(id) { fs.writeSync(this.fd, `fail ${id}\n`); this.todo.push(id); },
}).run();
