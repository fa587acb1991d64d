"""Declared components -> the frozen Topology: `build_topology` and its two passes over the raw
values (host/topology/raw.py), which check each value and build the `host.topology.model` objects.

Apart from host/topology/builder.py (the Python builder users call) because our YAML loader
(host/topology/native.py) builds through it too: the checks, and their wording, are the same
whichever way a topology was declared.
"""

from __future__ import annotations

import copy
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from host.errors import TopologyError
from host.topology.commands import check_command
from host.topology.config_check import check_config
from host.topology.drpc_check import FUNCTION_KEYS, check_function
from host.topology.kafka_components import expand as expand_kafka
from host.topology.model import (
    GROUPING_TYPES,
    IN_HOST_OUTPUTS,
    Component,
    Grouping,
    Input,
    Topology,
)
from host.topology.raw import RawComponent, RawInput
from host.topology.targets import LOCAL, Target
from host.topology.transactional_check import check_batch
from host.topology.validation import (
    check_env,
    check_id,
    check_name,
    check_parallelism,
    check_switches,
    validate,
)
from multilang.messages import DEFAULT_STREAM


def build_topology(
    name: object,
    config: object,
    components: Sequence[RawComponent],
    base_dir: str | os.PathLike[str],
    *,
    source: str | None,
    target: Target = LOCAL,
) -> Topology:
    """Declared components -> the frozen Topology, validated for `target`; relative `cwd`s are
    resolved against `base_dir`, and `source` names the file in error messages.

    The checks run in the order `validate` runs them, as far as a typed model allows: what the
    model cannot hold unchecked (a parallelism, a serializer, a switch, a stream id of the wrong
    type) is checked after the topology's name and config, everything else first."""
    base = Path(os.path.abspath(base_dir))
    declared = [(raw, _first_pass(raw, base, source)) for raw in components]
    checked_name = check_name(name, source)
    checked_config = check_config(config, file=source)
    built = tuple(_second_pass(raw, first, source) for raw, first in declared)
    topology = Topology(checked_name, built, checked_config, source)
    validate(topology, target=target)
    return topology


# ---- raw values -> model ------------------------------------------------------------------------


@dataclass(frozen=True)
class _FirstPass:
    """A declared component's values that were checked before the topology's name."""

    id: str
    command: tuple[str, ...]
    outputs: dict[str, tuple[str, ...]]
    inputs: tuple[tuple[str, Grouping, object], ...]  # source, grouping, stream as given
    config: dict[str, object]
    cwd: str
    env: dict[str, str]


def _first_pass(raw: RawComponent, base: Path, file: str | None) -> _FirstPass:
    component_id = check_id(raw.id, file)
    if raw.in_host is not None:
        return _in_host_first_pass(raw, component_id, base, file)
    if raw.kafka is not None:
        if raw.command is not None:
            raise TopologyError(
                "give either a command or a kafka block (which runs the ready Kafka component)",
                file=file,
                component=component_id,
                key="kafka",
            )
        raw = copy.copy(raw)
        raw.command, raw.outputs, raw.config = expand_kafka(
            raw.kind, raw.kafka, raw.config, raw.outputs, file=file, component=component_id
        )
    config = _config_copy(raw, component_id, file)  # checked first, as it always was
    return _FirstPass(
        id=component_id,
        command=check_command(raw.command, file=file, component=component_id),
        outputs=_outputs(raw.outputs, file=file, component=component_id),
        inputs=tuple(_input(i, file=file, component=component_id) for i in raw.inputs),
        config=config,
        cwd=_cwd(raw.cwd, base, file=file, component=component_id),
        env=check_env(raw.env, file=file, component=component_id),
    )


def _config_copy(raw: RawComponent, component_id: str, file: str | None) -> dict[str, object]:
    """The component's config, a copy of its own (empty when it declares none)."""
    if raw.config is not None and not isinstance(raw.config, dict):
        raise TopologyError(
            "config must be a mapping of keys to values",
            file=file,
            component=component_id,
            key="config",
        )
    return copy.deepcopy(raw.config or {})


def _in_host_first_pass(
    raw: RawComponent, component_id: str, base: Path, file: str | None
) -> _FirstPass:
    """A DRPC part run inside the host: no command, directory or environment; what it declares
    is fixed (docs/drpc.md §3)."""
    role = raw.in_host
    assert role is not None
    if role in FUNCTION_KEYS:
        check_function(
            raw.drpc_function, file=file, component=component_id, key=FUNCTION_KEYS[role]
        )
    config = _config_copy(raw, component_id, file)  # checked first, as it always was
    return _FirstPass(
        id=component_id,
        command=(),
        outputs=dict(IN_HOST_OUTPUTS[role]),
        inputs=tuple(_input(i, file=file, component=component_id) for i in raw.inputs),
        config=config,
        cwd=str(base),  # an absolute directory, as every component's; it runs in none
        env={},
    )


def _second_pass(raw: RawComponent, first: _FirstPass, file: str | None) -> Component:
    parallelism = check_parallelism(raw.parallelism, file=file, component=first.id)
    serializer, heartbeats, activate = check_switches(
        raw.serializer, raw.heartbeats, raw.activate, file=file, component=first.id
    )
    inputs = tuple(
        Input(source, _stream(stream, file=file, component=first.id, source=source), grouping)
        for source, grouping, stream in first.inputs
    )
    return Component(
        id=first.id,
        kind=raw.kind,
        command=first.command,
        outputs=first.outputs,
        inputs=inputs,
        parallelism=parallelism,
        config=first.config,
        cwd=first.cwd,
        env=first.env,
        serializer=serializer,
        heartbeats=heartbeats,
        activate=activate,
        pipelining=_pipelining(raw.pipelining, file=file, component=first.id),
        batch=check_batch(raw.batch, raw.kind, file=file, component=first.id),
        in_host=raw.in_host,
        drpc_function=raw.drpc_function if isinstance(raw.drpc_function, str) else None,
    )


def _pipelining(value: object, *, file: str | None, component: str) -> bool | None:
    if value is None or isinstance(value, bool):
        return value
    raise TopologyError(
        f"must be true, false or null (as the library announces), got {value!r}",
        file=file,
        component=component,
        key="pipelining",
    )


def _outputs(value: object, *, file: str | None, component: str) -> dict[str, tuple[str, ...]]:
    if value is None:
        return {}
    if isinstance(value, (list, tuple)):
        return {DEFAULT_STREAM: _names(value, file, component, "outputs")}
    if isinstance(value, dict):
        return {
            stream: _names(fields, file, component, f"outputs.{stream}")
            for stream, fields in value.items()
        }
    raise TopologyError(
        "outputs must be a list of field names (the default stream) or a mapping "
        "stream -> list of field names",
        file=file,
        component=component,
        key="outputs",
    )


def _names(value: object, file: str | None, component: str, key: str) -> tuple[str, ...]:
    if not isinstance(value, (list, tuple)):
        raise TopologyError(
            f"must be a list of field names, got {value!r}", file=file, component=component, key=key
        )
    return tuple(value)


def _input(raw: RawInput, *, file: str | None, component: str) -> tuple[str, Grouping, object]:
    key = f"inputs.{raw.source}"
    if not isinstance(raw.source, str):
        raise TopologyError(
            f"source must be a component id (a string), got {raw.source!r}",
            file=file,
            component=component,
            key=key,
        )
    if not isinstance(raw.grouping, str):
        raise TopologyError(
            f"grouping must be one of {', '.join(GROUPING_TYPES)}, got {raw.grouping!r}",
            file=file,
            component=component,
            key=key,
        )
    fields = (raw.fields,) if isinstance(raw.fields, str) else raw.fields
    if not isinstance(fields, (list, tuple)):
        raise TopologyError(
            f"fields must be a list of field names, got {raw.fields!r}",
            file=file,
            component=component,
            key=key,
        )
    # Flux users write SHUFFLE; both spellings mean the same
    return raw.source, Grouping(raw.grouping.lower(), tuple(fields)), raw.stream


def _stream(value: object, *, file: str | None, component: str, source: str) -> str:
    if not isinstance(value, str):
        raise TopologyError(
            f"stream must be a non-empty string, got {value!r}",
            file=file,
            component=component,
            key=f"inputs.{source}",
        )
    return value


def _cwd(value: object, base: Path, *, file: str | None, component: str) -> str:
    if value is None:
        return str(base)
    if not isinstance(value, str) or not value:
        raise TopologyError(
            f"cwd must be a directory path, got {value!r}",
            file=file,
            component=component,
            key="cwd",
        )
    return os.path.normpath(base / os.path.expanduser(value))
