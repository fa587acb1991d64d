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
  test.hold.while   a file path, with test.hold.offset: while the file exists, hold (as
  test.hold.offset  test.hold) the record at this offset of each partition, so no commit passes
                    it; once the file is gone, ack the held tuples at the next tuple (a test's
                    "mid-run" that no speed can finish early)
  test.ledger.topic true: add the record's topic to each line, as a fourth column
"""

from __future__ import annotations

import os

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
        self.hold_while = conf.get("test.hold.while")
        self.hold_offset = int(conf.get("test.hold.offset", -1))
        self.held: set = set()
        self.held_tuples: list = []
        self.seen = 0
        self.failed_once: set = set()

    def process(self, tup):
        topic, partition, offset, _key, value = tup.values
        self.seen += 1
        record = (partition, offset)
        where = f"{partition} {offset} {topic}" if self.with_topic else f"{partition} {offset}"
        first = topic == self.hold_first and (topic, *record) not in self.held
        if self.hold_while and not os.path.exists(self.hold_while):
            for held in self.held_tuples:
                self.ack(held)
            self.held_tuples.clear()
        elif self.hold_while and offset == self.hold_offset:
            self.held_tuples.append(tup)
            self.ledger.write(f"held {where}\n")
            return
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
