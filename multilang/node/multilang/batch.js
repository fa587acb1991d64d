'use strict';
/**
 * Transactional batches for Node components: the client side of the `batch/1` extension
 * (docs/transactional.md §4 and §5).
 *
 *   const { BatchBolt } = require('multilang');
 *   new BatchBolt({
 *     begin(batch) { batch.count = 0; },                 // a new attempt's own state
 *     process(tuple, batch) { batch.count += 1; },       // acked when it returns or resolves
 *     finishBatch(batch, emit) { emit([batch.tx.txid, batch.count]); },  // anchored to the finish
 *   }).run();
 *
 * Bolts: every tuple of an attempt carries `tx` ({txid, attempt}); its state (the `batch` object)
 * lives from the attempt's first tuple (or its finish) to its `finish` or `abort`, or until a
 * higher attempt of the same txid shows up (Storm's BatchBoltExecutor: a fresh bolt per attempt).
 * Each tuple is acked as soon as process is done with it, never held to the end of the batch.
 *
 * Spouts answer one batch command at a time, in the order they came, however long an async hook
 * takes (the next command waits in the connection's stash): batch_init (task 0, the coordinator),
 * batch_emit (every task, its share) and batch_commit (the commit phase).
 *
 * This file is a factory: index.js calls it with its own building blocks (no circular require).
 */

const BATCH_EXT = 'batch/1';
const NO_BATCH_HOST = 'batch components need a host that speaks batch/1';
const CLOSED_KEPT = 1024; // how many finished/aborted txids a bolt remembers, to drop late tuples

function isObject(value) {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

function hasOwn(obj, key) {
  return Object.prototype.hasOwnProperty.call(obj, key);
}

/** The {txid, attempt} of a message, or null when it is not one. */
function txOf(value) {
  if (!isObject(value) || !Number.isInteger(value.txid) || !Number.isInteger(value.attempt)) {
    return null;
  }
  return Object.freeze({ txid: value.txid, attempt: value.attempt });
}

/** Why a component of one of `roles` cannot run with this context, or null (docs §4.1). */
function batchRefusal(context, className, roles) {
  const batch = context && context.batch;
  if (!isObject(batch)) return NO_BATCH_HOST;
  if (!roles.includes(batch.role)) {
    return `${className} cannot run as a batch ${batch.role} (declare it batch: ${roles[0]})`;
  }
  return null;
}

module.exports = function defineBatch(lib) {
  const { Component, BoltBase, Tuple, END, SYSTEM_TASK, describe, asError, isThenable } = lib;

  /**
   * One attempt's state as user code sees it: `tx` ({txid, attempt}) and whatever `begin`,
   * `process` and `finishBatch` put on it.
   */
  class Batch {
    constructor(tx) {
      this.tx = tx;
    }
  }

  /** What a bolt keeps about one open attempt. */
  class Attempt {
    constructor(tx) {
      this.tx = tx;
      this.batch = new Batch(tx);
      this.ready = null; // while an async begin runs: the promise of its end
      this.failed = null; // begin's error: every tuple and the finish of the attempt fail
      this.inFlight = 0; // tuples delivered and not yet acked or failed
      this.idle = null; // what to run once inFlight is back to 0 (a finish waiting for tuples)
      this.open = true; // false once finished, aborted or superseded
      this.finishing = false;
    }
  }

  /** Run `fn` and call `after(err|null)` when it is done: at once when it is synchronous. */
  function settle(self, fn, args, after) {
    let result;
    try {
      result = fn.apply(self, args);
    } catch (err) {
      after(asError(err));
      return;
    }
    if (isThenable(result)) result.then(() => after(null), (err) => after(asError(err)));
    else after(null);
  }

  // ---- bolts ------------------------------------------------------------------------------------

  /** What BatchBolt and Committer share; they differ only in the role the host gives them. */
  class BatchBoltBase extends BoltBase {
    constructor(spec) {
      super(spec, ['initialize', 'begin', 'process', 'finishBatch', 'tick']);
      this._attempts = new Map(); // txid -> Attempt: the one open attempt of each txid held here
      this._closed = new Map(); // txid -> highest attempt finished, aborted or superseded here
    }

    /** Hook: a new attempt's state (`batch.tx` is set); may return a promise. */
    begin(batch) {}

    /** Hook: the attempt is complete here; emits through `emit` are anchored to the finish. */
    finishBatch(batch, emit) {}

    _check() {
      if (typeof this.process !== 'function') {
        throw new TypeError(`${this.constructor.name}: define process(tuple, batch, emit)`);
      }
    }

    _extensions() {
      return ['pipeline/1', BATCH_EXT];
    }

    _refusal(context) {
      const refusal = batchRefusal(context, this.constructor.name, this._roles);
      if (refusal === null && context.batch.role !== this._roles[0]) {
        // It works (the host decides when finish comes), but one of the two is not what was meant.
        this.log(`${this.constructor.name} runs as a batch ${context.batch.role}`, 'warn');
      }
      return refusal;
    }

    _onMessage(msg) {
      // docs §4.2: `finish` and `abort` are heartbeat-shaped: look for `batch` first.
      const op = msg.batch;
      if (op !== undefined && op !== null && msg.task === SYSTEM_TASK) {
        this._onBatchOp(msg.id, op);
        return;
      }
      if (msg.tx === undefined || msg.tuple === undefined || msg.id === undefined) {
        super._onMessage(msg); // heartbeats, ticks; a tuple without `tx` ends in _onTuple
        return;
      }
      const tuple = new Tuple(msg.id, msg.comp, msg.stream, msg.task, msg.tuple);
      this._pending.add(tuple.id);
      const tx = txOf(msg.tx);
      if (tx === null) {
        this._settle(tuple, new Error('a tuple with a malformed tx: ' + JSON.stringify(msg.tx)));
        return;
      }
      tuple.tx = tx;
      const attempt = this._attempt(tx);
      if (attempt === null) {
        this._settle(tuple, null); // of an attempt gone here: the host ignores its ack (§2.7)
        return;
      }
      attempt.inFlight++;
      if (attempt.ready === null) this._process(attempt, tuple);
      else attempt.ready.then(() => this._process(attempt, tuple));
    }

    /** A tuple without `tx`: nothing in a batch group sends one (docs §3, validation). */
    _onTuple(tuple) {
      this._settle(tuple, new Error(`${this.constructor.name} got a tuple without tx from ` +
        `${tuple.component} (only tuples of a batch attempt can be processed here)`));
    }

    _process(attempt, tuple) {
      const done = (err) => {
        this._settle(tuple, err);
        if (--attempt.inFlight === 0 && attempt.idle !== null) attempt.idle();
      };
      if (attempt.failed !== null) {
        done(new Error(`txid ${attempt.tx.txid} attempt ${attempt.tx.attempt}: begin failed`));
        return;
      }
      if (!attempt.open) { // aborted while its begin ran: nothing will use the result
        done(null);
        return;
      }
      settle(this, this.process, [tuple, attempt.batch, this._anchoredEmit(tuple.id)], done);
    }

    /** An emit function anchored to the input `id` (a tuple, or a finish) unless told otherwise. */
    _anchoredEmit(id) {
      let anchorsJson;
      return (values, options) => {
        if (options !== undefined && options !== null && options.anchors !== undefined) {
          return this._writeEmit(values, options, this._anchorsJson(options.anchors));
        }
        if (!this._pending.has(id)) {
          throw new Error(`emit after ${id} was acked or failed ` +
            '(did the hook return before its work was done?)');
        }
        if (anchorsJson === undefined) anchorsJson = '[' + JSON.stringify(id) + ']';
        return this._writeEmit(values, options, anchorsJson);
      };
    }

    /**
     * The open attempt `tx` (created, and begun, when it is new), or null when that attempt is
     * over here (finished, aborted, or superseded by a higher attempt of its txid).
     */
    _attempt(tx) {
      const closed = this._closed.get(tx.txid);
      if (closed !== undefined && tx.attempt <= closed) return null;
      let attempt = this._attempts.get(tx.txid);
      if (attempt !== undefined) {
        if (attempt.tx.attempt === tx.attempt) return attempt;
        if (attempt.tx.attempt > tx.attempt) return null;
        this._drop(attempt); // a higher attempt of the txid: the old one was aborted (§4.2)
      }
      attempt = new Attempt(tx);
      this._attempts.set(tx.txid, attempt);
      this._begin(attempt);
      return attempt;
    }

    _begin(attempt) {
      let result;
      try {
        result = this.begin(attempt.batch);
      } catch (err) {
        this._beginFailed(attempt, err);
        return;
      }
      if (isThenable(result)) {
        attempt.ready = result.then(
          () => { attempt.ready = null; },
          (err) => {
            attempt.ready = null;
            this._beginFailed(attempt, err);
          });
      }
    }

    _beginFailed(attempt, err) {
      attempt.failed = asError(err);
      this.error(`begin failed (txid ${attempt.tx.txid} attempt ${attempt.tx.attempt}): ` +
        describe(attempt.failed));
    }

    /** Forget an attempt's state, and remember that its tuples are now to be dropped. */
    _drop(attempt) {
      attempt.open = false;
      const { txid } = attempt.tx;
      if (this._attempts.get(txid) === attempt) this._attempts.delete(txid);
      this._close(attempt.tx);
    }

    _close(tx) {
      const closed = this._closed.get(tx.txid);
      if (closed !== undefined && closed >= tx.attempt) return;
      this._closed.delete(tx.txid); // re-insert: the Map's order is then the order of closing
      this._closed.set(tx.txid, tx.attempt);
      if (this._closed.size > CLOSED_KEPT) this._closed.delete(this._closed.keys().next().value);
    }

    _onBatchOp(id, op) {
      const tx = isObject(op) ? txOf(op) : null;
      if (tx === null || (op.op !== 'finish' && op.op !== 'abort')) {
        this._unknown({ id, batch: op });
        return;
      }
      if (op.op === 'abort') { // not answered (§4.2)
        const attempt = this._attempts.get(tx.txid);
        if (attempt !== undefined && attempt.tx.attempt <= tx.attempt) this._drop(attempt);
        this._close(tx);
        return;
      }
      const finish = { id }; // what _settle needs of it
      this._pending.add(id); // the finish is an anchor while finishBatch runs
      const attempt = this._attempt(tx);
      if (attempt === null || attempt.finishing) {
        this.log(`a finish for txid ${tx.txid} attempt ${tx.attempt}, which is over here`, 'warn');
        this._settle(finish, null);
        return;
      }
      attempt.finishing = true;
      // The host sends finish once every tuple of the attempt given to this task is acked
      // (§2.5); waiting for the ones in flight costs nothing and keeps finishBatch last anyway.
      const run = () => {
        if (attempt.inFlight !== 0) {
          attempt.idle = run;
          return;
        }
        attempt.idle = null;
        const after = (err) => {
          this._drop(attempt);
          this._settle(finish, err); // ack: the attempt is finished here; fail: it is aborted
        };
        if (attempt.failed !== null) {
          after(new Error(`txid ${tx.txid} attempt ${tx.attempt}: begin failed`));
          return;
        }
        if (!attempt.open) { // aborted meanwhile: the host ignores what comes for it now (§2.7)
          after(null);
          return;
        }
        settle(this, this.finishBatch, [attempt.batch, this._anchoredEmit(id)], after);
      };
      if (attempt.ready === null) run();
      else attempt.ready.then(run);
    }
  }

  /**
   * A batch bolt (`batch: bolt`): process(tuple, batch, emit) for every tuple of an attempt,
   * finishBatch(batch, emit) once this task has all of them.
   */
  class BatchBolt extends BatchBoltBase {}
  BatchBolt.prototype._roles = ['bolt', 'committer'];

  /**
   * A committer (`batch: committer`): as BatchBolt, but finishBatch runs in the attempt's commit
   * phase, strictly in txid order: store batch.tx.txid together with the state, in one go.
   */
  class Committer extends BatchBoltBase {}
  Committer.prototype._roles = ['committer', 'bolt'];

  // ---- spouts -----------------------------------------------------------------------------------

  /** What the three batch spouts share: one command at a time, emits without ids. */
  class BatchSpoutBase extends Component {
    constructor(spec, hooks) {
      super(spec, ['open', 'commit'].concat(hooks));
      this._task = { index: 0, count: 1 };
      this._emitting = false; // emits are taken only while a batch_emit is being answered
      this.emit = this.emit.bind(this); // handed to the emit hooks as is
    }

    /** Hook: called once after the handshake with (conf, context), as a bolt's initialize. */
    open(conf, context) {}

    /** Hook: the attempt `tx` is committing (opaque sources commit their position here). */
    commit(tx) {}

    /** This task's position among its component's tasks (Storm's getThisTaskIndex). */
    get taskIndex() {
      return this._task.index;
    }

    /** How many tasks the component has. */
    get taskCount() {
      return this._task.count;
    }

    /** Emit a tuple of the batch being emitted: options {stream, task, needTaskIds}, no id. */
    emit(values, options) {
      if (!this._emitting) {
        throw new Error('emit outside a batch: a batch spout emits only while it is emitting ' +
          'a batch (did the hook return before its work was done?)');
      }
      if (options !== undefined && options !== null && options.id !== undefined &&
          options.id !== null) {
        throw new TypeError('emit: batch tuples have no message id (the attempt tracks them)');
      }
      return this._writeEmit(values, options);
    }

    _startHook() {
      return 'open';
    }

    _extensions() {
      return ['pipeline/1', BATCH_EXT];
    }

    _refusal(context) {
      const refusal = batchRefusal(context, this.constructor.name, ['spout']);
      if (refusal !== null) return refusal;
      const map = context['task->component'];
      const own = context.taskid;
      const component = context.componentid !== undefined ? context.componentid
        : isObject(map) ? map[String(own)] : undefined;
      const tasks = isObject(map)
        ? Object.keys(map).filter((t) => map[t] === component).map(Number).sort((a, b) => a - b)
        : [];
      const index = tasks.indexOf(own);
      if (index === -1) {
        return `${this.constructor.name}: the context does not list task ${own} among the ` +
          `tasks of ${component} (task->component), so its share of the batch is unknown`;
      }
      this._task = { index, count: tasks.length };
      return null;
    }

    _onMessage(msg) {
      switch (msg.command) {
        case 'batch_init':
          this._serve(() => this._init(msg), false);
          return;
        case 'batch_emit':
          this._serve(() => this._emitCommand(msg), true);
          return;
        case 'batch_commit':
          this._serve(() => this._commitCommand(msg), true);
          return;
        case 'activate': case 'deactivate': case 'next': case 'ack': case 'fail':
          this._sync(); // nothing to do for a batch spout (§4.3: no `next`)
          return;
        default:
          this._unknown(msg);
          if (msg.command !== undefined) this._sync(); // the host waits for a sync
      }
    }

    /**
     * Answer one command: `work` (which may be async) then `sync`, with every later host message
     * held back until then (docs §4.3: one command at a time). A throw in `work` is reported; a
     * `fatal` one ends the process, so that the host aborts the attempt this task holds (§2.4)
     * instead of taking a half-emitted batch, or a commit that did not happen, as done.
     */
    _serve(work, fatal) {
      const ml = this._ml;
      ml.hold = true;
      let result;
      try {
        result = Promise.resolve(work());
      } catch (err) {
        result = Promise.reject(err);
      }
      result.then(() => {
        this._sync();
        ml.setHold(false);
      }, (err) => {
        if (fatal) {
          const text = `${this.constructor.name}: ${describe(asError(err))}`;
          process.stderr.write(text + '\n');
          this.error(text);
          ml.exit(1);
          return;
        }
        this.error(describe(asError(err)));
        this._sync();
        ml.setHold(false);
      });
    }

    _sync() {
      this._ml.write('{"command":"sync"}' + END);
    }

    _sendMeta(meta) {
      const json = JSON.stringify(meta);
      if (json === undefined) throw new TypeError('batch metadata must be a JSON value');
      this._ml.write('{"command":"batch_meta","meta":' + json + '}' + END);
    }

    /** batch_init (task 0): the next txid's metadata, or nothing when not ready. */
    async _init(msg) {
      const prevMeta = msg.prev_meta === undefined ? null : msg.prev_meta;
      let meta;
      try {
        meta = await this._coordinate(msg.txid, prevMeta);
        if (meta === undefined || meta === null) return; // bare sync: not ready (§4.3)
        this._sendMeta(meta);
      } catch (err) {
        throw new Error(`txid ${msg.txid}: no metadata (answered as not ready): ` +
          describe(asError(err)));
      }
    }

    /** batch_emit: this task's share of the attempt, then its own metadata if any. */
    async _emitCommand(msg) {
      const tx = txOf(msg.tx);
      if (tx === null) {
        throw new Error('batch_emit with a malformed tx: ' + JSON.stringify(msg.tx));
      }
      this._emitting = true;
      let own;
      try {
        own = await this._emitShare(tx, msg);
      } finally {
        this._emitting = false;
      }
      if (own !== undefined) this._sendMeta(own);
    }

    async _commitCommand(msg) {
      const tx = txOf(msg.tx);
      if (tx === null) {
        throw new Error('batch_commit with a malformed tx: ' + JSON.stringify(msg.tx));
      }
      await this.commit(tx);
    }
  }

  /**
   * A transactional spout (`batch: spout`): task 0 decides each batch's metadata with
   * initialize(txid, prevMeta) (null/undefined: not ready yet), and every task emits its share
   * with emitBatch(tx, meta, emit): the same tuples for the same metadata, since a replay gets
   * the stored metadata again. Its startup hook is open(conf, context).
   */
  class TransactionalSpout extends BatchSpoutBase {
    constructor(spec) {
      super(spec, ['initialize', 'emitBatch']);
    }

    _check() {
      if (typeof this.initialize !== 'function') {
        throw new TypeError(`${this.constructor.name}: define initialize(txid, prevMeta)`);
      }
      if (typeof this.emitBatch !== 'function') {
        throw new TypeError(`${this.constructor.name}: define emitBatch(tx, meta, emit)`);
      }
    }

    _coordinate(txid, prevMeta) {
      return this.initialize(txid, prevMeta);
    }

    async _emitShare(tx, msg) {
      await this.emitBatch(tx, msg.meta === undefined ? null : msg.meta, this.emit);
      return undefined;
    }
  }

  /** What both partitioned spouts share: the coordinator's metadata is partitions(). */
  class PartitionedBase extends BatchSpoutBase {
    _check() {
      if (this.initialize !== undefined) { // a bolt's or a plain spout's startup hook, by habit
        throw new TypeError(`${this.constructor.name}: initialize is not a hook of a partitioned ` +
          'spout (partitions() is its coordinator); start up in open(conf, context)');
      }
      for (const hook of ['partitions'].concat(this._emitHooks)) {
        if (typeof this[hook] !== 'function') {
          throw new TypeError(`${this.constructor.name}: define ${hook}`);
        }
      }
    }

    async _coordinate() {
      const count = await this.partitions();
      if (!Number.isInteger(count) || count < 0) {
        throw new TypeError('partitions() must give a whole number >= 0, got ' + describe(count));
      }
      return count;
    }

    /** Each owned partition in turn (p % taskCount === taskIndex, Storm's emitter), awaited. */
    async _emitShare(tx, msg) {
      const count = msg.meta;
      if (!Number.isInteger(count) || count < 0) {
        throw new TypeError('batch_emit: the metadata is not a partition count: ' +
          JSON.stringify(count));
      }
      const known = isObject(msg.task_meta) ? msg.task_meta : null;
      const prev = isObject(msg.prev_task_meta) ? msg.prev_task_meta : null;
      const own = {};
      for (let p = this.taskIndex; p < count; p += this.taskCount) {
        const key = String(p);
        const lastMeta = prev !== null && hasOwn(prev, key) ? prev[key] : null;
        const meta = await this._emitPartition(tx, p, known !== null && hasOwn(known, key)
          ? { meta: known[key] } : null, lastMeta);
        own[key] = meta === undefined ? null : meta;
      }
      return own;
    }
  }

  /**
   * A partitioned transactional spout: partition p belongs to task p % tasks. A new batch:
   * emitNew(tx, partition, lastMeta, emit) emits from where lastMeta (the previous batch's, null
   * at first) ended and returns this batch's metadata; a replay: emitAgain(tx, partition, meta,
   * emit) emits exactly what that metadata says (not called when it is null: nothing was emitted).
   */
  class PartitionedTransactionalSpout extends PartitionedBase {
    constructor(spec) {
      super(spec, ['partitions', 'emitNew', 'emitAgain']);
    }

    async _emitPartition(tx, partition, known, lastMeta) {
      if (known === null) return this.emitNew(tx, partition, lastMeta, this.emit);
      // Storm's PartitionedTransactionalSpoutExecutor: stored null metadata is not replayed.
      if (known.meta !== null) await this.emitAgain(tx, partition, known.meta, this.emit);
      return known.meta;
    }
  }
  PartitionedTransactionalSpout.prototype._emitHooks = ['emitNew', 'emitAgain'];

  /**
   * An opaque partitioned transactional spout: every attempt emits from the previous batch's
   * metadata (emitPartition(tx, partition, lastMeta, emit) returns the new one), so a replay may
   * emit other tuples; commit(tx) is where its committed position advances.
   */
  class OpaquePartitionedTransactionalSpout extends PartitionedBase {
    constructor(spec) {
      super(spec, ['partitions', 'emitPartition']);
    }

    _emitPartition(tx, partition, known, lastMeta) {
      return this.emitPartition(tx, partition, lastMeta, this.emit);
    }
  }
  OpaquePartitionedTransactionalSpout.prototype._emitHooks = ['emitPartition'];

  return {
    Batch,
    BatchBolt,
    Committer,
    TransactionalSpout,
    PartitionedTransactionalSpout,
    OpaquePartitionedTransactionalSpout,
  };
};
