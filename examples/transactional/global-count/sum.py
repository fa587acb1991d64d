"""The sum, a committer (one task, global grouping): adds each batch's partial counts to the
totals kept in `total.json` together with the txid that last changed them, written atomically;
a replayed txid that was already applied is skipped, so every number counts exactly once."""

import json
import os

from multilang import Committer

PATH = os.environ.get("TOTAL_FILE", "total.json")


class Sum(Committer):
    def begin(self, batch):
        batch.count = batch.total = 0

    def process(self, tup, batch):
        batch.count += tup.values[0]
        batch.total += tup.values[1]

    def finish_batch(self, batch):
        state = {"txid": 0, "count": 0, "sum": 0}
        if os.path.exists(PATH):
            with open(PATH) as f:
                state = json.load(f)
        if state["txid"] >= batch.tx.txid:
            return  # applied before this replay
        state = {
            "txid": batch.tx.txid,
            "count": state["count"] + batch.count,
            "sum": state["sum"] + batch.total,
        }
        with open(PATH + ".tmp", "w") as f:
            json.dump(state, f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(PATH + ".tmp", PATH)
        self.log(f"txid {batch.tx.txid}: {state['count']} numbers, sum {state['sum']}")


Sum().run()
