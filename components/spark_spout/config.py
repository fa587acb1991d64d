"""The spout's settings, read once from the handshake `conf` and checked before anything starts.

The keys are documented in the package docstring (`components/spark_spout/__init__.py`). Every
problem is a ConfigError whose message names the key and says what to write instead.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from multilang.messages import DEFAULT_STREAM

PREFIX = "spark.spout."
SOURCES = ("dataframe", "directory", "streaming")
DATAFRAME_FORMATS = ("parquet", "json", "csv", "orc", "text")
DIRECTORY_FORMATS = ("parquet", "json", "csv")
DEAD_STREAM = "dead"
DEAD_FIELDS = ("key", "offset", "row", "reason", "attempts")

KNOWN_KEYS = frozenset(
    PREFIX + k
    for k in (
        "source",
        "job",
        "sql",
        "path",
        "format",
        "read.options",
        "fields",
        "checkpoint.dir",
        "checkpoint.interval.ms",
        "staging.dir",
        "retries",
        "dead.letter",
        "batch.rows",
        "read.ahead",
        "rows.per.next",
        "max.pending",
        "poll.secs",
        "csv.header",
        "csv.columns",
        "streaming.checkpoint",
        "trigger.secs",
        "log.level",
        "transactional",
    )
)


class ConfigError(ValueError):
    """A bad or missing `spark.spout.*` setting."""


@dataclass(frozen=True)
class SpoutConfig:
    source: str
    fields: tuple[str, ...]
    checkpoint_dir: str
    staging_dir: str
    dead_letter: str
    job: str | None = None
    sql: str | None = None
    path: str | None = None
    format: str | None = None
    read_options: Mapping[str, Any] = field(default_factory=dict)
    retries: int = 3
    checkpoint_interval: float = 1.0
    batch_rows: int = 1024
    read_ahead: int = 4
    rows_per_next: int = 100
    max_pending: int = 1000
    poll_secs: float = 1.0
    csv_header: bool = False
    csv_columns: tuple[str, ...] | None = None
    streaming_checkpoint: str | None = None
    trigger_secs: float = 0.0
    log_level: str = "WARN"
    dead_fields: tuple[str, ...] | None = None  # the `dead` stream's fields, when declared
    spark: Mapping[str, str] = field(default_factory=dict)  # spark.* keys for the builder
    transactional: bool = False  # a batch spout (transactional.py), streaming source only

    @property
    def needs_spark(self) -> bool:
        return self.source in ("dataframe", "streaming")

    def fingerprint(self) -> str:
        """What identifies the data: a checkpoint is valid only for the same fingerprint."""
        ident = {
            "source": self.source,
            "job": self.job,
            "sql": self.sql,
            "path": self.path,
            "format": self.format,
            "read_options": dict(self.read_options),
            "fields": list(self.fields),
            "csv_columns": self.csv_columns,
        }
        text = json.dumps(ident, sort_keys=True, default=str)
        return hashlib.sha256(text.encode()).hexdigest()[:16]


def _int(conf: Mapping, key: str, default: int, minimum: int = 0) -> int:
    value = conf.get(PREFIX + key, default)
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise ConfigError(f"{PREFIX}{key} must be an integer >= {minimum}, got {value!r}")
    try:
        number = int(value)
    except ValueError:
        raise ConfigError(f"{PREFIX}{key} must be an integer >= {minimum}, got {value!r}") from None
    if number < minimum:
        raise ConfigError(f"{PREFIX}{key} must be >= {minimum}, got {number}")
    return number


def _number(conf: Mapping, key: str, default: float, minimum: float = 0.0) -> float:
    value = conf.get(PREFIX + key, default)
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise ConfigError(f"{PREFIX}{key} must be a number, got {value!r}") from None
    if isinstance(value, bool) or number < minimum or number != number:
        raise ConfigError(f"{PREFIX}{key} must be a number >= {minimum:g}, got {value!r}")
    return number


def _bool(conf: Mapping, key: str, default: bool) -> bool:
    value = conf.get(PREFIX + key, default)
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.lower() in ("true", "false"):
        return value.lower() == "true"
    raise ConfigError(f"{PREFIX}{key} must be true or false, got {value!r}")


def _names(conf: Mapping, key: str) -> tuple[str, ...] | None:
    value = conf.get(PREFIX + key)
    if value is None:
        return None
    if isinstance(value, str):
        value = [v.strip() for v in value.split(",") if v.strip()]
    if not isinstance(value, list) or not value or not all(isinstance(v, str) for v in value):
        raise ConfigError(
            f"{PREFIX}{key} must be a non-empty list of column names, got "
            f"{conf.get(PREFIX + key)!r}"
        )
    return tuple(value)


def _string(conf: Mapping, key: str) -> str | None:
    value = conf.get(PREFIX + key)
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip():
        raise ConfigError(f"{PREFIX}{key} must be a non-empty string, got {value!r}")
    return value


def _absolute(path: str) -> str:
    """Local paths relative to the component's cwd (the topology's directory); URIs as given."""
    return path if "://" in path else os.path.abspath(path)


def declared_fields(context: Mapping) -> tuple[tuple[str, ...], tuple[str, ...] | None]:
    """The default stream's output fields and the `dead` stream's (None when not declared)."""
    outputs = context.get("stream->outputfields") or {}
    if DEFAULT_STREAM not in outputs:
        raise ConfigError(
            "the spout must declare output fields on the default stream, e.g. "
            "`outputs: [word, count]`: they are the columns it emits"
        )
    dead = outputs.get(DEAD_STREAM)
    return tuple(outputs[DEFAULT_STREAM]), (tuple(dead) if dead is not None else None)


def transactional_requested(conf: Mapping) -> bool:
    """Whether `spark.spout.transactional` asks for the batch spout (read before the pid reply,
    which must announce batch/1 or not; a bad value is reported by `from_conf` later)."""
    value = conf.get(PREFIX + "transactional", False)
    return value is True or (isinstance(value, str) and value.lower() == "true")


def _task_count(context: Mapping) -> int:
    me = context.get("componentid")
    return sum(1 for c in (context.get("task->component") or {}).values() if c == me) or 1


def from_conf(conf: Mapping, context: Mapping) -> SpoutConfig:
    """Parse and check the settings; ConfigError says what is wrong."""
    unknown = sorted(k for k in conf if k.startswith(PREFIX) and k not in KNOWN_KEYS)
    if unknown:
        raise ConfigError(
            f"unknown setting(s) {', '.join(unknown)}; the spark spout's settings "
            f"are: {', '.join(sorted(KNOWN_KEYS))}"
        )
    if _task_count(context) > 1:
        raise ConfigError(
            "the spark spout runs as one task (parallelism: 1): several tasks "
            "would each emit every row; raise the bolts' parallelism instead"
        )
    source = conf.get(PREFIX + "source", "dataframe")
    if source not in SOURCES:
        raise ConfigError(f"{PREFIX}source must be one of {', '.join(SOURCES)}, got {source!r}")
    declared, dead_fields = declared_fields(context)
    fields = _names(conf, "fields")
    if fields is not None and fields != declared:
        raise ConfigError(
            f"{PREFIX}fields {list(fields)} do not match the spout's declared output fields "
            f"{list(declared)}: declare `outputs: {list(fields)}` (same names, same order) or "
            f"change {PREFIX}fields"
        )
    if len(set(declared)) != len(declared):
        raise ConfigError(f"the declared output fields {list(declared)} repeat a name")
    if dead_fields is not None:
        bad = [f for f in dead_fields if f not in DEAD_FIELDS]
        if bad:
            raise ConfigError(
                f"the `{DEAD_STREAM}` stream's fields may be any of "
                f"{', '.join(DEAD_FIELDS)}; {', '.join(bad)} is not one of them"
            )
    checkpoint_dir = _string(conf, "checkpoint.dir")
    if checkpoint_dir is None:
        raise ConfigError(
            f"{PREFIX}checkpoint.dir is required: the directory where the spout "
            f"keeps its progress (and, by default, its staged data)"
        )
    checkpoint_dir = os.path.abspath(checkpoint_dir)
    job, sql, path = _string(conf, "job"), _string(conf, "sql"), _string(conf, "path")
    fmt = _string(conf, "format")
    read_options = conf.get(PREFIX + "read.options") or {}
    if not isinstance(read_options, dict):
        raise ConfigError(f"{PREFIX}read.options must be a mapping of Spark reader options")
    _check_source(source, job, sql, path, fmt)
    transactional = _bool(conf, "transactional", False)
    if transactional and source != "streaming":
        raise ConfigError(
            f"{PREFIX}transactional needs {PREFIX}source: streaming (a micro-batch is a "
            f"transaction); the {source} source runs as a plain spout only"
        )
    pending = conf.get("topology.max.spout.pending")
    max_pending = int(pending) if pending else _int(conf, "max.pending", 1000, 1)
    staging = _string(conf, "staging.dir") or os.path.join(checkpoint_dir, "staging")
    dead_letter = _string(conf, "dead.letter") or os.path.join(checkpoint_dir, "dead-letter.jsonl")
    streaming_checkpoint = _string(conf, "streaming.checkpoint") or os.path.join(
        checkpoint_dir, "streaming"
    )
    spark = {
        k: str(v).lower() if isinstance(v, bool) else str(v)
        for k, v in conf.items()
        if k.startswith("spark.") and not k.startswith(PREFIX)
    }
    return SpoutConfig(
        source=source,
        fields=declared,
        checkpoint_dir=checkpoint_dir,
        staging_dir=_absolute(staging),
        dead_letter=os.path.abspath(dead_letter),
        job=job,
        sql=sql,
        path=_absolute(path) if path else None,
        format=fmt,
        read_options=read_options,
        retries=_int(conf, "retries", 3),
        checkpoint_interval=_int(conf, "checkpoint.interval.ms", 1000) / 1000,
        batch_rows=_int(conf, "batch.rows", 1024, 1),
        read_ahead=_int(conf, "read.ahead", 4, 1),
        rows_per_next=_int(conf, "rows.per.next", 100, 1),
        max_pending=max_pending,
        poll_secs=_number(conf, "poll.secs", 1.0, 0.01),
        csv_header=_bool(conf, "csv.header", False),
        csv_columns=_names(conf, "csv.columns"),
        streaming_checkpoint=_absolute(streaming_checkpoint),
        trigger_secs=_number(conf, "trigger.secs", 0.0),
        log_level=str(conf.get(PREFIX + "log.level", "WARN")).upper(),
        dead_fields=dead_fields,
        spark=spark,
        transactional=transactional,
    )


def _check_source(
    source: str, job: str | None, sql: str | None, path: str | None, fmt: str | None
) -> None:
    if source == "dataframe":
        given = [k for k, v in (("job", job), ("sql", sql), ("path", path)) if v]
        if len(given) != 1:
            raise ConfigError(
                f"the dataframe source needs exactly one of {PREFIX}job "
                f"(module:function), {PREFIX}sql or {PREFIX}path (with "
                f"{PREFIX}format); got {', '.join(given) or 'none'}"
            )
        if path and (fmt or "parquet") not in DATAFRAME_FORMATS:
            raise ConfigError(
                f"{PREFIX}format must be one of {', '.join(DATAFRAME_FORMATS)}, got {fmt!r}"
            )
    elif source == "directory":
        if not path:
            raise ConfigError(
                f"the directory source needs {PREFIX}path: a Spark output "
                f"directory, or a parent whose subdirectories are outputs"
            )
        if fmt is not None and fmt not in DIRECTORY_FORMATS:
            raise ConfigError(
                f"{PREFIX}format must be one of {', '.join(DIRECTORY_FORMATS)} "
                f"(default: from the file names), got {fmt!r}"
            )
    else:
        if not job:
            raise ConfigError(
                f"the streaming source needs {PREFIX}job: module:function "
                f"returning a streaming DataFrame"
            )
    if job and ":" not in job:
        raise ConfigError(f"{PREFIX}job must be 'module:function', got {job!r}")
