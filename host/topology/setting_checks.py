"""The checks of a setting's value: a `Check` returns what is wrong with a value, or None.

The `Key` table (`host.topology.settings`) names one check for every key. `is_int` and `is_number`
are also how the loaders tell a number from a YAML boolean; `parse_bind` reads `host.drpc.bind` and
`--drpc-bind`.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Callable
from typing import TypeGuard

Check = Callable[[object], "str | None"]


def is_int(value: object) -> TypeGuard[int]:
    """An integer, and not a boolean: YAML `true` is not 1."""
    return isinstance(value, int) and not isinstance(value, bool)


def is_number(value: object) -> TypeGuard[int | float]:
    """A finite integer or float (not a boolean)."""
    return (is_int(value) or isinstance(value, float)) and math.isfinite(value)


def positive_int(value: object) -> str | None:
    return None if is_int(value) and value > 0 else "must be a positive integer"


def non_negative_int(value: object) -> str | None:
    return None if is_int(value) and value >= 0 else "must be an integer >= 0"


def positive_number(value: object) -> str | None:
    return None if is_number(value) and value > 0 else "must be a number > 0"


def auto_or_boolean(value: object) -> str | None:
    return None if value == "auto" or isinstance(value, bool) else 'must be "auto", true or false'


def auto_or_niceness(value: object) -> str | None:
    ok = value == "auto" or (is_int(value) and 0 <= value <= 19)
    return None if ok else 'must be "auto" or an integer from 0 to 19'


def non_negative_number(value: object) -> str | None:
    return None if is_number(value) and value >= 0 else "must be a number >= 0"


def boolean(value: object) -> str | None:
    return None if isinstance(value, bool) else "must be true or false"


def path(value: object) -> str | None:
    """A directory path (`host.state.dir`); `file:///dir` stands for `/dir`. A URL of any other
    scheme is refused: the host reads and writes the state with plain file calls, and made
    absolute a URL would be a local directory named `hdfs:` (docs/spark.md §6.1)."""
    if not (isinstance(value, str) and value):
        return "must be a non-empty path"
    scheme = url_scheme(value)
    if scheme is not None:
        return f"must be a directory path, not a {scheme}:// URL (the state is plain files)"
    return None


# a URL's scheme and its `://` (RFC 3986 §3.1); a colon alone is no URL: `a:b` may name a directory
_URL = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*)://")
_FILE_URL = "file://"


def url_scheme(text: str) -> str | None:
    """The scheme of a URL that names no local path (`hdfs` of `hdfs://nn/dir`), else None:
    for a plain path, and for a `file:///dir` URL (see `without_file_scheme`)."""
    if text.startswith(_FILE_URL + "/"):
        return None
    match = _URL.match(text)
    return match.group(1) if match else None


def without_file_scheme(text: str) -> str:
    """`/dir` for `file:///dir`; any other text as it is."""
    return text[len(_FILE_URL) :] if text.startswith(_FILE_URL + "/") else text


def directory_path(value: str, what: str) -> str:
    """`value` as an absolute directory path (`file:///dir` is `/dir`, `~` expanded); a URL of
    any other scheme raises ValueError naming `what` (`--checkpoint`, `--state-dir`)."""
    scheme = url_scheme(value)
    if scheme is not None:
        raise ValueError(
            f"{what} {value!r}: a {scheme}:// URL is not supported; the state is read and written "
            "with plain file calls, so it must be a directory path (on a Spark cluster, one that "
            "the driver and every executor host mount at the same place: docs/spark.md §6.1)"
        )
    return os.path.abspath(os.path.expanduser(without_file_scheme(value)))


def port(value: object) -> str | None:
    return None if is_int(value) and 0 <= value <= 65535 else "must be a port, 0 to 65535"


def bind(value: object) -> str | None:
    if not isinstance(value, str):
        return "must be HOST or HOST:PORT (a string)"
    try:
        parse_bind(value)
    except ValueError as exc:
        return str(exc)
    return None


# a host name or an IPv4 address; an IPv6 address is written bare (::1) or in brackets ([::1])
_HOST_NAME = re.compile(r"[A-Za-z0-9_]([A-Za-z0-9_.-]*[A-Za-z0-9_])?")
_IPV6 = re.compile(r"[0-9A-Fa-f:.]*:[0-9A-Fa-f:.]*(%[A-Za-z0-9_.-]+)?")


def parse_bind(text: str) -> tuple[str, int | None]:
    """`host.drpc.bind` / `--drpc-bind`: `HOST` or `HOST:PORT` -> (host, port or None). An IPv6
    address is `::1` alone or `[::1]` / `[::1]:PORT` with a port. ValueError says what is
    wrong."""
    host, port_text = text, None
    if text.startswith("["):
        end = text.find("]")
        if end < 0:
            raise ValueError(f"must be HOST or HOST:PORT: {text!r} has '[' without ']'")
        host, rest = text[1:end], text[end + 1 :]
        if rest:
            if not rest.startswith(":"):
                raise ValueError(f"must be [IPV6] or [IPV6]:PORT, got {text!r}")
            port_text = rest[1:]
        if not _IPV6.fullmatch(host):
            raise ValueError(f"{host!r} in brackets is not an IPv6 address")
    elif text.count(":") == 1:
        host, port_text = text.split(":")
    if not host:
        raise ValueError(f"must be HOST or HOST:PORT with a host, got {text!r}")
    if not (_HOST_NAME.fullmatch(host) or (":" in host and _IPV6.fullmatch(host))):
        raise ValueError(
            f"{host!r} is not a host name or address (e.g. 127.0.0.1, 0.0.0.0, localhost, ::1)"
        )
    if port_text is None:
        return host, None
    if not port_text.isascii() or not port_text.isdigit() or int(port_text) > 65535:
        raise ValueError(f"the port of {text!r} must be 0 to 65535 (0: any free port)")
    return host, int(port_text)
