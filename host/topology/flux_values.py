"""The plain Java classes Flux beans are made of, emulated with Python values: maps
(`java.util.HashMap`, `LinkedHashMap`, `Properties`) as dicts, lists (`java.util.ArrayList`,
`LinkedList`) as lists and `java.lang.String` as str, with the constructors and config methods
that fill them (`put`, `putAll`, `setProperty`, `add`, `addAll`) doing what Java's do. A bean of
one of these is what a shell component's `setEnv`, `addComponentConfig` or constructor can get
by `ref` (docs/flux.md §1.1)."""

from __future__ import annotations

from collections.abc import Callable, Mapping

from host.topology.flux_beans import Args, ArgumentError, JavaClass
from host.topology.setting_checks import is_int, is_number


def _capacity(value: object) -> bool:
    """An initial capacity (HashMap(int), ArrayList(int)): the value does not change."""
    if is_int(value) and value >= 0:
        return True
    if is_int(value):
        raise ArgumentError(f"the initial capacity may not be negative, got {value!r}")
    return False


# ---- maps ---------------------------------------------------------------------------------------


def _new_map(args: Args) -> dict:
    """Map(), Map(int capacity), Map(Map), Map(int capacity, float load factor)."""
    if not args:
        return {}
    if len(args) == 2:
        if _capacity(args[0]) and is_number(args[1]) and args[1] > 0:
            return {}
        raise ArgumentError(f"takes an initial capacity and a load factor, got {args!r}")
    (arg,) = args
    if isinstance(arg, dict):
        return dict(arg)
    if _capacity(arg):
        return {}
    raise ArgumentError(f"takes a map or an initial capacity, got {arg!r}")


def _put(obj: dict, args: Args) -> None:
    key, value = args
    try:
        obj[key] = value
    except TypeError:
        raise ArgumentError(f"a map key must be a scalar, got {key!r}") from None


def _put_all(obj: dict, args: Args) -> None:
    (other,) = args
    if not isinstance(other, dict):
        raise ArgumentError(f"putAll takes a map, got {other!r}")
    obj.update(other)


def _set_property(obj: dict, args: Args) -> None:
    if not all(isinstance(a, str) for a in args):
        raise ArgumentError(f"setProperty takes two strings, got {args!r}")
    _put(obj, args)


_MAP_METHODS: Mapping[tuple[str, int], Callable[[dict, Args], None]] = {
    ("put", 2): _put,
    ("putAll", 1): _put_all,
}


def _map_class(
    name: str, extra: Mapping[tuple[str, int], Callable[[dict, Args], None]]
) -> JavaClass:
    return JavaClass(
        name,
        constructors={0: _new_map, 1: _new_map, 2: _new_map},
        methods={**_MAP_METHODS, **extra},
    )


# ---- lists --------------------------------------------------------------------------------------


def _new_list(args: Args) -> list:
    """ArrayList(), ArrayList(Collection), ArrayList(int capacity); LinkedList has no capacity."""
    if not args:
        return []
    (arg,) = args
    if isinstance(arg, list):
        return list(arg)
    if _capacity(arg):
        return []
    raise ArgumentError(f"takes a collection (a list) or an initial capacity, got {arg!r}")


def _new_linked_list(args: Args) -> list:
    if args and not isinstance(args[0], list):
        raise ArgumentError(f"LinkedList(Collection) takes a collection (a list), got {args[0]!r}")
    return _new_list(args)


def _add(obj: list, args: Args) -> None:
    if len(args) == 1:
        obj.append(args[0])
        return
    index, value = args
    if not is_int(index) or not 0 <= index <= len(obj):
        raise ArgumentError(f"add(index, element): index {index!r} is out of 0..{len(obj)}")
    obj.insert(index, value)


def _add_all(obj: list, args: Args) -> None:
    (other,) = args
    if not isinstance(other, list):
        raise ArgumentError(f"addAll takes a collection (a list), got {other!r}")
    obj.extend(other)


_LIST_METHODS: Mapping[tuple[str, int], Callable[[list, Args], None]] = {
    ("add", 1): _add,
    ("add", 2): _add,
    ("addAll", 1): _add_all,
}


# ---- strings ------------------------------------------------------------------------------------


def _new_string(args: Args) -> str:
    if not args:
        return ""
    (arg,) = args
    if not isinstance(arg, str):
        raise ArgumentError(f"String(String) takes a string, got {arg!r}")
    return arg


VALUE_CLASSES: dict[str, JavaClass] = {
    c.name: c
    for c in (
        _map_class("java.util.HashMap", {}),
        _map_class("java.util.LinkedHashMap", {}),
        _map_class("java.util.Properties", {("setProperty", 2): _set_property}),
        JavaClass(
            "java.util.ArrayList", constructors={0: _new_list, 1: _new_list}, methods=_LIST_METHODS
        ),
        JavaClass(
            "java.util.LinkedList",
            constructors={0: _new_linked_list, 1: _new_linked_list},
            methods=_LIST_METHODS,
        ),
        JavaClass("java.lang.String", constructors={0: _new_string, 1: _new_string}),
    )
}
