"""Building a topology in Python: `TopologyBuilder` and the `ComponentDeclarer` its `spout` and
`bolt` return, and `build_topology`, which turns what was declared (here or in our YAML) into the
validated, frozen Topology.

Nothing is checked while declaring, so that errors come out of `build()` in one place, worded as
for YAML files.
"""

from __future__ import annotations

import contextvars
import copy
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from host.errors import TopologyError
from host.topology.commands import check_command
from host.topology.config_check import check_config
from host.topology.drpc_check import FUNCTION_KEYS, check_function
from host.topology.kafka_components import expand as expand_kafka
from host.topology.linear_drpc import LinearDRPCDeclarer
from host.topology.linear_drpc import expand as expand_linear
from host.topology.model import (
    ALL,
    BOLT,
    DIRECT,
    DRPC_SPOUT,
    FIELDS,
    GLOBAL,
    GROUPING_TYPES,
    IN_HOST_OUTPUTS,
    LOCAL_OR_SHUFFLE,
    NONE,
    PARTIAL_KEY,
    RETURN_RESULTS,
    SHUFFLE,
    SPOUT,
    Component,
    Grouping,
    Input,
    Topology,
)
from host.topology.raw import RawComponent, RawInput, in_host_part
from host.topology.targets import LOCAL, Target
from host.topology.transactional_check import check_batch, with_transactional_id
from host.topology.validation import (
    check_env,
    check_id,
    check_name,
    check_parallelism,
    check_switches,
    validate,
)
from multilang.messages import DEFAULT_STREAM


@dataclass(frozen=True)
class LoadingFile:
    """The Python topology file being run, its directory, and the runtime it is loaded for."""

    file: str
    base_dir: Path
    target: Target = LOCAL


# Set while a .py topology file runs (`host.topology.python_file`), so that
# `TopologyBuilder.build()` inside it resolves paths against that file's directory, and validates
# for the runtime the file is loaded for, without being told.
LOADING_FILE: contextvars.ContextVar[LoadingFile | None] = contextvars.ContextVar(
    "LOADING_FILE", default=None
)


def _field_list(fields: tuple[object, ...]) -> object:
    """`fields("src", "a", "b")` and `fields("src", ["a", "b"])` mean the same."""
    if len(fields) == 1 and isinstance(fields[0], (list, tuple)):
        return fields[0]
    return fields


class ComponentDeclarer:
    """What `TopologyBuilder.spout`/`bolt` return: declare the component's inputs (bolts only),
    chainably: `b.bolt(...).shuffle("a").fields("b", "word", stream="s")`."""

    def __init__(self, raw: RawComponent):
        self._raw = raw

    def grouping(
        self, source: str, grouping: str, fields: Sequence[str] = (), stream: str = DEFAULT_STREAM
    ) -> ComponentDeclarer:
        """Subscribe to `source`'s `stream` with any grouping by name."""
        return self._subscribe(source, grouping, fields, stream)

    def shuffle(self, source: str, stream: str = DEFAULT_STREAM) -> ComponentDeclarer:
        return self._subscribe(source, SHUFFLE, (), stream)

    def fields(
        self, source: str, *fields: str | Sequence[str], stream: str = DEFAULT_STREAM
    ) -> ComponentDeclarer:
        return self._subscribe(source, FIELDS, _field_list(fields), stream)

    def partial_key(
        self, source: str, *fields: str | Sequence[str], stream: str = DEFAULT_STREAM
    ) -> ComponentDeclarer:
        return self._subscribe(source, PARTIAL_KEY, _field_list(fields), stream)

    def all(self, source: str, stream: str = DEFAULT_STREAM) -> ComponentDeclarer:
        return self._subscribe(source, ALL, (), stream)

    def global_(self, source: str, stream: str = DEFAULT_STREAM) -> ComponentDeclarer:
        return self._subscribe(source, GLOBAL, (), stream)

    def none(self, source: str, stream: str = DEFAULT_STREAM) -> ComponentDeclarer:
        return self._subscribe(source, NONE, (), stream)

    def direct(self, source: str, stream: str = DEFAULT_STREAM) -> ComponentDeclarer:
        return self._subscribe(source, DIRECT, (), stream)

    def local_or_shuffle(self, source: str, stream: str = DEFAULT_STREAM) -> ComponentDeclarer:
        return self._subscribe(source, LOCAL_OR_SHUFFLE, (), stream)

    def _subscribe(
        self, source: str, grouping: str, fields: object, stream: str
    ) -> ComponentDeclarer:
        self._raw.inputs.append(RawInput(source, grouping, fields, stream))
        return self


class TopologyBuilder:
    """Build a topology in Python; `build()` validates and returns the frozen Topology.

    ```
    b = TopologyBuilder("wordcount", config={"topology.max.spout.pending": 1000})
    b.spout("sentences", ["python", "sentences.py"], outputs=["sentence"])
    b.bolt("split", ["bash", "split.sh"], outputs=["word"], parallelism=2).shuffle("sentences")
    topology = b.build()
    ```
    A transactional topology (docs/transactional.md §3): `b.transactional("wordcount")`, then
    `batch="spout"` on one spout and `batch="bolt"` / `batch="committer"` on bolts.

    DRPC (docs/drpc.md §3): `b.drpc_spout("drpc", "exclaim")` and
    `b.return_results("return").shuffle("exclaim")` are Storm's DRPCSpout and ReturnResults;
    `b.linear_drpc("reach")` makes a linear DRPC topology instead, its bolts added in order on
    what it returns (and then no other spouts or bolts).

    Nothing is checked until `build()`, so errors come out in one place, worded as for YAML files.
    """

    def __init__(self, name: str, config: Mapping[str, object] | None = None):
        self.name = name
        self.config: Mapping[str, object] = {} if config is None else config
        self._components: list[RawComponent] = []
        self._transactional_id: object = None
        self._linear_drpc: LinearDRPCDeclarer | None = None

    def transactional(self, id: str) -> TopologyBuilder:
        """Make the topology transactional: `id` is its `topology.transactional.id`, the key its
        batches' state is stored under (as a native file's `transactional: {id: ...}`)."""
        self._transactional_id = id
        return self

    def spout(
        self,
        id: str,
        command: Sequence[str],
        outputs: Sequence[str] | Mapping[str, Sequence[str]] | None = None,
        parallelism: int = 1,
        *,
        config: Mapping[str, object] | None = None,
        cwd: str | None = None,
        env: Mapping[str, str] | None = None,
        serializer: str = "json",
        heartbeats: bool = True,
        activate: bool = True,
        pipelining: bool | None = None,
        batch: str | None = None,
    ) -> ComponentDeclarer:
        """Declare a spout. `outputs`: a list of field names (the default stream) or a mapping
        stream -> field names. `cwd` is relative to the topology's directory. `pipelining`: see
        docs/protocol.md, "Protocol extensions" (None: as its library announces). `batch="spout"`:
        the batch spout of a transactional topology (docs/transactional.md §3)."""
        return self._add(
            RawComponent(
                id,
                SPOUT,
                command,
                outputs,
                parallelism,
                config,
                cwd,
                env,
                serializer,
                heartbeats,
                activate,
                pipelining=pipelining,
                batch=batch,
            )
        )

    def bolt(
        self,
        id: str,
        command: Sequence[str],
        outputs: Sequence[str] | Mapping[str, Sequence[str]] | None = None,
        parallelism: int = 1,
        *,
        config: Mapping[str, object] | None = None,
        cwd: str | None = None,
        env: Mapping[str, str] | None = None,
        serializer: str = "json",
        heartbeats: bool = True,
        batch: str | None = None,
    ) -> ComponentDeclarer:
        """Declare a bolt; subscribe it with the returned declarer's grouping methods.
        `batch="bolt"` or `"committer"`: a batch bolt of a transactional topology
        (docs/transactional.md §3)."""
        return self._add(
            RawComponent(
                id,
                BOLT,
                command,
                outputs,
                parallelism,
                config,
                cwd,
                env,
                serializer,
                heartbeats,
                True,
                batch=batch,
            )
        )

    def kafka_spout(
        self,
        id: str,
        settings: Mapping[str, object],
        parallelism: int = 1,
        *,
        outputs: Sequence[str] | None = None,
        config: Mapping[str, object] | None = None,
    ) -> ComponentDeclarer:
        """Declare the ready Kafka spout: `settings` are the keys of a native `kafka:` block,
        e.g. `{"bootstrap.servers": "127.0.0.1:9092", "topics": ["sentences"]}`; the outputs
        follow from the translator (docs/kafka.md)."""
        raw = RawComponent(
            id, SPOUT, None, outputs, parallelism, config, None, None, "json", True, True
        )
        raw.kafka = dict(settings) if isinstance(settings, Mapping) else settings
        return self._add(raw)

    def kafka_bolt(
        self,
        id: str,
        settings: Mapping[str, object],
        parallelism: int = 1,
        *,
        config: Mapping[str, object] | None = None,
    ) -> ComponentDeclarer:
        """Declare the ready Kafka bolt, e.g. `{"bootstrap.servers": ..., "topic": "counts"}`;
        subscribe it with the returned declarer."""
        raw = RawComponent(
            id, BOLT, None, None, parallelism, config, None, None, "json", True, True
        )
        raw.kafka = dict(settings) if isinstance(settings, Mapping) else settings
        return self._add(raw)

    def drpc_spout(
        self,
        id: str,
        function: str,
        parallelism: int = 1,
        *,
        config: Mapping[str, object] | None = None,
    ) -> ComponentDeclarer:
        """Storm's DRPCSpout, run inside the host: emits each request of `function` as
        [args, return-info] (docs/drpc.md §3.1)."""
        return self._add(
            in_host_part(
                id, SPOUT, DRPC_SPOUT, function=function, parallelism=parallelism, config=config
            )
        )

    def return_results(
        self, id: str, parallelism: int = 1, *, config: Mapping[str, object] | None = None
    ) -> ComponentDeclarer:
        """Storm's ReturnResults, run inside the host: answers the request each tuple's field 1
        (the return-info) names with its field 0; subscribe it with the returned declarer."""
        return self._add(
            in_host_part(id, BOLT, RETURN_RESULTS, parallelism=parallelism, config=config)
        )

    def linear_drpc(self, function: str) -> LinearDRPCDeclarer:
        """Make this a linear DRPC topology serving `function` (docs/drpc.md §3.2, Storm's
        LinearDRPCTopologyBuilder); add its bolts, in order, on what this returns."""
        if self._linear_drpc is None:
            self._linear_drpc = LinearDRPCDeclarer(function)
        else:
            self._linear_drpc.function = function
        return self._linear_drpc

    def _add(self, raw: RawComponent) -> ComponentDeclarer:
        self._components.append(raw)
        return ComponentDeclarer(raw)

    def build(
        self,
        base_dir: str | os.PathLike[str] | None = None,
        *,
        source: str | None = None,
        target: Target | None = None,
    ) -> Topology:
        """The validated, frozen Topology. `base_dir` (default: the directory of the topology
        file being loaded, else the current directory) is where components run unless they say
        otherwise; `source` names the file in error messages; `target` is the runtime it is
        validated for (default: the one the topology file is loaded for, else `host local`)."""
        loading = LOADING_FILE.get()
        if source is None and loading is not None:
            source = loading.file
        if base_dir is None:
            base_dir = loading.base_dir if loading is not None else os.getcwd()
        if target is None:
            target = loading.target if loading is not None else LOCAL
        config: object = (
            copy.deepcopy(self.config) if isinstance(self.config, dict) else self.config
        )
        if self._transactional_id is not None:
            config = with_transactional_id(config, self._transactional_id, file=source)
        components = self._components
        if self._linear_drpc is not None:
            components = self._linear_components(source)
        return build_topology(self.name, config, components, base_dir, source=source, target=target)

    def _linear_components(self, source: str | None) -> list[RawComponent]:
        assert self._linear_drpc is not None
        if self._components:
            raise TopologyError(
                "a linear DRPC topology (linear_drpc) has only the bolts added to it: its "
                "requests come from drpc-request; remove the other spouts and bolts",
                file=source,
                component=str(self._components[0].id),
                key="drpc",
            )
        if self._transactional_id is not None:
            raise TopologyError(
                "a linear DRPC topology is not transactional: its requests are batches "
                "without it (docs/drpc.md §3.2); remove transactional()",
                file=source,
                key="transactional",
            )
        return expand_linear(self._linear_drpc.function, self._linear_drpc.bolts, file=source)


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
    if raw.config is not None and not isinstance(raw.config, dict):
        raise TopologyError(
            "config must be a mapping of keys to values",
            file=file,
            component=component_id,
            key="config",
        )
    return _FirstPass(
        id=component_id,
        command=check_command(raw.command, file=file, component=component_id),
        outputs=_outputs(raw.outputs, file=file, component=component_id),
        inputs=tuple(_input(i, file=file, component=component_id) for i in raw.inputs),
        config=copy.deepcopy(raw.config or {}),
        cwd=_cwd(raw.cwd, base, file=file, component=component_id),
        env=check_env(raw.env, file=file, component=component_id),
    )


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
    if raw.config is not None and not isinstance(raw.config, dict):
        raise TopologyError(
            "config must be a mapping of keys to values",
            file=file,
            component=component_id,
            key="config",
        )
    return _FirstPass(
        id=component_id,
        command=(),
        outputs=dict(IN_HOST_OUTPUTS[role]),
        inputs=tuple(_input(i, file=file, component=component_id) for i in raw.inputs),
        config=copy.deepcopy(raw.config or {}),
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
