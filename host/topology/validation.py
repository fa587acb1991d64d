"""Checking a Topology before any process starts, whichever loader built it: references between
components, streams and fields, config types, and the file system (commands, scripts, cwds), so
that a bad topology is one clear TopologyError naming the file, the component and the key, and
never a crash at run time.

Loaders turn their input (our YAML, a Python builder, Flux) into the frozen model; `validate`
checks the model. It also accepts a Topology made by hand, so it checks types too.
"""

from __future__ import annotations

import os

from host.errors import TopologyError
from host.topology.commands import check_command, check_launchable
from host.topology.config_check import check_config
from host.topology.drpc_check import (
    check_drpc,
    check_in_host_component,
    check_linear_bolt,
    last_linear_bolt,
)
from host.topology.model import (
    BOLT,
    GROUPING_TYPES,
    GROUPINGS_WITH_FIELDS,
    PARTIAL_KEY,
    SPOUT,
    Component,
    Grouping,
    Topology,
)
from host.topology.setting_checks import is_int
from host.topology.targets import LOCAL, Target
from host.topology.transactional_check import check_batch_component, check_transactional

SERIALIZERS = ("json", "msgpack")
RESERVED_PREFIX = "__"  # Storm's system components and streams: __acker, __system, __tick, ...
# Storm refuses topology names with these (they end up in paths and ids)
FORBIDDEN_NAME_CHARS = "/.:\\"


def validate(topology: Topology, *, strict_config: bool = True, target: Target = LOCAL) -> None:
    """Raise TopologyError (naming file, component, key) for the first problem found. Checks
    structure first, then references between components, then the file system (commands,
    scripts, cwds). `strict_config`: reject topology-wide keys in component config instead of
    dropping them silently as Storm does (Flux loaders pass False to stay Storm-compatible).
    `target`: the runtime it is validated for (`host.topology.targets`): `host spark` lets
    batch bolts and committers follow a plain spout."""
    file = topology.source
    check_name(topology.name, file)
    check_config(topology.config, file=file)
    _check_ids(topology, file)
    last_linear = last_linear_bolt(topology) if topology.is_linear_drpc else None
    for component in topology.components:
        if topology.is_linear_drpc and component.in_host is None:
            # before the batch check, whose wording is for `batch:` (docs/drpc.md §3.2)
            check_linear_bolt(component, file, last=component.id == last_linear)
        _check_component(component, file, strict_config)
    ids = {c.id: c for c in topology.components}
    for component in topology.components:
        _check_inputs(component, ids, file)
    check_drpc(topology)  # DRPC's parts and a linear DRPC topology's chain (docs/drpc.md §3)
    check_transactional(topology, target)  # the batch group's shape (docs/transactional.md §3)
    for component in topology.components:
        if component.in_host is None:  # DRPC's in-host parts run no command
            check_launchable(component, file)


def check_name(name: object, file: str | None) -> str:
    """The topology's name, if it is one Storm accepts."""
    if name is not None and not isinstance(name, str):
        raise TopologyError(
            f"the topology name must be a string, got {name!r} (quote it in YAML)",
            file=file,
            key="name",
        )
    if name is None or not name.strip():
        raise TopologyError(
            "missing topology name: give the topology a non-empty 'name'", file=file, key="name"
        )
    bad = sorted({ch for ch in name if ch in FORBIDDEN_NAME_CHARS})
    if bad:
        raise TopologyError(
            f"topology name {name!r} may not contain {' '.join(bad)} (Storm "
            f"rejects / . : \\ in names)",
            file=file,
            key="name",
        )
    return name


def check_id(component_id: object, file: str | None) -> str:
    """A component id, if it is a non-empty string that is not one of Storm's system ids."""
    if not isinstance(component_id, str) or not component_id:
        raise TopologyError(
            f"component ids must be non-empty strings, got {component_id!r}",
            file=file,
            component=str(component_id),
            key="id",
        )
    if component_id.startswith(RESERVED_PREFIX):
        raise TopologyError(
            "ids starting with '__' are reserved for Storm's system components (__acker, __system)",
            file=file,
            component=component_id,
            key="id",
        )
    return component_id


def check_env(value: object, *, file: str | None, component: str) -> dict[str, str]:
    """A component's `env` -> the variables it sets; numbers become text."""
    where = {"file": file, "component": component, "key": "env"}
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise TopologyError("env must be a mapping NAME -> value", **where)
    env = {}
    for name, val in value.items():
        if not isinstance(name, str) or not name or "=" in name:
            raise TopologyError(f"bad variable name {name!r}", **where)
        if isinstance(val, (int, float)) and not isinstance(val, bool):
            val = str(val)  # `PORT: 8080` in YAML is an int; the environment holds text
        if not isinstance(val, str):
            raise TopologyError(f"{name} must be a string, got {val!r} (quote it in YAML)", **where)
        env[name] = val
    return env


def _check_ids(topology: Topology, file: str | None) -> None:
    if not topology.spouts:
        raise TopologyError(
            "the topology has no spouts: nothing would emit tuples", file=file, key="spouts"
        )
    seen: dict[str, str] = {}
    for c in topology.components:
        check_id(c.id, file)
        if c.kind not in (SPOUT, BOLT):
            raise TopologyError(
                f"kind must be '{SPOUT}' or '{BOLT}', got {c.kind!r}",
                file=file,
                component=c.id,
                key="kind",
            )
        if c.id in seen:
            raise TopologyError(
                f"duplicate component id: a {seen[c.id]} and a {c.kind} are both "
                f"called {c.id!r}; ids must be unique across spouts and bolts",
                file=file,
                component=c.id,
                key="id",
            )
        seen[c.id] = c.kind


def _check_component(c: Component, file: str | None, strict_config: bool) -> None:
    where = {"file": file, "component": c.id}
    check_in_host_component(c, file)
    if c.in_host is None:
        check_command(c.command, file=file, component=c.id)
    check_parallelism(c.parallelism, file=file, component=c.id)
    _check_outputs(c, file)
    check_config(c.config, file=file, component=c.id, strict=strict_config)
    if c.in_host is None:  # an in-host part runs in no directory
        _check_cwd(c, file)
    check_env(c.env, file=file, component=c.id)
    check_switches(c.serializer, c.heartbeats, c.activate, file=file, component=c.id)
    if c.is_spout and c.inputs:
        raise TopologyError(
            "a spout takes no inputs (only bolts subscribe to streams)", key="inputs", **where
        )
    check_batch_component(c, file)  # before the inputs check: a committer's is worded for it
    if not c.is_spout and not c.inputs:
        raise TopologyError(
            "bolt has no inputs: subscribe it to a spout or bolt, e.g. "
            "'inputs: {my-spout: shuffle}'",
            key="inputs",
            **where,
        )


def check_parallelism(value: object, *, file: str | None, component: str) -> int:
    """A component's number of tasks: an integer >= 1."""
    if not is_int(value) or value < 1:
        raise TopologyError(
            f"parallelism must be an integer >= 1, got {value!r}",
            file=file,
            component=component,
            key="parallelism",
        )
    return value


def check_switches(
    serializer: object, heartbeats: object, activate: object, *, file: str | None, component: str
) -> tuple[str, bool, bool]:
    """A component's serializer and its heartbeats / activate switches (off for vendored old
    multilang libraries: see docs/protocol.md)."""
    if not isinstance(serializer, str) or serializer not in SERIALIZERS:
        raise TopologyError(
            f"serializer must be one of {', '.join(SERIALIZERS)}, got {serializer!r}",
            file=file,
            component=component,
            key="serializer",
        )
    return (
        serializer,
        _switch(heartbeats, "heartbeats", file, component),
        _switch(activate, "activate", file, component),
    )


def _switch(value: object, key: str, file: str | None, component: str) -> bool:
    if not isinstance(value, bool):
        raise TopologyError(
            f"must be true or false, got {value!r}", file=file, component=component, key=key
        )
    return value


def _check_outputs(c: Component, file: str | None) -> None:
    if not isinstance(c.outputs, dict):
        raise TopologyError(
            "outputs must map stream ids to field lists", file=file, component=c.id, key="outputs"
        )
    for stream, fields in c.outputs.items():
        where = {"file": file, "component": c.id, "key": f"outputs.{stream}"}
        if not isinstance(stream, str) or not stream:
            raise TopologyError(f"stream ids must be non-empty strings, got {stream!r}", **where)
        if stream.startswith(RESERVED_PREFIX):
            raise TopologyError(
                "stream ids starting with '__' are reserved for Storm's system "
                "streams (__tick, __heartbeat, ...)",
                **where,
            )
        if not isinstance(fields, (list, tuple)):
            raise TopologyError(f"must be a list of field names, got {fields!r}", **where)
        for name in fields:
            if not isinstance(name, str) or not name:
                raise TopologyError(f"field names must be non-empty strings, got {name!r}", **where)
        duplicates = sorted({name for name in fields if list(fields).count(name) > 1})
        if duplicates:
            raise TopologyError(f"field {duplicates[0]!r} is declared twice", **where)


def _check_cwd(c: Component, file: str | None) -> None:
    where = {"file": file, "component": c.id, "key": "cwd"}
    if not isinstance(c.cwd, str) or not os.path.isabs(c.cwd):
        raise TopologyError(f"cwd must be an absolute path after loading, got {c.cwd!r}", **where)
    if not os.path.exists(c.cwd):
        raise TopologyError(f"directory {c.cwd} does not exist", **where)
    if not os.path.isdir(c.cwd):
        raise TopologyError(f"{c.cwd} is not a directory", **where)


def _check_inputs(c: Component, ids: dict[str, Component], file: str | None) -> None:
    subscribed: set[tuple[str, str]] = set()
    for inp in c.inputs:
        where = {"file": file, "component": c.id, "key": f"inputs.{inp.source}"}
        source = ids.get(inp.source)
        if source is None:
            raise TopologyError(
                f"unknown component {inp.source!r}; the components are: {', '.join(sorted(ids))}",
                **where,
            )
        _check_grouping(inp.grouping, where)
        if not isinstance(inp.stream, str) or not inp.stream:
            raise TopologyError(f"stream must be a non-empty string, got {inp.stream!r}", **where)
        if inp.stream not in source.outputs:
            declared = ", ".join(source.outputs) or "none (give it outputs)"
            raise TopologyError(
                f"{inp.source!r} declares no stream {inp.stream!r}; its streams are: {declared}",
                **where,
            )
        missing = [f for f in inp.grouping.fields if f not in source.outputs[inp.stream]]
        if missing:
            raise TopologyError(
                f"field {missing[0]!r} is not in stream {inp.stream!r} of {inp.source!r}, whose "
                f"fields are: {', '.join(source.outputs[inp.stream]) or 'none'}",
                **where,
            )
        if (inp.source, inp.stream) in subscribed:
            raise TopologyError(
                f"subscribes twice to stream {inp.stream!r} of {inp.source!r}", **where
            )
        subscribed.add((inp.source, inp.stream))


def _check_grouping(grouping: Grouping, where: dict[str, str | None]) -> None:
    if grouping.type not in GROUPING_TYPES:
        raise TopologyError(
            f"unknown grouping {grouping.type!r}; groupings are: {', '.join(GROUPING_TYPES)}",
            **where,
        )
    for name in grouping.fields:
        if not isinstance(name, str) or not name:
            raise TopologyError(f"field names must be non-empty strings, got {name!r}", **where)
    if grouping.type in GROUPINGS_WITH_FIELDS and not grouping.fields:
        raise TopologyError(
            f"{grouping.type} grouping needs fields, e.g. "
            f"{{{grouping.type if grouping.type == PARTIAL_KEY else 'fields'}: "
            f"[word]}}",
            **where,
        )
    if grouping.type not in GROUPINGS_WITH_FIELDS and grouping.fields:
        raise TopologyError(f"{grouping.type} grouping takes no fields", **where)
