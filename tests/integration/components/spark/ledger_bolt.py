"""The Spark spout tests' bolt: acks or fails each [id, text] tuple and records it.

Appends `ok <id>` or `fail <id>` to the file `test.ledger` for every tuple (one write each, so
the record survives a kill of anyone). Settings (component config):
  test.fail.every   fail every N-th tuple received, once per id (0: never)
  test.fail.poison  true: always fail tuples whose text is "poison"
  test.hold.from    hold tuples whose id is this or more: neither acked nor failed, not recorded
                    (a run that can never finish, so that a test stops it mid-run whatever the
                    machine's speed)
"""

from __future__ import annotations

from multilang import Bolt


class LedgerBolt(Bolt):
    def initialize(self, conf, context):
        self.ledger = open(conf["test.ledger"], "a", encoding="utf-8", buffering=1)
        self.every = int(conf.get("test.fail.every", 0))
        self.poison = bool(conf.get("test.fail.poison", False))
        self.hold_from = conf.get("test.hold.from")
        self.seen = 0
        self.failed_once: set = set()

    def process(self, tup):
        row_id, text = tup.values[0], tup.values[1]
        if self.hold_from is not None and row_id >= self.hold_from:
            return
        self.seen += 1
        fail = self.poison and text == "poison"
        if self.every and self.seen % self.every == 0 and row_id not in self.failed_once:
            self.failed_once.add(row_id)
            fail = True
        self.ledger.write(f"{'fail' if fail else 'ok'} {row_id}\n")
        (self.fail if fail else self.ack)(tup)


if __name__ == "__main__":
    LedgerBolt().run()
