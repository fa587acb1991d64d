"""distinct: the third bolt of the reach function, a batch bolt (`finish_batch: true`).

Each DRPC request is a batch whose txid is the request id (docs/drpc.md §3.2). The bolt is fed by
a fields grouping on [request, follower], so each follower of a request reaches exactly one task:
the tasks' sets of a request are disjoint, and their sizes add up to the distinct count. Once a
task has all of a request (`finish_batch`) it emits [request, size of its set], even 0: the bolt
after it sums what it gets, and must get something for every request (see total.js)."""

from __future__ import annotations

from multilang import Batch, BatchBolt, Tuple


class Distinct(BatchBolt):
    def begin(self, batch: Batch) -> None:
        batch.followers = set()

    def process(self, tup: Tuple, batch: Batch) -> None:
        batch.followers.add(tup.values[1])

    def finish_batch(self, batch: Batch) -> None:
        # batch.tx.txid is the request id (the same number as the tuples' first field), and the
        # only one there is for a task that got no follower of this request
        self.emit([batch.tx.txid, len(batch.followers)])


Distinct().run()
