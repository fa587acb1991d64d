"""A Topology -> Flux YAML that Apache Storm's Flux runs unchanged (`python -m host export-flux`).

Shell components become `FluxShellSpout` / `FluxShellBolt` with the same argv (one-argument
constructor, Storm >= 1.0.2), their streams declared with `setDefaultStream` / `setNamedStream`,
their config with one `addComponentConfig` per key (Storm >= 1.1.0) and their env with `setEnv`.
Our built-ins go back to the Java classes they stand for. Partial-key groupings become CUSTOM
`PartialKeyGrouping` groupings whose fields are an `org.apache.storm.tuple.Fields` bean in
`components` (Flux cannot pass a YAML list where Java expects a Fields object).

Loading the exported file here gives back the same Topology (modulo `source`) whenever the
topology only uses what Flux can say; what it cannot say is reported with a warning (dropped) or
a TopologyError (the exported file would not mean the same topology), never silently changed:
* streams declared with no fields: Flux fails on empty lists given for Java arrays -> left out
  (an error if a bolt subscribes to one);
* per-component `serializer`, `heartbeats`, `activate`, `pipelining` (host-only switches) -> left
  out (Storm writes spouts one command at a time anyway);
* a `cwd` other than the resources directory or the directory the host runs in -> left out
  (Storm runs every shell component in the topology's resources directory);
* config or other outputs on a built-in (the Java classes have no such knobs) -> error;
* a transactional topology (`transactional:`, `batch:`) -> error: Storm cannot run multilang
  components in a transactional topology (docs/transactional.md).

DRPC's parts (docs/drpc.md §3.1) go back to `DRPCSpout` (its function the one constructor
argument) and `ReturnResults`; config on them is an error, as on the built-ins. A linear DRPC
topology (`drpc:`) is an error: Flux has no `LinearDRPCTopologyBuilder`.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

import yaml

from host.errors import TopologyError
from host.topology.flux_drpc import DRPC_SPOUT_CLASS, RETURN_RESULTS_CLASS
from host.topology.flux_java import (
    FIELDS_CLASS,
    FLUX_SHELL_BOLT,
    FLUX_SHELL_SPOUT,
    PARTIAL_KEY_GROUPING,
    TEST_WORD_SPOUT,
    Builtin,
    builtin_for_command,
    code_dir,
)
from host.topology.model import (
    ALL,
    DIRECT,
    DRPC_SPOUT,
    FIELDS,
    GLOBAL,
    IN_HOST_OUTPUTS,
    LOCAL_OR_SHUFFLE,
    NONE,
    PARTIAL_KEY,
    RETURN_RESULTS,
    SHUFFLE,
    Component,
    Input,
    Topology,
)
from host.topology.settings import MAX_TASK_PARALLELISM
from multilang.messages import DEFAULT_STREAM

log = logging.getLogger("host.topology.export")

_FLUX_TYPES = {
    SHUFFLE: "SHUFFLE",
    LOCAL_OR_SHUFFLE: "LOCAL_OR_SHUFFLE",
    FIELDS: "FIELDS",
    GLOBAL: "GLOBAL",
    ALL: "ALL",
    NONE: "NONE",
    DIRECT: "DIRECT",
    PARTIAL_KEY: "CUSTOM",
}


def export_flux(topology: Topology, *, base_dir: str | os.PathLike | None = None) -> str:
    """Flux YAML text for `topology`. `base_dir`: the directory the resources directory is
    relative to (default: the topology file's directory)."""
    _refuse_linear_drpc(topology)  # first: its finish-batch bolts are not transactional
    _refuse_transactional(topology)
    base = _base(topology, base_dir)
    fields_beans = _FieldsBeans()
    doc: dict = {"name": topology.name}
    if topology.config:
        doc["config"] = _plain(topology.config)
    spouts = [_component(c, topology, base) for c in topology.spouts]
    bolts = [_component(c, topology, base) for c in topology.bolts]
    streams = [_stream(c, i, topology, fields_beans) for c in topology.bolts for i in c.inputs]
    if fields_beans.beans:
        doc["components"] = fields_beans.beans
    doc["spouts"] = spouts
    if bolts:
        doc["bolts"] = bolts
    if streams:
        doc["streams"] = streams
    return _header(topology) + yaml.dump(
        doc,
        Dumper=_Dumper,
        sort_keys=False,
        default_flow_style=False,
        allow_unicode=True,
        width=1000,
    )


class _Dumper(yaml.SafeDumper):
    """Block mappings; lists of scalars on one line (`[python, split.py]`), as Flux files are
    usually written."""


def _represent_list(dumper: yaml.SafeDumper, data: list) -> yaml.Node:
    flat = all(not isinstance(item, (list, tuple, dict)) for item in data)
    return dumper.represent_sequence("tag:yaml.org,2002:seq", data, flow_style=flat)


_Dumper.add_representer(list, _represent_list)


def _refuse_transactional(topology: Topology) -> None:
    """Storm's transactional topologies take Java components only (`TransactionalTopologyBuilder`
    has no place for a `ShellBolt`, and Storm's shell components do not speak batch/1): as shell
    components the batch group would run as ordinary bolts, without batches or exactly-once, so
    exporting would silently change what the topology means."""
    batch = next((c for c in topology.components if c.batch is not None), None)
    if topology.transactional_id is None and batch is None:
        return
    raise TopologyError(
        "a transactional topology cannot be exported to Flux: Storm runs multilang components "
        "as ShellSpout/ShellBolt, which cannot take part in its transactional topologies (they "
        "take Java components only) and do not speak batch/1, so its batches and exactly-once "
        "would be lost; run it with 'python -m host local', or remove 'transactional:' and "
        "'batch:' from a copy to export it as an ordinary topology",
        file=topology.source,
        component=batch.id if batch is not None else None,
        key="batch" if batch is not None else "transactional",
    )


def _refuse_linear_drpc(topology: Topology) -> None:
    """Storm builds a linear DRPC topology in Java (`LinearDRPCTopologyBuilder` wraps each bolt in
    a CoordinatedBolt and adds PrepareRequest and JoinResult); Flux has no way to say it."""
    if not topology.is_linear_drpc:
        return
    raise TopologyError(
        "a linear DRPC topology ('drpc:') cannot be exported to Flux: Flux has no "
        "LinearDRPCTopologyBuilder (Storm builds one in Java, wrapping each bolt); run it with "
        "'python -m host local', or write it with DRPCSpout and ReturnResults (docs/drpc.md "
        "§3.1) to export it",
        file=topology.source,
        key="drpc",
    )


def _base(topology: Topology, base_dir: str | os.PathLike | None) -> Path:
    if base_dir is not None:
        return Path(os.path.abspath(base_dir))
    if topology.source:
        return Path(os.path.abspath(topology.source)).parent
    return Path(os.getcwd())


def _header(topology: Topology) -> str:
    source = f" from {topology.source}" if topology.source else ""
    return (
        f"# Flux topology exported by `python -m host export-flux`{source}.\n"
        f"# Run it on a Storm cluster from a jar that holds the component scripts (and the\n"
        f"# multilang client libraries they use) under resources/:\n"
        f"#   storm jar <topology.jar> org.apache.storm.flux.Flux --remote <this file>\n"
    )


def _plain(value: object) -> object:
    """YAML-safe copy: tuples (from the Python builder) become lists."""
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def _where(topology: Topology, c: Component) -> dict:
    return {"file": topology.source, "component": c.id}


# ---- spouts and bolts ---------------------------------------------------------------------------


def _component(c: Component, topology: Topology, base: Path) -> dict:
    if c.in_host is not None:
        return _in_host(c, topology)
    _warn_host_only_switches(c)
    _warn_task_cap(c, topology)
    builtin = builtin_for_command(c.command)
    if builtin is not None:
        return _builtin(c, builtin, topology)
    entry: dict = {
        "id": c.id,
        "className": FLUX_SHELL_SPOUT if c.is_spout else FLUX_SHELL_BOLT,
        "constructorArgs": [list(c.command)],
    }
    methods = _stream_methods(c, topology) + _config_methods(c) + _env_methods(c)
    methods += _cwd_methods(c, base)
    if methods:
        entry["configMethods"] = methods
    entry["parallelism"] = c.parallelism
    return entry


def _stream_methods(c: Component, topology: Topology) -> list[dict]:
    methods = []
    for stream, fields in c.outputs.items():
        if not fields:
            if topology.subscribers(c.id, stream):
                raise TopologyError(
                    f"stream {stream!r} has no fields and bolts subscribe to it: "
                    f"Storm's Flux cannot declare a stream without fields (it "
                    f"fails on empty lists); give the stream a field",
                    key=f"outputs.{stream}",
                    **_where(topology, c),
                )
            log.warning(
                "%s: stream %r has no fields: left out (Storm's Flux cannot declare a "
                "stream without fields); emits to it would fail on Storm",
                c.id,
                stream,
            )
            continue
        if stream == DEFAULT_STREAM:
            methods.append({"name": "setDefaultStream", "args": [list(fields)]})
        else:
            methods.append({"name": "setNamedStream", "args": [stream, list(fields)]})
    return methods


def _config_methods(c: Component) -> list[dict]:
    methods = []
    for key, value in c.config.items():
        if value is None:
            log.warning("%s: config %s is null: left out (Flux refuses null arguments)", c.id, key)
            continue
        methods.append({"name": "addComponentConfig", "args": [key, _plain(value)]})
    return methods


def _env_methods(c: Component) -> list[dict]:
    return [{"name": "setEnv", "args": [dict(c.env)]}] if c.env else []


def _cwd_methods(c: Component, base: Path) -> list[dict]:
    cwd = os.path.normpath(c.cwd)
    if cwd == os.path.normpath(code_dir(base)):
        return []
    if cwd == os.path.normpath(os.getcwd()):
        return [{"name": "changeChildCWD", "args": [False]}]
    log.warning(
        "%s: cwd %s left out: Storm runs shell components in the topology's resources "
        "directory (here %s)",
        c.id,
        c.cwd,
        code_dir(base),
    )
    return []


def _warn_host_only_switches(c: Component) -> None:
    defaults = {"serializer": "json", "heartbeats": True, "activate": True, "pipelining": None}
    for name, default in defaults.items():
        value = getattr(c, name)
        if value != default:
            log.warning(
                "%s: %s: %r left out: Flux has no per-component setting for it", c.id, name, value
            )


def _warn_task_cap(c: Component, topology: Topology) -> None:
    cap = c.config.get(MAX_TASK_PARALLELISM, topology.config.get(MAX_TASK_PARALLELISM))
    if isinstance(cap, int) and not isinstance(cap, bool) and c.parallelism > cap:
        log.warning(
            "%s: Storm will run %d task(s), not %d: %s is %d",
            c.id,
            cap,
            c.parallelism,
            MAX_TASK_PARALLELISM,
            cap,
        )


def _builtin(c: Component, builtin: Builtin, topology: Topology) -> dict:
    where = _where(topology, c)
    if c.kind != builtin.kind:
        raise TopologyError(
            f"{builtin.class_name} is a {builtin.kind}, declared here as a {c.kind}",
            key="command",
            **where,
        )
    if dict(c.outputs) != dict(builtin.outputs):
        raise TopologyError(
            f"{builtin.short_name} declares {dict(builtin.outputs) or 'no'} "
            f"outputs; the Java class cannot declare {dict(c.outputs)}",
            key="outputs",
            **where,
        )
    entry: dict = {"id": c.id, "className": builtin.class_name}
    config = dict(c.config)
    if builtin.class_name == TEST_WORD_SPOUT and config == {MAX_TASK_PARALLELISM: 1}:
        entry["constructorArgs"] = [False]  # TestWordSpout(isDistributed=false)
        config = {}
    if config:
        raise TopologyError(
            f"{builtin.short_name} is a Java class without addComponentConfig: "
            f"Storm's Flux cannot give it component config "
            f"({', '.join(config)})",
            key="config",
            **where,
        )
    if c.env:
        log.warning(
            "%s: env left out: %s is a Java class, not a subprocess", c.id, builtin.short_name
        )
    entry["parallelism"] = c.parallelism
    return entry


def _in_host(c: Component, topology: Topology) -> dict:
    """DRPC's parts: the Java classes they are in Storm (docs/drpc.md §3.1)."""
    where = _where(topology, c)
    if c.in_host not in (DRPC_SPOUT, RETURN_RESULTS):
        raise TopologyError(
            f"a {c.in_host} part belongs to a linear DRPC topology, which Flux cannot say",
            key="in_host",
            **where,
        )
    class_name = DRPC_SPOUT_CLASS if c.in_host == DRPC_SPOUT else RETURN_RESULTS_CLASS
    short = class_name.rsplit(".", 1)[-1]
    if dict(c.outputs) != IN_HOST_OUTPUTS[c.in_host]:
        raise TopologyError(
            f"{short} declares {IN_HOST_OUTPUTS[c.in_host] or 'no'} outputs; the Java class "
            f"cannot declare {dict(c.outputs)}",
            key="outputs",
            **where,
        )
    if c.config:
        raise TopologyError(
            f"{short} is a Java class without addComponentConfig: Storm's Flux cannot give it "
            f"component config ({', '.join(c.config)})",
            key="config",
            **where,
        )
    entry: dict = {"id": c.id, "className": class_name}
    if c.in_host == DRPC_SPOUT:
        entry["constructorArgs"] = [c.drpc_function]
    entry["parallelism"] = c.parallelism
    return entry


# ---- streams ------------------------------------------------------------------------------------


class _FieldsBeans:
    """One `org.apache.storm.tuple.Fields` bean per distinct field list of a partial-key
    grouping."""

    def __init__(self) -> None:
        self.beans: list[dict] = []
        self._ids: dict[tuple[str, ...], str] = {}

    def ref(self, fields: tuple[str, ...]) -> str:
        if fields not in self._ids:
            bean_id = "fields-" + "-".join(fields)
            taken = set(self._ids.values())
            n = 2
            while bean_id in taken:
                bean_id = f"fields-{'-'.join(fields)}-{n}"
                n += 1
            self._ids[fields] = bean_id
            self.beans.append(
                {"id": bean_id, "className": FIELDS_CLASS, "constructorArgs": [list(fields)]}
            )
        return self._ids[fields]


def _stream(bolt: Component, inp: Input, topology: Topology, beans: _FieldsBeans) -> dict:
    grouping: dict = {"type": _FLUX_TYPES[inp.grouping.type]}
    if inp.stream != DEFAULT_STREAM:
        grouping["streamId"] = inp.stream
    if inp.grouping.type == FIELDS:
        grouping["args"] = list(inp.grouping.fields)
    elif inp.grouping.type == PARTIAL_KEY:
        grouping["customClass"] = {
            "className": PARTIAL_KEY_GROUPING,
            "constructorArgs": [{"ref": beans.ref(inp.grouping.fields)}],
        }
    label = inp.source if inp.stream == DEFAULT_STREAM else f"{inp.source} [{inp.stream}]"
    return {
        "name": f"{label} --> {bolt.id}",
        "from": inp.source,
        "to": bolt.id,
        "grouping": grouping,
    }
