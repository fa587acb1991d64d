"""Command-line overrides of a topology's config: `-c KEY=VALUE`, as Storm's `storm jar -c`."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import replace

import yaml

from host.errors import TopologyError
from host.topology.config_check import check_backoff, entry_problem
from host.topology.model import Topology

_SCALARS = (str, int, float, bool, type(None))


def parse_override(text: str) -> tuple[str, object]:
    """`KEY=VALUE` -> (key, value). VALUE is read as a YAML scalar, as Storm's `-c` does: `10` is
    an int, `0.5` a float, `true`/`false` booleans, `null` (or nothing) unset, anything else a
    string. A value that YAML would read as something other than a scalar (a list, a mapping, a
    date) is kept as the literal string."""
    key, sep, raw = text.partition("=")
    key = key.strip()
    if not sep or not key:
        raise TopologyError(f"expected KEY=VALUE, got {text!r}", key="-c")
    try:
        value = yaml.safe_load(raw)
    except yaml.YAMLError:
        return key, raw
    if not isinstance(value, _SCALARS) or (isinstance(value, float) and not math.isfinite(value)):
        return key, raw
    return key, value


def parse_overrides(items: Iterable[str]) -> dict[str, object]:
    """Several `-c` options; a later one wins over an earlier one with the same key."""
    return dict(parse_override(item) for item in items)


def with_overrides(topology: Topology, overrides: Mapping[str, object]) -> Topology:
    """The topology with `overrides` merged over its config, checked like the config itself."""
    if not overrides:
        return topology
    for key, value in overrides.items():
        problem = entry_problem(key, value, component_scope=False)
        if problem:
            raise TopologyError(f"{problem} (from -c)", file=topology.source, key=key)
    merged = {**topology.config, **overrides}
    check_backoff(merged, topology.source)
    return replace(topology, config=merged)
