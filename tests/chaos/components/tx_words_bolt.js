// The batch bolt of the transactional chaos tier in Node: the same as tx_words_bolt.py (see its
// docstring): (rid, number of words, 1) per line `RID WORD...`, emitted at the attempt's finish
// (`tx.emit: finish`) or per tuple (`tx.emit: tuple`), and the same once-per-schedule faults,
// planned by TX_FAULTS and claimed with an O_EXCL marker file in TX_FAULT_DIR (tx_faults.py).
'use strict';
const fs = require('fs');
const path = require('path');
const { BatchBolt } = require('multilang');

const EXIT_STATUS = 137;
const SLOW_MS = Math.round(Number(process.env.TX_SLOW_SECS || '3.5') * 1000);
const PLANNED = new Set((process.env.TX_FAULTS || '').split(',').filter((s) => s.trim() !== ''));

/** True in the one process that fires fault `point` at `txid` (it creates the marker). */
function claim(point, txid) {
  if (!PLANNED.has(`${point}:${txid}`)) return false;
  try {
    fs.closeSync(fs.openSync(path.join(process.env.TX_FAULT_DIR, `${point}-${txid}`), 'wx'));
    return true;
  } catch (err) {
    if (err.code === 'EEXIST') return false;
    throw err;
  }
}

function die(point, txid) {
  process.stderr.write(`TX FAULT: ${point} at txid ${txid}, exiting ${EXIT_STATUS}\n`);
  process.exit(EXIT_STATUS);
}

/** Block the whole process (no answer to anything) for `ms`: silent, as a hung component is. */
function block(ms) {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}

function record(line) {
  const [rid, ...words] = line.split(/\s+/).filter((w) => w !== '');
  return [rid, words.length, 1];
}

new BatchBolt({
  initialize(conf) {
    this.perTuple = conf['tx.emit'] === 'tuple';
  },

  begin(batch) {
    batch.rows = [];
    batch.seen = 0;
  },

  process(tuple, batch, emit) {
    const { txid } = batch.tx;
    batch.seen += 1;
    if (batch.seen >= 2) {
      if (claim('crash', txid)) die('crash', txid);
      if (claim('fail', txid)) throw new Error(`failing a tuple of txid ${txid} on purpose`);
      if (claim('hang', txid)) block(3600 * 1000);
      if (claim('slow', txid)) block(SLOW_MS);
    }
    const row = record(tuple.values[2]);
    if (this.perTuple) emit(row);
    else batch.rows.push(row);
  },

  async finishBatch(batch, emit) {
    const { txid } = batch.tx;
    if (claim('finish', txid)) {
      for (const row of batch.rows.slice(0, Math.floor(batch.rows.length / 2))) emit(row);
      await new Promise((resolve) => setTimeout(resolve, 20)); // the half goes out first
      die('finish', txid);
    }
    for (const row of batch.rows) emit(row);
  },
}).run();
