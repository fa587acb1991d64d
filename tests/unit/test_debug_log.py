"""`topology.debug` wraps the data path only when it is on somewhere (so that off costs nothing),
and only the links of the components it is on for."""

from __future__ import annotations

from host.runtime.supervisor import Supervisor
from host.topology import TopologyBuilder

WRAPPED = ("bolt_emit", "spout_emit", "spout_outcomes")


def supervisor(topology_debug: object = None, bolt_debug: object = None) -> Supervisor:
    b = TopologyBuilder(
        "t", config={} if topology_debug is None else {"topology.debug": topology_debug}
    )
    b.spout("spout", ["python", "-c", "pass"], outputs=["x"])
    b.bolt(
        "a",
        ["python", "-c", "pass"],
        outputs=[],
        config={} if bolt_debug is None else {"topology.debug": bolt_debug},
    ).shuffle("spout")
    b.bolt("b", ["python", "-c", "pass"], outputs=[]).shuffle("spout")
    return Supervisor(b.build())


def wrapped_links(sup: Supervisor) -> set[str]:
    return {link.cid for link in sup.path.links.values() if {"offer", "handle"} & set(vars(link))}


def test_off_wraps_nothing():
    for sup in (supervisor(), supervisor(False), supervisor(False, False)):
        assert not set(WRAPPED) & set(vars(sup.path))
        assert wrapped_links(sup) == set()


def test_on_for_the_topology_wraps_the_path_and_every_bolt():
    sup = supervisor(True)
    assert set(WRAPPED) <= set(vars(sup.path))
    assert wrapped_links(sup) == {"a", "b"}


def test_on_for_one_component_wraps_that_components_links_only():
    sup = supervisor(None, True)
    assert wrapped_links(sup) == {"a"}
    sup = supervisor(True, False)  # a component may turn it off for itself, as in Storm
    assert wrapped_links(sup) == {"b"}
