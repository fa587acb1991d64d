"""The SQLite committer's settings (`sqlite.committer.*` keys of the component's config), read
once from the handshake and checked before anything starts. Every problem is a ConfigError that
names the key."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from components.streams import subscribed_fields, task_count

from .store import INSERT, MODES, UPSERT_ADD, Layout, StoreError

PREFIX = "sqlite.committer."
KNOWN_KEYS = frozenset(
    PREFIX + k
    for k in ("path", "table", "mode", "keys", "values", "fields", "audit", "attempts_log")
)


class ConfigError(ValueError):
    """A bad or missing `sqlite.committer.*` setting."""


@dataclass(frozen=True)
class CommitterConfig:
    path: str
    layout: Layout
    attempts_log: str | None = None  # a text file: one line per commit-phase finish (chaos tests)


def _names(conf: Mapping[str, Any], key: str) -> tuple[str, ...]:
    value = conf.get(PREFIX + key)
    if value is None:
        return ()
    if isinstance(value, str):
        value = [v.strip() for v in value.split(",") if v.strip()]
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise ConfigError(f"{PREFIX}{key} must be a list of field names, got {value!r}")
    return tuple(value)


def _string(conf: Mapping[str, Any], key: str) -> str | None:
    value = conf.get(PREFIX + key)
    if value is None:
        return None
    if not isinstance(value, str) or not value:
        raise ConfigError(f"{PREFIX}{key} must be a non-empty string, got {value!r}")
    return value


def from_conf(conf: Mapping[str, Any], context: Mapping[str, Any]) -> CommitterConfig:
    unknown = sorted(k for k in conf if k.startswith(PREFIX) and k not in KNOWN_KEYS)
    if unknown:
        raise ConfigError(
            f"unknown setting(s) {', '.join(unknown)}; the SQLite committer's settings are: "
            f"{', '.join(sorted(KNOWN_KEYS))}"
        )
    if task_count(context) > 1:
        raise ConfigError(
            "the SQLite committer runs as one task (parallelism: 1): its stored txid is one "
            "per table; raise the batch bolts' parallelism instead"
        )
    path = _string(conf, "path")
    table = _string(conf, "table")
    if path is None or table is None:
        raise ConfigError(
            f"{PREFIX}path (the database file) and {PREFIX}table (the table to write) are required"
        )
    mode = conf.get(PREFIX + "mode", INSERT)
    if mode not in MODES:
        raise ConfigError(f"{PREFIX}mode must be one of {', '.join(MODES)}, got {mode!r}")
    keys, values = _names(conf, "keys"), _names(conf, "values")
    if mode == UPSERT_ADD and not (keys and values):
        raise ConfigError(
            f"the upsert-add mode needs {PREFIX}keys (the row's key fields) and "
            f"{PREFIX}values (the fields added into it), e.g. keys: [word], values: [count]"
        )
    if mode == INSERT and (keys or values):
        raise ConfigError(f"{PREFIX}keys and {PREFIX}values are for the upsert-add mode")
    fields = _names(conf, "fields") or tuple(
        subscribed_fields(context, "the SQLite committer", PREFIX + "fields", ConfigError)
    )
    try:
        layout = Layout(table, mode, fields, keys, values, _string(conf, "audit"))
    except StoreError as exc:
        raise ConfigError(f"{PREFIX}*: {exc}") from None
    directory = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(directory):
        raise ConfigError(f"{PREFIX}path: the directory {directory} does not exist")
    attempts_log = _string(conf, "attempts_log")
    if attempts_log is not None:
        attempts_log = os.path.abspath(attempts_log)
        if not os.path.isdir(os.path.dirname(attempts_log)):
            raise ConfigError(
                f"{PREFIX}attempts_log: the directory {os.path.dirname(attempts_log)} does not exist"
            )
    return CommitterConfig(os.path.abspath(path), layout, attempts_log)
