"""The XOR ledger, driven by a fake clock."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from host.runtime.acker import LATENCY_SAMPLE, Acker, new_id


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def make(timeout: float = 30) -> tuple[Acker, FakeClock]:
    clock = FakeClock()
    return Acker(timeout, clock), clock


def test_single_tuple_tree_completes_on_ack():
    acker, clock = make()
    t1 = new_id()
    root = acker.open(spout_task=1, msg_id="m1", xor=t1)
    assert acker.pending(1) == 1
    clock.now += 0.25
    done = acker.ack((root,), t1)
    assert [(o.spout_task, o.msg_id) for o in done] == [(1, "m1")]
    assert acker.pending(1) == 0 and len(acker) == 0


def test_complete_latency_is_kept_for_one_root_in_sixteen():
    acker, clock = make()
    latencies = []
    for i in range(64):
        t = new_id()
        root = acker.open(1, i, t)
        clock.now += 0.5
        latencies.append(acker.ack((root,), t)[0].latency)
    sampled = [x for x in latencies if x is not None]
    assert len(sampled) == 64 // LATENCY_SAMPLE and all(x == 0.5 for x in sampled)


def test_anchored_children_keep_root_open_until_all_acked():
    acker, _ = make()
    t1 = new_id()
    root = acker.open(1, 7, t1)
    c1, c2 = new_id(), new_id()
    acker.add((root,), c1 ^ c2)  # the bolt emitted two children anchored to t1
    assert acker.ack((root,), t1) is None
    assert acker.ack((root,), c1) is None
    done = acker.ack((root,), c2)
    assert [o.msg_id for o in done] == [7]


def test_deferred_children_xor_in_ack_is_equivalent():
    acker, _ = make()
    t1, c1 = new_id(), new_id()
    root = acker.open(1, "x", t1)
    # a child acked downstream before its parent's ack (which carries the child's id) arrives
    assert acker.ack((root,), c1) is None
    assert acker.ack((root,), t1 ^ c1)[0].msg_id == "x"


def test_multi_anchored_tuple_completes_both_roots():
    acker, _ = make()
    a, b = new_id(), new_id()
    ra, rb = acker.open(1, "a", a), acker.open(1, "b", b)
    joined = new_id()
    acker.add((ra, rb), joined)
    assert acker.ack((ra,), a) is None
    assert acker.ack((rb,), b) is None
    done = acker.ack((ra, rb), joined)
    assert sorted(o.msg_id for o in done) == ["a", "b"]


def test_fail_is_immediate_and_later_acks_are_ignored():
    acker, _ = make()
    t1, c1 = new_id(), new_id()
    root = acker.open(2, "m", t1)
    acker.add((root,), c1)
    failed = acker.fail((root,))
    assert [(o.spout_task, o.msg_id) for o in failed] == [(2, "m")]
    assert acker.pending(2) == 0
    assert acker.ack((root,), t1) is None
    assert acker.ack((root,), c1) is None
    assert acker.fail((root,)) == []  # never twice


def test_timeout_expires_between_timeout_and_one_and_a_half_timeouts():
    acker, clock = make(timeout=10)
    root = acker.open(1, "slow", new_id())
    clock.now += 9.9
    assert acker.expire() == []
    clock.now += 5.2  # 15.1 s: past the last possible expiry
    expired = acker.expire()
    assert [o.msg_id for o in expired] == ["slow"]
    assert acker.pending(1) == 0
    assert acker.ack((root,), 1) is None


def test_timeouts_can_be_disabled():
    clock = FakeClock()
    acker = Acker(1, clock, timeouts_enabled=False)
    acker.open(1, "m", new_id())
    clock.now += 100
    assert acker.expire() == [] and acker.next_deadline() is None
    assert len(acker) == 1


def test_long_idle_period_does_not_rotate_one_bucket_at_a_time():
    acker, clock = make(timeout=2)
    clock.now += 10_000
    assert acker.expire() == []
    assert acker.next_deadline() > clock.now


def test_drop_spout_task_forgets_only_that_task():
    acker, _ = make()
    for i in range(5):
        acker.open(1, i, new_id())
    k = new_id()
    keep = acker.open(2, "keep", k)
    assert sorted(o.msg_id for o in acker.drop_spout_task(1)) == [0, 1, 2, 3, 4]
    assert acker.pending(1) == 0 and acker.pending(2) == 1
    assert acker.ack((keep,), k)[0].msg_id == "keep"


def test_max_pending_counts_per_spout_task():
    acker, _ = make()
    ids = [new_id() for _ in range(4)]
    roots = [acker.open(3, i, t) for i, t in enumerate(ids)]
    assert acker.pending(3) == 4
    acker.ack((roots[0],), ids[0])
    acker.fail((roots[1],))
    assert acker.pending(3) == 2


# ---- property: a root is acked iff every tuple of its tree was acked and none failed --------


@st.composite
def trees(draw):
    """A random tuple tree: node 0 is the spout tuple; every other node has a parent; plus a
    random order in which the nodes get acked (each node after its parent emitted it) and maybe
    one node that fails instead."""
    n = draw(st.integers(1, 25))
    parents = [None] + [draw(st.integers(0, i - 1)) for i in range(1, n)]
    order = draw(st.permutations(range(n)))
    failing = draw(st.one_of(st.none(), st.integers(0, n - 1)))
    defer = draw(st.booleans())  # children's ids XORed into the parent's ack, or added at emit
    return parents, order, failing, defer


@settings(max_examples=300, deadline=None)
@given(trees())
def test_property_root_acked_iff_all_acked(tree):
    parents, order, failing, defer = tree
    acker, _ = make()
    ids = [new_id() for _ in parents]
    root = acker.open(1, "root", ids[0])
    children_xor = [0] * len(parents)
    # every node is created (emitted) by its parent before the parent is acked
    for node in range(1, len(parents)):
        if defer:
            children_xor[parents[node]] ^= ids[node]
        else:
            acker.add((root,), ids[node])
    outcomes = []
    for node in order:
        if node == failing:
            outcomes.extend(("fail", o.msg_id) for o in acker.fail((root,)))
            continue
        done = acker.ack((root,), ids[node] ^ children_xor[node])
        outcomes.extend(("ack", o.msg_id) for o in done or ())
    if failing is None:
        assert outcomes == [("ack", "root")]
    else:
        # failing a tuple ends the tree at once; an ack can only precede it if everything had
        # been acked, which is impossible while the failing node was never acked
        assert outcomes == [("fail", "root")]
    assert len(acker) == 0 and acker.pending(1) == 0


# ---- many spout tasks, reused slots, compaction ----------------------------------------------


def test_roots_of_several_spout_tasks_stay_apart():
    acker, _ = make()
    ids = {}
    for i in range(30):
        task = 10 + i % 3
        t = new_id()
        ids[acker.open(task, (task, i), t)] = (task, t)
    assert [acker.pending(task) for task in (10, 11, 12)] == [10, 10, 10]
    for root, (task, t) in ids.items():
        done = acker.ack((root,), t)
        assert [(o.spout_task, o.msg_id[0]) for o in done] == [(task, task)]
    assert len(acker) == 0 and [acker.pending(task) for task in (10, 11, 12)] == [0, 0, 0]


def test_late_ack_of_a_finished_root_does_not_touch_the_root_reusing_its_slot():
    acker, _ = make()
    t1, t2 = new_id(), new_id()
    old = acker.open(1, "old", t1)
    assert acker.ack((old,), t1)[0].msg_id == "old"
    new = acker.open(1, "new", t2)  # takes the slot "old" had
    assert acker.ack((old,), t2) is None
    acker.add((old,), new_id())
    assert acker.fail((old,)) == []
    assert acker.ack((new,), t2)[0].msg_id == "new"


def test_the_first_root_is_found_while_nothing_was_added_to_it():
    acker, _ = make()
    root = acker.open(1, "zero", 0)  # slot 0, XOR 0: the record is 0
    c = new_id()
    acker.add((root,), c)
    assert acker.ack((root,), c)[0].msg_id == "zero"


def test_the_smallest_xor_left_keeps_a_root_open():
    acker, _ = make()
    root = acker.open(1, "one", 0)
    acker.add((root,), 1)  # XOR 1 over slot 0: the smallest record that is not complete
    assert acker.ack((root,), 0) is None and len(acker) == 1
    assert acker.ack((root,), 1)[0].msg_id == "one"


def test_drop_spout_task_across_buckets_and_interleaved_tasks():
    acker, clock = make(timeout=10)
    keep = {}
    for round_ in range(3):  # a round in each bucket: rotations come every 5 s
        if round_:
            clock.now += 5
            assert acker.expire() == []
        for i in range(6):
            task = 1 + i % 2
            t = new_id()
            root = acker.open(task, (round_, i), t)
            if task == 2:
                keep[root] = (t, (round_, i))
    dropped = acker.drop_spout_task(1)
    assert {o.msg_id for o in dropped} == {(r, i) for r in range(3) for i in (0, 2, 4)}
    assert all(o.spout_task == 1 for o in dropped)
    assert acker.pending(1) == 0 and acker.pending(2) == len(acker) == 9
    assert acker.drop_spout_task(1) == [] and acker.drop_spout_task(99) == []
    for root, (t, msg) in keep.items():
        assert [(o.spout_task, o.msg_id) for o in acker.ack((root,), t)] == [(2, msg)]
    assert len(acker) == 0


def test_message_ids_are_released_with_their_roots():
    import gc
    import weakref

    class Msg:
        pass

    acker, _ = make()
    m, t = Msg(), new_id()
    ref = weakref.ref(m)
    root = acker.open(1, m, t)
    del m
    acker.ack((root,), t)
    gc.collect()
    assert ref() is None


def test_expire_compacts_the_slot_tables_after_a_peak(monkeypatch):
    import host.runtime.acker as acker_module

    monkeypatch.setattr(acker_module, "COMPACT_MIN", 8)
    acker, clock = make(timeout=10)
    ids = [new_id() for _ in range(100)]
    roots = [acker.open(1 + i % 2, i, t) for i, t in enumerate(ids)]
    clock.now += 5.5  # roots[:50] stay behind in an older bucket
    acker.expire()
    roots += [acker.open(1, 100 + i, t) for i, t in enumerate(ids)]
    ids += ids
    for root, t in list(zip(roots, ids))[5:195]:
        assert acker.ack((root,), t)
    assert len(acker) == 10 and len(acker._msgs) == 200
    assert acker.expire() == []
    assert len(acker._msgs) == 10  # only the pending roots' slots are left
    left = [(r, t) for r, t in zip(roots, ids)][:5] + list(zip(roots, ids))[195:]
    done = [acker.ack((r,), t)[0] for r, t in left]
    assert [o.msg_id for o in done] == [0, 1, 2, 3, 4, 195, 196, 197, 198, 199]
    assert [o.spout_task for o in done] == [1, 2, 1, 2, 1, 1, 1, 1, 1, 1]
    assert acker.pending(1) == acker.pending(2) == 0


def test_compaction_does_not_need_timeouts(monkeypatch):
    import host.runtime.acker as acker_module

    monkeypatch.setattr(acker_module, "COMPACT_MIN", 8)
    acker = Acker(1, FakeClock(), timeouts_enabled=False)
    ids = [new_id() for _ in range(50)]
    roots = [acker.open(1, i, t) for i, t in enumerate(ids)]
    for r, t in zip(roots[1:], ids[1:]):
        acker.ack((r,), t)
    assert acker.expire() == [] and len(acker._msgs) == 1
    assert acker.ack((roots[0],), ids[0])[0].msg_id == 0


def test_a_full_slot_table_refuses_to_open(monkeypatch):
    import host.runtime.acker as acker_module

    acker, _ = make()
    acker.open(1, "a", new_id())
    monkeypatch.setattr(acker_module, "SLOTS", 1)  # only `open` reads it before a slot is free
    try:
        acker.open(1, "b", new_id())
    except OverflowError:
        pass
    else:
        raise AssertionError("a second root fit in one slot")
    assert acker.pending(1) == 1 and len(acker) == 1


# ---- property: the acker behaves as the plain ledger it encodes ------------------------------


class Ledger:
    """The acker's semantics written as plainly as possible: one [xor, task, msg_id] list per
    root, in the same rotating buckets."""

    def __init__(self, timeout: float, clock: FakeClock, sample: int) -> None:
        self.clock, self.sample = clock, sample
        self.period = timeout / 2
        self.buckets: list[dict] = [{}, {}, {}]
        self.next_rotation = clock() + self.period
        self.roots = 0
        self.started: dict[int, float] = {}

    def value(self, root: int) -> int | None:
        rec = next((b[root] for b in self.buckets if root in b), None)
        return None if rec is None else rec[0]

    def pending(self, task: int) -> int:
        return sum(rec[1] == task for b in self.buckets for rec in b.values())

    def __len__(self) -> int:
        return sum(map(len, self.buckets))

    def _out(self, root: int, rec: list) -> tuple:
        started = self.started.pop(root, None)
        return (rec[1], rec[2], None if started is None else self.clock() - started)

    def _pop(self, root: int) -> list | None:
        for b in self.buckets:
            if root in b:
                return b.pop(root)
        return None

    def open(self, task, msg_id, xor):
        self.roots += 1
        self.buckets[0][self.roots] = [xor, task, msg_id]
        if self.roots % self.sample == 0:
            self.started[self.roots] = self.clock()
        return self.roots

    def add(self, roots, xor):
        for root in roots:
            for b in self.buckets:
                if root in b:
                    b[root][0] ^= xor

    def ack(self, roots, xor):
        out = []
        for root in roots:
            if self.value(root) is None:
                continue
            if self.value(root) ^ xor:
                self.add((root,), xor)
            else:
                out.append(self._out(root, self._pop(root)))
        return out

    def fail(self, roots):
        return [self._out(r, self._pop(r)) for r in roots if self.value(r) is not None]

    def drop(self, task):
        doomed = [r for b in self.buckets for r, rec in b.items() if rec[1] == task]
        return [self._out(r, self._pop(r)) for r in doomed]

    def expire(self):
        out = []
        while self.clock() >= self.next_rotation:
            self.next_rotation += self.period
            oldest = self.buckets.pop()
            self.buckets.insert(0, {})
            out += [self._out(r, rec) for r, rec in oldest.items()]
            if not any(self.buckets) and self.clock() >= self.next_rotation:
                periods = int((self.clock() - self.next_rotation) // self.period) + 1
                self.next_rotation += periods * self.period
        return out


ids64 = st.integers(1, 2**64 - 1)


@settings(max_examples=200, deadline=None)
@given(st.data(), st.integers(1, 4), st.booleans())
def test_property_acker_matches_the_plain_ledger(data, sample, small_compaction):
    import host.runtime.acker as acker_module

    clock = FakeClock()
    acker = Acker(10, clock, latency_sample=sample)
    ledger = Ledger(10, clock, sample)
    roots: list[int] = []
    tasks = (1, 2, 3)
    peak = 0
    saved = acker_module.COMPACT_MIN
    acker_module.COMPACT_MIN = 2 if small_compaction else saved
    try:
        for _ in range(data.draw(st.integers(1, 60))):
            op = data.draw(
                st.sampled_from(
                    ["open", "open", "add", "ack", "ack", "ack", "fail", "drop", "tick"]
                )
            )
            if op == "open" or not roots:
                task = data.draw(st.sampled_from(tasks))
                xor = data.draw(st.one_of(st.just(0), ids64))
                root = acker.open(task, ("m", len(roots)), xor)
                assert root == ledger.open(task, ("m", len(roots)), xor)
                roots.append(root)
                peak = max(peak, len(ledger))
                continue
            picked = data.draw(st.lists(st.sampled_from(roots), min_size=1, max_size=3))
            if op == "add":
                xor = data.draw(ids64)
                acker.add(picked, xor)
                ledger.add(picked, xor)
                got, want = [], []
            elif op == "ack":
                # mostly the XOR that completes the first root picked, so that roots do complete
                value = ledger.value(picked[0])
                xor = value if value is not None and data.draw(st.booleans()) else data.draw(ids64)
                got, want = acker.ack(picked, xor) or [], ledger.ack(picked, xor)
            elif op == "fail":
                got, want = acker.fail(picked), ledger.fail(picked)
            elif op == "drop":
                task = data.draw(st.sampled_from(tasks))
                got, want = acker.drop_spout_task(task), ledger.drop(task)
            else:
                clock.now += data.draw(st.sampled_from([0.5, 3.0, 5.0, 12.0]))
                got, want = acker.expire(), ledger.expire()
            assert [tuple(o) for o in got] == want
            assert len(acker) == len(ledger)
            assert [acker.pending(t) for t in tasks] == [ledger.pending(t) for t in tasks]
            # every way out frees the root's slot: the tables never outgrow the peak
            peak = max(peak, len(ledger))
            assert len(acker._msgs) <= peak
    finally:
        acker_module.COMPACT_MIN = saved
