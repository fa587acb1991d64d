// Types of the `multilang` Node client (index.js): write Storm multilang spouts and bolts.
// The values this module exports are BasicBolt, Bolt, Spout, Tuple and LEVELS; everything else
// here is a type. Hooks are given in a spec object (or defined in a subclass); inside them
// `this` is the component, with whatever the spec holds besides the hooks.

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
  [key: string]: any;
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
  /** Hook: once, after the handshake. */
  initialize(conf: Conf, context: Context, done: Done): HookResult;
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
  nextTuple(emit: SpoutEmit, done: Done): HookResult;
  ack(id: any, done: Done): HookResult;
  fail(id: any, done: Done): HookResult;
  activate(done: Done): HookResult;
  deactivate(done: Done): HookResult;
}

// Only what is marked `export` above is exported (Component and BoltBase are not values of the
// module: without this line a declaration file exports every top-level declaration).
export {};
