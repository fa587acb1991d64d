// Uses the Node client as its documentation does (README.md, the header of index.js, the
// examples/), so that `make lint` type-checks multilang/node/multilang/index.d.ts: every line
// here must compile, and every `@ts-expect-error` line must be refused.
import { BasicBolt, Bolt, LEVELS, Spout, Tuple } from 'multilang';
import type { BoltEmit, Conf, Context, LogLevel, SpoutEmit } from 'multilang';

// README.md's example: resolve = ack, throw = fail
new BasicBolt({
  async process(tuple, emit) {
    emit([tuple.values[0], 1]);
  },
}).run();

// examples/wordcount/count.js: state outside, emit anchored to the tuple
const counts = new Map<string, number>();
new BasicBolt({
  process(tuple, emit) {
    const word: string = tuple.values[0];
    const count = (counts.get(word) ?? 0) + 1;
    counts.set(word, count);
    emit([word, count]);
  },
  tick(tuple) {
    this.log(`tick every ${tuple.values[0]} s`, 'debug');
  },
});

// callback style, stream and direct emits, task ids, log levels, metrics and errors
new BasicBolt({
  initialize(conf: Conf, context: Context) {
    this.log(`task ${context.taskid} of ${context['task->component'][String(context.taskid)]}`);
    if (conf['my.flag']) this.error('flagged');
  },
  process(tuple, emit, done) {
    emit(['to a stream'], { stream: 'other' });
    emit(['unanchored'], { anchors: [] });
    emit(['direct'], { task: 3 });
    const nothing: undefined = emit(['no ids']);
    const ids: Promise<number[]> = emit(['with ids'], { needTaskIds: true });
    ids.then((tasks) => this.metrics('fan-out', { n: tasks.length }), done);
    this.log('warned', 'warn');
    this.log(nothing, LEVELS.error);
  },
}).run();

// a manual bolt with state in its spec: `this` has both the bolt and the state
new Bolt({
  held: [] as Tuple[],
  process(tuple) {
    if (tuple.values[0] === 'hold') {
      this.held.push(tuple);
      return;
    }
    this.emit(['flushed'], { anchors: this.held });
    for (const t of this.held) this.ack(t);
    this.held = [];
    this.fail(tuple.id);
  },
}).run();

// examples/storm-flux/resources/randomsentence.js: a spout with message ids and replays
let nextId = 0;
const pending = new Map<number, string>();
new Spout({
  perNext: 1,
  initialize(conf) {
    this.perNext = Number(conf['sentences.per.next'] || 1);
  },
  nextTuple(emit: SpoutEmit) {
    for (let i = 0; i < this.perNext; i++) {
      const id = nextId++;
      pending.set(id, 'the cow jumped over the moon');
      emit(['the cow jumped over the moon'], { id });
    }
  },
  ack(id: number) {
    pending.delete(id);
  },
  fail(id: number) {
    const sentence = pending.get(id);
    if (sentence !== undefined) this.emit([sentence], { id, stream: 'replays' });
  },
  async activate() {
    await this.emit(['asks'], { needTaskIds: true });
  },
}).run();

// subclasses instead of specs
class Split extends BasicBolt {
  process(tuple: Tuple, emit: BoltEmit): void {
    for (const word of String(tuple.values[0]).split(' ')) emit([word]);
  }
}
new Split().run();

const level: LogLevel = 'INFO';
const bolt: BasicBolt = new Split();
bolt.log('started', level);

// @ts-expect-error values must be an array
bolt.emit('not an array');
// @ts-expect-error not a log level
bolt.log('x', 'loud');
// @ts-expect-error a metric needs a name
bolt.metrics();
// @ts-expect-error hooks are functions
new Spout({ nextTuple: 3 });
// @ts-expect-error a BasicBolt's process gets the tuple first
new BasicBolt({ process(tuple: number) {} });
// @ts-expect-error the tasks of an emit that does not ask for them are not a promise
emitAndWait(bolt).then(() => {});

function emitAndWait(b: BasicBolt) {
  return b.emit(['x'], { needTaskIds: false });
}
