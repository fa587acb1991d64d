"""An exactly-once committer: adds the batch's partial sums to a total kept in a JSON file with the
last applied txid, written atomically, skipped when txid <= the stored one; every commit it
applies is appended to the file's ledger as [txid, attempt]. BLOCK=txid: hangs in that txid's
commit (so a test can stop the host with the commit phase open)."""

import json
import os
import time

from multilang import Committer

PATH = os.environ["LEDGER"]
BLOCK = int(os.environ.get("BLOCK", "0"))


class Ledger(Committer):
    def begin(self, batch):
        batch.total = 0

    def process(self, tup, batch):
        batch.total += tup.values[1]

    def finish_batch(self, batch):
        if batch.tx.txid == BLOCK:
            time.sleep(3600)
        state = {"txid": 0, "total": 0, "ledger": []}
        if os.path.exists(PATH):
            with open(PATH) as f:
                state = json.load(f)
        if state["txid"] >= batch.tx.txid:
            return  # applied before: a replay
        state["txid"] = batch.tx.txid
        state["total"] += batch.total
        state["ledger"].append([batch.tx.txid, batch.tx.attempt])
        with open(PATH + ".tmp", "w") as f:
            json.dump(state, f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(PATH + ".tmp", PATH)


Ledger().run()
