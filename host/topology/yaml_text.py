"""YAML text -> a document, for both of our loaders (our format and Flux): safe loading that
refuses duplicate keys, aliases that expand without end, and absurd nesting, with every problem
reported as one TopologyError line naming the file."""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

from host.errors import TopologyError

MAX_YAML_DEPTH = 64
MAX_YAML_VALUES = 1_000_000


class _Loader(yaml.SafeLoader):
    """safe_load, except that a key given twice in one mapping is an error: PyYAML silently keeps
    the last one, which would hide a second bolt of the same name."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Hashable, Any]:
        seen: dict[object, yaml.Node] = {}
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
        doc: object = yaml.load(text, Loader=_Loader)  # noqa: S506 - a SafeLoader subclass
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
        shown = f"#x{char:04x}" if isinstance(char, int) else repr(char)
        text = f"{error.reason}: character {shown} at position {error.position}"
    text = " ".join(str(text).split())  # the error is one line, whatever PyYAML put in it
    if mark is None:
        return f"YAML syntax error: {text}"
    return f"YAML syntax error at line {mark.line + 1}, column {mark.column + 1}: {text}"


def reject_unknown_keys(
    mapping: Mapping[object, object],
    allowed: Sequence[str],
    *,
    file: str | None,
    component: str | None = None,
    prefix: str = "",
    refusal: str = "unknown key",
) -> None:
    """A document's mapping may hold only the `allowed` keys: TopologyError names the first
    other one (with `prefix`, its path) and lists the allowed ones."""
    for key in mapping:
        if key not in allowed:
            raise TopologyError(
                f"{refusal}; allowed keys are: {', '.join(allowed)}",
                file=file,
                component=component,
                key=f"{prefix}{key}",
            )
