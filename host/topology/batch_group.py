"""The batch group of a transactional topology: the batch spout and every component downstream of
it (docs/transactional.md §1). Read by validation (`host.topology.transactional_check`), the CLI
and the runtime; pure functions of the frozen Topology.

"Downstream" follows subscriptions on any stream: a bolt that subscribes to a member is a member.

A linear DRPC topology (docs/drpc.md §3.2) is read the same way: each request is a batch opened by
its `drpc-request`, which stands as the batch spout, so the batch group is its whole chain
(`drpc-request`, the bolts in order, `drpc-result`), with the `finish_batch` bolts as batch bolts
and the others, `drpc-result` among them, plain members.
"""

from __future__ import annotations

from host.topology.model import BATCH_SPOUT, DRPC_REQUEST, Component, Topology

PLAIN = "plain"  # the role of a member without `batch:` (storm.py, pystorm, any unmodified bolt)


def batch_spout(topology: Topology) -> Component | None:
    """The spout declared `batch: spout` (the first one, should validation not have run), or a
    linear DRPC topology's `drpc-request`, or None."""
    return next((c for c in topology.spouts if c.batch == BATCH_SPOUT or _opens_requests(c)), None)


def _opens_requests(c: Component) -> bool:
    return c.in_host == DRPC_REQUEST


def feeds(topology: Topology, component_id: str) -> tuple[str, ...]:
    """The ids of the components whose streams `component_id` subscribes to, each once, in the
    order of its inputs (a spout: none)."""
    sources: dict[str, None] = {}
    for inp in topology.component(component_id).inputs:
        sources.setdefault(inp.source, None)
    return tuple(sources)


def downstream(topology: Topology, component_id: str) -> frozenset[str]:
    """Every component that receives, directly or through others, what `component_id` emits
    (itself only if it is on a cycle)."""
    subscribers: dict[str, set[str]] = {}
    for c in topology.components:
        for inp in c.inputs:
            subscribers.setdefault(inp.source, set()).add(c.id)
    seen: set[str] = set()
    todo = list(subscribers.get(component_id, ()))
    while todo:
        current = todo.pop()
        if current not in seen:
            seen.add(current)
            todo.extend(subscribers.get(current, ()))
    return frozenset(seen)


def batch_group(topology: Topology) -> tuple[str, ...]:
    """The batch spout's id and those of every component downstream of it, in the topology's
    component order; empty when there is no batch spout."""
    spout = batch_spout(topology)
    if spout is None:
        return ()
    members = downstream(topology, spout.id) | {spout.id}
    return tuple(c.id for c in topology.components if c.id in members)


def role(component: Component) -> str:
    """What a member of the batch group is: its `batch:` value (`spout`, `bolt`, `committer`),
    `spout` for a linear DRPC topology's `drpc-request`, or `plain`."""
    if _opens_requests(component):
        return BATCH_SPOUT
    return component.batch if component.batch is not None else PLAIN


def find_cycle(topology: Topology, members: tuple[str, ...]) -> tuple[str, ...] | None:
    """A cycle among `members` along subscriptions, as the ids on it with the first repeated at
    the end (`a, b, a`), or None. A task of a cycle would wait for itself to finish an attempt
    (docs/transactional.md §2.5), so the batch group must have none."""
    inside = set(members)
    # member -> the members it feeds, in component order for a stable answer
    edges: dict[str, list[str]] = {m: [] for m in members}
    for c in topology.components:
        if c.id in inside:
            for source in feeds(topology, c.id):
                if source in inside and c.id not in edges[source]:
                    edges[source].append(c.id)
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node: str) -> tuple[str, ...] | None:
        state[node] = 1
        path.append(node)
        for nxt in edges[node]:
            if state.get(nxt) == 1:
                return (*path[path.index(nxt) :], nxt)
            if nxt not in state:
                found = visit(nxt)
                if found:
                    return found
        path.pop()
        state[node] = 2
        return None

    for member in members:
        if member not in state:
            found = visit(member)
            if found:
                return found
    return None
