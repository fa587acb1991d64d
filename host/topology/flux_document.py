"""A Flux file as Flux reads it, before anything is built: the keys of Flux's bean model (SnakeYAML
refuses any other, and so do we), the spouts, bolts, beans and streams by id, and `includes`
merged in as Flux merges them (Storm's `FluxParser.java`)."""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from host.errors import TopologyError
from host.topology.flux_env import substitute_env, warn_unsubstituted
from host.topology.yaml_text import parse_yaml_text, read_text, reject_unknown_keys

# the Flux loader's one logger, whichever of its modules warns
log = logging.getLogger("host.topology.flux")

# ---- the keys of Flux's bean model (`TopologyDef`, `BeanDef`, `ConfigMethodDef`, ...) ------------

TOPOLOGY_KEYS = (
    "name",
    "config",
    "components",
    "includes",
    "spouts",
    "bolts",
    "streams",
    "topologySource",
    "workerHooks",
)
COMPONENT_KEYS = (
    "id",
    "className",
    "constructorArgs",
    "configMethods",
    "properties",
    "parallelism",
    "numTasks",
    "config",
    "onHeapMemoryLoad",
    "offHeapMemoryLoad",
    "cpuLoad",
    "factory",
    "factoryArgs",
)
BEAN_KEYS = (
    "id",
    "className",
    "constructorArgs",
    "configMethods",
    "properties",
    "factory",
    "factoryArgs",
)
OBJECT_KEYS = (
    "className",
    "constructorArgs",
    "configMethods",
    "properties",
    "factory",
    "factoryArgs",
)
CONFIG_METHOD_KEYS = ("name", "args")
PROPERTY_KEYS = ("name", "value", "ref")
STREAM_KEYS = ("name", "from", "to", "grouping")
GROUPING_KEYS = ("type", "streamId", "args", "customClass")
INCLUDE_KEYS = ("resource", "file", "override")


@dataclass
class Definition:
    """One list entry (spout, bolt, bean or stream) and where it came from, for error messages."""

    body: dict
    file: str | None
    where: str  # e.g. "bolts[2]"


@dataclass
class FluxDocument:
    """A Flux document after includes were merged, before anything is built."""

    file: str | None
    name: object = None
    config: dict = field(default_factory=dict)
    beans: dict[str, Definition] = field(default_factory=dict)
    spouts: dict[str, Definition] = field(default_factory=dict)
    bolts: dict[str, Definition] = field(default_factory=dict)
    streams: list[Definition] = field(default_factory=list)


def check_keys(
    mapping: Mapping[object, object],
    allowed: Sequence[str],
    *,
    file: str | None,
    component: str | None = None,
    prefix: str = "",
) -> None:
    reject_unknown_keys(
        mapping,
        allowed,
        file=file,
        component=component,
        prefix=prefix,
        refusal="unknown key (Flux refuses it)",
    )


# ---- reading a document -------------------------------------------------------------------------


def read_flux(doc: object, *, file: str | None, base_dir: Path, env_filter: bool) -> FluxDocument:
    """A parsed Flux file -> its definitions, includes merged in (relative include paths are
    resolved against `base_dir`). With `env_filter`, the caller has substituted `${ENV-NAME}` in
    this file already; included files are substituted here."""
    if not isinstance(doc, dict):
        raise TopologyError(
            f"a Flux topology is a mapping with the keys "
            f"{', '.join(TOPOLOGY_KEYS)}; this file holds a "
            f"{type(doc).__name__}",
            file=file,
        )
    flux = _read_document(doc, file)
    if not env_filter:
        warn_unsubstituted(doc, file)
    _merge_includes(flux, doc, base_dir, env_filter)
    return flux


def _read_document(doc: dict, file: str | None) -> FluxDocument:
    check_keys(doc, TOPOLOGY_KEYS, file=file)
    if doc.get("topologySource") is not None:
        source = doc["topologySource"]
        name = source.get("className") if isinstance(source, dict) else source
        raise TopologyError(
            f"topologySource names a Java class ({name}) that builds the topology "
            f"on the JVM; this host cannot run it: declare spouts, bolts and "
            f"streams instead",
            file=file,
            key="topologySource",
        )
    hooks = _entries(doc, "workerHooks", file)
    if hooks:
        raise TopologyError(
            f"worker hooks are Java classes ({_class_list(hooks)}) that this host "
            f"cannot run; remove them to run the topology here",
            file=file,
            key="workerHooks",
        )
    config = doc.get("config")
    if config is None:
        config = {}
    if not isinstance(config, dict):
        raise TopologyError(
            f"config must be a mapping of keys to values, not {type(config).__name__}",
            file=file,
            key="config",
        )
    flux = FluxDocument(file, name=doc.get("name"), config=dict(config))
    flux.beans = _by_id(doc, "components", file)
    flux.spouts = _by_id(doc, "spouts", file)
    flux.bolts = _by_id(doc, "bolts", file)
    for component_id in flux.spouts.keys() & flux.bolts.keys():
        raise TopologyError(
            "a spout and a bolt have the same id; ids must be unique across spouts and bolts",
            file=file,
            component=component_id,
            key="id",
        )
    flux.streams = [
        Definition(body, file, f"streams[{i}]")
        for i, body in enumerate(_entries(doc, "streams", file))
    ]
    return flux


def _class_list(entries: list[dict]) -> str:
    return ", ".join(str(e.get("className")) for e in entries)


def _entries(doc: dict, key: str, file: str | None) -> list[dict]:
    value = doc.get(key)
    if value is None:
        return []
    if not isinstance(value, list):
        hint = " (Flux lists them: '- id: ...')" if isinstance(value, dict) else ""
        raise TopologyError(
            f"{key} must be a list, not {type(value).__name__}{hint}", file=file, key=key
        )
    for i, item in enumerate(value):
        if not isinstance(item, dict):
            raise TopologyError(
                f"each entry must be a mapping, got {item!r}", file=file, key=f"{key}[{i}]"
            )
    return value


def _by_id(doc: dict, key: str, file: str | None) -> dict[str, Definition]:
    out: dict[str, Definition] = {}
    for i, body in enumerate(_entries(doc, key, file)):
        component_id = body.get("id")
        if not isinstance(component_id, str) or not component_id:
            raise TopologyError(
                f"every entry needs an 'id' (a non-empty string), got {component_id!r}",
                file=file,
                key=f"{key}[{i}].id",
            )
        if component_id in out:
            # Flux would silently keep the last one; two entries with one id is always a mistake
            raise TopologyError(
                f"{component_id!r} is declared twice in {key}",
                file=file,
                component=component_id,
                key="id",
            )
        out[component_id] = Definition(body, file, f"{key}[{i}]")
    return out


# ---- includes ----------------------------------------------------------------------------------


def _merge_includes(flux: FluxDocument, doc: dict, base_dir: Path, env_filter: bool) -> None:
    """Flux's include rules: the name and config keys, beans, spouts and bolts of an included
    file replace the current ones only with `override: true` (same-id definitions keep their
    place); new ones are added; streams are always appended. Includes of included files are
    ignored, as Flux ignores them."""
    for i, include in enumerate(_entries(doc, "includes", flux.file)):
        key = f"includes[{i}]"
        check_keys(include, INCLUDE_KEYS, file=flux.file, prefix=f"{key}.")
        override = _flag(include, "override", flux.file, key)
        if _flag(include, "resource", flux.file, key):
            raise TopologyError(
                "resource: true loads the include from the Java classpath, which "
                "this host does not have; use 'resource: false' with a file path",
                file=flux.file,
                key=f"{key}.resource",
            )
        path = include.get("file")
        if not isinstance(path, str) or not path:
            raise TopologyError(
                f"give the file to include, e.g. 'file: common.yaml'; got {path!r}",
                file=flux.file,
                key=f"{key}.file",
            )
        # Flux opens the path relative to the JVM's working directory; relative to the including
        # file is what works wherever the host is started from.
        target = Path(os.path.expanduser(path))
        if not target.is_absolute():
            target = base_dir / target
        included_doc = _parse_include(target, flux.file, key, env_filter)
        included = _read_document(included_doc, str(target))
        if included_doc.get("includes"):
            log.warning(
                "%s: its includes are ignored (Flux processes one level of includes)", target
            )
        _merge(flux, included, override)


def _flag(include: dict, name: str, file: str | None, key: str) -> bool:
    value = include.get(name, False)
    if value is None:
        return False
    if not isinstance(value, bool):
        raise TopologyError(f"must be true or false, got {value!r}", file=file, key=f"{key}.{name}")
    return value


def _parse_include(path: Path, file: str | None, key: str, env_filter: bool) -> dict:
    if not path.is_file():
        raise TopologyError(f"included file {path} does not exist", file=file, key=f"{key}.file")
    text = read_text(path)
    if env_filter:
        text = substitute_env(text, file=str(path))
    doc = parse_yaml_text(text, file=str(path))
    if not isinstance(doc, dict):
        raise TopologyError(
            "an included Flux file must be a mapping (name, config, spouts, bolts, streams, ...)",
            file=str(path),
        )
    if not env_filter:
        warn_unsubstituted(doc, str(path))
    return doc


def _merge(flux: FluxDocument, included: FluxDocument, override: bool) -> None:
    if included.name is not None:
        if flux.name is None or override:
            flux.name = included.name
        else:
            log.warning("%s: name %r ignored: override is false", included.file, included.name)
    for key, value in included.config.items():
        if key in flux.config and not override:
            log.warning("%s: config %s ignored: override is false", included.file, key)
        else:
            flux.config[key] = value
    for section in ("beans", "spouts", "bolts"):
        mine: dict[str, Definition] = getattr(flux, section)
        for component_id, definition in getattr(included, section).items():
            if component_id in mine and not override:
                log.warning(
                    "%s: %s %r ignored: override is false",
                    included.file,
                    section.rstrip("s"),
                    component_id,
                )
            else:
                mine[component_id] = definition
    for component_id in flux.spouts.keys() & flux.bolts.keys():
        raise TopologyError(
            "a spout and a bolt have the same id (after includes); ids must be "
            "unique across spouts and bolts",
            file=included.file,
            component=component_id,
            key="id",
        )
    flux.streams.extend(included.streams)
