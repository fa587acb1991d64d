"""Apache Storm Flux YAML -> the frozen Topology (spec/flux-shell.md).

`host.topology.load()` sends a YAML document here when `is_flux()` recognises it. The result is the
same frozen `Topology` our own YAML format produces, validated with `strict_config=False` (Storm
silently drops topology-wide keys from component config; so do we).

What is understood:
* `FluxShellSpout` / `FluxShellBolt` with the one- and two-argument constructors and the
  configMethods `setDefaultStream`, `setNamedStream`, `addComponentConfig`, `setEnv`,
  `changeChildCWD`; the `env` property (ShellBolt/ShellSpout `setEnv` as a bean setter);
  `parallelism`, `numTasks` (one subprocess per task: tasks = numTasks if given, else parallelism,
  capped by `topology.max.task.parallelism` as Storm caps it), the per-component `config:` map.
* Three well-known Java classes, run as built-in Python equivalents (`components/storm_builtins/`):
  `LogInfoBolt`, `TestWordCounter`, `TestWordSpout`. Any other Java class is an error.
* `streams` with every Flux grouping type; CUSTOM only with `PartialKeyGrouping` (-> partial_key).
  `components` only for `org.apache.storm.tuple.Fields` beans, which is how Storm's Flux passes
  fields to `PartialKeyGrouping` (`constructorArgs: [{ref: <fields bean>}]`).
* `includes` (files, `override` true/false, one level deep as in Flux).
* `${ENV-NAME}` substitution on raw lines before parsing, only when asked (Flux's `-e`).

Working directory of a shell component: the resources directory, i.e. the topology file's
directory, or `resources/` beside it when that is where the component's script is (Storm runs
components in the topology jar's `resources/`). `changeChildCWD(false)` means Storm's worker
directory; here that is the directory the host was started from (`os.getcwd()` when loading).

Where this differs from Storm's Flux it is kinder (an error or a warning instead of a crash or a
silent surprise); the differences are listed in examples/storm-flux/README.md.
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from host.errors import TopologyError
from host.topology import settings as cfg
from host.topology.model import (
    ALL,
    BOLT,
    DIRECT,
    FIELDS,
    GLOBAL,
    LOCAL_OR_SHUFFLE,
    NONE,
    PARTIAL_KEY,
    SHUFFLE,
    SPOUT,
    Component,
    Grouping,
    Input,
    Topology,
)
from multilang.messages import DEFAULT_STREAM

log = logging.getLogger("host.topology.flux")

# ---- Java class names ---------------------------------------------------------------------------

FLUX_SHELL_SPOUT = "org.apache.storm.flux.wrappers.spouts.FluxShellSpout"
FLUX_SHELL_BOLT = "org.apache.storm.flux.wrappers.bolts.FluxShellBolt"
LOG_INFO_BOLT = "org.apache.storm.flux.wrappers.bolts.LogInfoBolt"
TEST_WORD_COUNTER = "org.apache.storm.testing.TestWordCounter"
TEST_WORD_SPOUT = "org.apache.storm.testing.TestWordSpout"
PARTIAL_KEY_GROUPING = "org.apache.storm.grouping.PartialKeyGrouping"
FIELDS_CLASS = "org.apache.storm.tuple.Fields"
SHELL_CLASSES = {SPOUT: FLUX_SHELL_SPOUT, BOLT: FLUX_SHELL_BOLT}

MAX_TASK_PARALLELISM = "topology.max.task.parallelism"
BUILTINS_PACKAGE = "components.storm_builtins"


@dataclass(frozen=True)
class Builtin:
    """A Java class of Storm's that the host runs as a Python module of `components/`. Mapped by
    name only: `host/` never imports `components/`."""

    class_name: str
    kind: str
    module: str
    outputs: Mapping[str, tuple[str, ...]]

    @property
    def command(self) -> tuple[str, ...]:
        # `python` is the host's interpreter (its bin directory is first on every child's PATH);
        # the package is importable from any cwd because the project is installed (editable).
        return ("python", "-m", f"{BUILTINS_PACKAGE}.{self.module}")

    @property
    def short_name(self) -> str:
        return self.class_name.rsplit(".", 1)[-1]


BUILTINS: dict[str, Builtin] = {
    b.class_name: b
    for b in (
        Builtin(LOG_INFO_BOLT, BOLT, "log_info_bolt", {}),
        Builtin(TEST_WORD_COUNTER, BOLT, "test_word_counter", {DEFAULT_STREAM: ("word", "count")}),
        Builtin(TEST_WORD_SPOUT, SPOUT, "test_word_spout", {DEFAULT_STREAM: ("word",)}),
    )
}


def builtin_for_command(command: Sequence[str]) -> Builtin | None:
    """The built-in a component's command runs, if it is exactly one of ours."""
    for builtin in BUILTINS.values():
        if tuple(command) == builtin.command:
            return builtin
    return None


# ---- keys Flux's bean model knows (SnakeYAML refuses any other) ---------------------------------

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

FLUX_GROUPINGS = {
    "SHUFFLE": SHUFFLE,
    "LOCAL_OR_SHUFFLE": LOCAL_OR_SHUFFLE,
    "FIELDS": FIELDS,
    "GLOBAL": GLOBAL,
    "ALL": ALL,
    "NONE": NONE,
    "DIRECT": DIRECT,
    "CUSTOM": PARTIAL_KEY,
}
SHELL_METHODS = (
    "setDefaultStream",
    "setNamedStream",
    "addComponentConfig",
    "setEnv",
    "changeChildCWD",
)


# ================================================================================================
# ${ENV-NAME} substitution
# ================================================================================================

# Flux matches one placeholder per line with a greedy pattern, so the *last* `${...}` of a line is
# the one considered; every occurrence of that same placeholder on the line is then replaced.
_PLACEHOLDER = re.compile(r".*\$\{(?P<var>ENV-(?P<env>.+)|.+)\}.*")
_ENV_REFERENCE = re.compile(r"\$\{ENV-[^}]+\}")


def substitute_env(
    text: str, *, file: str | None = None, environ: Mapping[str, str] | None = None
) -> str:
    """Replace `${ENV-NAME}` with the value of environment variable NAME, line by line as Flux's
    `-e` does. Unset variables and other placeholders (`${name}` from a properties file, which
    the host does not read) are left as they are, with a warning."""
    environ = os.environ if environ is None else environ
    out = []
    for number, line in enumerate(text.splitlines(keepends=True), start=1):
        body = line.rstrip("\r\n")
        match = _PLACEHOLDER.match(body)
        if match is not None:
            placeholder = "${" + match.group("var") + "}"
            name = match.group("env")
            value = environ.get(name) if name is not None else None
            if value is not None:
                line = body.replace(placeholder, value) + line[len(body) :]
            elif name is not None:
                log.warning(
                    "%s:%d: %s left as is: environment variable %s is not set",
                    file or "<flux>",
                    number,
                    placeholder,
                    name,
                )
            else:
                log.warning(
                    "%s:%d: %s left as is: only ${ENV-NAME} placeholders are "
                    "substituted (properties files are not supported)",
                    file or "<flux>",
                    number,
                    placeholder,
                )
        out.append(line)
    return "".join(out)


def _warn_unsubstituted(doc: object, file: str | None) -> None:
    """Without -e, `${ENV-NAME}` stays literal text; say so once per placeholder."""
    seen: set[str] = set()

    def walk(value: object) -> None:
        if isinstance(value, str):
            seen.update(_ENV_REFERENCE.findall(value))
        elif isinstance(value, dict):
            for key, item in value.items():
                walk(key)
                walk(item)
        elif isinstance(value, list):
            for item in value:
                walk(item)

    walk(doc)
    for placeholder in sorted(seen):
        log.warning(
            "%s: %s left as is: pass -e/--env-filter to substitute environment variables",
            file or "<flux>",
            placeholder,
        )


# ================================================================================================
# Documents and includes
# ================================================================================================


@dataclass
class _Def:
    """One list entry (spout, bolt, bean or stream) and where it came from, for error messages."""

    body: dict
    file: str | None
    where: str  # e.g. "bolts[2]"


@dataclass
class _FluxDoc:
    """A Flux document after includes were merged, before anything is built."""

    file: str | None
    name: object = None
    config: dict = field(default_factory=dict)
    beans: dict[str, _Def] = field(default_factory=dict)
    spouts: dict[str, _Def] = field(default_factory=dict)
    bolts: dict[str, _Def] = field(default_factory=dict)
    streams: list[_Def] = field(default_factory=list)


def _check_keys(
    mapping: Mapping,
    allowed: Sequence[str],
    *,
    file: str | None,
    component: str | None = None,
    prefix: str = "",
) -> None:
    for key in mapping:
        if key not in allowed:
            raise TopologyError(
                f"unknown key (Flux refuses it); allowed keys are: {', '.join(allowed)}",
                file=file,
                component=component,
                key=f"{prefix}{key}",
            )


def _read_document(doc: object, file: str | None) -> _FluxDoc:
    if not isinstance(doc, dict):
        raise TopologyError(
            f"a Flux topology is a mapping with the keys "
            f"{', '.join(TOPOLOGY_KEYS)}; this file holds a "
            f"{type(doc).__name__}",
            file=file,
        )
    _check_keys(doc, TOPOLOGY_KEYS, file=file)
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
    flux = _FluxDoc(file, name=doc.get("name"), config=dict(config))
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
        _Def(body, file, f"streams[{i}]") for i, body in enumerate(_entries(doc, "streams", file))
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


def _by_id(doc: dict, key: str, file: str | None) -> dict[str, _Def]:
    out: dict[str, _Def] = {}
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
        out[component_id] = _Def(body, file, f"{key}[{i}]")
    return out


def _merge_includes(flux: _FluxDoc, doc: dict, base_dir: Path, env_filter: bool) -> None:
    """Flux's include rules: the name and config keys, beans, spouts and bolts of an included
    file replace the current ones only with `override: true` (same-id definitions keep their
    place); new ones are added; streams are always appended. Includes of included files are
    ignored, as Flux ignores them."""
    for i, include in enumerate(_entries(doc, "includes", flux.file)):
        key = f"includes[{i}]"
        _check_keys(include, INCLUDE_KEYS, file=flux.file, prefix=f"{key}.")
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
    from host.topology.loader import parse_yaml_text, read_text  # host.topology imports this module

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
        _warn_unsubstituted(doc, str(path))
    return doc


def _merge(flux: _FluxDoc, included: _FluxDoc, override: bool) -> None:
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
        mine: dict[str, _Def] = getattr(flux, section)
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


# ================================================================================================
# Loading
# ================================================================================================


def load_flux(
    doc: object, *, file: str | None, base_dir: str | os.PathLike, env_filter: bool = False
) -> Topology:
    """A parsed Flux document -> a validated Topology. `base_dir` is the topology file's
    directory (the resources directory, and where relative includes are found). With
    `env_filter`, the caller has already substituted `${ENV-NAME}` in the main file; included
    files are substituted here."""
    from host.topology.loader import validate  # host.topology imports this module

    base = Path(os.path.abspath(base_dir))
    flux = _read_document(doc, file)
    if not env_filter:
        _warn_unsubstituted(doc, file)
    _merge_includes(flux, doc, base, env_filter)
    _multilang_serializer(flux.config, file)  # a bad value is an error even with no shell parts
    fields_beans = {bean_id: _fields_bean(d) for bean_id, d in flux.beans.items()}
    spouts = [_component(d, SPOUT, flux, base) for d in flux.spouts.values()]
    bolts = {d.body["id"]: _component(d, BOLT, flux, base) for d in flux.bolts.values()}
    declared = {c.id: c for c in (*spouts, *bolts.values())}
    inputs: dict[str, list[Input]] = {}
    for stream in flux.streams:
        target, subscription = _stream(stream, flux, declared, fields_beans)
        inputs.setdefault(target, []).append(subscription)
    left_out = [bolt_id for bolt_id in bolts if bolt_id not in inputs]
    if left_out:
        log.warning(
            "%s: bolt(s) %s left out: no stream goes to them (Flux only adds bolts "
            "that are the 'to' of a stream)",
            file or "<flux>",
            ", ".join(left_out),
        )
    _check_sources(flux, inputs, left_out)
    components = (
        *spouts,
        *(
            replace(bolt, inputs=tuple(inputs[bolt_id]))
            for bolt_id, bolt in bolts.items()
            if bolt_id in inputs
        ),
    )
    components = tuple(_cap_tasks(c, flux.config, file) for c in components)
    topology = Topology(flux.name, components, flux.config, source=file)
    validate(topology, strict_config=False)
    return topology


def _check_sources(flux: _FluxDoc, inputs: dict[str, list[Input]], left_out: list[str]) -> None:
    for stream in flux.streams:
        source = stream.body.get("from")
        if source in left_out:
            raise TopologyError(
                f"stream from {source!r}: that bolt is left out because no "
                f"stream goes to it (Storm would reject the topology: "
                f"{stream.body.get('to')!r} subscribes to a component that does "
                f"not exist)",
                file=stream.file,
                key=f"{stream.where}.from",
            )


def _cap_tasks(c: Component, topology_config: dict, file: str | None) -> Component:
    """Storm runs min(tasks, topology.max.task.parallelism) tasks, the component's own setting
    winning over the topology's."""
    cap = c.config.get(MAX_TASK_PARALLELISM, topology_config.get(MAX_TASK_PARALLELISM))
    if cap is None:
        return c
    if not cfg._is_int(cap) or cap < 1:
        raise TopologyError(
            f"must be a positive integer, got {cap!r}",
            file=file,
            component=c.id if MAX_TASK_PARALLELISM in c.config else None,
            key=MAX_TASK_PARALLELISM,
        )
    return replace(c, parallelism=min(c.parallelism, cap)) if cfg._is_int(c.parallelism) else c


# ---- spouts and bolts ---------------------------------------------------------------------------


def _component(d: _Def, kind: str, flux: _FluxDoc, base: Path) -> Component:
    body, component_id = d.body, d.body["id"]
    where = {"file": d.file, "component": component_id}
    _check_keys(body, COMPONENT_KEYS, **where)
    class_name = body.get("className")
    if not isinstance(class_name, str) or not class_name:
        raise TopologyError(
            f"className is required, e.g. {SHELL_CLASSES[kind]}", key="className", **where
        )
    for key in ("factory", "factoryArgs"):
        if body.get(key) is not None:
            raise TopologyError(
                "static factories build Java objects; the shell wrappers are "
                "made with constructorArgs",
                key=key,
                **where,
            )
    if class_name in SHELL_CLASSES.values():
        if class_name != SHELL_CLASSES[kind]:
            raise TopologyError(
                f"{class_name} is a {'bolt' if kind == SPOUT else 'spout'} "
                f"class listed under {kind}s; use {SHELL_CLASSES[kind]}",
                key="className",
                **where,
            )
        component = replace(
            _shell_component(d, kind, base), serializer=_multilang_serializer(flux.config, d.file)
        )
    elif class_name in BUILTINS:
        component = _builtin_component(d, kind, BUILTINS[class_name], base)
    else:
        raise TopologyError(
            f"Java class {class_name} cannot run here: this host runs shell components "
            f"({SHELL_CLASSES[kind]}) and, as built-in Python equivalents, "
            f"{', '.join(b.short_name for b in BUILTINS.values())}",
            key="className",
            **where,
        )
    config = _component_config_map(body, d)
    if config:
        # Flux applies the per-component `config:` map after the component's own configuration
        component = replace(component, config={**component.config, **config})
    return component


# topology.multilang.serializer (spec §11): Storm's own JSON serializer, or a MessagePack one such
# as pyleus's; it applies to shell components only (the built-ins stand for Java classes).
MULTILANG_SERIALIZER = "topology.multilang.serializer"
JSON_SERIALIZERS = (
    "org.apache.storm.multilang.JsonSerializer",
    "backtype.storm.multilang.JsonSerializer",
)


def _multilang_serializer(config: dict, file: str | None) -> str:
    name = config.get(MULTILANG_SERIALIZER)
    if name is None or name in JSON_SERIALIZERS:
        return "json"
    if isinstance(name, str) and ("msgpack" in name.lower() or "messagepack" in name.lower()):
        return "msgpack"
    raise TopologyError(
        f"unknown serializer {name!r}: this host speaks JSON "
        f"({JSON_SERIALIZERS[0]}) and MessagePack (a class with MessagePack in "
        "its name, e.g. com.yelp.pyleus.serializer.MessagePackSerializer)",
        file=file,
        key=MULTILANG_SERIALIZER,
    )


def _tasks(body: dict, d: _Def) -> int:
    where = {"file": d.file, "component": body["id"]}
    parallelism = body.get("parallelism", 1)
    if not cfg._is_int(parallelism) or parallelism < 1:
        raise TopologyError(
            f"parallelism must be an integer >= 1, got {parallelism!r}", key="parallelism", **where
        )
    num_tasks = body.get("numTasks")
    if num_tasks is None or num_tasks == -1:  # -1 is Flux's "not set"
        return parallelism
    if not cfg._is_int(num_tasks) or num_tasks < 1:
        raise TopologyError(
            f"numTasks must be an integer >= 1, got {num_tasks!r}", key="numTasks", **where
        )
    return num_tasks


def _component_config_map(body: dict, d: _Def) -> dict:
    value = body.get("config")
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise TopologyError(
            "config must be a mapping of keys to values",
            file=d.file,
            component=body["id"],
            key="config",
        )
    return dict(value)


def _shell_component(d: _Def, kind: str, base: Path) -> Component:
    from host.topology.loader import _command  # host.topology imports this module

    body, component_id = d.body, d.body["id"]
    where = {"file": d.file, "component": component_id}
    args = body.get("constructorArgs")
    if not isinstance(args, list) or len(args) not in (1, 2):
        raise TopologyError(
            "constructorArgs must be [[command, args...]] or [[command, args...], [output fields]]",
            key="constructorArgs",
            **where,
        )
    argv = _command(args[0], **where)
    outputs: dict[str, tuple[str, ...]] = {}
    if len(args) == 2:
        outputs[DEFAULT_STREAM] = _field_list(args[1], key="constructorArgs[1]", **where)
    state = _ShellState(outputs=outputs)
    for i, method in enumerate(_list(body, "configMethods", where)):
        _config_method(state, method, f"configMethods[{i}]", where)
    for i, prop in enumerate(_list(body, "properties", where)):
        _property(state, prop, f"properties[{i}]", where)
    cwd = os.getcwd() if state.worker_dir else resources_dir(argv, base)
    return Component(
        id=component_id,
        kind=kind,
        command=argv,
        outputs=state.outputs,
        parallelism=_tasks(body, d),
        config=state.config,
        cwd=cwd,
        env=state.env,
    )


def resources_dir(command: Sequence[str], base: str | os.PathLike) -> str:
    """Where a shell component runs: the topology's directory, or `resources/` in it when the
    component's script is there and not beside the topology file."""
    from host.topology.loader import _CODE_OPTIONS, _looks_like_script

    base = Path(base)
    candidates = [command[0]] if command and _looks_like_script(command[0]) else []
    candidates += [
        arg
        for previous, arg in zip(command, command[1:])
        if previous not in _CODE_OPTIONS and _looks_like_script(arg)
    ]
    resources = base / "resources"
    for script in candidates[:1]:
        if not (base / script).exists() and (resources / script).exists():
            return str(resources)
    return str(base)


@dataclass
class _ShellState:
    """What the configMethods of one shell wrapper have set so far."""

    outputs: dict[str, tuple[str, ...]]
    config: dict = field(default_factory=dict)
    env: dict[str, str] = field(default_factory=dict)
    worker_dir: bool = False


def _list(body: dict, key: str, where: dict) -> list:
    value = body.get(key)
    if value is None:
        return []
    if not isinstance(value, list):
        raise TopologyError(f"{key} must be a list", key=key, **where)
    return value


def _config_method(state: _ShellState, method: object, key: str, where: dict) -> None:
    if not isinstance(method, dict):
        raise TopologyError(
            "a config method is a mapping {name: ..., args: [...]}", key=key, **where
        )
    _check_keys(method, CONFIG_METHOD_KEYS, prefix=f"{key}.", **where)
    name = method.get("name")
    args = method.get("args")
    args = [] if args is None else args
    if not isinstance(args, list):
        raise TopologyError("args must be a list of arguments", key=f"{key}.args", **where)
    arity = {
        "setDefaultStream": 1,
        "setNamedStream": 2,
        "addComponentConfig": 2,
        "setEnv": 1,
        "changeChildCWD": 1,
    }
    if name not in arity or len(args) != arity[name]:
        raise TopologyError(
            f"no configuration method {name!r} taking {len(args)} argument(s) on the shell "
            f"wrappers; they have setDefaultStream([fields]), setNamedStream(stream, [fields]), "
            f"addComponentConfig(key, value), setEnv({{NAME: value}}), changeChildCWD(bool)",
            key=f"{key}.name",
            **where,
        )
    args_key = f"{key}.args"
    if name == "setDefaultStream":
        state.outputs[DEFAULT_STREAM] = _field_list(args[0], key=args_key, **where)
    elif name == "setNamedStream":
        stream = args[0]
        if not isinstance(stream, str) or not stream:
            raise TopologyError(
                f"the stream id must be a non-empty string, got {stream!r}", key=args_key, **where
            )
        state.outputs[stream] = _field_list(args[1], key=args_key, **where)
    elif name == "addComponentConfig":
        config_key, value = args
        if not isinstance(config_key, str) or not config_key:
            raise TopologyError(
                f"the config key must be a non-empty string, got {config_key!r}",
                key=args_key,
                **where,
            )
        if value is None:
            raise TopologyError(
                "the value may not be null (Flux refuses null arguments)", key=args_key, **where
            )
        state.config[config_key] = value
    elif name == "setEnv":
        state.env = _env_map(args[0], key=args_key, **where)  # each call replaces the map
    else:
        if not isinstance(args[0], bool):
            raise TopologyError(
                f"changeChildCWD takes true or false, got {args[0]!r}", key=args_key, **where
            )
        state.worker_dir = not args[0]


def _property(state: _ShellState, prop: object, key: str, where: dict) -> None:
    """`properties: [{name: env, value: {...}}]` is ShellBolt/ShellSpout's `setEnv` used as a
    bean setter; the wrappers have no other property."""
    if not isinstance(prop, dict):
        raise TopologyError("a property is a mapping {name: ..., value: ...}", key=key, **where)
    _check_keys(prop, PROPERTY_KEYS, prefix=f"{key}.", **where)
    if prop.get("name") != "env" or "ref" in prop:
        raise TopologyError(
            f"the shell wrappers have no property {prop.get('name')!r} settable "
            f"from Flux (only 'env' with a value)",
            key=f"{key}.name",
            **where,
        )
    state.env = _env_map(prop.get("value"), key=f"{key}.value", **where)


def _field_list(
    value: object, *, key: str, file: str | None, component: str | None
) -> tuple[str, ...]:
    if not isinstance(value, list):
        raise TopologyError(
            f"must be a list of field names, got {value!r}", file=file, component=component, key=key
        )
    if not value:
        raise TopologyError(
            "an empty list of fields cannot be passed here: Storm's Flux fails "
            "on empty lists given for a Java array; leave the stream out",
            file=file,
            component=component,
            key=key,
        )
    for name in value:
        if not isinstance(name, str) or not name:
            raise TopologyError(
                f"field names must be non-empty strings, got {name!r}",
                file=file,
                component=component,
                key=key,
            )
    return tuple(value)


def _env_map(value: object, *, key: str, file: str | None, component: str) -> dict[str, str]:
    if not isinstance(value, dict):
        raise TopologyError(
            f"setEnv takes a mapping {{NAME: value}}, got {value!r}",
            file=file,
            component=component,
            key=key,
        )
    env = {}
    for name, val in value.items():
        if not isinstance(name, str) or not name or "=" in name:
            raise TopologyError(
                f"bad variable name {name!r}", file=file, component=component, key=key
            )
        if isinstance(val, (int, float)) and not isinstance(val, bool):
            val = str(val)  # the environment holds text; Storm would fail on a YAML number
        if not isinstance(val, str):
            raise TopologyError(
                f"{name} must be a string, got {val!r} (quote it in YAML)",
                file=file,
                component=component,
                key=key,
            )
        env[name] = val
    return env


def _builtin_component(d: _Def, kind: str, builtin: Builtin, base: Path) -> Component:
    body, component_id = d.body, d.body["id"]
    where = {"file": d.file, "component": component_id}
    if builtin.kind != kind:
        raise TopologyError(
            f"{builtin.class_name} is a {builtin.kind}, listed under {kind}s",
            key="className",
            **where,
        )
    for key in ("configMethods", "properties"):
        if body.get(key):
            raise TopologyError(
                f"{builtin.short_name} has no {key} that Flux could use", key=key, **where
            )
    config = {}
    args = body.get("constructorArgs") or []
    if builtin.class_name == TEST_WORD_SPOUT and args in ([True], [False]):
        # TestWordSpout(isDistributed=false) limits itself to one task
        if args == [False]:
            config[MAX_TASK_PARALLELISM] = 1
    elif args:
        accepted = "[] or [true|false] (isDistributed)" if builtin.kind == SPOUT else "none"
        raise TopologyError(
            f"no constructor of {builtin.short_name} takes {args!r}; constructorArgs: {accepted}",
            key="constructorArgs",
            **where,
        )
    return Component(
        id=component_id,
        kind=kind,
        command=builtin.command,
        outputs=dict(builtin.outputs),
        parallelism=_tasks(body, d),
        config=config,
        cwd=str(base),
    )


# ---- beans (components:) ------------------------------------------------------------------------


def _fields_bean(d: _Def) -> tuple[str, ...]:
    """`components:` entries: only `org.apache.storm.tuple.Fields`, the argument Storm's Flux
    needs to give `PartialKeyGrouping` its fields."""
    body, bean_id = d.body, d.body["id"]
    where = {"file": d.file, "component": bean_id}
    _check_keys(body, BEAN_KEYS, **where)
    class_name = body.get("className")
    if class_name != FIELDS_CLASS:
        raise TopologyError(
            f"Java class {class_name} cannot be built here: the only component "
            f"bean this host understands is {FIELDS_CLASS} (for "
            f"PartialKeyGrouping)",
            key="className",
            **where,
        )
    for key in ("configMethods", "properties", "factory", "factoryArgs"):
        if body.get(key):
            raise TopologyError(f"{key} is not supported for {FIELDS_CLASS}", key=key, **where)
    args = body.get("constructorArgs")
    if not isinstance(args, list) or len(args) != 1:
        raise TopologyError(
            "constructorArgs must be [[field, ...]]", key="constructorArgs", **where
        )
    return _field_list(args[0], key="constructorArgs[0]", **where)


# ---- streams ------------------------------------------------------------------------------------


def _stream(
    d: _Def,
    flux: _FluxDoc,
    declared: dict[str, Component],
    fields_beans: dict[str, tuple[str, ...]],
) -> tuple[str, Input]:
    body = d.body
    where = {"file": d.file}
    _check_keys(body, STREAM_KEYS, prefix=f"{d.where}.", **where)
    ends = {}
    for end in ("from", "to"):
        value = body.get(end)
        if not isinstance(value, str) or not value:
            raise TopologyError(
                f"'{end}' must be a component id, got {value!r}", key=f"{d.where}.{end}", **where
            )
        ends[end] = value
    source, target = ends["from"], ends["to"]
    if target not in flux.bolts:
        problem = (
            "is a spout: only bolts receive streams"
            if target in flux.spouts
            else f"is not a bolt of this topology; the bolts are: {', '.join(flux.bolts) or 'none'}"
        )
        raise TopologyError(f"{target!r} {problem}", key=f"{d.where}.to", **where)
    if source not in declared:
        raise TopologyError(
            f"{source!r} is not a spout or bolt of this topology; they are: {', '.join(declared)}",
            key=f"{d.where}.from",
            **where,
        )
    grouping = body.get("grouping")
    key = f"{d.where}.grouping"
    if not isinstance(grouping, dict):
        raise TopologyError(
            "grouping is required: {type: SHUFFLE} or another type", key=key, **where
        )
    _check_keys(grouping, GROUPING_KEYS, prefix=f"{key}.", **where)
    stream = grouping.get("streamId")
    stream = DEFAULT_STREAM if stream is None else stream
    if not isinstance(stream, str) or not stream:
        raise TopologyError(
            f"streamId must be a non-empty string, got {stream!r}", key=f"{key}.streamId", **where
        )
    model = _grouping(grouping, key, where, declared[source], stream, fields_beans)
    return target, Input(source, stream, model)


def _grouping(
    grouping: dict,
    key: str,
    where: dict,
    source: Component,
    stream: str,
    fields_beans: dict[str, tuple[str, ...]],
) -> Grouping:
    kind = grouping.get("type")
    if kind not in FLUX_GROUPINGS:
        hint = ""
        if isinstance(kind, str) and kind.upper() in FLUX_GROUPINGS:
            hint = f" (Flux's names are case-sensitive: write {kind.upper()})"
        elif isinstance(kind, str) and kind.upper() == "PARTIAL_KEY":
            hint = f" (partial-key grouping is CUSTOM with customClass {PARTIAL_KEY_GROUPING})"
        raise TopologyError(
            f"unknown grouping type {kind!r}; Flux's types are: {', '.join(FLUX_GROUPINGS)}{hint}",
            key=f"{key}.type",
            **where,
        )
    if kind != "FIELDS" and grouping.get("args") is not None:
        log.warning("%s: %s.args ignored: only FIELDS uses args", where["file"], key)
    if kind != "CUSTOM" and grouping.get("customClass") is not None:
        log.warning("%s: %s.customClass ignored: only CUSTOM uses it", where["file"], key)
    if kind == "FIELDS":
        args = grouping.get("args")
        if args is None:
            raise TopologyError(
                "FIELDS needs args: the fields to group by, e.g. args: [word]",
                key=f"{key}.args",
                **where,
            )
        if not isinstance(args, list) or not all(isinstance(a, str) and a for a in args):
            raise TopologyError(
                f"args must be a list of field names, got {args!r}", key=f"{key}.args", **where
            )
        # Storm encodes a global grouping as fields grouping on no fields: the two are one
        return Grouping(FIELDS, tuple(args)) if args else Grouping(GLOBAL)
    if kind == "CUSTOM":
        return Grouping(
            PARTIAL_KEY,
            _partial_key_fields(
                grouping.get("customClass"), key, where, source, stream, fields_beans
            ),
        )
    return Grouping(FLUX_GROUPINGS[kind])


def _partial_key_fields(
    custom: object,
    key: str,
    where: dict,
    source: Component,
    stream: str,
    fields_beans: dict[str, tuple[str, ...]],
) -> tuple[str, ...]:
    key = f"{key}.customClass"
    if not isinstance(custom, dict):
        raise TopologyError(
            f"CUSTOM needs customClass: {{className: {PARTIAL_KEY_GROUPING}, ...}}",
            key=key,
            **where,
        )
    _check_keys(custom, OBJECT_KEYS, prefix=f"{key}.", **where)
    class_name = custom.get("className")
    if class_name != PARTIAL_KEY_GROUPING:
        raise TopologyError(
            f"Java grouping class {class_name} cannot run here: the only custom "
            f"grouping this host provides is {PARTIAL_KEY_GROUPING}",
            key=f"{key}.className",
            **where,
        )
    for extra in ("configMethods", "properties", "factory", "factoryArgs"):
        if custom.get(extra):
            raise TopologyError(
                f"{extra} is not supported for PartialKeyGrouping", key=f"{key}.{extra}", **where
            )
    args = custom.get("constructorArgs") or []
    if not isinstance(args, list) or len(args) > 1:
        raise TopologyError(
            "PartialKeyGrouping takes one argument, the fields: "
            "constructorArgs: [{ref: <id of an org.apache.storm.tuple.Fields "
            "component>}]",
            key=f"{key}.constructorArgs",
            **where,
        )
    if not args:
        # PartialKeyGrouping() keys on the first value of the tuple
        declared = source.outputs.get(stream)
        if not declared:
            raise TopologyError(
                f"{source.id!r} declares no fields on stream {stream!r}, so "
                f"PartialKeyGrouping() has no first field to key on",
                key=key,
                **where,
            )
        return declared[:1]
    arg = args[0]
    if isinstance(arg, dict) and set(arg) == {"ref"}:
        bean = arg["ref"]
        if bean not in fields_beans:
            raise TopologyError(
                f"ref {bean!r} names no {FIELDS_CLASS} in components; they are: "
                f"{', '.join(fields_beans) or 'none'}",
                key=f"{key}.constructorArgs",
                **where,
            )
        return fields_beans[bean]
    if isinstance(arg, list):
        log.warning(
            "%s: %s.constructorArgs: a plain list of fields is accepted here, but Storm's "
            "Flux rejects it (PartialKeyGrouping takes a Fields object): declare an %s "
            "component and pass {ref: its id} (export-flux writes that form)",
            where["file"],
            key,
            FIELDS_CLASS,
        )
        return _field_list(arg, key=f"{key}.constructorArgs", file=where["file"], component=None)
    raise TopologyError(
        f"expected {{ref: <Fields component id>}}, got {arg!r}",
        key=f"{key}.constructorArgs",
        **where,
    )
