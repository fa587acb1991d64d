"""Flux's `streams:` -> subscriptions: which bolt receives which stream of which component, and
the grouping, Flux's grouping types mapped to ours (CUSTOM only with Storm's
`PartialKeyGrouping`, whose constructor this module emulates)."""

from __future__ import annotations

import logging

from host.errors import TopologyError
from host.topology.flux_document import (
    GROUPING_KEYS,
    OBJECT_KEYS,
    STREAM_KEYS,
    Definition,
    FluxDocument,
    check_keys,
)
from host.topology.flux_java import FIELDS_CLASS, PARTIAL_KEY_GROUPING, field_list
from host.topology.model import (
    ALL,
    DIRECT,
    FIELDS,
    GLOBAL,
    LOCAL_OR_SHUFFLE,
    NONE,
    PARTIAL_KEY,
    SHUFFLE,
    Component,
    Grouping,
    Input,
)
from multilang.messages import DEFAULT_STREAM

# the Flux loader's one logger, whichever of its modules warns
log = logging.getLogger("host.topology.flux")

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


def stream_input(
    d: Definition,
    flux: FluxDocument,
    declared: dict[str, Component],
    fields_beans: dict[str, tuple[str, ...]],
) -> tuple[str, Input]:
    """One `streams:` entry -> the bolt that subscribes, and its subscription. `declared`: the
    spouts and bolts by id; `fields_beans`: the Fields beans of `components:` by id."""
    body = d.body
    where = {"file": d.file}
    check_keys(body, STREAM_KEYS, prefix=f"{d.where}.", **where)
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
    check_keys(grouping, GROUPING_KEYS, prefix=f"{key}.", **where)
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
    if not isinstance(kind, str) or kind not in FLUX_GROUPINGS:
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
    check_keys(custom, OBJECT_KEYS, prefix=f"{key}.", **where)
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
        return field_list(arg, key=f"{key}.constructorArgs", file=where["file"], component=None)
    raise TopologyError(
        f"expected {{ref: <Fields component id>}}, got {arg!r}",
        key=f"{key}.constructorArgs",
        **where,
    )
