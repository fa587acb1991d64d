"""Building a topology in Python: `TopologyBuilder` and the `ComponentDeclarer` its `spout` and
`bolt` return. `build()` hands what was declared to `build_topology`
(host/topology/raw_to_model.py), which turns it, as it does our YAML, into the validated, frozen
Topology.

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
from host.topology.linear_drpc import LinearDRPCDeclarer
from host.topology.linear_drpc import expand as expand_linear
from host.topology.model import (
    ALL,
    BOLT,
    DIRECT,
    DRPC_SPOUT,
    FIELDS,
    GLOBAL,
    LOCAL_OR_SHUFFLE,
    NONE,
    PARTIAL_KEY,
    RETURN_RESULTS,
    SHUFFLE,
    SPOUT,
    Topology,
)
from host.topology.raw import RawComponent, RawInput, in_host_part
from host.topology.raw_to_model import build_topology
from host.topology.targets import LOCAL, Target
from host.topology.transactional_check import with_transactional_id
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
