"""The Java classes of Storm that a Flux file may name, as this host emulates them (each a
`JavaClass`, built the way Flux builds objects: `host.topology.flux_beans`): the shell wrappers
(`FluxShellSpout` / `FluxShellBolt`: constructors, configMethods, the `env` property), three
classes run as built-in Python equivalents, and `org.apache.storm.tuple.Fields`; and where a
shell component runs (Storm's `ShellProcess.java`: the topology jar's `resources/`).
See docs/flux.md for the subset of Flux this host supports."""

from __future__ import annotations

import copy
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from host.errors import TopologyError
from host.topology.commands import CODE_OPTIONS, check_command, looks_like_script
from host.topology.flux_beans import Args, ArgumentError, JavaClass
from host.topology.flux_kafka import KAFKA_BEAN_CLASSES, KAFKA_COMPONENT_CLASSES
from host.topology.flux_storm_kafka import (
    STORM_KAFKA_BEANS,
    STORM_KAFKA_MODULE,
    STORM_KAFKA_OUTPUTS,
    STORM_KAFKA_SPOUT,
    STORM_KAFKA_SPOUT_JAVA,
)
from host.topology.flux_values import VALUE_CLASSES
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
        Builtin(STORM_KAFKA_SPOUT, SPOUT, STORM_KAFKA_MODULE, STORM_KAFKA_OUTPUTS),
    )
}


def builtin_for_command(command: Sequence[str]) -> Builtin | None:
    """The built-in a component's command runs, if it is exactly one of ours."""
    for builtin in BUILTINS.values():
        if tuple(command) == builtin.command:
            return builtin
    return None


def _no_config(args: Args) -> dict[str, object]:
    return {}


def _test_word_spout(args: Args) -> dict[str, object]:
    """TestWordSpout(boolean isDistributed): false limits it to one task, as its
    getComponentConfiguration does."""
    if not args:
        return {}
    (distributed,) = args
    if not isinstance(distributed, bool):
        raise ArgumentError(
            f"TestWordSpout(boolean isDistributed) takes true or false, got {distributed!r}"
        )
    return {} if distributed else {MAX_TASK_PARALLELISM: 1}


# What constructing each built-in means: the component config it sets. Their other public methods
# are lifecycle methods (open, prepare, execute...), nothing a Flux file configures.
BUILTIN_CLASSES: dict[str, JavaClass] = {
    LOG_INFO_BOLT: JavaClass(
        LOG_INFO_BOLT, {0: _no_config}, constructor_usage="it has only LogInfoBolt()"
    ),
    TEST_WORD_COUNTER: JavaClass(
        TEST_WORD_COUNTER, {0: _no_config}, constructor_usage="it has only TestWordCounter()"
    ),
    TEST_WORD_SPOUT: JavaClass(
        TEST_WORD_SPOUT,
        {0: _test_word_spout, 1: _test_word_spout},
        constructor_usage="constructorArgs: [] or [true|false] (isDistributed)",
    ),
    STORM_KAFKA_SPOUT: STORM_KAFKA_SPOUT_JAVA,  # flux_storm_kafka.py
}


# ---- the shell wrappers -------------------------------------------------------------------------


@dataclass
class ShellWrapper:
    """What a shell wrapper's constructor, configMethods and properties set, in order."""

    argv: tuple[str, ...]
    outputs: dict[str, tuple[str, ...]]
    config: dict[str, object] = field(default_factory=dict)
    env: dict[str, str] = field(default_factory=dict)
    worker_dir: bool = False  # changeChildCWD(false): run in the worker's directory


def _new_shell(args: Args) -> ShellWrapper:
    """FluxShellSpout / FluxShellBolt (String[] command) and (String[] command, String[]
    outputFields)."""
    try:
        argv = check_command(args[0], file=None, component="")
    except TopologyError as exc:
        raise ArgumentError(f"the command {exc.problem}") from None
    outputs = {DEFAULT_STREAM: field_names(args[1])} if len(args) == 2 else {}
    return ShellWrapper(argv, outputs)


def _set_default_stream(shell: ShellWrapper, args: Args) -> None:
    shell.outputs[DEFAULT_STREAM] = field_names(args[0])


def _set_named_stream(shell: ShellWrapper, args: Args) -> None:
    stream, fields = args
    if not isinstance(stream, str) or not stream:
        raise ArgumentError(f"the stream id must be a non-empty string, got {stream!r}")
    shell.outputs[stream] = field_names(fields)


def _add_component_config(shell: ShellWrapper, args: Args) -> None:
    key, value = args
    if not isinstance(key, str) or not key:
        raise ArgumentError(f"the config key must be a non-empty string, got {key!r}")
    if _holds_fields(value):
        raise ArgumentError(f"a Fields object cannot be a config value, got {value!r}")
    shell.config[key] = copy.deepcopy(value)  # a map or list bean: the model shares nothing


def _set_env(shell: ShellWrapper, args: Args) -> None:
    shell.env = env_map(args[0])  # each call replaces the map, as ShellBolt.setEnv does


def _change_child_cwd(shell: ShellWrapper, args: Args) -> None:
    (change,) = args
    if not isinstance(change, bool):
        raise ArgumentError(f"changeChildCWD takes true or false, got {change!r}")
    shell.worker_dir = not change


def _env_property(shell: ShellWrapper, value: object) -> None:
    shell.env = env_map(value)  # ShellBolt/ShellSpout's setEnv, used as a bean setter


def _shell_class(name: str) -> JavaClass:
    # FluxShellSpout / FluxShellBolt and the ShellSpout / ShellBolt they extend
    return JavaClass(
        name,
        constructors={1: _new_shell, 2: _new_shell},
        methods={
            ("setDefaultStream", 1): _set_default_stream,
            ("setNamedStream", 2): _set_named_stream,
            ("addComponentConfig", 2): _add_component_config,
            ("setEnv", 1): _set_env,
            ("changeChildCWD", 1): _change_child_cwd,
        },
        setters={"env": _env_property},
        constructor_usage=(
            "constructorArgs must be [[command, args...]] or [[command, args...], [output fields]]"
        ),
        methods_usage=(
            "setDefaultStream([fields]), setNamedStream(stream, [fields]), "
            "addComponentConfig(key, value), setEnv({NAME: value}), changeChildCWD(bool)"
        ),
    )


SHELL_JAVA = {kind: _shell_class(name) for kind, name in SHELL_CLASSES.items()}


def env_map(value: object) -> dict[str, str]:
    if not isinstance(value, dict):
        raise ArgumentError(f"setEnv takes a mapping {{NAME: value}}, got {value!r}")
    env = {}
    for name, val in value.items():
        if not isinstance(name, str) or not name or "=" in name:
            raise ArgumentError(f"bad variable name {name!r}")
        if isinstance(val, (int, float)) and not isinstance(val, bool):
            val = str(val)  # the environment holds text; Storm would fail on a YAML number
        if not isinstance(val, str):
            raise ArgumentError(f"{name} must be a string, got {val!r} (quote it in YAML)")
        env[name] = val
    return env


# ---- where a shell component runs ---------------------------------------------------------------

RESOURCES = "resources"


def code_dir(base: str | os.PathLike[str]) -> str:
    """Where every shell component of a Flux topology whose file is in `base` runs: `resources/`
    in it when there is one (a topology jar's layout: Storm's `ShellProcess` starts each child
    in the jar's `resources/`, whatever its command), else `base` itself. docs/flux.md §3.1."""
    resources = Path(base) / RESOURCES
    return str(resources) if resources.is_dir() else str(base)


def check_jar_layout(
    argv: Sequence[str], cwd: str, base: str | os.PathLike[str], where: dict
) -> None:
    """A script the command names that is beside the topology file but not in `resources/`:
    the component runs in `resources/` (Storm's rule), so say where the script must go rather
    than only that it is missing."""
    base = Path(base)
    if Path(cwd) != base / RESOURCES:
        return
    for previous, arg in zip(("", *argv), argv):
        if previous in CODE_OPTIONS or not looks_like_script(arg):
            continue
        if not (base / RESOURCES / arg).exists() and (base / arg).exists():
            raise TopologyError(
                f"{arg!r} is beside the topology file but not in {RESOURCES}/: a Flux topology "
                f"whose directory holds {RESOURCES}/ (a topology jar's layout) runs every shell "
                f"component there, as Storm does; move the script into {RESOURCES}/",
                key="constructorArgs",
                **where,
            )


# ---- Fields -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Fields:
    """An `org.apache.storm.tuple.Fields` bean: what `PartialKeyGrouping` takes."""

    names: tuple[str, ...]


def field_names(value: object) -> tuple[str, ...]:
    """A YAML list given where Java expects a `String[]` / `List<String>` of field names."""
    if not isinstance(value, list):
        raise ArgumentError(f"must be a list of field names, got {value!r}")
    if not value:
        raise ArgumentError(
            "an empty list of fields cannot be passed here: Storm's Flux fails on empty lists "
            "given for a Java array; leave the stream out"
        )
    for name in value:
        if not isinstance(name, str) or not name:
            raise ArgumentError(f"field names must be non-empty strings, got {name!r}")
    return tuple(value)


def _new_fields(args: Args) -> Fields:
    """Fields(String... fields) and Fields(List<String> fields): one list, either way."""
    return Fields(field_names(args[0]))


def _holds_fields(value: object) -> bool:
    if isinstance(value, Fields):
        return True
    if isinstance(value, dict):
        return any(_holds_fields(v) for v in value.values())
    return isinstance(value, list) and any(_holds_fields(v) for v in value)


FIELDS_JAVA = JavaClass(
    FIELDS_CLASS, {1: _new_fields}, constructor_usage="constructorArgs must be [[field, ...]]"
)

# the classes a bean (`components:`) may be; docs/flux.md §1.1
BEAN_CLASSES: dict[str, JavaClass] = {
    **VALUE_CLASSES,
    FIELDS_CLASS: FIELDS_JAVA,
    **STORM_KAFKA_BEANS,
    **KAFKA_BEAN_CLASSES,
}

# spout and bolt classes of Storm's libraries that a ready component of `components/` runs in
# their place: each builds an `EmulatedComponent` (docs/kafka.md, "Flux")
COMPONENT_CLASSES: dict[str, JavaClass] = {**KAFKA_COMPONENT_CLASSES}
