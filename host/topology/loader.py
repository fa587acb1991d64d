"""Topologies from files and from Python: load, build, validate.

`load(path)` reads our YAML format or runs a Python file that builds a topology; `TopologyBuilder`
is the Python API; `validate(topology)` checks everything that can be checked before any process
starts (references, streams, fields, commands on disk, config types), so that a bad topology is one
clear TopologyError naming the file, the component and the key, and never a crash at run time.

Parsing (turning YAML or builder arguments into the frozen model) and validation (checking the
model) are separate, so that other loaders (Flux) can build the model their own way and reuse
`validate`.
"""

from __future__ import annotations

import contextvars
import copy
import os
import re
import runpy
import shlex
import shutil
import sys
import traceback
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

import yaml

from host.errors import TopologyError
from host.topology import settings as cfg
from host.topology.model import (
    ALL,
    BOLT,
    DIRECT,
    FIELDS,
    GLOBAL,
    GROUPING_TYPES,
    GROUPINGS_WITH_FIELDS,
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

TOPOLOGY_KEYS = ("name", "config", "spouts", "bolts")
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
)
INPUT_KEYS = ("grouping", "fields", "partial_key", "stream")
SERIALIZERS = ("json", "msgpack")
RESERVED_PREFIX = "__"  # Storm's system components and streams: __acker, __system, __tick, ...
# Storm refuses topology names with these (they end up in paths and ids)
FORBIDDEN_NAME_CHARS = "/.:\\"
SCRIPT_EXTENSIONS = (".py", ".js", ".sh", ".rb")

# ================================================================================================
# Loading files
# ================================================================================================


def load(path: str | os.PathLike, env_filter: bool = False) -> Topology:
    """Load and validate a topology file: `.yaml`/`.yml` (our format; Flux is detected by its
    keys) or `.py` (a Python file defining a module-level `topology`, a Topology or a
    TopologyBuilder). Raises TopologyError for anything wrong with it. `env_filter`: replace
    `${ENV-NAME}` in YAML files with environment variable NAME before parsing (Flux's `-e`)."""
    path = Path(path)
    if not path.exists():
        raise TopologyError("no such file", file=str(path))
    if not path.is_file():
        raise TopologyError("is not a file", file=str(path))
    if path.suffix == ".py":
        return _load_python(path)
    if path.suffix in (".yaml", ".yml"):
        return _load_yaml(path, env_filter)
    raise TopologyError(
        f"unknown kind of topology file '{path.suffix}': expected .yaml, .yml "
        f"(our format or Flux) or .py (a Python file that builds the topology)",
        file=str(path),
    )


def _base_dir(path: Path) -> Path:
    return Path(os.path.abspath(path.parent))


# ---- YAML ---------------------------------------------------------------------------------------


class _Loader(yaml.SafeLoader):
    """safe_load, except that a key given twice in one mapping is an error: PyYAML silently keeps
    the last one, which would hide a second bolt of the same name."""

    def construct_mapping(self, node, deep=False):
        seen: dict = {}
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                continue
            key = self.construct_object(key_node, deep=deep)
            try:
                first = seen.setdefault(key, key_node)
            except TypeError:
                continue  # unhashable key: the base class reports it
            if first is not key_node:
                raise yaml.constructor.ConstructorError(
                    "while constructing a mapping",
                    node.start_mark,
                    f"found duplicate key {key!r} (first at line {first.start_mark.line + 1})",
                    key_node.start_mark,
                )
        return super().construct_mapping(node, deep=deep)


def read_text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise TopologyError(f"cannot read: {e}", file=str(path)) from None


def parse_yaml_text(text: str, *, file: str | None) -> object:
    """YAML text -> document, with the duplicate-key check; errors name `file`."""
    try:
        doc = yaml.load(text, Loader=_Loader)  # noqa: S506 - a SafeLoader subclass
        _check_shape(doc, file)
        return doc
    except yaml.YAMLError as e:
        raise TopologyError(_yaml_problem(e), file=file) from None
    except (ValueError, TypeError, KeyError, AttributeError, RecursionError) as e:
        # PyYAML's own constructors let these through for explicit tags on values that do not
        # fit them (`!!int abc`, `!!timestamp x`, `!!bool maybe`), and for very deep nesting
        raise TopologyError(
            f"YAML value that cannot be read: {type(e).__name__}: {e}", file=file
        ) from None


MAX_YAML_DEPTH = 64
MAX_YAML_VALUES = 1_000_000


def _check_shape(doc: object, file: str | None) -> None:
    """Aliases make a graph of a YAML document: one that refers to itself would send every walk
    over it (checks, the JSON of the handshake) into endless recursion, and a few lines of nested
    aliases expand to billions of values. Refuse both, and absurd nesting, before anything
    walks the document."""
    budget = [MAX_YAML_VALUES]

    def walk(value: object, depth: int) -> None:
        budget[0] -= 1
        if budget[0] < 0:
            raise TopologyError(
                f"the document expands to more than {MAX_YAML_VALUES} values "
                "(aliases that refer to aliases?)",
                file=file,
            )
        if depth > MAX_YAML_DEPTH:
            raise TopologyError(
                f"values nested more than {MAX_YAML_DEPTH} levels deep (or an "
                "alias that refers to itself)",
                file=file,
            )
        if isinstance(value, dict):
            for k, v in value.items():
                walk(k, depth + 1)
                walk(v, depth + 1)
        elif isinstance(value, (list, tuple, set)):
            for v in value:
                walk(v, depth + 1)

    walk(doc, 0)


def _yaml_problem(error: yaml.YAMLError) -> str:
    mark = getattr(error, "problem_mark", None)
    problem = getattr(error, "problem", None) or str(error)
    context = getattr(error, "context", None)
    text = f"{context}: {problem}" if context else problem
    if isinstance(error, yaml.reader.ReaderError):  # its str() spans two lines
        char = error.character
        char = f"#x{char:04x}" if isinstance(char, int) else repr(char)
        text = f"{error.reason}: character {char} at position {error.position}"
    text = " ".join(str(text).split())  # the error is one line, whatever PyYAML put in it
    if mark is None:
        return f"YAML syntax error: {text}"
    return f"YAML syntax error at line {mark.line + 1}, column {mark.column + 1}: {text}"


def _load_yaml(path: Path, env_filter: bool = False) -> Topology:
    text = read_text(path)
    if env_filter:
        from host.topology.flux import substitute_env  # host.topology.flux imports this module

        text = substitute_env(text, file=str(path))
    doc = parse_yaml_text(text, file=str(path))
    if is_flux(doc):
        return load_flux(doc, file=str(path), base_dir=_base_dir(path), env_filter=env_filter)
    return from_document(doc, file=str(path), base_dir=_base_dir(path))


def is_flux(doc: object) -> bool:
    """Whether a parsed YAML document is a Flux topology rather than ours: Flux lists its spouts
    and bolts (each with a `className`) and wires them with `streams`; ours maps ids to
    components and declares inputs on the bolts."""
    if not isinstance(doc, dict):
        return False
    if any(key in doc for key in ("streams", "topologySource", "includes")):
        return True
    return any(
        isinstance(doc.get(key), list)
        and any(isinstance(item, dict) and "className" in item for item in doc[key])
        for key in ("spouts", "bolts")
    )


def load_flux(doc: dict, *, file: str | None, base_dir: Path, env_filter: bool = False) -> Topology:
    """Flux YAML (spec/flux-shell.md), already parsed (and substituted when `env_filter`) -> a
    validated Topology; see `host.topology.flux`."""
    from host.topology.flux import load_flux as _load_flux  # host.topology.flux imports this module

    return _load_flux(doc, file=file, base_dir=base_dir, env_filter=env_filter)


def from_document(
    doc: object, *, file: str | None = None, base_dir: str | os.PathLike | None = None
) -> Topology:
    """Our YAML format, already parsed, -> a validated Topology. Relative `cwd`s are resolved
    against `base_dir` (the topology file's directory)."""
    if doc is None:
        raise TopologyError("the topology file is empty", file=file)
    if not isinstance(doc, dict):
        raise TopologyError(
            f"a topology is a mapping with the keys {', '.join(TOPOLOGY_KEYS)}; "
            f"this file holds a {type(doc).__name__}",
            file=file,
        )
    _reject_unknown_keys(doc, TOPOLOGY_KEYS, file=file)
    config = doc.get("config")
    builder = TopologyBuilder(doc.get("name"), config={} if config is None else config)
    for kind in (SPOUT, BOLT):
        for component_id, body in _components_section(doc, kind + "s", file).items():
            _add_yaml_component(builder, kind, component_id, body, file)
    return builder.build(base_dir, source=file)


def _reject_unknown_keys(
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
                f"unknown key; allowed keys are: {', '.join(allowed)}",
                file=file,
                component=component,
                key=f"{prefix}{key}",
            )


def _components_section(doc: dict, key: str, file: str | None) -> dict:
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


def _add_yaml_component(
    builder: TopologyBuilder, kind: str, component_id: object, body: object, file: str | None
) -> None:
    name = str(component_id)
    if not isinstance(body, dict):
        raise TopologyError(
            f"a {kind} is a mapping with at least 'command', not {type(body).__name__}",
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
    _reject_unknown_keys(
        body, SPOUT_KEYS if kind == SPOUT else BOLT_KEYS, file=file, component=name
    )
    options = {k: v for k, v in body.items() if k not in ("command", "inputs")}
    declare = builder.spout if kind == SPOUT else builder.bolt
    declarer = declare(component_id, body.get("command"), **options)
    for raw in _yaml_inputs(body.get("inputs"), file, name):
        declarer._raw.inputs.append(raw)


def _yaml_inputs(inputs: object, file: str | None, component: str) -> list[_RawInput]:
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
            out.append(_yaml_input(source, item, file, component))
    return out


def _yaml_input(source: object, spec: object, file: str | None, component: str) -> _RawInput:
    key = f"inputs.{source}"
    if isinstance(spec, str):
        return _RawInput(source, spec)
    if not isinstance(spec, dict):
        raise TopologyError(
            f"give a grouping ({', '.join(GROUPING_TYPES)}) or a mapping like "
            f"{{fields: [word]}} or {{grouping: shuffle, stream: s}}; got {spec!r}",
            file=file,
            component=component,
            key=key,
        )
    _reject_unknown_keys(spec, INPUT_KEYS, file=file, component=component, prefix=f"{key}.")
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
        return _RawInput(source, PARTIAL_KEY, spec[PARTIAL_KEY], stream)
    if "grouping" in spec:
        return _RawInput(source, spec["grouping"], spec.get("fields", ()), stream)
    if "fields" in spec:
        return _RawInput(source, FIELDS, spec["fields"], stream)
    raise TopologyError(
        f"say how to group: 'grouping: NAME' (one of {', '.join(GROUPING_TYPES)}) "
        f"or 'fields: [...]'",
        file=file,
        component=component,
        key=key,
    )


# ---- Python files -------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Loading:
    file: str
    base_dir: Path


# Set while a .py topology file runs, so that `TopologyBuilder.build()` inside it resolves paths
# against that file's directory without being told.
_LOADING: contextvars.ContextVar[_Loading | None] = contextvars.ContextVar("_LOADING", default=None)


def _load_python(path: Path) -> Topology:
    file, base_dir = str(path), _base_dir(path)
    namespace = _run_python(path, _Loading(file, base_dir))
    if "topology" not in namespace:
        raise TopologyError(
            "a Python topology file must define a module-level `topology` "
            "(a TopologyBuilder, or the Topology its build() returns)",
            file=file,
            key="topology",
        )
    value = namespace["topology"]
    if isinstance(value, TopologyBuilder):
        return value.build(base_dir, source=file)
    if isinstance(value, Topology):
        return _finish(value, base_dir, file)
    raise TopologyError(
        f"`topology` must be a TopologyBuilder or a Topology, not {type(value).__name__}",
        file=file,
        key="topology",
    )


def _run_python(path: Path, loading: _Loading) -> dict:
    token = _LOADING.set(loading)
    # so that the file can import helpers next to it, like a script run from its directory
    sys.path.insert(0, str(loading.base_dir))
    try:
        return runpy.run_path(str(path), run_name="__topology__")
    except TopologyError as e:
        raise TopologyError(
            e.problem, file=e.file or loading.file, component=e.component, key=e.key
        ) from e
    except SyntaxError as e:
        raise TopologyError(
            f"Python syntax error at line {e.lineno}: {e.msg}", file=loading.file
        ) from None
    except (Exception, SystemExit) as e:  # the user's code: any failure is a bad topology
        line = _failing_line(e, path)
        where = f" at line {line}" if line else ""
        raise TopologyError(
            f"running the file failed{where}: {type(e).__name__}: {e}", file=loading.file
        ) from e
    finally:
        _LOADING.reset(token)
        if sys.path and sys.path[0] == str(loading.base_dir):
            del sys.path[0]


def _failing_line(error: BaseException, path: Path) -> int | None:
    target = os.path.abspath(path)
    lines = [
        frame.lineno
        for frame in traceback.extract_tb(error.__traceback__)
        if os.path.abspath(frame.filename) == target
    ]
    return lines[-1] if lines else None


def _finish(topology: Topology, base_dir: Path, file: str) -> Topology:
    """A Topology made by hand in a .py file: resolve relative cwds, remember the file, validate."""
    components = tuple(
        replace(c, cwd=os.path.normpath(base_dir / c.cwd))
        if isinstance(c.cwd, str) and not os.path.isabs(c.cwd)
        else c
        for c in topology.components
    )
    topology = replace(topology, components=components, source=topology.source or file)
    validate(topology)
    return topology


# ================================================================================================
# The builder
# ================================================================================================


@dataclass
class _RawInput:
    """An input as given, checked when the builder builds."""

    source: object
    grouping: object
    fields: object = ()
    stream: object = DEFAULT_STREAM


@dataclass
class _RawComponent:
    id: object
    kind: str
    command: object
    outputs: object
    parallelism: object
    config: object
    cwd: object
    env: object
    serializer: object
    heartbeats: object
    activate: object
    inputs: list[_RawInput] = field(default_factory=list)


def _field_list(fields: tuple) -> object:
    """`fields("src", "a", "b")` and `fields("src", ["a", "b"])` mean the same."""
    if len(fields) == 1 and isinstance(fields[0], (list, tuple)):
        return fields[0]
    return fields


class ComponentDeclarer:
    """What `TopologyBuilder.spout`/`bolt` return: declare the component's inputs (bolts only),
    chainably: `b.bolt(...).shuffle("a").fields("b", "word", stream="s")`."""

    def __init__(self, raw: _RawComponent):
        self._raw = raw

    def grouping(
        self, source: str, grouping: str, fields: Sequence[str] = (), stream: str = DEFAULT_STREAM
    ) -> ComponentDeclarer:
        """Subscribe to `source`'s `stream` with any grouping by name."""
        self._raw.inputs.append(_RawInput(source, grouping, fields, stream))
        return self

    def shuffle(self, source: str, stream: str = DEFAULT_STREAM) -> ComponentDeclarer:
        return self.grouping(source, SHUFFLE, stream=stream)

    def fields(self, source: str, *fields: str, stream: str = DEFAULT_STREAM) -> ComponentDeclarer:
        return self.grouping(source, FIELDS, _field_list(fields), stream)

    def partial_key(
        self, source: str, *fields: str, stream: str = DEFAULT_STREAM
    ) -> ComponentDeclarer:
        return self.grouping(source, PARTIAL_KEY, _field_list(fields), stream)

    def all(self, source: str, stream: str = DEFAULT_STREAM) -> ComponentDeclarer:
        return self.grouping(source, ALL, stream=stream)

    def global_(self, source: str, stream: str = DEFAULT_STREAM) -> ComponentDeclarer:
        return self.grouping(source, GLOBAL, stream=stream)

    def none(self, source: str, stream: str = DEFAULT_STREAM) -> ComponentDeclarer:
        return self.grouping(source, NONE, stream=stream)

    def direct(self, source: str, stream: str = DEFAULT_STREAM) -> ComponentDeclarer:
        return self.grouping(source, DIRECT, stream=stream)

    def local_or_shuffle(self, source: str, stream: str = DEFAULT_STREAM) -> ComponentDeclarer:
        return self.grouping(source, LOCAL_OR_SHUFFLE, stream=stream)


class TopologyBuilder:
    """Build a topology in Python; `build()` validates and returns the frozen Topology.

    ```
    b = TopologyBuilder("wordcount", config={"topology.max.spout.pending": 1000})
    b.spout("sentences", ["python", "sentences.py"], outputs=["sentence"])
    b.bolt("split", ["bash", "split.sh"], outputs=["word"], parallelism=2).shuffle("sentences")
    topology = b.build()
    ```
    Nothing is checked until `build()`, so errors come out in one place, worded as for YAML files.
    """

    def __init__(self, name: str, config: Mapping | None = None):
        self.name = name
        self.config = {} if config is None else config
        self._components: list[_RawComponent] = []

    def spout(
        self,
        id: str,
        command: Sequence[str],
        outputs: Sequence[str] | Mapping | None = None,
        parallelism: int = 1,
        *,
        config: Mapping | None = None,
        cwd: str | None = None,
        env: Mapping[str, str] | None = None,
        serializer: str = "json",
        heartbeats: bool = True,
        activate: bool = True,
    ) -> ComponentDeclarer:
        """Declare a spout. `outputs`: a list of field names (the default stream) or a mapping
        stream -> field names. `cwd` is relative to the topology's directory."""
        return self._add(
            _RawComponent(
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
            )
        )

    def bolt(
        self,
        id: str,
        command: Sequence[str],
        outputs: Sequence[str] | Mapping | None = None,
        parallelism: int = 1,
        *,
        config: Mapping | None = None,
        cwd: str | None = None,
        env: Mapping[str, str] | None = None,
        serializer: str = "json",
        heartbeats: bool = True,
    ) -> ComponentDeclarer:
        """Declare a bolt; subscribe it with the returned declarer's grouping methods."""
        return self._add(
            _RawComponent(
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
            )
        )

    def _add(self, raw: _RawComponent) -> ComponentDeclarer:
        self._components.append(raw)
        return ComponentDeclarer(raw)

    def build(
        self, base_dir: str | os.PathLike | None = None, *, source: str | None = None
    ) -> Topology:
        """The validated, frozen Topology. `base_dir` (default: the directory of the topology
        file being loaded, else the current directory) is where components run unless they say
        otherwise; `source` names the file in error messages."""
        loading = _LOADING.get()
        if source is None and loading is not None:
            source = loading.file
        if base_dir is None:
            base_dir = loading.base_dir if loading is not None else os.getcwd()
        base = Path(os.path.abspath(base_dir))
        components = tuple(_component(raw, base, source) for raw in self._components)
        config = copy.deepcopy(self.config) if isinstance(self.config, dict) else self.config
        topology = Topology(self.name, components, config, source)
        validate(topology)
        return topology


# ---- raw values -> model ------------------------------------------------------------------------


def _component(raw: _RawComponent, base: Path, file: str | None) -> Component:
    _check_id(raw.id, file)
    where = {"file": file, "component": raw.id}
    if raw.config is not None and not isinstance(raw.config, dict):
        raise TopologyError("config must be a mapping of keys to values", key="config", **where)
    return Component(
        id=raw.id,
        kind=raw.kind,
        command=_command(raw.command, **where),
        outputs=_outputs(raw.outputs, **where),
        inputs=tuple(_input(i, **where) for i in raw.inputs),
        parallelism=raw.parallelism,
        config=copy.deepcopy(raw.config or {}),
        cwd=_cwd(raw.cwd, base, **where),
        env=_env(raw.env, **where),
        serializer=raw.serializer,
        heartbeats=raw.heartbeats,
        activate=raw.activate,
    )


def _command(value: object, *, file: str | None, component: str) -> tuple[str, ...]:
    where = {"file": file, "component": component, "key": "command"}
    if value is None:
        raise TopologyError(
            "missing command: give the argv list to run, e.g. [python, my_bolt.py]", **where
        )
    if isinstance(value, str):
        raise TopologyError(
            f"must be a list of arguments (argv), not a string: commands run "
            f"without a shell, so write {_argv_hint(value)}",
            **where,
        )
    if not isinstance(value, (list, tuple)):
        raise TopologyError(
            f"must be a list of arguments (argv), e.g. [python, my_bolt.py], "
            f"not {type(value).__name__}",
            **where,
        )
    if not value:
        raise TopologyError(
            "is empty: give the argv list to run, e.g. [python, my_bolt.py]", **where
        )
    for i, arg in enumerate(value):
        if not isinstance(arg, str) or not arg:
            raise TopologyError(
                f"argument {i} must be a non-empty string, got {arg!r} (quote numbers in YAML)",
                **where,
            )
    return tuple(value)


def _argv_hint(text: str) -> str:
    try:
        return "[" + ", ".join(shlex.split(text)) + "]"
    except ValueError:
        return "[program, argument, ...]"


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


def _input(raw: _RawInput, *, file: str | None, component: str) -> Input:
    key = f"inputs.{raw.source}"
    where = {"file": file, "component": component, "key": key}
    if not isinstance(raw.source, str):
        raise TopologyError(
            f"source must be a component id (a string), got {raw.source!r}", **where
        )
    if not isinstance(raw.grouping, str):
        raise TopologyError(
            f"grouping must be one of {', '.join(GROUPING_TYPES)}, got {raw.grouping!r}", **where
        )
    fields = (raw.fields,) if isinstance(raw.fields, str) else raw.fields
    if not isinstance(fields, (list, tuple)):
        raise TopologyError(f"fields must be a list of field names, got {raw.fields!r}", **where)
    # Flux users write SHUFFLE; both spellings mean the same
    return Input(raw.source, raw.stream, Grouping(raw.grouping.lower(), tuple(fields)))


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


def _env(value: object, *, file: str | None, component: str) -> dict[str, str]:
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


# ================================================================================================
# Validation
# ================================================================================================


def validate(topology: Topology, *, strict_config: bool = True) -> None:
    """Raise TopologyError (naming file, component, key) for the first problem found. Checks
    structure first, then references between components, then the file system (commands,
    scripts, cwds). `strict_config`: reject topology-wide keys in component config instead of
    dropping them silently as Storm does (Flux loaders pass False to stay Storm-compatible)."""
    file = topology.source
    _check_name(topology.name, file)
    cfg.check_config(topology.config, file=file)
    _check_ids(topology, file)
    for component in topology.components:
        _check_component(component, file, strict_config)
    ids = {c.id: c for c in topology.components}
    for component in topology.components:
        _check_inputs(component, ids, file)
    for component in topology.components:
        _check_launchable(component, file)


def _check_name(name: object, file: str | None) -> None:
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


def _check_id(component_id: object, file: str | None) -> None:
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


def _check_ids(topology: Topology, file: str | None) -> None:
    if not topology.spouts:
        raise TopologyError(
            "the topology has no spouts: nothing would emit tuples", file=file, key="spouts"
        )
    seen: dict[str, str] = {}
    for c in topology.components:
        _check_id(c.id, file)
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
    _command(c.command, **where)
    if not cfg._is_int(c.parallelism) or c.parallelism < 1:
        raise TopologyError(
            f"parallelism must be an integer >= 1, got {c.parallelism!r}",
            key="parallelism",
            **where,
        )
    _check_outputs(c, file)
    cfg.check_config(c.config, file=file, component=c.id, strict=strict_config)
    _check_cwd(c, file)
    _env(c.env, **where)
    if c.serializer not in SERIALIZERS:
        raise TopologyError(
            f"serializer must be one of {', '.join(SERIALIZERS)}, got {c.serializer!r}",
            key="serializer",
            **where,
        )
    for key in ("heartbeats", "activate"):
        if not isinstance(getattr(c, key), bool):
            raise TopologyError(f"must be true or false, got {getattr(c, key)!r}", key=key, **where)
    if c.is_spout and c.inputs:
        raise TopologyError(
            "a spout takes no inputs (only bolts subscribe to streams)", key="inputs", **where
        )
    if not c.is_spout and not c.inputs:
        raise TopologyError(
            "bolt has no inputs: subscribe it to a spout or bolt, e.g. "
            "'inputs: {my-spout: shuffle}'",
            key="inputs",
            **where,
        )


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


def _check_grouping(grouping: Grouping, where: dict) -> None:
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


# ---- can it start? ------------------------------------------------------------------------------


def host_bin_dir() -> str:
    """The host interpreter's bin directory, first on every component's PATH (so `python` is the
    interpreter the host runs on). Not resolved: a venv's python is a symlink out of the venv."""
    return os.path.dirname(sys.executable)


def search_path(env: Mapping[str, str] | None = None) -> str:
    """The PATH a component's executable is looked up on: the host's bin directory, the host's
    PATH, then any PATH the component's `env` adds (appended, as Storm's setEnv does)."""
    parts = [host_bin_dir(), os.environ.get("PATH", "")]
    if env and env.get("PATH"):
        parts.append(env["PATH"])
    return os.pathsep.join(p for p in parts if p)


def find_executable(program: str, cwd: str, env: Mapping[str, str] | None = None) -> str | None:
    """Where argv[0] would be found: a name with a slash is a path relative to `cwd` (as exec
    resolves it in the child), a bare name is looked up on `search_path(env)`."""
    if os.sep in program or (os.altsep and os.altsep in program):
        path = os.path.normpath(os.path.join(cwd, program))
        return path if os.path.isfile(path) and os.access(path, os.X_OK) else None
    return shutil.which(program, path=search_path(env))


_SCRIPT_ARG = re.compile(r"[^\s]+(" + "|".join(re.escape(e) for e in SCRIPT_EXTENSIONS) + r")")


# options whose value is code or a module name (python -c/-m, node -e, bash -c, ruby -e)
_CODE_OPTIONS = frozenset({"-c", "-m", "-e", "--eval", "-p", "--print"})


def _looks_like_script(arg: str) -> bool:
    """`split.py`, `lib/count.js`: worth checking. Options, URLs and code snippets are not."""
    return not arg.startswith("-") and "://" not in arg and _SCRIPT_ARG.fullmatch(arg) is not None


def _check_launchable(c: Component, file: str | None) -> None:
    where = {"file": file, "component": c.id, "key": "command"}
    program = c.command[0]
    if find_executable(program, c.cwd, c.env) is None:
        raise TopologyError(_not_found(program, c.cwd), **where)
    for previous, arg in zip(c.command, c.command[1:]):
        if previous in _CODE_OPTIONS:
            continue  # `python -m pkg.mod`, `bash -c code`: not a file
        if _looks_like_script(arg) and not os.path.exists(os.path.join(c.cwd, arg)):
            raise TopologyError(
                f"script {arg!r} does not exist in the component's directory {c.cwd}", **where
            )


def _not_found(program: str, cwd: str) -> str:
    if os.sep not in program:
        return (
            f"executable {program!r} not found on PATH (the host's {host_bin_dir()} is "
            f"searched first); install it or give its path"
        )
    path = os.path.join(cwd, program)
    if not os.path.exists(path):
        return f"{program!r} does not exist (relative to the component's directory {cwd})"
    if os.path.isdir(path):
        return f"{program!r} is a directory, not a program"
    return (
        f"{program!r} is not executable: chmod +x it, or run it through its interpreter, "
        f"e.g. [bash, {program}]"
    )
