// Types of the `multilang` Node client (index.js): write Storm multilang spouts and bolts.
// The values this module exports are BasicBolt, Bolt, Spout, Tuple, LEVELS and the transactional
// batch classes (BatchBolt, Committer, TransactionalSpout, PartitionedTransactionalSpout,
// OpaquePartitionedTransactionalSpout: docs/transactional.md); everything else here is a type.
// Hooks are given in a spec object (or defined in a subclass); inside them `this` is the
// component, with whatever the spec holds besides the hooks.

/** A log level of the `log` command: 0..4 or its name (any case; anything else is info). */
export type LogLevel =
  | 0 | 1 | 2 | 3 | 4
  | 'trace' | 'debug' | 'info' | 'warn' | 'error'
  | 'TRACE' | 'DEBUG' | 'INFO' | 'WARN' | 'ERROR';

/** The numbers of the named log levels. */
export declare const LEVELS: Readonly<{ trace: 0; debug: 1; info: 2; warn: 3; error: 4 }>;

/** The topology's configuration, from the handshake. */
export type Conf = Record<string, any>;

/** The task's context, from the handshake (Storm's `TopologyContext` as JSON). */
export interface Context {
  taskid: number;
  componentid?: string;
  'task->component': Record<string, string>;
  /** Set by a host that speaks batch/1, for a component declared `batch:`. */
  batch?: BatchContext;
  [key: string]: any;
}

/** `context.batch` (docs/transactional.md §4.1). */
export interface BatchContext {
  protocol: number;
  role: 'spout' | 'bolt' | 'committer';
  transactional_id: string;
  /** The last committed txid when the task started (0 before the first). */
  committed_txid: number;
}

/** A node-style callback: call it once, with an error to fail. */
export type Done = (err?: unknown) => void;

/**
 * What a hook may return: nothing when its work is done, or a promise that settles when it is
 * (a rejection counts as a throw). A hook that declares one parameter more than it is given
 * gets a `Done` callback instead.
 */
export type HookResult = void | PromiseLike<unknown>;

/** An input tuple of a bolt. */
export declare class Tuple {
  constructor(id: string, component: string, stream: string, task: number, values: any[]);
  /** The host's id of this tuple: what ack, fail and anchors name. */
  id: string;
  /** The component that emitted it. */
  component: string;
  stream: string;
  /** The task that emitted it (-1 for tick tuples). */
  task: number;
  /** The values the source emitted (JSON values). */
  values: any[];
}

/** What anchors an emit: an input tuple or its id. */
export type Anchor = Tuple | string;

export interface BoltEmitOptions {
  /** Default: 'default'. */
  stream?: string | null;
  /** Replaces the automatic anchor of a BasicBolt; `[]` emits unanchored. */
  anchors?: Anchor | readonly Anchor[] | null;
  /** A direct emit to this task. */
  task?: number | null;
  /** Resolve the returned promise with the receiving task ids. */
  needTaskIds?: boolean;
}

export interface SpoutEmitOptions {
  /** The message id (any JSON value): the tuple is tracked, and ack/fail get this id back. */
  id?: unknown;
  stream?: string | null;
  task?: number | null;
  needTaskIds?: boolean;
}

/**
 * Emit a tuple: `values` is an array of JSON values. With `needTaskIds: true`, a promise of the
 * ids of the tasks that receive it; else nothing.
 */
export interface EmitFunction<Options> {
  (values: readonly unknown[], options: Options & { needTaskIds: true }): Promise<number[]>;
  (values: readonly unknown[], options?: Options & { needTaskIds?: false }): undefined;
  (values: readonly unknown[], options?: Options): Promise<number[]> | undefined;
}
/** A BasicBolt's `emit` argument: anchored to the tuple being processed unless `anchors` given. */
export type BoltEmit = EmitFunction<BoltEmitOptions>;
export type SpoutEmit = EmitFunction<SpoutEmitOptions>;

/** What every component has (not exported as a value: use BasicBolt, Bolt or Spout). */
declare abstract class Component {
  /** The handshake's conf and context: null until the handshake, set before any hook runs. */
  conf: Conf | null;
  context: Context | null;
  /** Start serving the host: the handshake, then every message until stdin ends. */
  run(): this;
  /** Send a line to the host's log (level: default info). */
  log(msg: unknown, level?: LogLevel): void;
  /** Report an error to the host (counted and shown; not fatal). */
  error(msg: unknown): void;
  /** Update the host-side metric `name`. */
  metrics(name: string, params?: unknown): void;
}

/** Hooks of both kinds of bolt, in a spec object or a subclass. */
export interface BoltHooks {
  initialize?(conf: Conf, context: Context, done: Done): HookResult;
  /** A tick tuple (`topology.tick.tuple.freq.secs`); the library acks it afterwards. */
  tick?(tuple: Tuple, done: Done): HookResult;
}

export interface BasicBoltHooks extends BoltHooks {
  /**
   * Every input tuple. Emits through `emit` are anchored to it; it is acked when process returns
   * (or its promise resolves, or `done()` is called) and failed when it throws (rejects, or
   * `done(err)` is called).
   */
  process(tuple: Tuple, emit: BoltEmit, done: Done): HookResult;
}

export interface BoltManualHooks extends BoltHooks {
  /** Every input tuple: ack or fail it yourself (a throw fails it unless it was settled). */
  process(tuple: Tuple, done: Done): HookResult;
}

export interface SpoutHooks {
  initialize?(conf: Conf, context: Context, done: Done): HookResult;
  /** Emit zero or more tuples; with nothing to emit, just return (the host backs off). */
  nextTuple?(emit: SpoutEmit, done: Done): HookResult;
  /** The tuple tree of the emit with this message id completed. */
  ack?(id: any, done: Done): HookResult;
  /** The tuple tree of the emit with this message id failed or timed out: replay it. */
  fail?(id: any, done: Done): HookResult;
  activate?(done: Done): HookResult;
  deactivate?(done: Done): HookResult;
}

declare abstract class BoltBase extends Component {
  /** Emit a tuple, anchored only to the `anchors` given (see EmitFunction). */
  emit(
    values: readonly unknown[], options: BoltEmitOptions & { needTaskIds: true }
  ): Promise<number[]>;
  emit(values: readonly unknown[], options?: BoltEmitOptions & { needTaskIds?: false }): undefined;
  emit(values: readonly unknown[], options?: BoltEmitOptions): Promise<number[]> | undefined;
  /** Hook: once, after the handshake. */
  initialize(conf: Conf, context: Context, done: Done): HookResult;
  tick(tuple: Tuple, done: Done): HookResult;
}

/**
 * A bolt that acks for you: see BasicBoltHooks.process. `Spec` is the type of the spec object
 * (inferred): its hooks and any state they use, which they reach through `this`.
 */
export declare class BasicBolt<Spec extends BasicBoltHooks = BasicBoltHooks> extends BoltBase {
  /** No spec: a subclass that defines process. */
  constructor(spec?: Spec & ThisType<BasicBolt<Spec> & Spec>);
  process(tuple: Tuple, emit: BoltEmit, done: Done): HookResult;
}

/** A bolt that leaves acking (and anchoring) to you. */
export declare class Bolt<Spec extends BoltManualHooks = BoltManualHooks> extends BoltBase {
  /** No spec: a subclass that defines process. */
  constructor(spec?: Spec & ThisType<Bolt<Spec> & Spec>);
  process(tuple: Tuple, done: Done): HookResult;
  /** Ack an input tuple (the tuple or its id). */
  ack(tuple: Anchor): void;
  /** Fail an input tuple (the tuple or its id): its spout tuple is replayed. */
  fail(tuple: Anchor): void;
}

/** A spout: the host sends one command at a time and waits for the hook to finish. */
export declare class Spout<Spec extends SpoutHooks = SpoutHooks> extends Component {
  constructor(spec?: Spec & ThisType<Spout<Spec> & Spec>);
  /** Emit a tuple (see EmitFunction); bound to the spout, and handed to nextTuple as is. */
  emit(
    values: readonly unknown[], options: SpoutEmitOptions & { needTaskIds: true }
  ): Promise<number[]>;
  emit(values: readonly unknown[], options?: SpoutEmitOptions & { needTaskIds?: false }): undefined;
  emit(values: readonly unknown[], options?: SpoutEmitOptions): Promise<number[]> | undefined;
  /** Hook: once, after the handshake. */
  initialize(conf: Conf, context: Context, done: Done): HookResult;
  nextTuple(emit: SpoutEmit, done: Done): HookResult;
  ack(id: any, done: Done): HookResult;
  fail(id: any, done: Done): HookResult;
  activate(done: Done): HookResult;
  deactivate(done: Done): HookResult;
}

// ---- transactional batches (docs/transactional.md §4, §5; batch.js) ---------------------------
// Their hooks may return promises (no `done` callbacks). Each announces `batch/1` in its pid
// reply, and exits 1 with "batch components need a host that speaks batch/1" when the handshake
// has no `context.batch`.

/** One try at a batch: its transaction id and its attempt number (1, then +1 per replay). */
export interface Tx {
  readonly txid: number;
  readonly attempt: number;
}

/**
 * One attempt's state in a batch bolt: `tx`, and whatever the hooks put on it. It lives from
 * the attempt's first tuple to its finish or abort (or a higher attempt of its txid).
 */
export interface Batch {
  readonly tx: Tx;
  [key: string]: any;
}

/** An input tuple of a batch bolt: a Tuple with the attempt it belongs to. */
export interface BatchTuple extends Tuple {
  readonly tx: Tx;
}

export interface BatchBoltHooks {
  /** Once after the handshake. */
  initialize?(conf: Conf, context: Context): HookResult;
  /** A new attempt: set up its state on `batch` (tuples of it wait for a returned promise). */
  begin?(batch: Batch): HookResult;
  /**
   * Every tuple of an attempt: emits through `emit` are anchored to it; acked when process
   * returns or its promise resolves, failed (which fails the attempt) when it throws or rejects.
   */
  process(tuple: BatchTuple, batch: Batch, emit: BoltEmit): HookResult;
  /**
   * The attempt is complete here (for a Committer: it is committing, in txid order). Emits
   * through `emit` are anchored to the finish; a throw or rejection fails the attempt.
   */
  finishBatch?(batch: Batch, emit: BoltEmit): HookResult;
  tick?(tuple: Tuple): HookResult;
}

declare abstract class BatchBoltBase extends BoltBase {
  begin(batch: Batch): HookResult;
  process(tuple: BatchTuple, batch: Batch, emit: BoltEmit): HookResult;
  finishBatch(batch: Batch, emit: BoltEmit): HookResult;
}

/** A batch bolt (`batch: bolt`); see BatchBoltHooks. */
export declare class BatchBolt<Spec extends BatchBoltHooks = BatchBoltHooks> extends BatchBoltBase {
  constructor(spec?: Spec & ThisType<BatchBolt<Spec> & Spec>);
}

/**
 * A committer (`batch: committer`): finishBatch runs in the commit phase, strictly in txid
 * order; store `batch.tx.txid` with the state so that a replayed batch is applied once.
 */
export declare class Committer<Spec extends BatchBoltHooks = BatchBoltHooks> extends BatchBoltBase {
  constructor(spec?: Spec & ThisType<Committer<Spec> & Spec>);
}

/** A batch spout's emit options: no message id (the attempt tracks its tuples). */
export interface BatchSpoutEmitOptions {
  stream?: string | null;
  task?: number | null;
  needTaskIds?: boolean;
}
/** Emit a tuple of the batch being emitted (only while an emit hook runs). */
export type BatchSpoutEmit = EmitFunction<BatchSpoutEmitOptions>;

/** A hook's result that is a value (or a promise of one). */
export type Result<T> = T | PromiseLike<T>;

/** Hooks every batch spout may have. */
export interface BatchSpoutHooks {
  /** Once after the handshake (a batch spout's `initialize` is the coordinator's). */
  open?(conf: Conf, context: Context): HookResult;
  /**
   * The attempt is committing (opaque sources commit their position here). A throw or
   * rejection ends the process (exit 1): the host aborts the attempt.
   */
  commit?(tx: Tx): HookResult;
}

export interface TransactionalSpoutHooks extends BatchSpoutHooks {
  /**
   * Task 0 only: the metadata of batch `txid` (any JSON value), from the previous batch's
   * (null for txid 1); null or undefined: not ready, asked again later. A throw counts as not
   * ready, and is reported.
   */
  initialize(txid: number, prevMeta: any): Result<unknown>;
  /**
   * Every task: emit this task's share of the batch `meta` describes; the same tuples for the
   * same metadata, as a replay gets it again. A throw or rejection ends the process (exit 1).
   */
  emitBatch(tx: Tx, meta: any, emit: BatchSpoutEmit): HookResult;
}

export interface PartitionedTransactionalSpoutHooks extends BatchSpoutHooks {
  /** Task 0: how many partitions (the coordinator's metadata). */
  partitions(): Result<number>;
  /**
   * A new batch of `partition` (p % taskCount === taskIndex): emit from where `lastMeta` (the
   * previous batch's, null at first) ended and return this batch's metadata (JSON).
   */
  emitNew(tx: Tx, partition: number, lastMeta: any, emit: BatchSpoutEmit): Result<unknown>;
  /** A replay: emit exactly what `meta` (what emitNew returned) describes. */
  emitAgain(tx: Tx, partition: number, meta: any, emit: BatchSpoutEmit): HookResult;
}

export interface OpaquePartitionedTransactionalSpoutHooks extends BatchSpoutHooks {
  /** Task 0: how many partitions (the coordinator's metadata). */
  partitions(): Result<number>;
  /**
   * Every attempt (a replay too): emit from where `lastMeta` (the previous batch's, null at
   * first) ended and return the new metadata (JSON).
   */
  emitPartition(tx: Tx, partition: number, lastMeta: any, emit: BatchSpoutEmit): Result<unknown>;
}

declare abstract class BatchSpoutBase extends Component {
  /** This task's position among its component's tasks, from the handshake's context (a
   * getter: read-only). */
  taskIndex: number;
  /** How many tasks the component has (a getter: read-only). */
  taskCount: number;
  /** Emit a tuple of the batch being emitted (see EmitFunction); bound to the spout. */
  emit(
    values: readonly unknown[], options: BatchSpoutEmitOptions & { needTaskIds: true }
  ): Promise<number[]>;
  emit(
    values: readonly unknown[], options?: BatchSpoutEmitOptions & { needTaskIds?: false }
  ): undefined;
  emit(values: readonly unknown[], options?: BatchSpoutEmitOptions): Promise<number[]> | undefined;
  open(conf: Conf, context: Context): HookResult;
  commit(tx: Tx): HookResult;
}

/** A transactional spout (`batch: spout`); see TransactionalSpoutHooks. */
export declare class TransactionalSpout<
  Spec extends TransactionalSpoutHooks = TransactionalSpoutHooks,
> extends BatchSpoutBase {
  constructor(spec?: Spec & ThisType<TransactionalSpout<Spec> & Spec>);
  initialize(txid: number, prevMeta: any): Result<unknown>;
  emitBatch(tx: Tx, meta: any, emit: BatchSpoutEmit): HookResult;
}

/** A partitioned transactional spout: partition p belongs to task p % taskCount. */
export declare class PartitionedTransactionalSpout<
  Spec extends PartitionedTransactionalSpoutHooks = PartitionedTransactionalSpoutHooks,
> extends BatchSpoutBase {
  constructor(spec?: Spec & ThisType<PartitionedTransactionalSpout<Spec> & Spec>);
  partitions(): Result<number>;
  emitNew(tx: Tx, partition: number, lastMeta: any, emit: BatchSpoutEmit): Result<unknown>;
  emitAgain(tx: Tx, partition: number, meta: any, emit: BatchSpoutEmit): HookResult;
}

/** An opaque partitioned transactional spout: a replay may emit other tuples. */
export declare class OpaquePartitionedTransactionalSpout<
  Spec extends OpaquePartitionedTransactionalSpoutHooks =
    OpaquePartitionedTransactionalSpoutHooks,
> extends BatchSpoutBase {
  constructor(spec?: Spec & ThisType<OpaquePartitionedTransactionalSpout<Spec> & Spec>);
  partitions(): Result<number>;
  emitPartition(tx: Tx, partition: number, lastMeta: any, emit: BatchSpoutEmit): Result<unknown>;
}

// Only what is marked `export` above is exported (Component, BoltBase, BatchBoltBase and
// BatchSpoutBase are not values of the module: without this line a declaration file exports
// every top-level declaration).
export {};
