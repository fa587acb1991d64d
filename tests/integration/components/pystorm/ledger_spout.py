"""A pystorm spout for the end-to-end tests: emits `test.messages` sentences with integer message
ids, appends `ack <repr(id)>` / `fail <repr(id)>` to the `test.ledger` file, replays failed ids.

Run as `python ledger_spout.py [json|msgpack]`. The ids are ints on purpose: the host must hand
them back as ints whatever the serializer (repr() in the ledger tells 7 from "7").
"""

import sys
from collections import deque

from pystorm import Spout


class LedgerSpout(Spout):
    def initialize(self, conf, context):
        self.todo = deque(range(int(conf["test.messages"])))
        self.ledger = open(conf["test.ledger"], "a", buffering=1)

    def next_tuple(self):
        if self.todo:
            i = self.todo.popleft()
            self.emit([f"message {i} with some words in it"], tup_id=i)

    def ack(self, tup_id):
        self.ledger.write(f"ack {tup_id!r}\n")

    def fail(self, tup_id):
        self.ledger.write(f"fail {tup_id!r}\n")
        self.todo.append(tup_id)


if __name__ == "__main__":
    LedgerSpout(serializer=sys.argv[1] if len(sys.argv) > 1 else "json").run()
