"""Pure bookkeeping of the batch client (no I/O): a bolt's per-attempt state (`Batch`,
`AttemptStates`) and which partitions a partitioned spout task owns (`task_index`,
`owned_partitions`). docs/transactional.md §4.2, §5.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import TYPE_CHECKING, Any

from .batch_messages import Tx

#: How many retired txids a bolt remembers, to know a late message of a finished or aborted
#: attempt for stale instead of opening a state that nothing would ever finish.
RETIRED_MEMORY = 1024


class Batch:
    """The state of one attempt, handed to `begin`, `process` and `finish_batch`: `tx` is the
    attempt (Tx(txid, attempt)); any other attribute is the component's own. A fresh one per
    attempt, as Storm's BatchBoltExecutor makes a fresh bolt per attempt."""

    tx: Tx

    def __init__(self, tx: Tx) -> None:
        self.tx = tx

    if TYPE_CHECKING:  # the component's own attributes (batch.count = 0) type-check as Any

        def __getattr__(self, name: str) -> Any: ...

        def __setattr__(self, name: str, value: Any) -> None: ...

    def __repr__(self) -> str:
        own = {k: v for k, v in vars(self).items() if k != "tx"}
        return f"Batch(tx={self.tx!r}, {own!r})" if own else f"Batch(tx={self.tx!r})"


class AttemptStates:
    """A batch bolt task's open attempts, by txid: at most one attempt per txid is open, since a
    higher attempt of a txid means the lower ones were aborted (§4.2).

    `open(tx)` gives the attempt's state (made on first sight); None says the message is stale:
    its attempt is lower than one already seen for the txid, or was retired (finished or
    aborted), or its txid was committed before this task started. `retire(tx)` drops the state
    after its finish or on `abort`.
    """

    def __init__(self, committed_txid: int = 0, memory: int = RETIRED_MEMORY) -> None:
        self.committed_txid = committed_txid
        self._open: dict[int, Batch] = {}  # txid -> the state of its one open attempt
        self._retired: OrderedDict[int, int] = OrderedDict()  # txid -> highest retired attempt
        self._memory = memory

    def __len__(self) -> int:
        return len(self._open)

    def __contains__(self, tx: object) -> bool:
        if not isinstance(tx, Tx):
            return False
        batch = self._open.get(tx.txid)
        return batch is not None and batch.tx == tx

    def open_attempts(self) -> list[Tx]:
        """The open attempts, lowest txid first."""
        return sorted(batch.tx for batch in self._open.values())

    def is_stale(self, tx: Tx) -> bool:
        if tx.txid <= self.committed_txid:
            return True
        if tx.attempt <= self._retired.get(tx.txid, 0):
            return True
        batch = self._open.get(tx.txid)
        return batch is not None and tx.attempt < batch.tx.attempt

    def open(self, tx: Tx) -> tuple[Batch, bool] | None:
        """(state, True when just made) for a message of `tx`; None when `tx` is stale. A higher
        attempt than the open one replaces it (its state is dropped)."""
        if self.is_stale(tx):
            return None
        batch = self._open.get(tx.txid)
        if batch is not None and batch.tx.attempt == tx.attempt:
            return batch, False
        batch = Batch(tx)
        self._open[tx.txid] = batch
        return batch, True

    def retire(self, tx: Tx) -> None:
        """Drop `tx`'s state (and that of any lower attempt of its txid); later messages of it
        and of lower attempts are stale."""
        batch = self._open.get(tx.txid)
        if batch is not None and batch.tx.attempt <= tx.attempt:
            del self._open[tx.txid]
        if tx.attempt > self._retired.get(tx.txid, 0):
            self._retired[tx.txid] = tx.attempt
            self._retired.move_to_end(tx.txid)
            while len(self._retired) > self._memory:
                self._retired.popitem(last=False)


# ---- partitions ---------------------------------------------------------------------------------


def task_index(context: dict[str, Any]) -> tuple[int, int]:
    """(this task's index among its component's tasks, how many tasks it has), from the
    handshake context: the position of `taskid` among the component's task ids in ascending
    order, as Storm's TopologyContext.getThisTaskIndex."""
    taskid = context.get("taskid")
    component = context.get("componentid")
    mapping: dict[str, str] = context.get("task->component") or {}
    if component is None and taskid is not None:
        component = mapping.get(str(taskid))
    tasks = sorted(int(t) for t, c in mapping.items() if c == component)
    if taskid not in tasks:
        return 0, 1  # a context without the task map: this task is the only one
    return tasks.index(taskid), len(tasks)


def owned_partitions(partitions: int, index: int, tasks: int) -> list[int]:
    """The partitions task `index` of `tasks` emits: p with p % tasks == index, as Storm's
    PartitionedTransactionalSpoutExecutor."""
    return list(range(index, partitions, tasks))
