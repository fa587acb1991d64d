"""The Java classes of Storm that a Flux file may name, as this host stands in for them: the shell
wrappers (`FluxShellSpout` / `FluxShellBolt`: constructors, configMethods, the `env` property,
the working directory Storm's `ShellBolt.java` / `ShellSpout.java` give the child), three
classes run as built-in Python equivalents, and the `org.apache.storm.tuple.Fields` bean.
See docs/flux.md for the subset of Flux this host supports."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from host.errors import TopologyError
from host.topology.commands import CODE_OPTIONS, check_command, looks_like_script
from host.topology.flux_document import (
    BEAN_KEYS,
    CONFIG_METHOD_KEYS,
    PROPERTY_KEYS,
    Definition,
    check_keys,
)
from host.topology.model import BOLT, SPOUT
from host.topology.settings import MAX_TASK_PARALLELISM
from multilang.messages import DEFAULT_STREAM

# ---- class names --------------------------------------------------------------------------------

FLUX_SHELL_SPOUT = "org.apache.storm.flux.wrappers.spouts.FluxShellSpout"
FLUX_SHELL_BOLT = "org.apache.storm.flux.wrappers.bolts.FluxShellBolt"
LOG_INFO_BOLT = "org.apache.storm.flux.wrappers.bolts.LogInfoBolt"
TEST_WORD_COUNTER = "org.apache.storm.testing.TestWordCounter"
TEST_WORD_SPOUT = "org.apache.storm.testing.TestWordSpout"
PARTIAL_KEY_GROUPING = "org.apache.storm.grouping.PartialKeyGrouping"
FIELDS_CLASS = "org.apache.storm.tuple.Fields"
SHELL_CLASSES = {SPOUT: FLUX_SHELL_SPOUT, BOLT: FLUX_SHELL_BOLT}

BUILTINS_PACKAGE = "components.storm_builtins"


# ---- built-ins ----------------------------------------------------------------------------------


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


def builtin_config(d: Definition, kind: str, builtin: Builtin) -> dict[str, object]:
    """A built-in listed under `kind`s -> the component config its constructor arguments mean.
    The Java classes have no configMethods or properties Flux could use."""
    body = d.body
    where = {"file": d.file, "component": body["id"]}
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
    config: dict[str, object] = {}
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
    return config


# ---- the shell wrappers -------------------------------------------------------------------------

# the configMethods of FluxShellSpout / FluxShellBolt (and the ShellSpout / ShellBolt they extend)
# that Flux can call, by number of arguments
SHELL_CONFIG_METHODS = {
    "setDefaultStream": 1,
    "setNamedStream": 2,
    "addComponentConfig": 2,
    "setEnv": 1,
    "changeChildCWD": 1,
}


@dataclass
class ShellWrapper:
    """What a shell wrapper's constructor, configMethods and properties set, in order."""

    argv: tuple[str, ...]
    outputs: dict[str, tuple[str, ...]]
    config: dict[str, object] = field(default_factory=dict)
    env: dict[str, str] = field(default_factory=dict)
    worker_dir: bool = False  # changeChildCWD(false): run in the worker's directory


def shell_wrapper(d: Definition) -> ShellWrapper:
    """A FluxShellSpout / FluxShellBolt definition -> what constructing and configuring the Java
    object would set."""
    body, component_id = d.body, d.body["id"]
    where = {"file": d.file, "component": component_id}
    args = body.get("constructorArgs")
    if not isinstance(args, list) or len(args) not in (1, 2):
        raise TopologyError(
            "constructorArgs must be [[command, args...]] or [[command, args...], [output fields]]",
            key="constructorArgs",
            **where,
        )
    argv = check_command(args[0], file=d.file, component=component_id)
    outputs: dict[str, tuple[str, ...]] = {}
    if len(args) == 2:
        outputs[DEFAULT_STREAM] = field_list(args[1], key="constructorArgs[1]", **where)
    shell = ShellWrapper(argv, outputs)
    for i, method in enumerate(_list(body, "configMethods", where)):
        _config_method(shell, method, f"configMethods[{i}]", where)
    for i, prop in enumerate(_list(body, "properties", where)):
        _property(shell, prop, f"properties[{i}]", where)
    return shell


def resources_dir(command: Sequence[str], base: str | os.PathLike[str]) -> str:
    """Where a shell component runs: the topology's directory, or `resources/` in it when the
    component's script is there and not beside the topology file (Storm runs shell components in
    the topology jar's `resources/`)."""
    base = Path(base)
    candidates = [command[0]] if command and looks_like_script(command[0]) else []
    candidates += [
        arg
        for previous, arg in zip(command, command[1:])
        if previous not in CODE_OPTIONS and looks_like_script(arg)
    ]
    resources = base / "resources"
    for script in candidates[:1]:
        if not (base / script).exists() and (resources / script).exists():
            return str(resources)
    return str(base)


def _list(body: dict, key: str, where: dict) -> list:
    value = body.get(key)
    if value is None:
        return []
    if not isinstance(value, list):
        raise TopologyError(f"{key} must be a list", key=key, **where)
    return value


def _config_method(shell: ShellWrapper, method: object, key: str, where: dict) -> None:
    if not isinstance(method, dict):
        raise TopologyError(
            "a config method is a mapping {name: ..., args: [...]}", key=key, **where
        )
    check_keys(method, CONFIG_METHOD_KEYS, prefix=f"{key}.", **where)
    name = method.get("name")
    args = method.get("args")
    args = [] if args is None else args
    if not isinstance(args, list):
        raise TopologyError("args must be a list of arguments", key=f"{key}.args", **where)
    if not isinstance(name, str) or len(args) != SHELL_CONFIG_METHODS.get(name):
        raise TopologyError(
            f"no configuration method {name!r} taking {len(args)} argument(s) on the shell "
            f"wrappers; they have setDefaultStream([fields]), setNamedStream(stream, [fields]), "
            f"addComponentConfig(key, value), setEnv({{NAME: value}}), changeChildCWD(bool)",
            key=f"{key}.name",
            **where,
        )
    args_key = f"{key}.args"
    if name == "setDefaultStream":
        shell.outputs[DEFAULT_STREAM] = field_list(args[0], key=args_key, **where)
    elif name == "setNamedStream":
        stream = args[0]
        if not isinstance(stream, str) or not stream:
            raise TopologyError(
                f"the stream id must be a non-empty string, got {stream!r}", key=args_key, **where
            )
        shell.outputs[stream] = field_list(args[1], key=args_key, **where)
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
        shell.config[config_key] = value
    elif name == "setEnv":
        shell.env = _env_map(args[0], key=args_key, **where)  # each call replaces the map
    else:
        if not isinstance(args[0], bool):
            raise TopologyError(
                f"changeChildCWD takes true or false, got {args[0]!r}", key=args_key, **where
            )
        shell.worker_dir = not args[0]


def _property(shell: ShellWrapper, prop: object, key: str, where: dict) -> None:
    """`properties: [{name: env, value: {...}}]` is ShellBolt/ShellSpout's `setEnv` used as a
    bean setter; the wrappers have no other property."""
    if not isinstance(prop, dict):
        raise TopologyError("a property is a mapping {name: ..., value: ...}", key=key, **where)
    check_keys(prop, PROPERTY_KEYS, prefix=f"{key}.", **where)
    if prop.get("name") != "env" or "ref" in prop:
        raise TopologyError(
            f"the shell wrappers have no property {prop.get('name')!r} settable "
            f"from Flux (only 'env' with a value)",
            key=f"{key}.name",
            **where,
        )
    shell.env = _env_map(prop.get("value"), key=f"{key}.value", **where)


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


# ---- Fields -------------------------------------------------------------------------------------


def field_list(
    value: object, *, key: str, file: str | None, component: str | None
) -> tuple[str, ...]:
    """A YAML list given where Java expects a `String[]` / `List<String>` of field names."""
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


def fields_bean(d: Definition) -> tuple[str, ...]:
    """`components:` entries: only `org.apache.storm.tuple.Fields`, the argument Storm's Flux
    needs to give `PartialKeyGrouping` its fields."""
    body, bean_id = d.body, d.body["id"]
    where = {"file": d.file, "component": bean_id}
    check_keys(body, BEAN_KEYS, **where)
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
    return field_list(args[0], key="constructorArgs[0]", **where)
