"""The XOR ledger, driven by a fake clock."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from host.acker import LATENCY_SAMPLE, Acker, new_id


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
