"""Tuple ids are Java longs, as Storm's (`Long.toString(rand.nextLong())`): signed 64-bit,
negatives included; the acker's XOR ledger completes trees of such ids exactly."""

from __future__ import annotations

from types import SimpleNamespace

from hypothesis import given, settings
from hypothesis import strategies as st

from host.runtime.acker import Acker, new_id
from host.runtime.data_path import DataPath
from host.runtime.router import Router
from host.topology.model import Topology
from multilang.messages import Emit
from multilang.serializers import JsonSerializer

INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
int64s = st.integers(INT64_MIN, INT64_MAX).filter(bool)  # tuple ids are never 0


class Clock:
    now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_a_million_ids_fit_in_a_java_long_and_both_signs_occur():
    ids = [new_id() for _ in range(1_000_000)]
    assert min(ids) >= INT64_MIN and max(ids) <= INT64_MAX
    assert 0 not in ids
    negative = sum(1 for i in ids if i < 0)
    assert 450_000 < negative < 550_000  # uniform over the long's range, as nextLong() is
    assert max(len(str(i)) for i in ids) <= 20  # "-9223372036854775808" at most


class _Bolt:
    """A bolt link as `DataPath.send_copies` uses it, recording the ids it is offered."""

    inline_offer = False  # every tuple through `offer`

    def __init__(self) -> None:
        self.ser = JsonSerializer()
        self.cid = "sink"
        self.ids: list[int] = []

    def offer(self, tid: int, roots: tuple, frame: bytes) -> None:
        self.ids.append(tid)
        assert frame.endswith(b',"id":"%d"}\nend\n' % tid)  # the same decimal string on the wire


def test_the_data_paths_inlined_ids_fit_in_a_java_long():
    path = DataPath(Router(Topology("t", ()), {}), Acker(30, Clock()), acking=True)
    targets = list(range(2, 12))
    bolts = {t: _Bolt() for t in targets}
    path.links.update(bolts)  # type: ignore[arg-type]
    source = SimpleNamespace(cid="spout", task=1, prefixes={}, stats=SimpleNamespace(transferred=0))
    m = Emit(["x"], "default", (), None, False, None)
    for _ in range(10_000):
        path.send_copies(source, m, targets, ())  # type: ignore[arg-type]
    ids = [i for bolt in bolts.values() for i in bolt.ids]
    assert len(ids) == 100_000 and 0 not in ids
    assert INT64_MIN <= min(ids) < 0 < max(ids) <= INT64_MAX


@st.composite
def trees(draw):
    """A tuple tree of signed 64-bit ids: parents, an ack order, and whether each node's
    children are XORed into its ack (Storm's way) or added when emitted."""
    n = draw(st.integers(1, 30))
    parents = [None] + [draw(st.integers(0, i - 1)) for i in range(1, n)]
    ids = draw(st.lists(int64s, min_size=n, max_size=n))
    order = draw(st.permutations(range(n)))
    defer = draw(st.booleans())
    return parents, ids, order, defer


@settings(max_examples=500, deadline=None)
@given(trees(), st.lists(int64s, max_size=5))
def test_property_trees_of_signed_ids_complete_when_their_xor_returns_to_zero(tree, others):
    parents, ids, order, defer = tree
    acker = Acker(30, Clock())
    # other roots pending alongside, with XORs of either sign: their records share the buckets
    bystanders = [acker.open(2, ("other", i), x) for i, x in enumerate(others)]
    root = acker.open(1, "root", ids[0])
    value = ids[0]  # the ledger's value for the root, by the book
    children_xor = [0] * len(parents)
    for node in range(1, len(parents)):
        if defer:
            children_xor[parents[node]] ^= ids[node]
        else:
            acker.add((root,), ids[node])
            value ^= ids[node]
    completed = False
    for node in order:
        xor = ids[node] ^ children_xor[node]
        outcome = acker.ack((root,), xor)
        if completed:  # a late ack of a finished root is ignored
            assert outcome is None
            continue
        value ^= xor
        # complete exactly when the value is back to 0: at the last ack, or earlier only when
        # some ids happen to cancel out (hypothesis likes equal ids)
        assert (outcome is not None) == (value == 0)
        if outcome is not None:
            assert [o.msg_id for o in outcome] == ["root"]
            completed = True
    assert completed and acker.pending(1) == 0
    assert acker.pending(2) == len(bystanders)
    for i, (b, x) in enumerate(zip(bystanders, others, strict=True)):
        assert [o.msg_id for o in acker.ack((b,), x)] == [("other", i)]
    assert len(acker) == 0


@given(st.lists(int64s, min_size=1, max_size=40))
def test_property_a_negative_record_is_never_taken_for_a_complete_one(ids):
    acker = Acker(30, Clock())
    root = acker.open(1, "m", 0)
    left = 0
    for tid in ids:
        left ^= tid
    acker.add((root,), left)
    for tid in ids:
        outcome = acker.ack((root,), tid)
        left ^= tid
        assert (outcome is not None) == (left == 0)
        if outcome is not None:
            return
