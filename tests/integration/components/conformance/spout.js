// The conformance spout on our Node client (see README.md in this directory).
const { Spout } = require('multilang');

new Spout({
  initialize(conf, context) {
    this.limit = Number(conf['test.limit'] || 2);
    this.n = 0;
    this.log(`ready ${context.componentid} ${context.taskid}`);
  },

  activate() { this.log('activated'); },
  deactivate() { this.log('deactivated'); },

  nextTuple(emit) {
    if (this.n < this.limit) {
      this.n += 1;
      emit([`s${this.n}`], { id: `m${this.n}` });
    }
  },

  ack(id) { this.log(`acked ${id}`); },
  fail(id) { this.emit([`s${id.slice(1)}`], { id }); }, // replay
}).run();
