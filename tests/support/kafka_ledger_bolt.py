"""The Kafka tests' sink bolt: acks or fails each tuple of the Kafka spout's default translator
([topic, partition, offset, key, value]) and records it.

Appends `ok <partition> <offset>` or `fail <partition> <offset>` to the file `test.ledger`, one
line buffered write per tuple, before the ack or fail is sent (so the ledger has a record before
the spout can count the tuple done). Settings (component config):
  test.fail.every   fail every N-th tuple received, once per record (0: never)
  test.fail.all     true: fail every tuple
  test.fail.poison  true: always fail tuples whose value is "poison"
  test.hold         true: record `held <partition> <offset>` and never ack or fail (a stuck bolt)
  test.hold.first   a topic name: hold (as test.hold) the first delivery of each of its records,
                    ack the later ones (a task that loses the partition never sees an ack)
  test.ledger.topic true: add the record's topic to each line, as a fourth column
"""

from __future__ import annotations

from multilang import Bolt


class LedgerBolt(Bolt):
    def initialize(self, conf, context):
        self.ledger = open(conf["test.ledger"], "a", encoding="utf-8", buffering=1)
        self.every = int(conf.get("test.fail.every", 0))
        self.all = bool(conf.get("test.fail.all", False))
        self.poison = bool(conf.get("test.fail.poison", False))
        self.hold = bool(conf.get("test.hold", False))
        self.hold_first = conf.get("test.hold.first")
        self.with_topic = bool(conf.get("test.ledger.topic", False))
        self.held: set = set()
        self.seen = 0
        self.failed_once: set = set()

    def process(self, tup):
        topic, partition, offset, _key, value = tup.values
        self.seen += 1
        record = (partition, offset)
        where = f"{partition} {offset} {topic}" if self.with_topic else f"{partition} {offset}"
        first = topic == self.hold_first and (topic, *record) not in self.held
        if self.hold or first:
            if first:
                self.held.add((topic, *record))
            self.ledger.write(f"held {where}\n")
            return
        fail = self.all or (self.poison and value == "poison")
        if self.every and self.seen % self.every == 0 and record not in self.failed_once:
            self.failed_once.add(record)
            fail = True
        self.ledger.write(f"{'fail' if fail else 'ok'} {where}\n")
        (self.fail if fail else self.ack)(tup)


if __name__ == "__main__":
    LedgerBolt().run()
