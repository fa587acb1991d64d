"""An exactly-once committer for the transactional Spark spout tests: per txid it applies the ids
(first field) of the batch's rows to a JSON file `LEDGER` holding the last applied txid, a count
per id and the list of applied commits `[txid, attempt, ids]`, written atomically and skipped
when the txid is at or below the stored one (the sink contract, docs/transactional.md §7).

Every commit-phase finish, a skipped replay included, first appends `{"txid", "attempt", "ids"}`
to `LEDGER.seen` (so a test compares the tuples of every attempt of a txid). BLOCK=txid hangs in
that txid's commit after that line, so a test can stop the host with the commit phase open;
CRASH=txid:attempt exits there instead (status 137), so the host replays the txid."""

import json
import os
import time

from multilang import Committer

PATH = os.environ["LEDGER"]
BLOCK = int(os.environ.get("BLOCK", "0"))
CRASH = [int(n) for n in os.environ.get("CRASH", "0:0").split(":")]


def _append(path, record):
    with open(path, "a") as f:
        f.write(json.dumps(record) + "\n")
        f.flush()
        os.fsync(f.fileno())


class RowLedger(Committer):
    def begin(self, batch):
        batch.ids = []

    def process(self, tup, batch):
        batch.ids.append(tup.values[0])

    def finish_batch(self, batch):
        txid, attempt = batch.tx
        ids = sorted(batch.ids)
        _append(PATH + ".seen", {"txid": txid, "attempt": attempt, "ids": ids})
        if txid == BLOCK:
            time.sleep(3600)
        if [txid, attempt] == CRASH:
            os._exit(137)
        state = {"txid": 0, "counts": {}, "ledger": []}
        if os.path.exists(PATH):
            with open(PATH) as f:
                state = json.load(f)
        if state["txid"] >= txid:
            return  # applied before: a replay
        for i in ids:
            state["counts"][str(i)] = state["counts"].get(str(i), 0) + 1
        state["txid"] = txid
        state["ledger"].append([txid, attempt, ids])
        with open(PATH + ".tmp", "w") as f:
            json.dump(state, f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(PATH + ".tmp", PATH)


RowLedger().run()
