"""A batch bolt that passes every tuple on and logs it, as one JSON line [txid, attempt, values],
to the file LOG (appended by every task). FAULT="finish:txid:attempt" fails that attempt's finish,
so the attempt is replayed (docs/transactional.md §2.4)."""

import json
import os

from multilang import BatchBolt

LOG = os.environ["LOG"]
what, _, when = os.environ.get("FAULT", "").partition(":")
txid_s, _, attempt_s = when.partition(":")
WHEN = (int(txid_s), int(attempt_s or "1")) if txid_s else None


class Relay(BatchBolt):
    def initialize(self, conf, context):
        self.out = open(LOG, "a")

    def process(self, tup, batch):
        self.out.write(json.dumps([batch.tx.txid, batch.tx.attempt, tup.values]) + "\n")
        self.out.flush()
        self.emit(tup.values)

    def finish_batch(self, batch):
        if what == "finish" and tuple(batch.tx) == WHEN:
            raise RuntimeError("failing the finish on purpose")


Relay().run()
