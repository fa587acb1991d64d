// The sentence spout: emits random sentences, each with a message id, and replays the ones that
// fail. Written with our Node client (`require('multilang')`, found through NODE_PATH here and in
// resources/node_modules/ on a Storm cluster).
const { Spout } = require('multilang');

const SENTENCES = [
  'the cow jumped over the moon',
  'an apple a day keeps the doctor away',
  'four score and seven years ago',
  'snow white and the seven dwarfs',
  'i am at two with nature',
];

let nextId = 0;
let perNext = 1;
const pending = new Map(); // message id -> sentence, until acked

new Spout({
  initialize(conf) {
    perNext = Number(conf['storm-flux.sentences.per.next'] || 1);
  },
  nextTuple(emit) {
    for (let i = 0; i < perNext; i++) {
      const sentence = SENTENCES[Math.floor(Math.random() * SENTENCES.length)];
      const id = nextId++;
      pending.set(id, sentence);
      emit([sentence], { id });
    }
  },
  ack(id) {
    pending.delete(id);
  },
  fail(id) {
    const sentence = pending.get(id);
    if (sentence !== undefined) this.emit([sentence], { id }); // replay
  },
}).run();
