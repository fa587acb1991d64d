"""How Flux builds a Java object from its definition, and the `components:` beans built that way
(Storm's `FluxBuilder.java`; docs/flux.md §1.1).

Flux builds every bean, in file order, before any spout or bolt. For each object (bean, spout,
bolt, custom grouping) it calls the constructor whose parameters fit `constructorArgs` (or, with
no `constructorArgs`, the static `factory` with `factoryArgs`, or else the constructor without
arguments), then each of `properties` (a setter), then each of `configMethods`, in order. A
`{ref: id}` or `{reflist: [ids]}` that is a whole argument of a constructor, factory or config
method, or a property's `ref`, is replaced by the bean(s) of that id.

Here a Java class is a `JavaClass`: what its constructors, factories, config methods and setters
do to a Python stand-in. A bean of a class the host does not emulate becomes an `Unemulated`
placeholder: an error naming the bean, its class and the spout, bolt or grouping that needs it
as soon as one does, and a warning when none does (its constructor's side effects are the only
thing Flux would get from it, and none of them reaches a topology of subprocesses).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from host.errors import TopologyError
from host.topology.flux_document import (
    BEAN_KEYS,
    CONFIG_METHOD_KEYS,
    PROPERTY_KEYS,
    Definition,
    check_keys,
)

# the Flux loader's one logger, whichever of its modules warns
log = logging.getLogger("host.topology.flux")

Args = list[object]


class ArgumentError(Exception):
    """What Flux would refuse about one call: no constructor, factory, method or setter of the
    class takes these arguments. The builder adds the file, the component and the key."""


@dataclass(frozen=True)
class Unemulated:
    """The stand-in for a bean this host cannot build: of a class it does not emulate, or of one
    it does but built from such a bean (`cause`)."""

    bean_id: str
    class_name: str
    cause: Unemulated | None = None

    def explain(self) -> str:
        if self.cause is None:
            return (
                f"bean {self.bean_id!r} ({self.class_name}), a Java class this host does not "
                f"emulate (docs/flux.md §1.1 lists those it does)"
            )
        return f"bean {self.bean_id!r} ({self.class_name}), built from {self.cause.explain()}"


def first_unemulated(value: object) -> Unemulated | None:
    """The first placeholder in a value (arguments, a map or list bean holding one)."""
    if isinstance(value, Unemulated):
        return value
    if isinstance(value, dict):
        value = [*value.keys(), *value.values()]
    if isinstance(value, (list, tuple)):
        for item in value:
            found = first_unemulated(item)
            if found is not None:
                return found
    return None


class EmulatedComponent:
    """The stand-in for a spout or bolt class of a Storm library that a ready component of
    `components/` runs in its place (storm-kafka-client's KafkaSpout and KafkaBolt:
    host/topology/flux_kafka.py): what it runs, once Flux has built it."""

    def as_component(
        self, kind: str
    ) -> tuple[tuple[str, ...], dict[str, tuple[str, ...]], dict[str, object]]:
        """(command, outputs, config); ArgumentError for what Storm would refuse when the
        topology starts (a spout class listed as a bolt, a setting it needs missing)."""
        raise NotImplementedError


@dataclass(frozen=True)
class JavaClass:
    """A Java class as Flux can use it, emulated: each callable takes the resolved arguments
    (and the object, for methods and setters) and raises ArgumentError for what Java would not
    accept. Constructors and factories return the stand-in; methods and setters change it."""

    name: str
    constructors: Mapping[int, Callable[[Args], object]]  # by number of arguments
    methods: Mapping[tuple[str, int], Callable[[Any, Args], None]] = field(default_factory=dict)
    setters: Mapping[str, Callable[[Any, object], None]] = field(default_factory=dict)
    factories: Mapping[tuple[str, int], Callable[[Args], object]] = field(default_factory=dict)
    constructor_usage: str = ""  # added to the error when no constructor fits
    methods_usage: str = ""  # the config methods it has, for the error when none fits

    @property
    def short_name(self) -> str:
        return self.name.rsplit(".", 1)[-1]


@dataclass(frozen=True)
class Where:
    """What is being built, for errors: the file, the bean, spout or bolt id (none for a
    grouping), and the path of its definition (e.g. `streams[0].grouping.customClass.`)."""

    file: str | None
    component: str | None
    prefix: str = ""

    def error(self, problem: str, key: str) -> TopologyError:
        return TopologyError(
            problem, file=self.file, component=self.component, key=f"{self.prefix}{key}"
        )


class _Tainted(Exception):
    """An emulated bean whose call failed on an argument that is a placeholder."""

    def __init__(self, cause: Unemulated):
        super().__init__(cause.bean_id)
        self.cause = cause


# ---- the beans ----------------------------------------------------------------------------------


class Beans:
    """The `components:` of a Flux file, built in file order as Flux builds them. Spouts, bolts
    and groupings get them through `build_object`; what they use is remembered, so that
    `warn_unused` can name the placeholders nothing needed."""

    def __init__(self, definitions: Mapping[str, Definition], classes: Mapping[str, JavaClass]):
        self._classes = classes
        self._defined = set(definitions)
        self._values: dict[str, object] = {}
        self._needs: dict[str, set[str]] = {}  # bean id -> the beans its definition refers to
        self._used: set[str] = set()
        self._files: dict[str, str | None] = {}
        for bean_id, d in definitions.items():
            self._values[bean_id] = self._build(bean_id, d)

    def _build(self, bean_id: str, d: Definition) -> object:
        where = Where(d.file, bean_id)
        self._files[bean_id] = d.file
        check_keys(d.body, BEAN_KEYS, file=d.file, component=bean_id)
        class_name = class_name_of(d.body, where)
        needs = self._needs.setdefault(bean_id, set())
        java = self._classes.get(class_name)
        if java is None:
            # its references must name earlier beans all the same: Flux would pass null
            check_definition(d.body, self, where, needs.add)
            return Unemulated(bean_id, class_name)
        try:
            return build_object(d.body, java, self, where, needs.add, placeholders=True)
        except _Tainted as tainted:
            return Unemulated(bean_id, class_name, tainted.cause)

    def resolve(self, args: Args, where: Where, key: str, on_ref: Callable[[str], None]) -> Args:
        """Arguments with each whole-argument `{ref: id}` / `{reflist: [ids]}` replaced, as
        Flux's ObjectDef and ConfigMethodDef replace them (a ref nested deeper is a plain map)."""
        out: Args = []
        for i, arg in enumerate(args):
            if isinstance(arg, dict) and len(arg) == 1 and "ref" in arg:
                out.append(self.ref(arg["ref"], where, f"{key}[{i}].ref", on_ref))
            elif isinstance(arg, dict) and len(arg) == 1 and "reflist" in arg:
                ids = arg["reflist"]
                if not isinstance(ids, list):
                    raise where.error(
                        f"reflist must be a list of bean ids, got {ids!r}", f"{key}[{i}].reflist"
                    )
                out.append(
                    [
                        self.ref(bean_id, where, f"{key}[{i}].reflist[{j}]", on_ref)
                        for j, bean_id in enumerate(ids)
                    ]
                )
            else:
                out.append(arg)
        return out

    def ref(self, bean_id: object, where: Where, key: str, on_ref: Callable[[str], None]) -> object:
        if isinstance(bean_id, str) and bean_id in self._values:
            on_ref(bean_id)
            return self._values[bean_id]
        if isinstance(bean_id, str) and bean_id in self._defined:
            which = "itself" if bean_id == where.component else "a bean defined after this one"
            raise where.error(
                f"ref {bean_id!r} names {which}: Flux builds beans in file order and would "
                f"pass null",
                key,
            )
        raise where.error(
            f"ref {bean_id!r} names no bean in components; they are: "
            f"{', '.join(sorted(self._defined)) or 'none'}",
            key,
        )

    def use(self, bean_id: str) -> None:
        """A spout, bolt or grouping refers to this bean: it and what it is built from are used."""
        if bean_id in self._used:
            return
        self._used.add(bean_id)
        for need in self._needs.get(bean_id, ()):
            self.use(need)

    def unemulated_needs(self, body: Mapping[object, object], where: Where) -> list[Unemulated]:
        """The placeholders a definition refers to (directly or through other beans), for the
        error about a spout or bolt of a class the host does not emulate."""
        refs: set[str] = set()
        check_definition(body, self, where, refs.add)
        found: dict[str, Unemulated] = {}
        todo = sorted(refs)
        while todo:
            bean_id = todo.pop(0)
            self.use(bean_id)
            value = self._values[bean_id]
            if isinstance(value, Unemulated):
                found.setdefault(value.bean_id, value)
            todo += sorted(self._needs.get(bean_id, ()))
        return list(found.values())

    def warn_unused(self) -> None:
        for bean_id, value in self._values.items():
            if bean_id not in self._used and isinstance(value, Unemulated):
                log.warning(
                    "%s: bean %r (%s) left out: no spout, bolt or grouping uses it, and this "
                    "host does not emulate that class (Flux would build it, then not use it)",
                    self._files.get(bean_id) or "<flux>",
                    bean_id,
                    value.class_name,
                )


# ---- building one object ------------------------------------------------------------------------


def class_name_of(body: Mapping[object, object], where: Where) -> str:
    class_name = body.get("className")
    if not isinstance(class_name, str) or not class_name:
        raise where.error(
            f"className is required: the Java class to build, got {class_name!r}", "className"
        )
    return class_name


def build_object(
    body: Mapping[object, object],
    java: JavaClass,
    beans: Beans,
    where: Where,
    on_ref: Callable[[str], None],
    *,
    placeholders: bool = False,
) -> object:
    """The stand-in for the object Flux builds from `body`, in Flux's order: constructor (or
    factory), properties, configMethods. `on_ref` sees every bean id referred to.
    `placeholders`: an argument may hold an Unemulated bean (a map bean may keep one; the bean
    being built becomes a placeholder if a call fails on it); otherwise such an argument is the
    error that names the bean."""
    calls = _Calls(java, where, placeholders)
    args = _arg_list(body, "constructorArgs", where)
    factory = body.get("factory")
    factory = None if factory == "" else factory  # Flux: an empty factory is no factory
    if args:
        if factory is not None:
            log.warning(
                "%s: %s%sfactory ignored: Flux calls the constructor when constructorArgs are given",
                where.file or "<flux>",
                f"{where.component}: " if where.component else "",
                where.prefix,
            )
        obj = calls.construct(beans.resolve(args, where, "constructorArgs", on_ref), args)
    elif factory is not None:
        if not isinstance(factory, str):
            raise where.error(f"factory must be a method name, got {factory!r}", "factory")
        raw = _arg_list(body, "factoryArgs", where)
        obj = calls.factory(factory, beans.resolve(raw, where, "factoryArgs", on_ref), raw)
    else:
        obj = calls.construct([], [])
    for i, (name, value, given) in enumerate(_properties(body, beans, where, on_ref)):
        calls.set(obj, name, value, given, f"properties[{i}]")
    for i, (name, method_args, raw_args) in enumerate(_config_methods(body, beans, where, on_ref)):
        calls.method(obj, name, method_args, raw_args, f"configMethods[{i}]")
    return obj


def check_definition(
    body: Mapping[object, object], beans: Beans, where: Where, on_ref: Callable[[str], None]
) -> None:
    """The shape of an object definition and its references, without building it (for a class
    this host does not emulate)."""
    beans.resolve(_arg_list(body, "constructorArgs", where), where, "constructorArgs", on_ref)
    beans.resolve(_arg_list(body, "factoryArgs", where), where, "factoryArgs", on_ref)
    for _ in _properties(body, beans, where, on_ref):
        pass
    for _ in _config_methods(body, beans, where, on_ref):
        pass


def _arg_list(body: Mapping[object, object], key: str, where: Where) -> list:
    value = body.get(key)
    if value is None:
        return []
    if not isinstance(value, list):
        raise where.error(f"{key} must be a list of arguments, got {value!r}", key)
    return value


def _entries(body: Mapping[object, object], key: str, where: Where) -> list[dict]:
    value = _arg_list(body, key, where)
    for i, entry in enumerate(value):
        if not isinstance(entry, dict):
            raise where.error(f"each entry must be a mapping, got {entry!r}", f"{key}[{i}]")
    return value


def _properties(
    body: Mapping[object, object], beans: Beans, where: Where, on_ref: Callable[[str], None]
) -> list[tuple[str, object, object]]:
    out: list[tuple[str, object, object]] = []
    for i, prop in enumerate(_entries(body, "properties", where)):
        key = f"properties[{i}]"
        check_keys(
            prop,
            PROPERTY_KEYS,
            file=where.file,
            component=where.component,
            prefix=f"{where.prefix}{key}.",
        )
        name = prop.get("name")
        if not isinstance(name, str) or not name:
            raise where.error(f"a property needs a name, got {name!r}", f"{key}.name")
        if prop.get("ref") is not None and prop.get("value") is not None:
            raise where.error(
                "a property has a value or a ref, not both (Flux refuses both)", f"{key}.ref"
            )
        if prop.get("ref") is not None:
            value = beans.ref(prop["ref"], where, f"{key}.ref", on_ref)
            out.append((name, value, {"ref": prop["ref"]}))
        else:
            out.append((name, prop.get("value"), prop.get("value")))
    return out


def _config_methods(
    body: Mapping[object, object], beans: Beans, where: Where, on_ref: Callable[[str], None]
) -> list[tuple[str, Args, list]]:
    out = []
    for i, method in enumerate(_entries(body, "configMethods", where)):
        key = f"configMethods[{i}]"
        check_keys(
            method,
            CONFIG_METHOD_KEYS,
            file=where.file,
            component=where.component,
            prefix=f"{where.prefix}{key}.",
        )
        name = method.get("name")
        if not isinstance(name, str) or not name:
            raise where.error(f"a config method needs a name, got {name!r}", f"{key}.name")
        raw = method.get("args")
        raw = [] if raw is None else raw
        if not isinstance(raw, list):
            raise where.error("args must be a list of arguments", f"{key}.args")
        out.append((name, beans.resolve(raw, where, f"{key}.args", on_ref), raw))
    return out


class _Calls:
    """One object's calls: find the constructor, factory, setter or method, check for null and
    placeholder arguments, and turn an ArgumentError into a TopologyError with its key."""

    def __init__(self, java: JavaClass, where: Where, placeholders: bool):
        self.java, self.where, self.placeholders = java, where, placeholders

    def construct(self, args: Args, raw: list) -> object:
        java = self.java
        fn = java.constructors.get(len(args))
        if fn is None:
            usage = f"; {java.constructor_usage}" if java.constructor_usage else ""
            problem = (
                f"no constructor of {java.short_name} takes {len(args)} argument(s){usage}"
                if args
                else f"{java.short_name} has no constructor without arguments{usage}"
            )
            raise self.where.error(problem, "constructorArgs")
        return self._call(lambda: fn(args), args, raw, "constructorArgs")

    def factory(self, name: str, args: Args, raw: list) -> object:
        fn = self.java.factories.get((name, len(args)))
        if fn is None:
            raise self.where.error(
                f"{self.java.short_name} has no static factory method {name!r} taking "
                f"{len(args)} argument(s)",
                "factory",
            )
        return self._call(lambda: fn(args), args, raw, "factoryArgs")

    def set(self, obj: object, name: str, value: object, raw: object, key: str) -> None:
        java = self.java
        setter = java.setters.get(name)
        if setter is None:
            has = ", ".join(java.setters) or "none"
            raise self.where.error(
                f"{java.short_name} has no property {name!r} settable from Flux (it has: {has})",
                f"{key}.name",
            )
        self._call(lambda: setter(obj, value), [value], [raw], f"{key}.value")

    def method(self, obj: object, name: str, args: Args, raw: list, key: str) -> None:
        java = self.java
        fn = java.methods.get((name, len(args)))
        if fn is None:
            has = java.methods_usage or (
                ", ".join(f"{n}({k} argument(s))" for n, k in java.methods) or "none Flux can use"
            )
            raise self.where.error(
                f"no configuration method {name!r} taking {len(args)} argument(s) on "
                f"{java.short_name}; it has: {has}",
                f"{key}.name",
            )
        self._call(lambda: fn(obj, args), args, raw, f"{key}.args")

    def _call(self, call: Callable[[], Any], args: Args, raw: list, key: str) -> Any:
        for i, arg in enumerate(args):
            if arg is None:
                raise self.where.error(
                    f"argument {i} may not be null (Flux refuses null arguments)", key
                )
        if not self.placeholders:
            self._refuse_placeholders(args, raw, key)
        try:
            return call()
        except ArgumentError as exc:
            placeholder = next((a for a in args if isinstance(a, Unemulated)), None)
            if placeholder is not None:
                raise _Tainted(placeholder) from None
            raise self.where.error(str(exc), key) from None

    def _refuse_placeholders(self, args: Args, raw: list, key: str) -> None:
        for arg, given in zip(args, raw):
            placeholder = first_unemulated(arg)
            if placeholder is None:
                continue
            through = ""
            if isinstance(given, dict) and given.get("ref") not in (None, placeholder.bean_id):
                through = f" (through bean {given['ref']!r})"
            raise self.where.error(f"needs {placeholder.explain()}{through}", key)
