"""The topology model: frozen dataclasses built once by a loader, validated, then only read.

Loaders (`host.topology`) build these from our YAML, Flux or a Python builder; the runtime
(`host.runtime`) reads them. Names follow Storm: component, stream, grouping, task.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

SPOUT: Literal["spout"] = "spout"
BOLT: Literal["bolt"] = "bolt"

# Grouping types, named as in Storm's Flux (`SHUFFLE`, `FIELDS`, ...), lower-cased.
SHUFFLE = "shuffle"
FIELDS = "fields"
ALL = "all"
GLOBAL = "global"
NONE = "none"
DIRECT = "direct"
LOCAL_OR_SHUFFLE = "local_or_shuffle"
PARTIAL_KEY = "partial_key"
GROUPING_TYPES = (SHUFFLE, FIELDS, ALL, GLOBAL, NONE, DIRECT, LOCAL_OR_SHUFFLE, PARTIAL_KEY)
GROUPINGS_WITH_FIELDS = (FIELDS, PARTIAL_KEY)

# A component's role in a transactional topology (`batch:`, docs/transactional.md §1, §3)
BATCH_SPOUT = "spout"
BATCH_BOLT = "bolt"
COMMITTER = "committer"
BATCH_ROLES = (BATCH_SPOUT, BATCH_BOLT, COMMITTER)
# the state's key; set by a native file's `transactional: {id: ...}` or the builder's
# `transactional(id)`. Its presence makes a topology transactional.
TRANSACTIONAL_ID = "topology.transactional.id"

# Storm's DRPC parts, run inside the host with no process (docs/drpc.md): DRPC_SPOUT is Storm's
# DRPCSpout (emits each request of its function as [args, return-info]), RETURN_RESULTS its
# ReturnResults (answers the request a tuple's return-info names); a linear DRPC topology's ends
# (docs/drpc.md §3.2) are DRPC_REQUEST (emits [request, args], each request a batch) and
# DRPC_RESULT (answers with the last bolt's [request, result])
DRPC_SPOUT = "drpc-spout"
RETURN_RESULTS = "return-results"
DRPC_REQUEST = "drpc-request"
DRPC_RESULT = "drpc-result"
IN_HOST_ROLES = (DRPC_SPOUT, RETURN_RESULTS, DRPC_REQUEST, DRPC_RESULT)
# what each in-host part is and declares: Storm's DRPCSpout declares (args, return-info),
# PrepareRequest's request stream (request, args); ReturnResults and JoinResult declare nothing
IN_HOST_KINDS = {DRPC_SPOUT: SPOUT, RETURN_RESULTS: BOLT, DRPC_REQUEST: SPOUT, DRPC_RESULT: BOLT}
IN_HOST_OUTPUTS: dict[str, dict[str, tuple[str, ...]]] = {
    DRPC_SPOUT: {"default": ("args", "return-info")},
    RETURN_RESULTS: {},
    DRPC_REQUEST: {"default": ("request", "args")},
    DRPC_RESULT: {},
}
# the ids a linear DRPC topology gives its two in-host ends (reserved there: docs/drpc.md §3.2)
DRPC_REQUEST_ID = "drpc-request"
DRPC_RESULT_ID = "drpc-result"


@dataclass(frozen=True)
class Grouping:
    type: str
    fields: tuple[str, ...] = ()


@dataclass(frozen=True)
class Input:
    """A subscription: this bolt receives `source`'s `stream`, partitioned by `grouping`."""

    source: str
    stream: str
    grouping: Grouping


@dataclass(frozen=True)
class Component:
    id: str
    kind: str  # SPOUT or BOLT
    command: tuple[str, ...]
    # stream id -> declared output field names, in declaration order
    outputs: dict[str, tuple[str, ...]] = field(default_factory=dict)
    inputs: tuple[Input, ...] = ()
    parallelism: int = 1
    # component-level Storm config (e.g. topology.tick.tuple.freq.secs); overrides topology config
    config: dict = field(default_factory=dict)
    cwd: str = "."  # absolute after loading
    env: dict[str, str] = field(default_factory=dict)  # overlaid on the host's environment
    serializer: str = "json"
    # off for vendored storm.py <= 0.9.2, which takes a heartbeat for a tuple (docs/protocol.md,
    # "Heartbeat and timeout")
    heartbeats: bool = True
    # off for vendored storm.js <= 1.1.1, which never answers `activate` (docs/protocol.md,
    # "Commands")
    activate: bool = True
    # spouts: whether commands may be written ahead of their syncs. None: if the library
    # announces it in its pid reply (our clients do); True for libraries known to answer strictly
    # in order that do not announce it (storm.py, pystorm); False: Storm's lock-step, whatever the
    # library says (docs/protocol.md, "Protocol extensions")
    pipelining: bool | None = None
    # transactional batches (docs/transactional.md): "spout" for the one batch spout, "bolt" for a
    # batch bolt (gets `finish` once it has all of an attempt), "committer" for a batch bolt whose
    # `finish` comes in the commit phase, in txid order. None: an ordinary component (a bolt
    # downstream of the batch spout without it is a plain member of the batch group)
    batch: str | None = None
    # one of IN_HOST_ROLES for a DRPC part that runs inside the host (its command is empty), else
    # None; `drpc_function` is the function a DRPC_SPOUT or DRPC_REQUEST serves
    in_host: str | None = None
    drpc_function: str | None = None

    @property
    def is_spout(self) -> bool:
        return self.kind == SPOUT


@dataclass(frozen=True)
class Topology:
    name: str
    components: tuple[Component, ...]
    config: dict = field(default_factory=dict)
    source: str | None = None  # the file it was loaded from, for error messages

    def component(self, component_id: str) -> Component:
        for c in self.components:
            if c.id == component_id:
                return c
        raise KeyError(component_id)

    @property
    def transactional_id(self) -> str | None:
        """`topology.transactional.id`, or None when the topology is not transactional (the
        batch group's graph: `host.topology.batch_group`)."""
        value = self.config.get(TRANSACTIONAL_ID)
        return value if isinstance(value, str) else None

    @property
    def drpc_functions(self) -> tuple[str, ...]:
        """The DRPC functions this topology serves (docs/drpc.md), sorted; () for none."""
        return tuple(sorted({c.drpc_function for c in self.components if c.drpc_function}))

    @property
    def linear_drpc(self) -> str | None:
        """The function of a linear DRPC topology (docs/drpc.md §3.2), else None."""
        for c in self.components:
            if c.in_host == DRPC_REQUEST:
                return c.drpc_function
        return None

    @property
    def is_linear_drpc(self) -> bool:
        """Whether this is a linear DRPC topology (either of its in-host ends is present, even
        before validation has checked that both are)."""
        return any(c.in_host in (DRPC_REQUEST, DRPC_RESULT) for c in self.components)

    @property
    def spouts(self) -> tuple[Component, ...]:
        return tuple(c for c in self.components if c.kind == SPOUT)

    @property
    def bolts(self) -> tuple[Component, ...]:
        return tuple(c for c in self.components if c.kind == BOLT)

    def subscribers(self, source: str, stream: str) -> list[tuple[Component, Input]]:
        """Every (bolt, input) that receives `source`'s `stream`, in component order."""
        return [
            (c, i)
            for c in self.components
            for i in c.inputs
            if i.source == source and i.stream == stream
        ]
