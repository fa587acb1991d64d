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
"""

from __future__ import annotations

import os

from host.errors import TopologyError
from host.topology.builder import RawComponent, RawInput, build_topology
from host.topology.model import BOLT, FIELDS, GROUPING_TYPES, PARTIAL_KEY, SPOUT, Topology
from host.topology.transactional_check import with_transactional_id
from host.topology.yaml_text import reject_unknown_keys
from multilang.messages import DEFAULT_STREAM

TOPOLOGY_KEYS = ("name", "config", "spouts", "bolts", "transactional")
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


def from_document(
    doc: object, *, file: str | None = None, base_dir: str | os.PathLike[str] | None = None
) -> Topology:
    """Our YAML format, already parsed, -> a validated Topology. Relative `cwd`s are resolved
    against `base_dir` (the topology file's directory; default: the current directory)."""
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


def _input(source: object, spec: object, file: str | None, component: str) -> RawInput:
    key = f"inputs.{source}"
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
