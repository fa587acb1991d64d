"""Flux's `streams:` -> subscriptions: which bolt receives which stream of which component, and
the grouping, Flux's grouping types mapped to ours (CUSTOM only with Storm's
`PartialKeyGrouping`, whose constructors this module emulates; its Fields argument is a bean)."""

from __future__ import annotations

import logging
from dataclasses import dataclass

from host.errors import TopologyError
from host.topology.flux_beans import Args, ArgumentError, Beans, JavaClass, Where, build_object
from host.topology.flux_document import (
    GROUPING_KEYS,
    OBJECT_KEYS,
    STREAM_KEYS,
    Definition,
    FluxDocument,
    check_keys,
)
from host.topology.flux_java import FIELDS_CLASS, PARTIAL_KEY_GROUPING, Fields, field_names
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
    beans: Beans,
) -> tuple[str, Input]:
    """One `streams:` entry -> the bolt that subscribes, and its subscription. `declared`: the
    spouts and bolts by id; `beans`: the beans of `components:`."""
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
    model = _grouping(grouping, key, where, declared[source], stream, beans)
    return target, Input(source, stream, model)


def _grouping(
    grouping: dict,
    key: str,
    where: dict,
    source: Component,
    stream: str,
    beans: Beans,
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
            _partial_key_fields(grouping.get("customClass"), key, where, source, stream, beans),
        )
    return Grouping(FLUX_GROUPINGS[kind])


@dataclass(frozen=True)
class _PartialKey:
    """What PartialKeyGrouping's constructor got: its fields, none (the first field of the
    stream), or a plain list (which Storm's Flux rejects)."""

    fields: tuple[str, ...] | None
    plain_list: bool = False


def _new_partial_key(args: Args) -> _PartialKey:
    """PartialKeyGrouping() and PartialKeyGrouping(Fields); the forms with an assignment
    creator or target selector take Java objects this host does not have."""
    if not args:
        return _PartialKey(None)
    (arg,) = args
    if isinstance(arg, Fields):
        return _PartialKey(arg.names)
    if isinstance(arg, list):
        return _PartialKey(field_names(arg), plain_list=True)
    raise ArgumentError(f"expected {{ref: <id of an {FIELDS_CLASS} bean>}}, got {arg!r}")


PARTIAL_KEY_JAVA = JavaClass(
    PARTIAL_KEY_GROUPING,
    {0: _new_partial_key, 1: _new_partial_key},
    constructor_usage=(
        f"PartialKeyGrouping takes one argument, the fields: constructorArgs: "
        f"[{{ref: <id of an {FIELDS_CLASS} bean>}}]"
    ),
)


def _partial_key_fields(
    custom: object,
    key: str,
    where: dict,
    source: Component,
    stream: str,
    beans: Beans,
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
    build = Where(where["file"], None, prefix=f"{key}.")
    partial = build_object(custom, PARTIAL_KEY_JAVA, beans, build, beans.use)
    assert isinstance(partial, _PartialKey)
    if partial.plain_list:
        log.warning(
            "%s: %s.constructorArgs: a plain list of fields is accepted here, but Storm's "
            "Flux rejects it (PartialKeyGrouping takes a Fields object): declare an %s "
            "component and pass {ref: its id} (export-flux writes that form)",
            where["file"],
            key,
            FIELDS_CLASS,
        )
    if partial.fields is not None:
        return partial.fields
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
