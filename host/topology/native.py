"""Our YAML topology format, already parsed, -> the validated Topology.

```
name: wordcount
config: {topology.max.spout.pending: 1000}
spouts:
  sentences: {command: [python, sentences.py], outputs: [sentence]}
bolts:
  split: {command: [bash, split.sh], outputs: [word], inputs: {sentences: shuffle}}
```
Components are a mapping from id to component; a bolt's `inputs` map each source to a grouping
name, a mapping (`{fields: [word]}`, `{grouping: shuffle, stream: s}`, `{partial_key: [k]}`) or a
list of those (several streams of one source).

A transactional topology (docs/transactional.md §3) adds `transactional: {id: NAME}` (which sets
`topology.transactional.id`) and `batch: spout` on one spout, `batch: bolt` or `batch: committer`
on bolts.

DRPC (docs/drpc.md §3): a spout `{drpc_spout: FUNCTION}` is Storm's DRPCSpout and a bolt
`{return_results: true, inputs: ...}` its ReturnResults, both run inside the host. A linear DRPC
topology has, instead of `spouts:` and `bolts:`, `drpc: {function: NAME, bolts: [...]}`: its bolts
in order, each fed by the one before (`host.topology.linear_drpc`).
"""

from __future__ import annotations

import os

from host.errors import TopologyError
from host.topology.linear_drpc import LinearBolt
from host.topology.linear_drpc import expand as expand_linear
from host.topology.model import (
    BOLT,
    DRPC_SPOUT,
    FIELDS,
    GROUPING_TYPES,
    PARTIAL_KEY,
    RETURN_RESULTS,
    SPOUT,
    Topology,
)
from host.topology.raw import RawComponent, RawInput, in_host_part
from host.topology.raw_to_model import build_topology
from host.topology.targets import LOCAL, Target
from host.topology.transactional_check import with_transactional_id
from host.topology.yaml_text import reject_unknown_keys
from multilang.messages import DEFAULT_STREAM

TOPOLOGY_KEYS = ("name", "config", "spouts", "bolts", "transactional", "drpc")
TRANSACTIONAL_KEYS = ("id",)
SPOUT_KEYS = (
    "command",
    "outputs",
    "parallelism",
    "config",
    "cwd",
    "env",
    "serializer",
    "heartbeats",
    "activate",
    "pipelining",
    "kafka",
    "batch",
)
BOLT_KEYS = (
    "command",
    "outputs",
    "inputs",
    "parallelism",
    "config",
    "cwd",
    "env",
    "serializer",
    "heartbeats",
    "kafka",
    "batch",
)
INPUT_KEYS = ("grouping", "fields", "partial_key", "stream")
# DRPC's parts run inside the host: no command, directory, environment, or outputs of their own
DRPC_SPOUT_KEYS = ("drpc_spout", "parallelism", "config")
RETURN_RESULTS_KEYS = ("return_results", "inputs", "parallelism", "config")
DRPC_KEYS = ("function", "bolts")
LINEAR_BOLT_KEYS = (
    "id",
    "command",
    "outputs",
    "parallelism",
    "config",
    "cwd",
    "env",
    "serializer",
    "heartbeats",
    "grouping",
    "finish_batch",
)
_IN_HOST_REFUSAL = "unknown key for a part that runs inside the host (docs/drpc.md §3.1)"


def from_document(
    doc: object,
    *,
    file: str | None = None,
    base_dir: str | os.PathLike[str] | None = None,
    target: Target = LOCAL,
) -> Topology:
    """Our YAML format, already parsed, -> a Topology validated for `target`. Relative `cwd`s
    are resolved against `base_dir` (the topology file's directory; default: the current
    directory)."""
    if doc is None:
        raise TopologyError("the topology file is empty", file=file)
    if not isinstance(doc, dict):
        raise TopologyError(
            f"a topology is a mapping with the keys {', '.join(TOPOLOGY_KEYS)}; "
            f"this file holds a {type(doc).__name__}",
            file=file,
        )
    reject_unknown_keys(doc, TOPOLOGY_KEYS, file=file)
    config = doc.get("config")
    config = {} if config is None else config
    if "transactional" in doc:
        transactional_id = _transactional_id(doc["transactional"], file)
        config = with_transactional_id(config, transactional_id, file=file)
    if "drpc" in doc:
        components = _linear_drpc(doc, file)
    else:
        components = [
            _component(kind, component_id, body, file)
            for kind in (SPOUT, BOLT)
            for component_id, body in _components_section(doc, kind + "s", file).items()
        ]
    return build_topology(
        doc.get("name"),
        config,
        components,
        os.getcwd() if base_dir is None else base_dir,
        source=file,
        target=target,
    )


def _transactional_id(spec: object, file: str | None) -> object:
    """`transactional: {id: NAME}` -> NAME (checked by `with_transactional_id`)."""
    if not isinstance(spec, dict):
        raise TopologyError(
            f"transactional must be a mapping, e.g. 'transactional: {{id: word-count}}', "
            f"got {spec!r}",
            file=file,
            key="transactional",
        )
    reject_unknown_keys(spec, TRANSACTIONAL_KEYS, file=file, prefix="transactional.")
    if "id" not in spec:
        raise TopologyError(
            "transactional needs an id, the key the batches' state is stored under, e.g. "
            "'transactional: {id: word-count}'",
            file=file,
            key="transactional.id",
        )
    return spec["id"]


def _components_section(doc: dict[object, object], key: str, file: str | None) -> dict:
    section = doc.get(key)
    if section is None:
        return {}
    if isinstance(section, list):
        raise TopologyError(
            f"{key} is a mapping from component id to component, e.g. "
            f"'{key}: {{my-id: {{command: [...]}}}}' (a list is Flux's form)",
            file=file,
            key=key,
        )
    if not isinstance(section, dict):
        raise TopologyError(
            f"{key} must be a mapping from component id to component, not {type(section).__name__}",
            file=file,
            key=key,
        )
    return section


def _component(kind: str, component_id: object, body: object, file: str | None) -> RawComponent:
    name = str(component_id)
    if not isinstance(body, dict):
        raise TopologyError(
            f"a {kind} is a mapping with at least 'command' (or 'kafka'), not "
            f"{type(body).__name__}",
            file=file,
            component=name,
        )
    if kind == SPOUT and "inputs" in body:
        raise TopologyError(
            "a spout takes no inputs (only bolts subscribe to streams)",
            file=file,
            component=name,
            key="inputs",
        )
    if kind == SPOUT and "drpc_spout" in body:
        return _drpc_spout(component_id, body, file)
    if kind == BOLT and "return_results" in body:
        return _return_results(component_id, body, file)
    reject_unknown_keys(body, SPOUT_KEYS if kind == SPOUT else BOLT_KEYS, file=file, component=name)
    return RawComponent(
        id=component_id,
        kind=kind,
        command=body.get("command"),
        outputs=body.get("outputs"),
        parallelism=body.get("parallelism", 1),
        config=body.get("config"),
        cwd=body.get("cwd"),
        env=body.get("env"),
        serializer=body.get("serializer", "json"),
        heartbeats=body.get("heartbeats", True),
        activate=body.get("activate", True),
        pipelining=body.get("pipelining"),
        inputs=_inputs(body.get("inputs"), file, name),
        kafka=body.get("kafka"),  # the ready Kafka component: docs/kafka.md
        batch=body.get("batch"),  # docs/transactional.md §3
    )


def _drpc_spout(component_id: object, body: dict, file: str | None) -> RawComponent:
    """`{drpc_spout: FUNCTION}`: Storm's DRPCSpout (the function is checked when built)."""
    reject_unknown_keys(
        body, DRPC_SPOUT_KEYS, file=file, component=str(component_id), refusal=_IN_HOST_REFUSAL
    )
    return in_host_part(
        component_id,
        SPOUT,
        DRPC_SPOUT,
        function=body["drpc_spout"],
        parallelism=body.get("parallelism", 1),
        config=body.get("config"),
    )


def _return_results(component_id: object, body: dict, file: str | None) -> RawComponent:
    """`{return_results: true, inputs: ...}`: Storm's ReturnResults."""
    name = str(component_id)
    reject_unknown_keys(
        body, RETURN_RESULTS_KEYS, file=file, component=name, refusal=_IN_HOST_REFUSAL
    )
    if body["return_results"] is not True:
        raise TopologyError(
            f"return_results takes true (the bolt is Storm's ReturnResults), got "
            f"{body['return_results']!r}; leave it out for a bolt that runs a command",
            file=file,
            component=name,
            key="return_results",
        )
    raw = in_host_part(
        component_id,
        BOLT,
        RETURN_RESULTS,
        parallelism=body.get("parallelism", 1),
        config=body.get("config"),
    )
    raw.inputs = _inputs(body.get("inputs"), file, name)
    return raw


# ---- a linear DRPC topology ---------------------------------------------------------------------


def _linear_drpc(doc: dict, file: str | None) -> list[RawComponent]:
    """`drpc: {function: NAME, bolts: [...]}` -> its components (docs/drpc.md §3.2)."""
    for key in ("spouts", "bolts", "transactional"):
        if key in doc:
            raise TopologyError(
                f"a linear DRPC topology ('drpc:') has no '{key}:': "
                + (
                    "it is not transactional (each request is a batch without it)"
                    if key == "transactional"
                    else "its requests come from drpc-request, and its bolts are listed under "
                    "'drpc: {bolts: [...]}'"
                ),
                file=file,
                key=key,
            )
    spec = doc["drpc"]
    if not isinstance(spec, dict):
        raise TopologyError(
            f"drpc must be a mapping, e.g. 'drpc: {{function: reach, bolts: [...]}}', got {spec!r}",
            file=file,
            key="drpc",
        )
    reject_unknown_keys(spec, DRPC_KEYS, file=file, prefix="drpc.")
    if "function" not in spec:
        raise TopologyError(
            "drpc needs the function it serves, e.g. 'drpc: {function: reach, bolts: [...]}'",
            file=file,
            key="drpc.function",
        )
    bolts = spec.get("bolts")
    if not isinstance(bolts, list):
        raise TopologyError(
            f"drpc.bolts must be a list of bolts, in order (each fed by the one before), "
            f"got {bolts!r}",
            file=file,
            key="drpc.bolts",
        )
    return expand_linear(
        spec["function"], [_linear_bolt(i, body, file) for i, body in enumerate(bolts)], file=file
    )


def _linear_bolt(index: int, body: object, file: str | None) -> LinearBolt:
    path = f"drpc.bolts[{index}]"
    if not isinstance(body, dict):
        raise TopologyError(
            f"a bolt of drpc.bolts is a mapping with at least id, command and outputs, got "
            f"{body!r}",
            file=file,
            key=path,
        )
    if "id" not in body:
        raise TopologyError("a bolt of drpc.bolts needs an id", file=file, key=f"{path}.id")
    name = str(body["id"])
    if "inputs" in body:
        raise TopologyError(
            "a bolt of a linear DRPC topology is fed by the bolt before it (the first by "
            "drpc-request): say how with 'grouping:' (default shuffle), not 'inputs:'",
            file=file,
            component=name,
            key="inputs",
        )
    reject_unknown_keys(body, LINEAR_BOLT_KEYS, file=file, component=name)
    raw = RawComponent(
        id=body["id"],
        kind=BOLT,
        command=body.get("command"),
        outputs=body.get("outputs"),
        parallelism=body.get("parallelism", 1),
        config=body.get("config"),
        cwd=body.get("cwd"),
        env=body.get("env"),
        serializer=body.get("serializer", "json"),
        heartbeats=body.get("heartbeats", True),
        activate=True,
    )
    groupings = []
    if "grouping" in body:
        grouping = _input(None, body["grouping"], file, name, key="grouping")
        if isinstance(body["grouping"], dict) and "stream" in body["grouping"]:
            raise TopologyError(
                "a bolt of a linear DRPC topology is fed by the default stream of the bolt "
                "before it: its grouping takes no stream",
                file=file,
                component=name,
                key="grouping.stream",
            )
        groupings.append((grouping.grouping, grouping.fields))
    return LinearBolt(raw, groupings, body.get("finish_batch", False))


# ---- inputs -------------------------------------------------------------------------------------


def _inputs(inputs: object, file: str | None, component: str) -> list[RawInput]:
    """`inputs: {source: spec}` where spec is a grouping name, a mapping, or a list of those (for
    several streams of one source)."""
    if inputs is None:
        return []
    if not isinstance(inputs, dict):
        raise TopologyError(
            "inputs must be a mapping from source component to grouping, e.g. "
            "'inputs: {sentences: shuffle}'",
            file=file,
            component=component,
            key="inputs",
        )
    out = []
    for source, spec in inputs.items():
        for item in spec if isinstance(spec, list) else [spec]:
            out.append(_input(source, item, file, component))
    return out


def _input(
    source: object, spec: object, file: str | None, component: str, key: str | None = None
) -> RawInput:
    """One input's spec; `key` names it in errors (default `inputs.SOURCE`)."""
    key = f"inputs.{source}" if key is None else key
    if isinstance(spec, str):
        return RawInput(source, spec)
    if not isinstance(spec, dict):
        raise TopologyError(
            f"give a grouping ({', '.join(GROUPING_TYPES)}) or a mapping like "
            f"{{fields: [word]}} or {{grouping: shuffle, stream: s}}; got {spec!r}",
            file=file,
            component=component,
            key=key,
        )
    reject_unknown_keys(spec, INPUT_KEYS, file=file, component=component, prefix=f"{key}.")
    stream = spec.get("stream", DEFAULT_STREAM)
    if PARTIAL_KEY in spec:
        if spec.get("grouping", PARTIAL_KEY) != PARTIAL_KEY or "fields" in spec:
            raise TopologyError(
                "'partial_key: [fields]' is a grouping by itself: do not combine "
                "it with 'grouping' or 'fields'",
                file=file,
                component=component,
                key=key,
            )
        return RawInput(source, PARTIAL_KEY, spec[PARTIAL_KEY], stream)
    if "grouping" in spec:
        return RawInput(source, spec["grouping"], spec.get("fields", ()), stream)
    if "fields" in spec:
        return RawInput(source, FIELDS, spec["fields"], stream)
    raise TopologyError(
        f"say how to group: 'grouping: NAME' (one of {', '.join(GROUPING_TYPES)}) "
        f"or 'fields: [...]'",
        file=file,
        component=component,
        key=key,
    )
