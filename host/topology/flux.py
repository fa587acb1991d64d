"""Apache Storm Flux YAML -> the frozen Topology (docs/flux.md lists the subset supported).

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
  `LogInfoBolt`, `TestWordCounter`, `TestWordSpout`; Storm's `DRPCSpout` and `ReturnResults`,
  run inside the host (`host.topology.flux_drpc`, docs/drpc.md §3.1). Any other Java class is an
  error.
* `components` (beans), built in order as Flux builds them, `ref` / `reflist` wherever Flux
  resolves them (`host.topology.flux_beans`): maps, lists, strings and `Fields` are emulated; a
  bean of another class is an error naming it when a spout, bolt or grouping needs it, a warning
  when none does.
* `streams` with every Flux grouping type; CUSTOM only with `PartialKeyGrouping` (-> partial_key).
* `includes` (files, `override` true/false, one level deep as in Flux).
* `${ENV-NAME}` substitution on raw lines before parsing, only when asked (Flux's `-e`).

Working directory of a shell component: `resources/` beside the topology file when there is one
(a topology jar's layout; Storm runs every shell component in the jar's `resources/`), else the
topology file's directory. `changeChildCWD(false)` means Storm's worker directory; here that is
the directory the host was started from (`os.getcwd()` when loading).

Where this differs from Storm's Flux it is kinder (an error or a warning instead of a crash or a
silent surprise); the differences are listed in examples/storm-flux/README.md.

The file as Flux reads it is `host.topology.flux_document`; the Java classes this host stands in
for are `host.topology.flux_java`; the streams are `host.topology.flux_streams`.
"""

from __future__ import annotations

import logging
import os
from dataclasses import replace
from pathlib import Path

from host.errors import TopologyError
from host.topology.flux_beans import (
    ArgumentError,
    Beans,
    EmulatedComponent,
    JavaClass,
    Where,
    build_object,
)
from host.topology.flux_document import (
    COMPONENT_KEYS,
    Definition,
    FluxDocument,
    check_keys,
    read_flux,
)
from host.topology.flux_drpc import DRPC_CLASSES, InHostPart
from host.topology.flux_java import (
    BEAN_CLASSES,
    BUILTIN_CLASSES,
    BUILTINS,
    COMPONENT_CLASSES,
    SHELL_CLASSES,
    SHELL_JAVA,
    ShellWrapper,
    check_jar_layout,
    code_dir,
)
from host.topology.flux_streams import stream_input
from host.topology.model import BOLT, IN_HOST_OUTPUTS, SPOUT, Component, Input, Topology
from host.topology.setting_checks import is_int
from host.topology.settings import MAX_TASK_PARALLELISM, MULTILANG_SERIALIZER
from host.topology.targets import LOCAL, Target
from host.topology.validation import check_name, validate

# the Flux loader's one logger, whichever of its modules warns
log = logging.getLogger("host.topology.flux")

# topology.multilang.serializer: Storm's own JSON serializer, or a MessagePack one such as
# pyleus's (see docs/protocol.md on serializers); it applies to shell components only (the
# built-ins stand for Java classes).
JSON_SERIALIZERS = (
    "org.apache.storm.multilang.JsonSerializer",
    "backtype.storm.multilang.JsonSerializer",
)


def load_flux(
    doc: object,
    *,
    file: str | None,
    base_dir: str | os.PathLike[str],
    env_filter: bool = False,
    target: Target = LOCAL,
) -> Topology:
    """A parsed Flux document -> a Topology validated for `target`. `base_dir` is the topology
    file's directory (the resources directory, and where relative includes are found). With
    `env_filter`, the caller has already substituted `${ENV-NAME}` in the main file; included
    files are substituted here."""
    base = Path(os.path.abspath(base_dir))
    flux = read_flux(doc, file=file, base_dir=base, env_filter=env_filter)
    _multilang_serializer(flux.config, file)  # a bad value is an error even with no shell parts
    beans = Beans(flux.beans, BEAN_CLASSES)
    spouts = [_component(d, SPOUT, flux, base, beans) for d in flux.spouts.values()]
    bolts = {d.body["id"]: _component(d, BOLT, flux, base, beans) for d in flux.bolts.values()}
    declared = {c.id: c for c in (*spouts, *bolts.values())}
    inputs: dict[str, list[Input]] = {}
    for stream in flux.streams:
        receiver, subscription = stream_input(stream, flux, declared, beans)
        inputs.setdefault(receiver, []).append(subscription)
    left_out = [bolt_id for bolt_id in bolts if bolt_id not in inputs]
    if left_out:
        log.warning(
            "%s: bolt(s) %s left out: no stream goes to them (Flux only adds bolts "
            "that are the 'to' of a stream)",
            file or "<flux>",
            ", ".join(left_out),
        )
    _check_sources(flux, left_out)
    beans.warn_unused()
    components = (
        *spouts,
        *(
            replace(bolt, inputs=tuple(inputs[bolt_id]))
            for bolt_id, bolt in bolts.items()
            if bolt_id in inputs
        ),
    )
    components = tuple(_cap_tasks(c, flux.config, file) for c in components)
    topology = Topology(check_name(flux.name, file), components, flux.config, source=file)
    # Flux has no `batch:`; the target still decides whether a `topology.transactional.id`
    # without a batch spout is one (on Spark every spout is transactional)
    validate(topology, strict_config=False, target=target)
    return topology


def _check_sources(flux: FluxDocument, left_out: list[str]) -> None:
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
    if not is_int(cap) or cap < 1:
        raise TopologyError(
            f"must be a positive integer, got {cap!r}",
            file=file,
            component=c.id if MAX_TASK_PARALLELISM in c.config else None,
            key=MAX_TASK_PARALLELISM,
        )
    return replace(c, parallelism=min(c.parallelism, cap)) if is_int(c.parallelism) else c


# ---- spouts and bolts ---------------------------------------------------------------------------


def _component(d: Definition, kind: str, flux: FluxDocument, base: Path, beans: Beans) -> Component:
    body, component_id = d.body, d.body["id"]
    where = {"file": d.file, "component": component_id}
    check_keys(body, COMPONENT_KEYS, **where)
    class_name = body.get("className")
    if not isinstance(class_name, str) or not class_name:
        raise TopologyError(
            f"className is required, e.g. {SHELL_CLASSES[kind]}", key="className", **where
        )
    build = Where(d.file, component_id)
    if class_name in SHELL_CLASSES.values():
        if class_name != SHELL_CLASSES[kind]:
            raise TopologyError(
                f"{class_name} is a {'bolt' if kind == SPOUT else 'spout'} "
                f"class listed under {kind}s; use {SHELL_CLASSES[kind]}",
                key="className",
                **where,
            )
        shell = build_object(body, SHELL_JAVA[kind], beans, build, beans.use)
        assert isinstance(shell, ShellWrapper)
        cwd = os.getcwd() if shell.worker_dir else code_dir(base)
        check_jar_layout(shell.argv, cwd, base, where)
        component = Component(
            id=component_id,
            kind=kind,
            command=shell.argv,
            outputs=shell.outputs,
            parallelism=_tasks(d),
            config=shell.config,
            cwd=cwd,
            env=shell.env,
            serializer=_multilang_serializer(flux.config, d.file),
        )
    elif class_name in BUILTINS:
        builtin = BUILTINS[class_name]
        if builtin.kind != kind:
            raise TopologyError(
                f"{builtin.class_name} is a {builtin.kind}, listed under {kind}s",
                key="className",
                **where,
            )
        config = build_object(body, BUILTIN_CLASSES[class_name], beans, build, beans.use)
        assert isinstance(config, dict)
        component = Component(
            id=component_id,
            kind=kind,
            command=builtin.command,
            outputs=dict(builtin.outputs),
            parallelism=_tasks(d),
            config=config,
            # a Java class in Storm, with no directory of its own: the topology file's (not
            # resources/, where a user's package could shadow `components`)
            cwd=str(base),
        )
    elif class_name in COMPONENT_CLASSES:
        component = _emulated(d, kind, COMPONENT_CLASSES[class_name], base, beans, build)
    elif class_name in DRPC_CLASSES:
        part = build_object(body, DRPC_CLASSES[class_name], beans, build, beans.use)
        assert isinstance(part, InHostPart)
        if part.kind != kind:
            raise TopologyError(
                f"{class_name} is a {part.kind}, listed under {kind}s", key="className", **where
            )
        component = Component(
            id=component_id,
            kind=kind,
            command=(),  # run inside the host: docs/drpc.md
            outputs=dict(IN_HOST_OUTPUTS[part.role]),
            parallelism=_tasks(d),
            cwd=str(base),
            in_host=part.role,
            drpc_function=part.function,
        )
    else:
        needs = beans.unemulated_needs(body, build)
        also = (
            "; nor does it emulate the beans it is built from: "
            + ", ".join(f"{u.bean_id!r} ({u.class_name})" for u in needs)
            if needs
            else ""
        )
        raise TopologyError(
            f"Java class {class_name} cannot run here: this host runs shell components "
            f"({SHELL_CLASSES[kind]}) and, as built-in Python equivalents, "
            f"{', '.join(b.short_name for b in BUILTINS.values())}; as the ready Kafka "
            f"components {' and '.join(COMPONENT_CLASSES)}; and, inside the host, "
            f"{' and '.join(DRPC_CLASSES)}{also}",
            key="className",
            **where,
        )
    config_map = _component_config_map(d)
    if config_map:
        # Flux applies the per-component `config:` map after the component's own configuration
        component = replace(component, config={**component.config, **config_map})
    return component


def _emulated(
    d: Definition, kind: str, java: JavaClass, base: Path, beans: Beans, build: Where
) -> Component:
    """A Storm library's spout or bolt that a ready component runs in its place (the Kafka
    spout and bolt: host/topology/flux_kafka.py)."""
    built = build_object(d.body, java, beans, build, beans.use)
    assert isinstance(built, EmulatedComponent)
    try:
        command, outputs, config = built.as_component(kind)
    except ArgumentError as exc:
        raise build.error(str(exc), "className") from None
    return Component(
        id=d.body["id"],
        kind=kind,
        command=command,
        outputs=outputs,
        parallelism=_tasks(d),
        config=config,
        cwd=str(base),  # as for the built-ins: not resources/, which could shadow `components`
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


def _tasks(d: Definition) -> int:
    """How many tasks (subprocesses) a spout or bolt runs: numTasks if given, else
    parallelism."""
    body = d.body
    where = {"file": d.file, "component": body["id"]}
    parallelism = body.get("parallelism", 1)
    if not is_int(parallelism) or parallelism < 1:
        raise TopologyError(
            f"parallelism must be an integer >= 1, got {parallelism!r}", key="parallelism", **where
        )
    num_tasks = body.get("numTasks")
    if num_tasks is None or num_tasks == -1:  # -1 is Flux's "not set"
        return parallelism
    if not is_int(num_tasks) or num_tasks < 1:
        raise TopologyError(
            f"numTasks must be an integer >= 1, got {num_tasks!r}", key="numTasks", **where
        )
    return num_tasks


def _component_config_map(d: Definition) -> dict:
    value = d.body.get("config")
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise TopologyError(
            "config must be a mapping of keys to values",
            file=d.file,
            component=d.body["id"],
            key="config",
        )
    return dict(value)
