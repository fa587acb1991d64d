"""Check a value against a TypedDict at run time, recursively: every required key present, every
key's value of its annotated type. For checking real snapshots against `host.observe.snapshot`.

Types understood: TypedDicts (their `__required_keys__` and resolved annotations), `X | Y` and
`Optional`, `list[X]`, `dict[K, V]`, `Any`, None, and plain classes (`int`, `float`, `str`,
`bool`). As in mypy, an int is a float; a bool is neither an int nor a float here (a count that
is True is a bug, not a number).
"""

from __future__ import annotations

import types
from typing import Any, Union, get_args, get_origin, get_type_hints, is_typeddict


def typed_dict_problems(value: Any, schema: Any, *, extra_keys: bool = True) -> list[str]:
    """What is wrong with `value` as a `schema` (a TypedDict or any type above), one line per
    problem naming where (`components.split.tasks_detail[0].pid: ...`); empty when it fits.
    `extra_keys=False`: keys a TypedDict does not declare are problems too."""
    problems: list[str] = []
    _check(value, schema, "", problems, extra_keys)
    return problems


def _describe(tp: Any) -> str:
    if tp is type(None):
        return "None"
    if isinstance(tp, type) and not get_args(tp):
        return tp.__name__
    return str(tp).replace("typing.", "")


def _check(value: Any, tp: Any, where: str, problems: list[str], extra_keys: bool) -> None:
    here = where or "(top)"
    if tp is Any:
        return
    if tp is None or tp is type(None):
        if value is not None:
            problems.append(f"{here}: expected None, got {value!r}")
        return
    if is_typeddict(tp):
        _check_typed_dict(value, tp, where, problems, extra_keys)
        return
    origin = get_origin(tp)
    if origin is Union or origin is types.UnionType:
        for option in get_args(tp):
            attempt: list[str] = []
            _check(value, option, where, attempt, extra_keys)
            if not attempt:
                return
        problems.append(f"{here}: expected {_describe(tp)}, got {value!r}")
        return
    if origin is list:
        if not isinstance(value, list):
            problems.append(f"{here}: expected a list, got {value!r}")
            return
        (item,) = get_args(tp)
        for i, element in enumerate(value):
            _check(element, item, f"{where}[{i}]", problems, extra_keys)
        return
    if origin is dict:
        if not isinstance(value, dict):
            problems.append(f"{here}: expected a dict, got {value!r}")
            return
        key_type, value_type = get_args(tp)
        for key, element in value.items():
            _check(key, key_type, f"{where} key {key!r}", problems, extra_keys)
            _check(element, value_type, _join(where, key), problems, extra_keys)
        return
    if origin is not None or not isinstance(tp, type):
        raise TypeError(f"{here}: the checker does not know the type {tp!r}")
    if not _is_instance(value, tp):
        problems.append(f"{here}: expected {_describe(tp)}, got {value!r}")


def _is_instance(value: Any, tp: type) -> bool:
    if tp is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if tp is int:
        return isinstance(value, int) and not isinstance(value, bool)
    return isinstance(value, tp)


def _check_typed_dict(
    value: Any, tp: Any, where: str, problems: list[str], extra_keys: bool
) -> None:
    here = where or "(top)"
    if not isinstance(value, dict):
        problems.append(f"{here}: expected an object ({tp.__name__}), got {value!r}")
        return
    hints = get_type_hints(tp)
    for key in sorted(tp.__required_keys__ - value.keys()):
        problems.append(f"{here}: {tp.__name__} key {key!r} is missing")
    for key, element in value.items():
        if key in hints:
            _check(element, hints[key], _join(where, key), problems, extra_keys)
        elif not extra_keys:
            problems.append(f"{here}: {tp.__name__} has no key {key!r}")


def _join(where: str, key: Any) -> str:
    return f"{where}.{key}" if where else str(key)
