"""A batch bolt: the sum of its share of an attempt's numbers, emitted at finish as (txid, sum).
FAULT="what:txid:attempt" misbehaves once, in that attempt: `crash` exits in process(), `fail`
fails a tuple, `finish` raises in finish_batch, `hang` does not return from process() until the
file named by RELEASE exists (the test creates it once the host has given up on the attempt)."""

import os
import time

from multilang import BatchBolt

FAULT = os.environ.get("FAULT", "")
what, _, when = FAULT.partition(":")
txid_s, _, attempt_s = when.partition(":")
WHEN = (int(txid_s), int(attempt_s or "1")) if txid_s else None


class Partial(BatchBolt):
    def begin(self, batch):
        batch.total = 0

    def process(self, tup, batch):
        if tuple(batch.tx) == WHEN:
            if what == "crash":
                os._exit(137)
            if what == "fail":
                raise RuntimeError("failing a tuple on purpose")
            if what == "hang":
                while not os.path.exists(os.environ["RELEASE"]):
                    time.sleep(0.05)
        batch.total += tup.values[0]

    def finish_batch(self, batch):
        if what == "finish" and tuple(batch.tx) == WHEN:
            raise RuntimeError("failing the finish on purpose")
        self.emit([batch.tx.txid, batch.total])


Partial().run()
