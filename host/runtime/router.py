"""Groupings: which tasks receive a tuple a component emits. Pure, no I/O.

The router is built once per run from the frozen topology and the task numbering; per (source,
stream) it holds one small chooser per subscribing component, so routing a tuple is a dict lookup
and a call per subscriber.
"""

from __future__ import annotations

import random
import zlib
from collections.abc import Callable

from host.errors import RoutingError
from host.runtime.run_length import RunLength
from host.topology.model import (
    ALL,
    DIRECT,
    FIELDS,
    GLOBAL,
    LOCAL_OR_SHUFFLE,
    NONE,
    PARTIAL_KEY,
    SHUFFLE,
    Topology,
)
from multilang.codec import dumps

Chooser = Callable[[list], list]
_KEY_CACHE_LIMIT = 65536


def stable_hash(key: object, seed: int = 0) -> int:
    """A hash that is the same in every process and run (Python's `hash()` of str is salted)."""
    data = (
        key.encode("utf-8", "surrogatepass")
        if type(key) is str
        else dumps(key).encode("utf-8", "surrogatepass")
    )
    return zlib.crc32(data, seed)


def _shuffle(tasks: list[int]) -> Chooser:
    # Round robin from a random start: the even spread of Storm's shuffle without a random draw
    # per tuple.
    n = len(tasks)
    state = [random.randrange(n)]
    singles = [[t] for t in tasks]

    def choose(values: list) -> list:
        i = state[0] + 1
        if i >= n:
            i = 0
        state[0] = i
        return singles[i]

    return choose


def _shuffle_runs(tasks: list[int], runs: RunLength) -> Chooser:
    """Round robin by runs: `runs.k` consecutive tuples to one task, then the next task (see
    host/runtime/run_length.py). With k = 1 it is `_shuffle`."""
    n = len(tasks)
    state = [random.randrange(n), 0]  # the current task's index, tuples it got in this run
    singles = [[t] for t in tasks]

    def choose(values: list) -> list:
        given = state[1]
        if given >= runs.k:
            i = state[0] + 1
            state[0] = 0 if i >= n else i
            given = 0
        state[1] = given + 1
        return singles[state[0]]

    return choose


def _constant(tasks: list[int]) -> Chooser:
    """Global (the lowest task) and all (every task): the same targets whatever the values."""

    def choose(values: list) -> list:
        return tasks

    return choose


def key_extractor(indices: tuple[int, ...]) -> Callable[[list], object]:
    if len(indices) == 1:
        i = indices[0]
        return lambda values: values[i]
    return lambda values: [values[i] for i in indices]


def _fields(tasks: list[int], indices: tuple[int, ...]) -> Chooser:
    singles = [[t] for t in tasks]
    if len(indices) == 1:
        return _one_field(singles, indices[0])
    n = len(tasks)
    key_of = key_extractor(indices)

    def choose(values: list) -> list:
        return singles[stable_hash(key_of(values)) % n]  # a list: `_one_field`'s cache is for str

    return choose


def _one_field(singles: list[list[int]], i: int) -> Chooser:
    """`_fields` on one field, the usual case: the key read inline (a call less per tuple on the
    host's hottest path)."""
    n = len(singles)
    cache: dict = {}  # str key -> chosen task list: words repeat, hashing them again need not

    def choose(values: list) -> list:
        key = values[i]
        if type(key) is not str:
            return singles[stable_hash(key) % n]
        chosen = cache.get(key)
        if chosen is not None:
            return chosen
        chosen = singles[stable_hash(key) % n]
        if len(cache) >= _KEY_CACHE_LIMIT:
            cache.clear()
        cache[key] = chosen
        return chosen

    return choose


def _partial_key(tasks: list[int], indices: tuple[int, ...]) -> Chooser:
    # Two candidates per key (two independent hashes); the one this grouping has sent fewer tuples
    # to wins, as in Storm's PartialKeyGrouping.
    n = len(tasks)
    sent = [0] * n
    singles = [[t] for t in tasks]
    key_of = key_extractor(indices)

    def choose(values: list) -> list:
        key = key_of(values)
        a = stable_hash(key) % n
        b = stable_hash(key, 0x9E3779B9) % n
        i = a if sent[a] <= sent[b] else b
        sent[i] += 1
        return singles[i]

    return choose


class Route:
    """Where one (source, stream) goes: non-direct choosers and the tasks allowed as direct
    targets."""

    __slots__ = ("field_count", "choosers", "direct_tasks", "has_direct")

    def __init__(self, field_count: int):
        self.field_count = field_count
        self.choosers: list[Chooser] = []
        self.direct_tasks: set[int] = set()
        self.has_direct = False


class Router:
    def __init__(
        self,
        topology: Topology,
        component_tasks: dict[str, list[int]],
        runs: dict[str, RunLength] | None = None,
    ):
        """`runs`: the run length of shuffle groupings per bolt component (`_shuffle_runs`);
        a component without one gets plain round robin."""
        runs = runs or {}
        self._routes: dict[tuple[str, str], Route] = {}
        # (source, stream) -> values -> target tasks, for regular emits: one call per tuple
        self._regular: dict[tuple[str, str], Chooser] = {}
        for comp in topology.components:
            for stream, fields in comp.outputs.items():
                route = Route(len(fields))
                for target, inp in topology.subscribers(comp.id, stream):
                    tasks = sorted(component_tasks[target.id])
                    g = inp.grouping
                    indices = tuple(fields.index(f) for f in g.fields)
                    if g.type == DIRECT:
                        route.has_direct = True
                        route.direct_tasks.update(tasks)
                    elif g.type in (SHUFFLE, LOCAL_OR_SHUFFLE, NONE):
                        run = runs.get(target.id)
                        route.choosers.append(
                            _shuffle(tasks) if run is None else _shuffle_runs(tasks, run)
                        )
                    elif g.type == FIELDS:
                        route.choosers.append(_fields(tasks, indices))
                    elif g.type == GLOBAL:
                        route.choosers.append(_constant([tasks[0]]))
                    elif g.type == ALL:
                        route.choosers.append(_constant(tasks))
                    elif g.type == PARTIAL_KEY:
                        route.choosers.append(_partial_key(tasks, indices))
                    else:  # the loader validates groupings; this is a bug, not user input
                        raise AssertionError(f"unknown grouping {g.type!r}")
                self._routes[(comp.id, stream)] = route
                self._regular[(comp.id, stream)] = self._compile(comp.id, stream, route)

    def _route(self, source: str, stream: str, values: list) -> Route:
        route = self._routes.get((source, stream))
        if route is None:
            raise RoutingError(f"emit to stream '{stream}', which '{source}' does not declare")
        if len(values) != route.field_count:
            raise RoutingError(
                f"emit of {len(values)} values to stream '{stream}', which declares "
                f"{route.field_count} fields"
            )
        return route

    @staticmethod
    def _compile(source: str, stream: str, route: Route) -> Chooser:
        fields = route.field_count
        choosers = route.choosers

        def wrong_count(values: list) -> RoutingError:
            return RoutingError(
                f"emit of {len(values)} values to stream '{stream}', which declares {fields} fields"
            )

        if route.has_direct:

            def direct_only(values: list) -> list:
                raise RoutingError(
                    f"regular emit to stream '{stream}', which a bolt subscribes "
                    "to with direct grouping (use a direct emit)"
                )

            return direct_only
        if not choosers:

            def nowhere(values: list) -> list:
                if len(values) != fields:
                    raise wrong_count(values)
                return []

            return nowhere
        if len(choosers) == 1:
            choose = choosers[0]

            def one(values: list) -> list:
                if len(values) != fields:
                    raise wrong_count(values)
                return choose(values)

            return one

        def several(values: list) -> list:
            if len(values) != fields:
                raise wrong_count(values)
            out: list[int] = []
            for choose in choosers:
                out.extend(choose(values))
            return out

        return several

    def targets(self, source: str, stream: str, values: list) -> list[int]:
        """The tasks a regular (non-direct) emit goes to, in subscriber order. The list may be
        shared: do not change it."""
        return self.chooser(source, stream)(values)

    def chooser(self, source: str, stream: str) -> Chooser:
        """`values -> targets` for regular emits of `source` on `stream`, as `targets` does it
        (raising RoutingError for a wrong number of values); for callers that cache it."""
        try:
            return self._regular[(source, stream)]
        except KeyError:
            raise RoutingError(
                f"emit to stream '{stream}', which '{source}' does not declare"
            ) from None

    def unsubscribed(self, source: str, stream: str) -> bool:
        """`source` declares `stream` and no bolt subscribes to it."""
        route = self._routes.get((source, stream))
        return route is not None and not route.choosers and not route.has_direct

    def direct_target(self, source: str, stream: str, values: list, task: int) -> int:
        """Check a direct emit to `task`; returns the task."""
        route = self._route(source, stream, values)
        if task not in route.direct_tasks:
            raise RoutingError(
                f"direct emit to task {task}, which does not subscribe to "
                f"'{source}' stream '{stream}' with direct grouping"
            )
        return task
