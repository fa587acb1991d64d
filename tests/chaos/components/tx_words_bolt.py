"""The batch bolt of the transactional chaos tier (Python; tx_words_bolt.js and tx_words_bolt.sh
do the same): for each line `RID WORD...` from the file spout it emits (rid, number of words, 1),
at the attempt's finish (`tx.emit: finish`, the default) or as each tuple is processed
(`tx.emit: tuple`). The committer adds them up by rid, so a record counted twice shows n = 2.

Faults planned by TX_FAULTS (tx_faults.py), each fired once per schedule, by the first task to
reach it; the `process` ones at a task's second tuple of the attempt (mid-batch):
  crash:T   exit 137 in process            fail:T    raise in process (the tuple is failed)
  hang:T    never return from process (the host's topology.subprocess.timeout.secs kills it)
  slow:T    sleep TX_SLOW_SECS in process (past a short topology.message.timeout.secs)
  finish:T  in finish: emit half of the results, write them out, exit 137
"""

from __future__ import annotations

import os
import time
from typing import Any

from tx_faults import claim, die

from multilang import BatchBolt, Tuple
from multilang.batch import Batch

SLOW_SECS = float(os.environ.get("TX_SLOW_SECS", "3.5"))


def record(line: str) -> list[Any]:
    rid, *words = line.split()
    return [rid, len(words), 1]


class Words(BatchBolt):
    def initialize(self, conf: dict[str, Any], context: dict[str, Any]) -> None:
        self.per_tuple = conf.get("tx.emit", "finish") == "tuple"

    def begin(self, batch: Batch) -> None:
        batch.rows = []
        batch.seen = 0

    def process(self, tup: Tuple, batch: Batch) -> None:
        txid = batch.tx.txid
        batch.seen += 1
        if batch.seen >= 2:
            if claim("crash", txid):
                die("crash", txid, self.flush)
            if claim("fail", txid):
                raise RuntimeError(f"failing a tuple of txid {txid} on purpose")
            if claim("hang", txid):
                time.sleep(3600)
            if claim("slow", txid):
                time.sleep(SLOW_SECS)
        row = record(tup.values[2])
        if self.per_tuple:
            self.emit(row)
        else:
            batch.rows.append(row)

    def finish_batch(self, batch: Batch) -> None:
        txid = batch.tx.txid
        if claim("finish", txid):
            for row in batch.rows[: len(batch.rows) // 2]:
                self.emit(row)
            die("finish", txid, self.flush)
        for row in batch.rows:
            self.emit(row)


Words().run()
