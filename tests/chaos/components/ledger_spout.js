// The ledger spout in Node, resuming: emits ids 0..N-1 (conf test.messages) except those its
// ledger (conf test.ledger) already records as acked, replays failed ids, appends "ack ID" /
// "fail ID" lines (and "activate" / "deactivate") to the ledger. A SIGKILLed incarnation's
// successor thus re-emits exactly the ids whose acks were never recorded.
'use strict';
const fs = require('fs');
const { Spout } = require('multilang');

new Spout({
  initialize(conf) {
    const path = conf['test.ledger'];
    const done = new Set();
    if (fs.existsSync(path)) {
      for (const line of fs.readFileSync(path, 'utf8').split('\n')) {
        const [kind, id] = line.split(' ');
        if (kind === 'ack') done.add(Number(id));
      }
    }
    this.todo = [];
    this.head = 0; // todo[head..] is still to emit (shift() on a long array is O(n))
    for (let i = 0; i < Number(conf['test.messages']); i++) if (!done.has(i)) this.todo.push(i);
    this.fd = fs.openSync(path, 'a');
    this.perNext = Number(conf['test.per.next'] || 1);
  },
  nextTuple(emit) {
    for (let n = 0; n < this.perNext && this.head < this.todo.length; n++) {
      const i = this.todo[this.head++];
      emit([`message ${i} with some words in it`], { id: i });
    }
  },
  ack(id) { fs.writeSync(this.fd, `ack ${id}\n`); },
  fail(id) { fs.writeSync(this.fd, `fail ${id}\n`); this.todo.push(id); },
  activate() { fs.writeSync(this.fd, 'activate\n'); },
  deactivate() { fs.writeSync(this.fd, 'deactivate\n'); },
}).run();
