"""Task ids, and the `conf` and `context` every component gets in the handshake (docs/protocol.md §3.1–§3.3).

Task numbering follows Storm (docs/flux.md §5), so ids look like the ones components see under
Storm: tasks are numbered from 1 over all components, `__acker` included while acking is on, in
code-point order of component id, each component taking a block of `parallelism` consecutive ids.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass

from host.topology import settings as cfg
from host.topology.component_config import effective_config
from host.topology.model import (
    ALL,
    DIRECT,
    FIELDS,
    GLOBAL,
    LOCAL_OR_SHUFFLE,
    NONE,
    PARTIAL_KEY,
    SHUFFLE,
    Component,
    Grouping,
    Topology,
)
from multilang.messages import ACKER_COMPONENT

ACKER = ACKER_COMPONENT
CLUSTER_MODE = "local"


@dataclass(frozen=True)
class TaskMap:
    """Which task ids exist and whose they are. Read-only once built."""

    task_to_component: Mapping[int, str]  # ascending task id
    component_tasks: Mapping[str, tuple[int, ...]]  # ascending within each component

    def component_of(self, task: int) -> str:
        return self.task_to_component[task]

    def tasks_of(self, component_id: str) -> tuple[int, ...]:
        """Task ids of a component (`__acker` included); () for an unknown id."""
        return self.component_tasks.get(component_id, ())

    @property
    def tasks(self) -> tuple[int, ...]:
        return tuple(self.task_to_component)


def assign_tasks(topology: Topology) -> TaskMap:
    """Storm-like task ids: see the module docstring. `__acker` gets
    `topology.acker.executors` tasks (1 when unset, none when 0)."""
    counts = {c.id: c.parallelism for c in topology.components}
    ackers = cfg.settings_for(topology).acker_tasks
    if ackers:
        counts[ACKER] = ackers
    task_to_component: dict[int, str] = {}
    component_tasks: dict[str, tuple[int, ...]] = {}
    next_task = 1
    for component_id in sorted(counts):  # str order is code-point order, as Storm sorts
        block = tuple(range(next_task, next_task + counts[component_id]))
        component_tasks[component_id] = block
        task_to_component.update(dict.fromkeys(block, component_id))
        next_task += len(block)
    return TaskMap(task_to_component, component_tasks)


# ---- context ------------------------------------------------------------------------------------

_GROUPING_TYPE_NAMES = {
    SHUFFLE: "SHUFFLE",
    ALL: "ALL",
    NONE: "NONE",
    DIRECT: "DIRECT",
    LOCAL_OR_SHUFFLE: "LOCAL_OR_SHUFFLE",
    PARTIAL_KEY: "CUSTOM_SERIALIZED",  # Storm declares partial-key as a custom grouping
}


def grouping_json(grouping: Grouping) -> dict:
    """A grouping as Storm writes it in the context (docs/protocol.md §3.2): global is fields-with-no-fields."""
    if grouping.type == FIELDS:
        return {"type": "FIELDS", "fields": list(grouping.fields)}
    if grouping.type == GLOBAL:
        return {"type": "FIELDS", "fields": []}
    return {"type": _GROUPING_TYPE_NAMES[grouping.type]}


def _component(topology: Topology, component: Component | str) -> Component:
    return topology.component(component) if isinstance(component, str) else component


def _targets(topology: Topology, comp: Component) -> dict:
    """stream -> subscriber -> grouping, for this component's streams that have subscribers."""
    out = {}
    for stream in comp.outputs:
        subscribers = topology.subscribers(comp.id, stream)
        if subscribers:
            out[stream] = {target.id: grouping_json(inp.grouping) for target, inp in subscribers}
    return out


def _sources_grouping(comp: Component) -> dict:
    out: dict[str, dict] = {}
    for inp in comp.inputs:
        out.setdefault(inp.source, {})[inp.stream] = grouping_json(inp.grouping)
    return out


def _sources_fields(topology: Topology, comp: Component) -> dict:
    """Every stream of every source, not only the subscribed ones: pystorm builds a namedtuple per
    (source, stream) from this, so the lists are exactly the declared ones."""
    out = {}
    for inp in comp.inputs:
        if inp.source not in out:
            source = topology.component(inp.source)
            out[inp.source] = {s: list(f) for s, f in source.outputs.items()}
    return out


def _component_context(topology: Topology, tasks: TaskMap, comp: Component) -> dict:
    """Everything of the context except `taskid`."""
    return {
        "componentid": comp.id,
        "task->component": {str(t): c for t, c in sorted(tasks.task_to_component.items())},
        "streams": list(comp.outputs),
        "stream->outputfields": {s: list(f) for s, f in comp.outputs.items()},
        "stream->target->grouping": _targets(topology, comp),
        "source->stream->grouping": _sources_grouping(comp),
        "source->stream->fields": _sources_fields(topology, comp),
    }


def build_context(
    topology: Topology, tasks: TaskMap, component: Component | str, task: int
) -> dict:
    """The handshake `context` for one task (docs/protocol.md §3.2, Storm >= 0.10 keys). A fresh dict each
    call; use HandshakeCache to build the per-component part once."""
    comp = _component(topology, component)
    _check_task(tasks, comp, task)
    return {"taskid": task, **_component_context(topology, tasks, comp)}


def _check_task(tasks: TaskMap, comp: Component, task: int) -> None:
    owner = tasks.task_to_component.get(task)
    if owner != comp.id:
        raise ValueError(f"task {task} belongs to {owner!r}, not to {comp.id!r}")


# ---- conf ---------------------------------------------------------------------------------------


def storm_id(topology: Topology, run_id: str | int) -> str:
    """Like Storm's `<name>-<counter>-<timestamp>` ids: unique per run."""
    return f"{topology.name}-{run_id}"


def build_conf(topology: Topology, component: Component | str, run_id: str | int) -> dict:
    """The handshake `conf` (docs/protocol.md §3.3): the component's effective config, plus what Storm adds
    and libraries read (`topology.name` for pystorm's log naming, `storm.id`, the cluster mode).
    Unset optional keys (`topology.max.spout.pending`, ticks for bolts) are left out."""
    conf = effective_config(topology, _component(topology, component))
    settings = cfg.Settings.from_config(conf)
    conf.update(
        {
            "topology.name": topology.name,
            "storm.id": storm_id(topology, run_id),
            "storm.cluster.mode": CLUSTER_MODE,
            cfg.DEBUG: settings.debug,
            cfg.MESSAGE_TIMEOUT_SECS: settings.message_timeout_secs,
        }
    )
    return conf


class HandshakeCache:
    """conf and context for one run, each component's computed once: restarts and parallel tasks
    reuse it. Every call returns a deep copy, so a caller cannot change what the next one gets."""

    def __init__(self, topology: Topology, tasks: TaskMap, run_id: str | int):
        self.topology = topology
        self.tasks = tasks
        self.run_id = run_id
        self._contexts: dict[str, dict] = {}
        self._confs: dict[str, dict] = {}

    def context(self, component_id: str, task: int) -> dict:
        comp = self.topology.component(component_id)
        _check_task(self.tasks, comp, task)
        if component_id not in self._contexts:
            self._contexts[component_id] = _component_context(self.topology, self.tasks, comp)
        return {"taskid": task, **copy.deepcopy(self._contexts[component_id])}

    def conf(self, component_id: str) -> dict:
        if component_id not in self._confs:
            self._confs[component_id] = build_conf(self.topology, component_id, self.run_id)
        return copy.deepcopy(self._confs[component_id])
