"""Which components are held back because a bolt task downstream of them is full. Pure: the
supervisor acts on the answers (no `next` to a held spout, no reading of a held bolt's stdout).

A bolt task is full when its backlog reaches its bound (host/runtime/bolt_link.py); every component
that feeds that bolt is then held until no bolt task it feeds is full. Storm 2 tracks the same per
destination task (a worker's `BackPressureTracker`): a full receive queue stops the tasks sending to
it, not the whole topology. See docs/architecture.md.
"""

from __future__ import annotations

from host.topology.model import Topology


class Backpressure:
    """Per component, how many of the bolt tasks it feeds are full."""

    def __init__(self, topology: Topology) -> None:
        self._full_downstream: dict[str, int] = {c.id: 0 for c in topology.components}
        self._sources: dict[str, frozenset[str]] = {
            c.id: frozenset(i.source for i in c.inputs) for c in topology.components
        }

    def held(self, component: str) -> bool:
        """Whether `component` must not emit more: some bolt task it feeds is full."""
        return self._full_downstream[component] != 0

    def bolt_task(self, bolt: str, full: bool) -> list[tuple[str, bool]]:
        """A task of `bolt` became full (or drained). Returns the components whose state changed,
        each with whether it is now held, so that the caller pauses or resumes them."""
        changed = []
        counts = self._full_downstream
        for source in self._sources[bolt]:
            before = counts[source]
            after = before + (1 if full else -1)
            if after < 0:
                raise ValueError(f"a task of {bolt!r} drained that was never full")
            counts[source] = after
            if (before == 0) != (after == 0):
                changed.append((source, after != 0))
        return changed
