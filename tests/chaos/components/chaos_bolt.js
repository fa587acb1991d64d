// The chaos bolt in Node: the same config keys and modes as chaos_bolt.py (see README.md here),
// plus the protocol misuse modes ack_unknown, ack_twice, anchor_acked, unknown_stream,
// wrong_fields. A manual Bolt, so that it can misuse ack on purpose.
'use strict';
const fs = require('fs');
const { spawn } = require('child_process');
const { Bolt } = require('multilang');

const END = '\nend\n';

function claim(path) { // true for exactly one caller per file
  try {
    fs.closeSync(fs.openSync(path, 'wx', 0o600));
    return true;
  } catch (err) {
    if (err.code === 'EEXIST') return false;
    throw err;
  }
}

function sleepMs(ms) { // a synchronous sleep that uses no CPU
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}

function rawBytes(buf) { // straight to the protocol pipe, around the library's buffer
  let off = 0;
  while (off < buf.length) {
    try {
      off += fs.writeSync(1, buf, off);
    } catch (err) {
      if (err.code !== 'EAGAIN') throw err;
      sleepMs(1);
    }
  }
}

const bolt = new Bolt({
  initialize(conf) {
    this.seen = 0;
    this.mode = conf['chaos.mode'] || 'none';
    this.after = Number(conf['chaos.after'] || 0);
    this.marker = conf['chaos.marker'];
    this.trigger = conf['chaos.trigger'];
    this.bigMb = Number(conf['chaos.big.mb'] || 100);
    this.sink = conf['chaos.sink'] === true;
    this.slow = Number(conf['chaos.slow.ms'] || 0);
    this.failShare = Number(conf['chaos.fail.share'] || 0);
    if (conf['chaos.grandchild'] === true) {
      spawn('sleep', ['600'], { stdio: 'ignore' }).unref();
    }
  },

  armed() {
    if (this.mode === 'none' || this.seen <= this.after) return false;
    if (this.trigger) {
      try { fs.unlinkSync(this.trigger); } catch (err) { return false; }
    }
    if (this.marker && !claim(this.marker)) {
      this.mode = 'none';
      return false;
    }
    return true;
  },

  misbehave(tuple) {
    const mode = this.mode;
    this.mode = 'none';
    const raw = (text) => this._ml.write(text);
    switch (mode) {
      case 'crash': process.kill(process.pid, 'SIGKILL'); break;
      case 'hang': sleepMs(3600e3); break;
      case 'garbage': raw('this is not json' + END); break;
      case 'badutf8':
        this._ml.flush();
        rawBytes(Buffer.concat([Buffer.from('{"command":"log","msg":"bad '),
          Buffer.from([0xff, 0xfe, 0xc3, 0x28]), Buffer.from(' bytes"}' + END)]));
        break;
      case 'surrogate_emit':
        raw(`{"command":"emit","anchors":[${JSON.stringify(tuple.id)}],"tuple":["\\ud800 lone"]}` + END);
        break;
      case 'surrogate_log': raw('{"command":"log","msg":"lone \\udcff surrogate"}' + END); break;
      case 'bigline': {
        this._ml.flush();
        const chunk = Buffer.alloc(1 << 20, 'x');
        for (let i = 0; i < this.bigMb; i++) rawBytes(chunk);
        sleepMs(3600e3);
        break;
      }
      case 'flood': {
        const line = 'x'.repeat(1023) + '\n';
        for (let i = 0; i < 1024; i++) process.stderr.write(line);
        break;
      }
      case 'exit': this._ml.flush(); process.exit(0); break;
      case 'ack_unknown': raw('{"command":"ack","id":"12345"}' + END); break;
      case 'ack_twice': // the library refuses a second ack, so write it by hand
        this.ack(tuple);
        raw(`{"command":"ack","id":${JSON.stringify(tuple.id)}}` + END);
        return true;
      case 'anchor_acked': // the library refuses this too
        this.ack(tuple);
        raw(`{"command":"emit","anchors":[${JSON.stringify(tuple.id)}],"tuple":["late"]}` + END);
        return true;
      case 'unknown_stream': this.emit(['x'], { stream: 'nope', anchors: [tuple] }); break;
      case 'wrong_fields': this.emit(['x', 'y'], { anchors: [tuple] }); break;
      default: break;
    }
    return false;
  },

  process(tuple) {
    this.seen++;
    if (this.armed() && this.misbehave(tuple)) return;
    if (this.slow) sleepMs(this.slow);
    if (this.failShare && Math.random() < this.failShare) {
      throw new Error(`chaos: failing tuple ${tuple.id} on purpose`);
    }
    if (!this.sink) {
      for (const word of tuple.values[0].split(' ')) this.emit([word], { anchors: [tuple] });
    }
    this.ack(tuple);
  },
});

const muteMarker = process.env.CHAOS_MUTE_MARKER;
if (muteMarker && claim(muteMarker)) {
  setInterval(() => {}, 1 << 30); // never answer the handshake
} else {
  bolt.run();
}
