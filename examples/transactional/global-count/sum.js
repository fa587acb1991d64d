// The sum in Node, a committer: adds each batch's partial counts to the totals in total.json,
// which also holds the txid that last changed them; a replayed txid already applied is skipped.
const fs = require('fs');
const { Committer } = require('multilang');

const PATH = process.env.TOTAL_FILE || 'total.json';

new Committer({
  begin(batch) {
    batch.count = 0;
    batch.total = 0;
  },
  process(tuple, batch) {
    batch.count += tuple.values[0];
    batch.total += tuple.values[1];
  },
  finishBatch(batch) {
    let state = { txid: 0, count: 0, sum: 0 };
    if (fs.existsSync(PATH)) state = JSON.parse(fs.readFileSync(PATH, 'utf8'));
    if (state.txid >= batch.tx.txid) return; // applied before this replay
    state = { txid: batch.tx.txid, count: state.count + batch.count, sum: state.sum + batch.total };
    const fd = fs.openSync(`${PATH}.tmp`, 'w');
    fs.writeSync(fd, JSON.stringify(state));
    fs.fsyncSync(fd);
    fs.closeSync(fd);
    fs.renameSync(`${PATH}.tmp`, PATH);
  },
}).run();
