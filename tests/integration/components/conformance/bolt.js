// The conformance bolt on our Node client (see README.md in this directory).
const { BasicBolt } = require('multilang');

new BasicBolt({
  initialize(conf, context) {
    this.log(`ready ${context.componentid} ${context.taskid}`);
  },

  async process(tuple, emit) {
    const [action, arg1, arg2] = tuple.values;
    switch (action) {
      case 'split':
        for (const word of arg1.split(/\s+/).filter(Boolean)) emit([word]);
        break;
      case 'stream': emit([arg2], { stream: arg1 }); break;
      case 'direct': emit([arg2], { task: arg1 }); break;
      case 'taskids': {
        const ids = await emit([arg1], { needTaskIds: true });
        emit(['got', ids.join(',')]);
        break;
      }
      case 'fail': throw new Error('failing as asked');
      case 'error': this.error(arg1); break;
      case 'log':
        for (let level = 0; level < 5; level++) this.log(`level ${level}`, level);
        break;
      case 'metrics':
        this.metrics('calls');
        this.metrics('calls', 2);
        this.metrics('state', { phase: 'x' });
        break;
      default: break;
    }
  },

  tick(tuple) {
    this.log(`tick ${tuple.values[0]}`);
  },
}).run();
