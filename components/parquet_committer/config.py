"""The Parquet committer's settings (`parquet.committer.*` keys of the component's config), read
once from the handshake and checked before anything starts. Every problem is a ConfigError that
names the key."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

from components.parquet_sink.sink import schema_types
from components.streams import subscribed_fields, task_count

PREFIX = "parquet.committer."
KNOWN_KEYS = frozenset(PREFIX + k for k in ("dir", "fields", "schema", "compression"))


class ConfigError(ValueError):
    """A bad or missing `parquet.committer.*` setting."""


@dataclass(frozen=True)
class CommitterConfig:
    directory: str
    fields: tuple[str, ...]
    types: Mapping[str, pa.DataType] = field(default_factory=dict)
    compression: str = "snappy"


def from_conf(conf: Mapping[str, Any], context: Mapping[str, Any]) -> CommitterConfig:
    unknown = sorted(k for k in conf if k.startswith(PREFIX) and k not in KNOWN_KEYS)
    if unknown:
        raise ConfigError(
            f"unknown setting(s) {', '.join(unknown)}; the Parquet committer's settings are: "
            f"{', '.join(sorted(KNOWN_KEYS))}"
        )
    if task_count(context) > 1:
        raise ConfigError(
            "the Parquet committer runs as one task (parallelism: 1): one file per txid; "
            "raise the batch bolts' parallelism instead"
        )
    directory = conf.get(PREFIX + "dir")
    if not directory or not isinstance(directory, str):
        raise ConfigError(f"{PREFIX}dir is required: the directory to write the files to")
    raw = conf.get(PREFIX + "fields")
    if raw is not None and (
        not isinstance(raw, list) or not raw or not all(isinstance(f, str) and f for f in raw)
    ):
        raise ConfigError(f"{PREFIX}fields must be a list of column names, got {raw!r}")
    fields = list(raw) if raw else None
    if fields is None:
        fields = subscribed_fields(context, "the Parquet committer", PREFIX + "fields", ConfigError)
    try:
        types = schema_types(conf, fields, PREFIX)
    except ValueError as exc:
        raise ConfigError(str(exc)) from None
    return CommitterConfig(
        os.path.abspath(directory),
        tuple(fields),
        types,
        str(conf.get(PREFIX + "compression", "snappy")),
    )
