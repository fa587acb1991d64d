// A spout for the client tests; conf["test.mode"] picks the behaviour.
const { Spout } = require('multilang');

new Spout({
  async initialize(conf) {
    this.mode = conf['test.mode'] || 'plain';
    this.n = 0;
    if (this.mode === 'init-emit') {
      const ids = await this.emit(['init'], { needTaskIds: true });
      this.log('init ids ' + JSON.stringify(ids));
    }
  },

  activate() { this.log('activated'); },
  deactivate() { this.log('deactivated'); },

  nextTuple(emit) {
    if (this.mode === 'taskids') {
      return emit(['asks'], { id: 'a', needTaskIds: true })
        .then((ids) => this.log('ids ' + JSON.stringify(ids)));
    }
    if (this.mode === 'throw' && !this.thrown) { this.thrown = true; throw new Error('spout boom'); }
    if (this.mode === 'async') {
      return new Promise((resolve) => setImmediate(resolve))
        .then(() => emit(['async ' + this.n], { id: this.n++ }));
    }
    if ((this.mode === 'plain' || this.mode === 'throw') && this.n < 2) {
      emit([`sentence ${this.n}`], { id: this.n });
      this.n++;
    }
    // nothing to emit: just return, the host backs off
  },

  ack(id) { this.log('acked ' + JSON.stringify(id)); },
  fail(id) { this.emit(['replay'], { id, stream: 'replays' }); },
}).run();
