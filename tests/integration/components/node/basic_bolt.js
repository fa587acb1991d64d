// A BasicBolt whose behaviour is picked by the first value of each tuple, for the client tests.
const { BasicBolt } = require('multilang');

const gates = new Map(); // key -> {promise, resolve}: lets one tuple wait for another

function gate(key) {
  if (!gates.has(key)) {
    let resolve;
    const promise = new Promise((r) => { resolve = r; });
    gates.set(key, { promise, resolve });
  }
  return gates.get(key);
}

new BasicBolt({
  initialize(conf, context) {
    if (conf['test.init']) this.log(`init ${context.componentid} ${conf['test.key']}`);
    if (conf['test.init-fail']) throw new Error('cannot start');
  },

  async process(tuple, emit) {
    const [what, arg, arg2] = tuple.values;
    switch (what) {
      case 'emit': emit([arg]); break;
      case 'big': emit(['x'.repeat(arg)]); break;
      case 'stream': emit([arg], { stream: 'other' }); break;
      case 'direct': emit([arg], { task: arg2 }); break;
      case 'unanchored': emit([arg], { anchors: [] }); break;
      case 'taskids': {
        const ids = await emit([arg], { needTaskIds: true });
        this.log('ids ' + JSON.stringify(ids));
        break;
      }
      case 'direct-taskids': {
        const ids = await emit([arg], { task: arg2, needTaskIds: true });
        this.log('ids ' + JSON.stringify(ids));
        break;
      }
      case 'throw': throw new Error('boom');
      case 'reject': await null; throw new Error('async boom');
      case 'bad-values': emit('not an array'); break;
      case 'wait': await gate(arg).promise; emit(['after ' + arg]); break;
      case 'release': gate(arg).resolve(); break;
      case 'log':
        this.log('t', 'trace'); this.log('d', 1); this.log('i', 'info');
        this.log('w', 'warn'); this.log('e', 4); this.log('default');
        break;
      case 'metrics': this.metrics('my-metric', { n: 1 }); this.metrics('count'); break;
      case 'error': this.error('reported ' + arg); break;
      case 'print': console.log('printed to stdout'); emit(['printed']); break;
      case 'late-emit':
        setImmediate(() => {
          try { emit(['late']); } catch (err) { this.log('refused: ' + err.message, 'warn'); }
        });
        break;
      case 'crash': setImmediate(() => { throw new Error('late crash'); }); break;
      default: throw new Error('unknown test instruction ' + what);
    }
  },

  tick(tuple) {
    this.log('tick ' + tuple.values[0]);
  },
}).run();
