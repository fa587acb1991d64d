// A BatchBolt (or, with the argument `committer`, a Committer) for the batch client tests.
// Each tuple's first value says what process does; finishBatch emits [txid, attempt, what it saw].
const { BatchBolt, Committer } = require('multilang');

const gates = new Map(); // key -> {promise, resolve}: lets one tuple wait for another

function gate(key) {
  if (!gates.has(key)) {
    let resolve;
    const promise = new Promise((r) => { resolve = r; });
    gates.set(key, { promise, resolve });
  }
  return gates.get(key);
}

const Kind = process.argv[2] === 'committer' ? Committer : BatchBolt;

new Kind({
  initialize(conf) {
    this.asyncBegin = Boolean(conf['test.async-begin']);
  },

  begin(batch) {
    this.log(`begin ${batch.tx.txid}.${batch.tx.attempt}`);
    if (!this.asyncBegin) {
      batch.seen = [];
      return undefined;
    }
    return new Promise((resolve) => setImmediate(resolve)).then(() => { batch.seen = []; });
  },

  async process(tuple, batch, emit) {
    const [what, arg] = tuple.values;
    switch (what) {
      case 'add': batch.seen.push(arg); break;
      case 'emit': batch.seen.push(arg); emit([arg]); break;
      case 'wait': await gate(arg).promise; batch.seen.push('after ' + arg); break;
      case 'release': gate(arg).resolve(); batch.seen.push(arg); break;
      case 'throw': throw new Error('process boom');
      case 'reject': await null; throw new Error('async process boom');
      default: throw new Error('unknown test instruction ' + what);
    }
  },

  async finishBatch(batch, emit) {
    if (batch.seen.includes('fail-finish')) throw new Error('finish boom');
    await null;
    emit([batch.tx.txid, batch.tx.attempt, batch.seen.join(',')]);
  },
}).run();
