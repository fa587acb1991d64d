"""Record -> tuple values, as storm-kafka-client's translators do it.

- default: [topic, partition, offset, key, value] (its `DefaultRecordTranslator`)
- value:   [value] (a translator that emits the value only)
- json:    the value parsed as a JSON object, the configured keys in order (a missing key is
           null; a value that is not a JSON object is an error for that record)

Keys and values are text (UTF-8, undecodable bytes replaced) with encoding `string`. With
encoding `bytes` they are the record's bytes (`raw_bytes`: the spout runs under msgpack, whose
bin carries them) or base64 text of them (under JSON, which has no bytes).
"""

from __future__ import annotations

import base64
import json
from collections.abc import Callable
from typing import Any

Translate = Callable[[str, int, int, bytes | None, bytes | None], list[Any]]


class TranslateError(ValueError):
    """A record this translator cannot turn into a tuple."""


def _text(data: bytes | None) -> str | None:
    return None if data is None else data.decode("utf-8", "replace")


def _b64(data: bytes | None) -> str | None:
    return None if data is None else base64.b64encode(data).decode("ascii")


def _raw(data: bytes | None) -> bytes | None:
    return data


def translator(
    kind: str, encoding: str, json_fields: tuple[str, ...] = (), raw_bytes: bool = False
) -> Translate:
    decode = (_raw if raw_bytes else _b64) if encoding == "bytes" else _text
    if kind == "value":
        return lambda topic, partition, offset, key, value: [decode(value)]
    if kind == "json":
        fields = json_fields

        def from_json(topic: str, partition: int, offset: int, key: Any, value: Any) -> list:
            try:
                obj = json.loads(value) if value is not None else None
            except ValueError as exc:
                raise TranslateError(f"value is not JSON: {exc}") from None
            if not isinstance(obj, dict):
                raise TranslateError(f"value is not a JSON object: {str(value)[:80]!r}")
            return [obj.get(f) for f in fields]

        return from_json
    return lambda topic, partition, offset, key, value: [
        topic,
        partition,
        offset,
        decode(key),
        decode(value),
    ]
