"""What a ready bolt reads from its handshake context about its input streams."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def subscribed_fields(
    context: Mapping[str, Any],
    who: str,
    setting: str,
    error: type[Exception] = ValueError,
) -> list[str]:
    """The fields of the streams the component subscribes to (`source->stream->fields` of those
    in `source->stream->grouping`); they must agree, as one table or file has one set of
    columns. `who` and `setting` (the key that names them explicitly) go into the messages."""
    fields_by_source = context.get("source->stream->fields") or {}
    subscribed = context.get("source->stream->grouping") or {}
    found: dict[tuple[str, str], list[str]] = {}
    for source, streams in subscribed.items():
        for stream in streams:
            fields = (fields_by_source.get(source) or {}).get(stream)
            if fields is not None:
                found[(source, stream)] = list(fields)
    if not found:
        raise error(
            f"{who} has no input stream with declared fields: subscribe it to a component "
            f"(inputs:) or set {setting}"
        )
    distinct = {tuple(f) for f in found.values()}
    if len(distinct) > 1:
        detail = "; ".join(f"{s}/{st}: {f}" for (s, st), f in found.items())
        raise error(
            f"the input streams declare different fields ({detail}): one file "
            f"has one set of columns; set {setting}"
        )
    return list(distinct.pop())


def task_count(context: Mapping[str, Any]) -> int:
    """How many tasks the component has (its entries in `task->component`)."""
    me = context.get("componentid")
    return sum(1 for c in (context.get("task->component") or {}).values() if c == me) or 1
