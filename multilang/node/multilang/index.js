'use strict';
/**
 * multilang: write Storm multilang spouts and bolts in Node (CommonJS, no dependencies).
 *
 *   const { BasicBolt } = require('multilang');
 *   new BasicBolt({
 *     async process(tuple, emit) { emit([tuple.values[0], 1]); },  // resolve = ack, throw = fail
 *   }).run();
 *
 * The library owns the protocol (docs/protocol.md): the handshake and pid file, heartbeats,
 * tick routing, acks for BasicBolt, the task-id replies and spout `sync`s. The types of the API
 * are declared in index.d.ts (for TypeScript, and editors' checks of plain JS).
 *
 * Hooks are plain methods, given in a spec object or defined in a subclass; inside them `this` is
 * the component, so `this.log`, `this.emit`, `this.conf`, `this.context` and any state you put in
 * the spec are at hand (arrow functions do not get that `this`).
 *
 * Transactional batches (docs/transactional.md): BatchBolt, Committer, TransactionalSpout,
 * PartitionedTransactionalSpout and OpaquePartitionedTransactionalSpout, in batch.js.
 *
 * stdout belongs to the protocol: once `run()` is called, anything else written to stdout
 * (console.log included) is sent to stderr instead, where the host logs it.
 */

const fs = require('fs');
const path = require('path');
const util = require('util');

const END = '\nend\n';
const HEARTBEAT = '__heartbeat';
const TICK = '__tick';
const SYSTEM_TASK = -1;
const EXIT_GRACE_MS = 2000; // longest wait for stdout to drain before exiting anyway
// Longest run of host messages handled in one event-loop turn. Output is written between turns,
// and a promise's ack only settles between them, so a slow synchronous hook with a long queue
// would otherwise keep everything back for the whole read (and the host takes silence while it
// owes answers for a hang). The rest of the read waits in `unread` for the next turn.
const TURN_MS = 50;
const INTERNAL = ['conf', 'context', '_ml', '_pending', '_answer']; // instance fields we set

/** Log levels of the `log` command (docs/protocol.md, "Logging"). */
const LEVELS = Object.freeze({ trace: 0, debug: 1, info: 2, warn: 3, error: 4 });

/** An input tuple of a bolt. `values` is the array the source emitted. */
class Tuple {
  constructor(id, component, stream, task, values) {
    this.id = id;
    this.component = component;
    this.stream = stream;
    this.task = task;
    this.values = values;
  }
}

function describe(err) {
  if (err instanceof Error) return err.stack || String(err);
  if (typeof err === 'string') return err;
  return util.inspect(err);
}

/** What a throw or rejection carried, as something non-null to report (`throw undefined` happens). */
function asError(err) {
  return err === undefined || err === null ? new Error('failed with ' + err) : err;
}

function isThenable(value) {
  return value !== null && value !== undefined && typeof value.then === 'function';
}

function levelNumber(level) {
  if (level === undefined) return 2;
  if (typeof level === 'number' && Number.isInteger(level) && level >= 0 && level <= 4) return level;
  const n = LEVELS[String(level).toLowerCase()];
  return n === undefined ? 2 : n;
}

function idOf(anchor) {
  return typeof anchor === 'string' ? anchor : anchor && anchor.id;
}

/**
 * The pipes: reads host messages from stdin, writes batched output to stdout, keeps the
 * task-id waiters and the stash of messages that arrive while the component must not see them.
 * One per process.
 */
class Connection {
  constructor(component) {
    this.component = component;
    this.inbuf = '';
    this.scanFrom = 0;
    this.out = '';
    this.ready = false; // nothing may precede the pid reply
    this.flushScheduled = false;
    this.flush = this.flush.bind(this);
    this.waiters = []; // resolve functions of emits waiting for task ids, in emit order
    this.stash = []; // host messages held back while waiting, in arrival order
    this.unread = []; // host messages read but left for the next turn (TURN_MS), in arrival order
    this.resume = this.resume.bind(this);
    this.hold = false; // the component is busy (initialize, a spout command) and takes nothing new
    this.drainScheduled = false;
    this.drain = this.drain.bind(this);
    this.handshaken = false;
    this.rawWrite = null;
    this.congested = false;
    this.exiting = false;
  }

  start() {
    const stdout = process.stdout;
    this.rawWrite = stdout.write.bind(stdout);
    // Keep user output (console.log, stray writes) out of the protocol stream.
    stdout.write = process.stderr.write.bind(process.stderr);
    stdout.on('error', () => process.exit(0)); // EPIPE: the host is gone
    process.on('uncaughtException', (err) => this.die(err));
    const stdin = process.stdin;
    stdin.setEncoding('utf8');
    stdin.on('data', (chunk) => this.onData(chunk));
    stdin.on('end', () => setImmediate(() => this.onEnd()));
  }

  /** The host closed our stdin: handle what was read before it (TURN_MS a turn), then exit. */
  onEnd() {
    if (this.unread.length !== 0) setImmediate(() => this.onEnd());
    else this.exit(0);
  }

  // ---- output ---------------------------------------------------------------------------------

  /** Queue one framed message (`text` already ends with END); written once per event-loop turn. */
  write(text) {
    this.out += text;
    if (!this.flushScheduled && this.ready) {
      this.flushScheduled = true;
      setImmediate(this.flush);
    }
  }

  send(obj) {
    this.write(JSON.stringify(obj) + END);
  }

  flush() {
    this.flushScheduled = false;
    if (this.out.length === 0 || !this.ready) return;
    const text = this.out;
    this.out = '';
    // Pipe writes are asynchronous in Node: when the host reads slower than we write, stop
    // reading its input until our output drains, so memory stays bounded on both sides.
    if (!this.rawWrite(text) && !this.congested) {
      this.congested = true;
      process.stdin.pause();
      process.stdout.once('drain', () => {
        this.congested = false;
        process.stdin.resume();
      });
    }
  }

  /** Exit once everything written so far has reached the pipe (process.exit would drop it). */
  exit(code) {
    this.flush();
    if (this.exiting) return;
    this.exiting = true;
    process.stdin.pause(); // handle nothing more while the output drains
    if (process.stdout.writableLength === 0) process.exit(code);
    this.rawWrite('', () => process.exit(code));
    setTimeout(() => process.exit(code), EXIT_GRACE_MS).unref();
  }

  /** An error nobody caught (a throw in a timer, say): report it, then exit like node would. */
  die(err) {
    try {
      process.stderr.write(describe(err) + '\n');
      if (this.ready) { // before the pid reply the host could not take it
        this.send({ command: 'error', msg: 'uncaught exception: ' + describe(err) });
      }
    } finally {
      this.exit(1);
    }
  }

  // ---- input ----------------------------------------------------------------------------------

  onData(chunk) {
    if (this.exiting) return;
    const buf = this.inbuf.length === 0 ? chunk : this.inbuf + chunk;
    const first = buf.indexOf(END, this.scanFrom);
    if (first === -1) {
      this.inbuf = buf;
    } else {
      const last = buf.lastIndexOf(END);
      this.inbuf = buf.slice(last + END.length);
      if (first === last) {
        this.onFrame(buf.slice(0, first));
      } else {
        this.onFrames(buf.slice(0, last));
      }
    }
    // An END may straddle two chunks: rescan only the tail that could hold its beginning.
    this.scanFrom = Math.max(0, this.inbuf.length - END.length + 1);
  }

  /** Several complete frames: one JSON.parse for all of them is markedly cheaper than one each. */
  onFrames(text) {
    let messages;
    try {
      messages = JSON.parse('[' + text.replaceAll(END, ',') + ']');
    } catch (err) {
      for (const frame of text.split(END)) this.onFrame(frame); // find and report the bad one
      return;
    }
    this.onMessages(messages);
  }

  /** Host messages in arrival order, at most TURN_MS of them per turn: the rest wait in `unread`
   * (with whatever arrives meanwhile behind them) for the next turn. */
  onMessages(messages) {
    if (this.unread.length !== 0) {
      for (const msg of messages) this.unread.push(msg);
      return;
    }
    const due = Date.now() + TURN_MS;
    for (let i = 0; i < messages.length && !this.exiting; i++) {
      this.onMessage(messages[i]);
      if (Date.now() >= due && i + 1 < messages.length) {
        this.unread = messages.slice(i + 1);
        setImmediate(this.resume);
        return;
      }
    }
  }

  resume() {
    const messages = this.unread;
    this.unread = [];
    this.onMessages(messages);
  }

  onFrame(text) {
    let msg;
    try {
      msg = JSON.parse(text);
    } catch (err) {
      this.component.log('ignoring a host message that is not JSON: ' + text.slice(0, 200), 3);
      return;
    }
    if (this.unread.length !== 0) this.unread.push(msg);
    else this.onMessage(msg);
  }

  onMessage(msg) {
    if (msg === null || typeof msg !== 'object') {
      this.component._unknown(msg);
    } else if (Array.isArray(msg)) {
      this.onTaskIds(msg);
    } else if (this.hold || this.waiters.length !== 0 || this.stash.length !== 0) {
      this.stash.push(msg);
    } else {
      this.dispatch(msg);
    }
  }

  dispatch(msg) {
    if (this.handshaken) {
      this.component._onMessage(msg);
    } else {
      this.handshaken = true;
      this.component._onHandshake(msg);
    }
  }

  onTaskIds(ids) {
    const resolve = this.waiters.shift();
    if (resolve === undefined) {
      this.component.log('ignoring a task-id list nobody asked for: ' + JSON.stringify(ids), 3);
      return;
    }
    resolve(ids);
    if (this.waiters.length === 0) this.scheduleDrain();
  }

  /** A promise of the task ids for the emit just written. */
  waitForTaskIds() {
    return new Promise((resolve) => this.waiters.push(resolve));
  }

  setHold(hold) {
    this.hold = hold;
    if (!hold) this.scheduleDrain();
  }

  // Stashed messages are handled on a later turn, so that the code that was waiting (for task
  // ids, for its hook to finish) runs first, as it would in a synchronous client.
  scheduleDrain() {
    if (!this.drainScheduled && this.stash.length !== 0) {
      this.drainScheduled = true;
      setImmediate(this.drain);
    }
  }

  drain() {
    this.drainScheduled = false;
    const due = Date.now() + TURN_MS;
    while (this.stash.length !== 0 && !this.hold && this.waiters.length === 0 && !this.exiting) {
      this.dispatch(this.stash.shift());
      if (Date.now() >= due) {
        this.scheduleDrain();
        return;
      }
    }
  }
}

/** What every component shares: hooks from a spec, the handshake, log/error/metrics, emits. */
class Component {
  constructor(spec, hooks) {
    if (spec !== undefined && spec !== null) {
      for (const key of Object.keys(spec)) {
        if (!hooks.includes(key) && (key in this || INTERNAL.includes(key))) {
          throw new TypeError(`${this.constructor.name}: "${key}" in the spec would hide the ` +
            `library's own "${key}"; rename it (hooks are: ${hooks.join(', ')})`);
        }
      }
      Object.assign(this, spec);
    }
    this.conf = null;
    this.context = null;
    this._ml = new Connection(this);
    this._pending = new Set(); // bolts: ids of input tuples not yet acked or failed
  }

  /** Start the protocol loop: read the handshake, then serve the host until stdin ends. */
  run() {
    if (Component._running) throw new Error('multilang: only one component can run per process');
    Component._running = this;
    this._check();
    this._ml.start();
    return this;
  }

  _check() {}

  /** Send a log line to the host. level: 0..4 or 'trace'|'debug'|'info'|'warn'|'error'. */
  log(msg, level) {
    const text = typeof msg === 'string' ? msg : util.inspect(msg);
    this._ml.write('{"command":"log","msg":' + JSON.stringify(text) + ',"level":' +
      levelNumber(level) + '}' + END);
  }

  /** Report an error to the host (counted and shown; not fatal). */
  error(msg) {
    this._ml.send({ command: 'error', msg: describe(msg) });
  }

  /** Update a host-side metric registered under `name`. */
  metrics(name, params) {
    if (typeof name !== 'string' || name === '') { // the host would treat it as a protocol error
      throw new TypeError('metrics: name must be a non-empty string');
    }
    this._ml.send({ command: 'metrics', name, params: params === undefined ? null : params });
  }

  _onHandshake(msg) {
    const ml = this._ml;
    const pidDir = msg && msg.pidDir;
    let pidError = null;
    try {
      fs.closeSync(fs.openSync(path.join(String(pidDir), String(process.pid)), 'w'));
    } catch (err) {
      pidError = err;
    }
    ml.out = '{"pid":' + process.pid + ',"ext":' + JSON.stringify(this._extensions()) + '}' +
      END + ml.out;
    ml.ready = true;
    if (pidError !== null) this.error('cannot create the pid file in ' + pidDir + ': ' + pidError.message);
    ml.flush(); // the host learns our pid before a slow initialize runs
    this.conf = (msg && msg.conf) || {};
    this.context = (msg && msg.context) || {};
    const refusal = this._refusal(this.context);
    if (refusal !== null) { // this host cannot run this component: say so, and stop
      process.stderr.write(refusal + '\n');
      this.error(refusal);
      ml.exit(1);
      return;
    }
    const hook = this._startHook();
    this._callHook(this[hook], [this.conf, this.context], (err) => {
      if (err !== null) {
        this.error(hook + ' failed: ' + describe(err));
        ml.exit(1);
      }
    });
  }

  /** The protocol extensions announced in the pid reply (docs/protocol.md, "Protocol
   * extensions"). pipeline/1: commands are answered one at a time, in order (an async hook holds
   * back the next message), so the host may write them ahead of our syncs. */
  _extensions() {
    return ['pipeline/1'];
  }

  /** Why this component cannot run with this handshake's context, or null (it can). */
  _refusal(context) {
    return null;
  }

  /** The name of the hook called with (conf, context) after the handshake (each class has it). */
  _startHook() {
    return 'initialize';
  }

  /**
   * Run a hook and call `after(err|null)` when it has finished. Synchronous hooks finish at
   * once (no promise, no extra turn); a hook that returns a promise holds back further host
   * messages until it settles; a hook that declares one more parameter than `args` is given a
   * node-style `done(err)` callback.
   */
  _callHook(fn, args, after, holdWhileAsync = true) {
    const ml = this._ml;
    let settled = false;
    let isAsync = false;
    const finish = (err) => {
      if (settled) {
        if (err !== null) this.error(describe(err)); // e.g. a throw after done() was called
        return;
      }
      settled = true;
      if (isAsync && holdWhileAsync) ml.setHold(false);
      after(err);
    };
    const failed = (err) => finish(asError(err));
    let result;
    try {
      if (fn.length > args.length) {
        isAsync = true;
        if (holdWhileAsync) ml.hold = true;
        result = fn.apply(this, args.concat((err) => (err ? failed(err) : finish(null))));
        if (isThenable(result)) result.then(undefined, failed);
        return;
      }
      result = fn.apply(this, args);
    } catch (err) {
      failed(err);
      return;
    }
    if (isThenable(result)) {
      isAsync = true;
      if (holdWhileAsync) ml.hold = true;
      result.then(() => finish(null), failed);
    } else {
      finish(null);
    }
  }

  _unknown(msg) {
    this.log('ignoring an unknown host message: ' + String(JSON.stringify(msg)).slice(0, 500), 3);
  }

  /**
   * Write one emit. `anchorsJson` and `idJson` are already JSON text (or undefined).
   * Returns a promise of the task ids when asked for them, else undefined.
   */
  _writeEmit(values, options, anchorsJson, idJson) {
    if (!Array.isArray(values)) {
      throw new TypeError('emit: values must be an array, got ' + util.inspect(values));
    }
    let text = '{"command":"emit","tuple":' + JSON.stringify(values);
    let task;
    let needTaskIds = false;
    if (options !== undefined && options !== null) {
      const stream = options.stream;
      if (stream !== undefined && stream !== null && stream !== 'default') {
        if (typeof stream !== 'string') throw new TypeError('emit: stream must be a string');
        text += ',"stream":' + JSON.stringify(stream);
      }
      task = options.task;
      if (task !== undefined && task !== null) {
        if (!Number.isInteger(task)) throw new TypeError('emit: task must be an integer task id');
        text += ',"task":' + task;
      }
      needTaskIds = options.needTaskIds === true;
    }
    if (anchorsJson !== undefined) text += ',"anchors":' + anchorsJson;
    if (idJson !== undefined) text += ',"id":' + idJson;
    const direct = task !== undefined && task !== null;
    if (needTaskIds && !direct) {
      this._ml.write(text + '}' + END); // need_task_ids absent = true (Storm's default)
      return this._ml.waitForTaskIds();
    }
    this._ml.write(text + ',"need_task_ids":false}' + END);
    // The host never answers a direct emit: its only destination is the task itself.
    return needTaskIds ? Promise.resolve([task]) : undefined;
  }

  _anchorsJson(anchors) {
    if (anchors === undefined || anchors === null) return undefined;
    const list = Array.isArray(anchors) ? anchors : [anchors];
    if (list.length === 0) return undefined;
    const ids = new Array(list.length);
    for (let i = 0; i < list.length; i++) {
      const id = idOf(list[i]);
      if (!this._pending.has(id)) {
        throw new Error(`emit: anchor ${util.inspect(id)} is not a pending input tuple ` +
          '(already acked or failed, or never received)');
      }
      ids[i] = id;
    }
    return JSON.stringify(ids);
  }
}
Component._running = null;

/** What both kinds of bolt share: heartbeats, ticks, emits. */
class BoltBase extends Component {
  /** Hook: called once after the handshake; may return a promise. */
  initialize(conf, context) {}

  /** Hook: a tick tuple (`topology.tick.tuple.freq.secs`); acked by the library afterwards. */
  tick(tuple) {}

  _check() {
    if (typeof this.process !== 'function') {
      throw new TypeError(`${this.constructor.name}: define process(tuple, emit)`);
    }
  }

  /**
   * Emit a tuple: `values` is an array; options {stream, anchors (tuples or ids), task (direct),
   * needTaskIds}. Returns a promise of the destination task ids when needTaskIds is true.
   */
  emit(values, options) {
    return this._writeEmit(values, options,
      options === undefined || options === null ? undefined : this._anchorsJson(options.anchors));
  }

  _onMessage(msg) {
    const task = msg.task;
    const stream = msg.stream;
    if (task === SYSTEM_TASK && stream === HEARTBEAT) {
      this._ml.write('{"command":"sync"}' + END);
      return;
    }
    if (msg.tuple === undefined || msg.id === undefined) {
      this._unknown(msg);
      return;
    }
    const tuple = new Tuple(msg.id, msg.comp, stream, task, msg.tuple);
    this._pending.add(tuple.id);
    if (task === SYSTEM_TASK && stream === TICK) {
      this._callHook(this.tick, [tuple], (err) => this._settle(tuple, err), false);
    } else {
      this._onTuple(tuple);
    }
  }

  /** Ack (err === null) or report and fail a tuple the library owns. */
  _settle(tuple, err) {
    const id = tuple.id;
    if (!this._pending.delete(id)) {
      if (err !== null) this.error(describe(err));
      return; // a manual Bolt already acked or failed it
    }
    if (err === null) {
      this._ml.write('{"command":"ack","id":' + JSON.stringify(id) + '}' + END);
    } else {
      this.error(describe(err));
      this._ml.write('{"command":"fail","id":' + JSON.stringify(id) + '}' + END);
    }
  }
}

/**
 * A bolt that acks for you. `process(tuple, emit)` is called for every input tuple, possibly
 * several at a time when it is async. Every `emit` made through the `emit` argument is anchored to
 * that tuple (pass `anchors: []` to emit unanchored). When process returns, or its promise
 * resolves, the tuple is acked; when it throws or rejects, the tuple is failed and the error is
 * reported. Declare a third parameter, `process(tuple, emit, done)`, for callback style:
 * `done()` acks, `done(err)` fails.
 */
class BasicBolt extends BoltBase {
  constructor(spec) {
    super(spec, ['initialize', 'process', 'tick']);
  }

  _onTuple(tuple) {
    let anchorsJson;
    const emit = (values, options) => {
      if (options !== undefined && options !== null && options.anchors !== undefined) {
        return this._writeEmit(values, options, this._anchorsJson(options.anchors));
      }
      if (!this._pending.has(tuple.id)) {
        throw new Error(`emit after tuple ${tuple.id} was acked or failed ` +
          '(did process return before its work was done?)');
      }
      if (anchorsJson === undefined) anchorsJson = '[' + JSON.stringify(tuple.id) + ']';
      return this._writeEmit(values, options, anchorsJson);
    };
    const fn = this.process;
    if (fn.length > 2) { // callback style
      this._callHook(fn, [tuple, emit], (err) => this._settle(tuple, err), false);
      return;
    }
    // The common cases inline: this runs for every tuple.
    let result;
    try {
      result = fn.call(this, tuple, emit);
    } catch (err) {
      this._settle(tuple, asError(err));
      return;
    }
    if (isThenable(result)) {
      result.then(() => this._settle(tuple, null), (err) => this._settle(tuple, asError(err)));
    } else {
      this._settle(tuple, null);
    }
  }
}

/**
 * A bolt that leaves acking to you: call `this.ack(tuple)` or `this.fail(tuple)` for every input,
 * and anchor emits yourself: `this.emit(values, {anchors: [tuple]})`. If process throws or
 * rejects, the error is reported and the tuple failed unless you already acked or failed it.
 */
class Bolt extends BoltBase {
  constructor(spec) {
    super(spec, ['initialize', 'process', 'tick']);
  }

  _onTuple(tuple) {
    this._callHook(this.process, [tuple], (err) => {
      if (err !== null) this._settle(tuple, err);
    }, false);
  }

  /** Ack an input tuple (the tuple or its id). */
  ack(tuple) {
    this._complete(idOf(tuple), 'ack');
  }

  /** Fail an input tuple (the tuple or its id): its spout tuple is replayed. */
  fail(tuple) {
    this._complete(idOf(tuple), 'fail');
  }

  _complete(id, command) {
    if (!this._pending.delete(id)) {
      // The host would kill us for an unknown id; say so where the mistake is.
      throw new Error(`${command}: ${util.inspect(id)} is not a pending input tuple ` +
        '(already acked or failed, or never received)');
    }
    this._ml.write('{"command":"' + command + '","id":' + JSON.stringify(id) + '}' + END);
  }
}

/**
 * A spout. The library calls the hook for each command in turn, waits for it (return a promise
 * for async work) and then answers `sync`; commands the host wrote ahead wait their turn.
 *   nextTuple(emit)  emit zero or more tuples; with nothing to emit, just return
 *   ack(id), fail(id)  the tuple tree of message id `id` completed / failed (replay it)
 *   activate(), deactivate()
 * emit(values, {id, stream, task, needTaskIds}): `id` (any JSON value) makes the tuple reliable.
 * A hook that throws is reported as an error; the spout keeps running.
 */
class Spout extends Component {
  constructor(spec) {
    super(spec, ['initialize', 'activate', 'deactivate', 'nextTuple', 'ack', 'fail']);
    this.emit = this.emit.bind(this); // handed to nextTuple as is, once
    this._answer = this._answer.bind(this);
  }

  initialize(conf, context) {}
  activate() {}
  deactivate() {}
  nextTuple(emit) {}
  ack(id) {}
  fail(id) {}

  emit(values, options) {
    let idJson;
    if (options !== undefined && options !== null && options.id !== undefined && options.id !== null) {
      idJson = JSON.stringify(options.id);
      if (idJson === undefined) throw new TypeError('emit: the message id must be a JSON value');
    }
    return this._writeEmit(values, options, undefined, idJson);
  }

  _onMessage(msg) {
    switch (msg.command) {
      case 'next':
        this._callHook(this.nextTuple, [this.emit], this._answer);
        return;
      case 'ack':
        this._callHook(this.ack, [msg.id], this._answer);
        return;
      case 'fail':
        this._callHook(this.fail, [msg.id], this._answer);
        return;
      case 'activate':
        this._callHook(this.activate, [], this._answer);
        return;
      case 'deactivate':
        this._callHook(this.deactivate, [], this._answer);
        return;
      default:
        this._unknown(msg);
        if (msg.command !== undefined) this._answer(null); // the host waits for a sync
    }
  }

  _answer(err) {
    if (err !== null) this.error(describe(err));
    this._ml.write('{"command":"sync"}' + END);
  }
}

// The batch/1 classes (docs/transactional.md §4, §5) live in batch.js, built on the ones above.
const batch = require('./batch')({
  Component, BoltBase, Tuple, END, SYSTEM_TASK, describe, asError, isThenable,
});

module.exports = {
  BasicBolt, Bolt, Spout, Tuple, LEVELS,
  BatchBolt: batch.BatchBolt,
  Committer: batch.Committer,
  TransactionalSpout: batch.TransactionalSpout,
  PartitionedTransactionalSpout: batch.PartitionedTransactionalSpout,
  OpaquePartitionedTransactionalSpout: batch.OpaquePartitionedTransactionalSpout,
};
