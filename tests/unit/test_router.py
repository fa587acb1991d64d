"""Groupings over a hand-built topology model (no loader involved)."""

from __future__ import annotations

from collections import Counter

import pytest
from hypothesis import given
from hypothesis import strategies as st

from host.errors import RoutingError
from host.runtime.router import Router, stable_hash
from host.topology.model import BOLT, SPOUT, Component, Grouping, Input, Topology


def topo(grouping: Grouping, parallelism: int = 4, outputs=None) -> tuple[Router, list[int]]:
    outputs = outputs or {"default": ("word", "n")}
    spout = Component("src", SPOUT, ("x",), outputs=outputs)
    bolt = Component(
        "dst",
        BOLT,
        ("x",),
        outputs={},
        parallelism=parallelism,
        inputs=(Input("src", "default", grouping),),
    )
    tasks = list(range(10, 10 + parallelism))
    return Router(Topology("t", (spout, bolt)), {"src": [1], "dst": tasks}), tasks


def test_shuffle_spreads_evenly():
    router, tasks = topo(Grouping("shuffle"))
    seen = Counter(router.targets("src", "default", ["w", i])[0] for i in range(400))
    assert set(seen) == set(tasks) and set(seen.values()) == {100}


@pytest.mark.parametrize("kind", ["local_or_shuffle", "none"])
def test_local_or_shuffle_and_none_behave_like_shuffle(kind):
    router, tasks = topo(Grouping(kind))
    assert {router.targets("src", "default", ["w", i])[0] for i in range(8)} == set(tasks)


def test_fields_grouping_is_stable_and_spreads():
    router, tasks = topo(Grouping("fields", ("word",)))
    first = {w: router.targets("src", "default", [w, 0]) for w in map(str, range(200))}
    again = {w: router.targets("src", "default", [w, 99]) for w in map(str, range(200))}
    assert first == again
    assert {t[0] for t in first.values()} == set(tasks)


def test_fields_grouping_matches_a_fresh_router():
    # the hash is stable across processes: a second router (as after a restart) agrees
    a, _ = topo(Grouping("fields", ("word", "n")))
    b, _ = topo(Grouping("fields", ("word", "n")))
    for i in range(50):
        values = [f"w{i}", i]
        assert a.targets("src", "default", values) == b.targets("src", "default", values)


def test_stable_hash_is_crc32_of_utf8():
    import zlib

    assert stable_hash("héllo") == zlib.crc32("héllo".encode())
    assert stable_hash([1, "a"]) == zlib.crc32(b'[1,"a"]')


def test_global_goes_to_lowest_task():
    router, tasks = topo(Grouping("global"))
    assert {tuple(router.targets("src", "default", ["w", i])) for i in range(20)} == {(10,)}


def test_all_goes_everywhere():
    router, tasks = topo(Grouping("all"))
    assert router.targets("src", "default", ["w", 1]) == tasks


def test_partial_key_uses_at_most_two_tasks_per_key_and_balances():
    router, tasks = topo(Grouping("partial_key", ("word",)), parallelism=8)
    used = Counter(router.targets("src", "default", ["hot", i])[0] for i in range(1000))
    assert 1 <= len(used) <= 2
    if len(used) == 2:
        assert max(used.values()) - min(used.values()) <= 1


def test_direct_grouping_only_accepts_direct_emits_to_its_tasks():
    router, tasks = topo(Grouping("direct"))
    assert router.direct_target("src", "default", ["w", 1], tasks[2]) == tasks[2]
    with pytest.raises(RoutingError, match="direct grouping"):
        router.targets("src", "default", ["w", 1])
    with pytest.raises(RoutingError, match="does not subscribe"):
        router.direct_target("src", "default", ["w", 1], 999)


def test_direct_emit_to_a_non_direct_subscriber_is_an_error():
    router, tasks = topo(Grouping("shuffle"))
    with pytest.raises(RoutingError, match="direct grouping"):
        router.direct_target("src", "default", ["w", 1], tasks[0])


def test_undeclared_stream_and_wrong_field_count_are_errors():
    router, _ = topo(Grouping("shuffle"))
    with pytest.raises(RoutingError, match="does not declare"):
        router.targets("src", "nope", ["w", 1])
    with pytest.raises(RoutingError, match="3 values .* declares 2 fields"):
        router.targets("src", "default", ["w", 1, 2])


def test_stream_without_subscribers_routes_nowhere():
    spout = Component("src", SPOUT, ("x",), outputs={"default": ("a",), "side": ("b",)})
    bolt = Component("dst", BOLT, ("x",), inputs=(Input("src", "default", Grouping("shuffle")),))
    router = Router(Topology("t", (spout, bolt)), {"src": [1], "dst": [2]})
    assert router.targets("src", "side", [1]) == []


def test_several_subscribers_concatenate_in_component_order():
    spout = Component("src", SPOUT, ("x",), outputs={"default": ("a",)})
    b1 = Component(
        "b1", BOLT, ("x",), parallelism=2, inputs=(Input("src", "default", Grouping("all")),)
    )
    b2 = Component("b2", BOLT, ("x",), inputs=(Input("src", "default", Grouping("global")),))
    router = Router(Topology("t", (spout, b1, b2)), {"src": [1], "b1": [2, 3], "b2": [4]})
    assert router.targets("src", "default", ["v"]) == [2, 3, 4]


@given(
    st.lists(st.one_of(st.text(), st.integers(), st.booleans(), st.none()), min_size=2, max_size=2)
)
def test_fields_grouping_is_a_function_of_the_key(values):
    router, tasks = topo(Grouping("fields", ("word",)))
    first = router.targets("src", "default", values)
    assert first == router.targets("src", "default", values)
    assert first[0] in tasks
