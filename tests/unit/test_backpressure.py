"""host/runtime/backpressure.py: a component is held exactly while some bolt task it feeds is
full, and the caller hears of each change once."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from host.runtime.backpressure import Backpressure
from host.topology.model import BOLT, SPOUT, Component, Grouping, Input, Topology


def _bolt(cid: str, *sources: str) -> Component:
    return Component(
        cid,
        BOLT,
        ("x",),
        outputs={"default": ("v",)},
        parallelism=3,
        inputs=tuple(Input(s, "default", Grouping("shuffle")) for s in sources),
    )


# spout -> split -> count, and spout -> audit: a full count holds split only, a full audit the
# spout only, a full split the spout
TOPOLOGY = Topology(
    "t",
    (
        Component("spout", SPOUT, ("x",), outputs={"default": ("v",)}),
        _bolt("split", "spout"),
        _bolt("count", "split"),
        _bolt("audit", "spout"),
    ),
)
BOLTS = ("split", "count", "audit")


def test_a_full_bolt_holds_only_what_feeds_it():
    bp = Backpressure(TOPOLOGY)
    assert bp.bolt_task("count", True) == [("split", True)]
    assert bp.held("split")
    assert not bp.held("spout") and not bp.held("count") and not bp.held("audit")
    assert bp.bolt_task("count", False) == [("split", False)]
    assert not bp.held("split")


def test_a_component_stays_held_until_every_full_task_it_feeds_drains():
    bp = Backpressure(TOPOLOGY)
    assert bp.bolt_task("split", True) == [("spout", True)]
    assert bp.bolt_task("audit", True) == []  # already held: no second change
    assert bp.bolt_task("split", True) == []  # a second task of split
    assert bp.bolt_task("split", False) == []
    assert bp.bolt_task("audit", False) == []
    assert bp.held("spout")
    assert bp.bolt_task("split", False) == [("spout", False)]
    assert not bp.held("spout")


def test_draining_a_task_that_was_never_full_is_a_bug_not_a_negative_count():
    bp = Backpressure(TOPOLOGY)
    with pytest.raises(ValueError, match="never full"):
        bp.bolt_task("count", False)


# a sequence of tasks becoming full or draining, each drain of a task that is full
@given(st.lists(st.tuples(st.sampled_from(BOLTS), st.integers(0, 2), st.booleans()), max_size=60))
def test_held_matches_the_full_tasks_and_changes_are_reported_once(events):
    bp = Backpressure(TOPOLOGY)
    full: set[tuple[str, int]] = set()
    feeds = {c.id: {i.source for i in c.inputs} for c in TOPOLOGY.components}
    reported = {c.id: False for c in TOPOLOGY.components}
    for bolt, index, becomes_full in events:
        if becomes_full == ((bolt, index) in full):
            continue  # a BoltLink reports only changes of its own state
        (full.add if becomes_full else full.discard)((bolt, index))
        for source, held in bp.bolt_task(bolt, becomes_full):
            assert reported[source] != held  # each report is a change
            reported[source] = held
        for c in TOPOLOGY.components:
            expected = any(c.id in feeds[b] for b, _ in full)
            assert bp.held(c.id) == expected == reported[c.id]
