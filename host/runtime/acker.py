"""The central acker: Storm's XOR ledger, with no I/O and an injected clock.

One small record per pending spout tuple (a *root*): the XOR of the ids of every tuple in its tree
that was created and not yet acked, the spout task and the message id. Every delivered tuple has a
random signed 64-bit id (as Storm's), XORed into each of its roots once when it is created and once
when it is acked; a root whose value returns to zero is complete. The XOR shares an int with the
root's slot (below); Python's XOR of negative ints is two's complement's, so a signed XOR is as
good as an unsigned one, and only the zero test has to mind the sign. The tree itself is never
stored, so memory is per spout tuple, not per tuple: 160-195 bytes each with 100,000 to 1,000,000
pending, an int message id included (benchmarks/acker-memory, tracemalloc to RSS; a bare dict of
two 64-bit ints takes 113-148). Start times are kept for one root in `latency_sample` (default
16) only, which is enough for complete-latency percentiles (Storm samples its statistics too) and
keeps a float out of every record; 1 times every root (host.acker.latency.sample).

Timeouts use rotating buckets (Storm's RotatingMap): a root lives in the bucket that was newest when
it was opened; every `timeout / (BUCKETS - 1)` seconds the oldest bucket expires as a whole, so a
root times out between `timeout` and `timeout * BUCKETS / (BUCKETS - 1)` seconds after it was
opened, at O(1) cost per root.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from itertools import count
from random import getrandbits
from typing import Any, NamedTuple

BUCKETS = 3
LATENCY_SAMPLE = 16  # one root in 16 has its start time kept

# A root's record is one int in its bucket: the XOR shifted up by SLOT_BITS, over the root's slot
# in the tables that hold its message id and spout. Completion is then `0 <= rec < SLOTS` (the
# XOR of signed ids may be negative, and so is then the record), and a completed record is its own
# slot, with no arithmetic on a 90-bit int; an open root's record is a small int until its first
# `add`. Tuple ids are 64-bit (Storm's are longs), and an int of up to 90 bits takes 36 bytes, as a
# random 64-bit XOR does anyway, so the slot costs nothing. The (xor, task, msg_id) tuple per root
# this replaces took 64 bytes where the slot tables take 16, and was rebuilt on every add and ack.
SLOT_BITS = 26
SLOTS = 1 << SLOT_BITS  # the most roots pending at once (some 10 GB of them)
_SLOT = SLOTS - 1
# slot tables keep their peak length until `expire` compacts them, once more than half the slots
# are free; small tables are not worth the pass over every pending root
COMPACT_MIN = 4096


class Outcome(NamedTuple):
    """A root that left the ledger: to be sent to its spout as `ack` or `fail`."""

    spout_task: int
    msg_id: Any
    latency: float | None  # seconds since the root was opened, for sampled roots


class _Spout:
    """A spout task and its open roots, reached from a root's slot without a dict lookup."""

    __slots__ = ("pending", "task")

    def __init__(self, task: int) -> None:
        self.task = task
        self.pending = 0


ID_OFFSET = 1 << 63  # getrandbits(64) - ID_OFFSET: uniform over a signed 64-bit long


def new_id() -> int:
    """A random non-zero tuple id within Java's long, negatives included, as Storm's
    (`Long.toString(rand.nextLong())` on the wire): clients may parse ids as int64."""
    return getrandbits(64) - ID_OFFSET or 1


class Acker:
    def __init__(
        self,
        timeout_secs: float,
        clock: Callable[[], float],
        timeouts_enabled: bool = True,
        latency_sample: int = LATENCY_SAMPLE,
    ):
        self.clock = clock
        self.latency_sample = max(1, int(latency_sample))
        self.timeouts_enabled = timeouts_enabled
        self._period = max(float(timeout_secs), 0.001) / (BUCKETS - 1)
        self._buckets: list[dict[int, int]] = [{} for _ in range(BUCKETS)]  # [0] is newest
        self._next_rotation = clock() + self._period
        self._spouts: dict[int, _Spout] = {}
        self._roots = count(1)  # root ids are keys, never XORed: a counter will do
        self._started: dict[int, float] = {}  # sampled roots -> open time
        # slot -> message id and spout: 8 bytes each per root, where a dict entry is 40-50. A free
        # slot's message id is the next free slot (None ends the chain): no list of free slots
        self._msgs: list[Any] = []
        self._owners: list[_Spout] = []
        self._free: int | None = None

    # -- queries ---------------------------------------------------------------------------------
    def pending(self, spout_task: int) -> int:
        spout = self._spouts.get(spout_task)
        return 0 if spout is None else spout.pending

    def __len__(self) -> int:
        return sum(len(b) for b in self._buckets)

    @property
    def timeout_secs(self) -> float:
        """`topology.message.timeout.secs`, as configured (whether or not timeouts are enabled)."""
        return self._period * (BUCKETS - 1)

    def pending_any(self, roots: Iterable[int]) -> bool:
        """Whether any of these roots is still pending (not acked, failed, timed out or dropped
        with its spout task): a tuple whose roots are all gone can no longer change anything.
        A few dict lookups per root; for `BoltLink`'s forgetting, never the per-tuple path."""
        buckets = self._buckets
        for root in roots:
            for bucket in buckets:
                if root in bucket:
                    return True
        return False

    def _find(self, root: int) -> tuple[dict[int, int], int] | tuple[None, None]:
        for bucket in self._buckets:
            rec = bucket.get(root)
            if rec is not None:  # not truthiness: slot 0 with nothing added is 0
                return bucket, rec
        return None, None

    # -- updates ---------------------------------------------------------------------------------
    def open(self, spout_task: int, msg_id: Any, xor: int) -> int:
        """A reliable spout emit whose copies have ids XORing to `xor` (0 until `add`ed).
        Returns the new root id, which every copy carries."""
        root = next(self._roots)
        spout = self._spouts.get(spout_task)
        if spout is None:
            spout = self._spouts[spout_task] = _Spout(spout_task)
        spout.pending += 1
        msgs = self._msgs
        slot = self._free
        if slot is not None:
            self._free = msgs[slot]
            msgs[slot] = msg_id
            self._owners[slot] = spout
        else:
            slot = len(msgs)
            if slot == SLOTS:
                spout.pending -= 1
                raise OverflowError(f"more than {SLOTS:,} spout tuples pending")
            msgs.append(msg_id)
            self._owners.append(spout)
        self._buckets[0][root] = xor << SLOT_BITS | slot if xor else slot
        if not root % self.latency_sample:
            self._started[root] = self.clock()
        return root

    def _release(self, rec: int) -> tuple[int, Any]:
        """Free the slot of a record just taken out of its bucket: (spout task, message id)."""
        slot = rec & _SLOT
        msgs = self._msgs
        msg_id = msgs[slot]
        msgs[slot] = self._free
        self._free = slot
        spout = self._owners[slot]
        spout.pending -= 1
        return spout.task, msg_id

    def _latency(self, root: int) -> float | None:
        started = self._started.pop(root, None)
        return None if started is None else self.clock() - started

    def add(self, roots: Iterable[int], xor: int) -> None:
        """New tuples anchored to `roots` were created; `xor` is the XOR of their ids."""
        newest = self._buckets[0]
        xor <<= SLOT_BITS
        for root in roots:
            rec = newest.get(root)  # as in `ack`: here a call to _find costs more than its work
            if rec is not None:
                newest[root] = rec ^ xor
                continue
            found, rec = self._find(root)
            if found is not None and rec is not None:  # else failed or timed out: not tracked
                found[root] = rec ^ xor

    def ack(self, roots: Iterable[int], xor: int) -> list[Outcome] | None:
        """A tuple with these roots was acked; `xor` is its id XOR the ids of the children it
        created (when those were not already `add`ed). Returns the roots that completed."""
        done = None
        newest = self._buckets[0]
        xor <<= SLOT_BITS
        for root in roots:
            rec = newest.get(root)  # most acks come well within a rotation period
            if rec is not None:
                bucket = newest
            else:
                found, rec = self._find(root)
                if found is None or rec is None:
                    continue  # failed, timed out or its spout died: late acks are ignored
                bucket = found
            rec ^= xor
            if rec >= SLOTS or rec < 0:  # not complete (a negative record: a negative XOR)
                bucket[root] = rec
                continue
            del bucket[root]
            # _release inline, the record being its slot: this is the host's hottest path
            msgs = self._msgs
            msg_id = msgs[rec]
            msgs[rec] = self._free
            self._free = rec
            spout = self._owners[rec]
            spout.pending -= 1
            if done is None:
                done = []
            done.append(
                Outcome(
                    spout.task,
                    msg_id,
                    self._latency(root) if not root % self.latency_sample else None,
                )
            )
        return done

    def fail(self, roots: Iterable[int]) -> list[Outcome]:
        """Fail these roots at once (explicit fail, or the task holding a tuple died)."""
        out = []
        for root in roots:
            found, rec = self._find(root)
            if found is None or rec is None:
                continue
            del found[root]
            out.append(Outcome(*self._release(rec), self._latency(root)))
        return out

    def drop_spout_task(self, spout_task: int) -> list[Outcome]:
        """Forget every root of a spout task whose process died: its replacement never emitted
        those ids, so they cannot be acked or failed to it. Returns what was dropped."""
        spout = self._spouts.get(spout_task)
        if spout is None:
            return []
        dropped = []
        owners = self._owners
        for bucket in self._buckets:
            doomed = [r for r, rec in bucket.items() if owners[rec & _SLOT] is spout]
            for root in doomed:
                _, msg_id = self._release(bucket.pop(root))
                dropped.append(Outcome(spout_task, msg_id, self._latency(root)))
        return dropped

    def next_deadline(self) -> float | None:
        """When `expire` next has work to do (for the event loop's timer)."""
        if not self.timeouts_enabled:
            return None
        return self._next_rotation

    def expire(self) -> list[Outcome]:
        """Rotate the buckets whose time has come; the roots of an expiring bucket time out.
        Also gives back the slot tables' memory after a peak, so call it now and then even with
        timeouts disabled (the supervisor's housekeeping does, every second)."""
        slots = len(self._msgs)
        if slots > COMPACT_MIN and 2 * len(self) < slots:
            self._compact()
        if not self.timeouts_enabled:
            return []
        now = self.clock()
        out = []
        while now >= self._next_rotation:
            self._next_rotation += self._period
            oldest = self._buckets.pop()
            self._buckets.insert(0, {})
            for root, rec in oldest.items():
                out.append(Outcome(*self._release(rec), self._latency(root)))
            if not any(self._buckets) and now >= self._next_rotation:
                # nothing pending: jump ahead instead of rotating empty buckets one by one
                periods = int((now - self._next_rotation) // self._period) + 1
                self._next_rotation += periods * self._period
        return out

    def _compact(self) -> None:
        """Renumber the pending roots' slots from 0, dropping the free ones. Its cost, one pass
        over the pending roots, is paid for by the more than as many releases that freed them."""
        msgs: list[Any] = []
        owners: list[_Spout] = []
        old_msgs, old_owners = self._msgs, self._owners
        for bucket in self._buckets:
            for root, rec in bucket.items():  # values only change: safe while iterating
                slot = rec & _SLOT
                bucket[root] = rec ^ slot ^ len(msgs)
                msgs.append(old_msgs[slot])
                owners.append(old_owners[slot])
        self._msgs, self._owners, self._free = msgs, owners, None
