"""Checking a config dict before anything runs: every known key's type and range, JSON values only
(the config is sent to every component in the handshake), component config limited to what Storm
lets a component set, and the restart back-off bounds in order."""

from __future__ import annotations

import math
from collections.abc import Mapping

from host.errors import TopologyError
from host.topology.settings import (
    HOST_PREFIX,
    KEYS,
    RESTART_BACKOFF_INITIAL_SECS,
    RESTART_BACKOFF_MAX_SECS,
    Settings,
    is_component_level,
)


def check_config(
    conf: object, *, file: str | None = None, component: str | None = None, strict: bool = True
) -> dict[str, object]:
    """`conf`, if it is a good topology config (`component` None) or component config; else a
    TopologyError for its first bad entry. With `strict`, component config may not set
    topology-wide known keys (Storm would silently ignore them; we say so instead). Flux loaders
    pass strict=False."""
    if not isinstance(conf, dict):
        raise TopologyError(
            f"config must be a mapping of keys to values, not {type(conf).__name__}",
            file=file,
            component=component,
            key="config",
        )
    for key, value in conf.items():
        if not isinstance(key, str) or not key:
            raise TopologyError(
                f"config keys must be non-empty strings, got {key!r}",
                file=file,
                component=component,
                key="config",
            )
        problem = entry_problem(key, value, component_scope=component is not None and strict)
        if problem:
            raise TopologyError(problem, file=file, component=component, key=key)
    if component is None:
        check_backoff(conf, file)
    return conf


def entry_problem(key: str, value: object, *, component_scope: bool) -> str | None:
    """What is wrong with one config entry, or None. `component_scope`: the entry is in a
    component's config, where topology-wide known keys are refused."""
    if key.startswith(HOST_PREFIX) and key not in KEYS:
        known = ", ".join(sorted(k for k in KEYS if k.startswith(HOST_PREFIX)))
        return f"unknown host setting; the host's settings are: {known}"
    if component_scope and not is_component_level(key):
        return (
            "is topology-wide: a component's config cannot set it (Storm ignores it there); "
            "move it to the topology's config"
        )
    spec = KEYS.get(key)
    if spec is not None and not (value is None and spec.nullable):
        problem = spec.check(value)
        if problem:
            return f"{problem}, got {value!r}"
    problem = _json_problem(value)
    return f"value {problem}" if problem else None


def _json_problem(value: object) -> str | None:
    """Config is sent to every component as JSON: YAML dates, sets and the like cannot go."""
    if value is None or isinstance(value, (str, bool, int)):
        return None
    if isinstance(value, float):
        return None if math.isfinite(value) else "must be a finite number (JSON has no NaN/inf)"
    if isinstance(value, (list, tuple)):
        return next((p for p in map(_json_problem, value) if p), None)
    if isinstance(value, dict):
        if not all(isinstance(k, str) for k in value):
            return "mapping keys must be strings (the value is sent to components as JSON)"
        return next((p for p in map(_json_problem, value.values()) if p), None)
    return (
        f"must be a JSON value (string, number, boolean, null, list or mapping), "
        f"not {type(value).__name__}; quote it if you meant a string"
    )


def check_backoff(conf: Mapping[str, object], file: str | None) -> None:
    """The restart back-off may not start above its own maximum."""
    settings = Settings.from_config(conf, file=file)
    if settings.restart_backoff_max_secs < settings.restart_backoff_initial_secs:
        # the value as written (60, not 60.0)
        initial = conf.get(RESTART_BACKOFF_INITIAL_SECS)
        if initial is None:
            initial = KEYS[RESTART_BACKOFF_INITIAL_SECS].default
        raise TopologyError(
            f"must be >= {RESTART_BACKOFF_INITIAL_SECS} ({initial})",
            file=file,
            key=RESTART_BACKOFF_MAX_SECS,
        )
