// A Bolt that acks by hand; 'hold' keeps tuples until a 'flush' acks them all.
const { Bolt } = require('multilang');

new Bolt({
  held: [],

  process(tuple) {
    switch (tuple.values[0]) {
      case 'ack': this.emit([tuple.values[1]], { anchors: [tuple] }); this.ack(tuple); break;
      case 'fail': this.fail(tuple.id); break;
      case 'double': this.ack(tuple); this.ack(tuple); break;
      case 'hold': this.held.push(tuple); break;
      case 'flush':
        this.emit(['flushed'], { anchors: this.held });
        for (const t of this.held) this.ack(t);
        this.held = [];
        this.ack(tuple);
        break;
      case 'throw': throw new Error('manual boom');
      default: throw new Error('unknown test instruction');
    }
  },
}).run();
