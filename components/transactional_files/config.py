"""The file spout's settings, read once from the handshake `conf` (keys `files.spout.*`,
as the Kafka and Spark spouts take theirs), and the partitions they name. Every problem is a
ConfigError that names the key."""

from __future__ import annotations

import glob
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

PREFIX = "files.spout."
DEFAULT_BATCH_LINES = 1000
KNOWN_KEYS = frozenset(PREFIX + k for k in ("paths", "batch.lines"))


class ConfigError(ValueError):
    """A bad or missing `files.spout.*` setting."""


@dataclass(frozen=True)
class FilesConfig:
    files: tuple[str, ...]  # the partitions: partition p is files[p]
    batch_lines: int = DEFAULT_BATCH_LINES


def expand(patterns: list[str]) -> tuple[str, ...]:
    """Plain paths as given (a file that does not exist yet is an empty partition until it
    appears); globs expanded, sorted, and each must match something. Each file once, in the
    order given, so partition numbers are stable while the list of files is."""
    files: list[str] = []
    for pattern in patterns:
        if glob.has_magic(pattern):
            matched = sorted(glob.glob(pattern, recursive=True))
            if not matched:
                raise ConfigError(f"{PREFIX}paths: no file matches {pattern!r}")
            files.extend(matched)
        else:
            files.append(pattern)
    return tuple(dict.fromkeys(files))


def from_conf(conf: Mapping[str, Any]) -> FilesConfig:
    unknown = sorted(k for k in conf if k.startswith(PREFIX) and k not in KNOWN_KEYS)
    if unknown:
        raise ConfigError(
            f"unknown setting(s) {', '.join(unknown)}; the file spout's settings are: "
            f"{', '.join(sorted(KNOWN_KEYS))}"
        )
    raw = conf.get(PREFIX + "paths")
    patterns = [raw] if isinstance(raw, str) else raw
    if (
        not isinstance(patterns, list)
        or not patterns
        or not all(isinstance(p, str) and p for p in patterns)
    ):
        raise ConfigError(
            f"{PREFIX}paths is required: a file, a glob, or a list of them (got {raw!r})"
        )
    lines = conf.get(PREFIX + "batch.lines", DEFAULT_BATCH_LINES)
    if isinstance(lines, bool) or not isinstance(lines, int) or lines < 1:
        raise ConfigError(f"{PREFIX}batch.lines must be an integer >= 1, got {lines!r}")
    return FilesConfig(expand(patterns), lines)


def check_fields(context: Mapping[str, Any]) -> tuple[str, ...]:
    """The default stream's declared fields: three of them (file, line number, line)."""
    fields = (context.get("stream->outputfields") or {}).get("default")
    if fields is None or len(fields) != 3:
        raise ConfigError(
            "the file spout emits (file, line number, line): declare three output fields on "
            f"the default stream, e.g. `outputs: [file, lineno, line]` (got {fields!r})"
        )
    return tuple(fields)
