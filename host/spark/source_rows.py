"""The rows every source of the engine hands Spark: one row per run of a spout task's tuples, never
one per tuple (docs/spark.md §4.2, "The source's rows"). Pure.

A Spark row costs per row, whatever it holds: the Python data source's worker hands it to the
JVM, and `DataFrame.rdd` pickles it back to a Python worker as a `Row`. Measured on
`local-cluster[2,1,1024]` (2026-11-28, 200,000 sentences, warm): 13.3 µs of CPU a sentence with a
row per sentence, 4.4 µs with a row per 4,096 (most of the rest the job's fixed cost). So a row
holds a run of consecutive tuples with one stream and one direct target, its values column
their values as one JSON array.

Columns (`SCHEMA`): the task's index among the source's partitions, the spout task, the stream,
the values of the row's tuples as a JSON array of arrays, the direct target task or null.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from typing import Any

from multilang.codec import quick_values_json

SCHEMA = "index INT, task INT, stream STRING, `values` STRING, direct INT"

ROW_TUPLES = 4096  # tuples in one row, at most
ROW_CHARS = 1 << 20  # characters of values in one row, at most (one more tuple may pass it)

SourceRow = tuple[int, int, str, str, "int | None"]
# stream, task, [values...], direct target: what a spout stage's partition reads (stages.py)
Chunk = tuple[str, int, list[list[Any]], "int | None"]


def source_rows(
    index: int,
    task: int,
    tuples: Iterable[tuple[str, str, int | None]],
    max_tuples: int = ROW_TUPLES,
    max_chars: int = ROW_CHARS,
) -> Iterator[SourceRow]:
    """`(stream, values as JSON text, direct target)` per tuple, in order, as rows: consecutive
    tuples with one stream and direct target share a row, up to `max_tuples` of them or until
    their text reaches `max_chars`."""
    key: tuple[str, int | None] | None = None
    texts: list[str] = []
    size = 0
    for stream, values, direct in tuples:
        if key != (stream, direct) or len(texts) >= max_tuples or size >= max_chars:
            if texts:
                assert key is not None
                yield (index, task, key[0], f"[{','.join(texts)}]", key[1])
            key, texts, size = (stream, direct), [], 0
        texts.append(values)
        size += len(values)
    if texts:
        assert key is not None
        yield (index, task, key[0], f"[{','.join(texts)}]", key[1])


def row_values_text(values: list[Any]) -> str:
    """One tuple's values as the JSON text a row joins. A row's column is a str that Arrow
    encodes as UTF-8, which a lone surrogate (a spout's JSON may carry one) would fail: the C
    encoder takes only values that are valid UTF-8, and the stdlib writes the rest with ASCII
    escapes. The C encoder first: 0.07 µs against json.dumps' 1.9 for a one-sentence tuple."""
    if quick_values_json is not None:
        data = quick_values_json(values)
        if data is not None:
            return data.decode()
    try:
        return json.dumps(values, separators=(",", ":"))
    except (TypeError, ValueError) as exc:  # bytes (a msgpack spout's bin values), an object
        raise TypeError(
            f"values that JSON cannot hold ({exc}): on Spark a spout's tuples reach the bolts "
            "as JSON rows (docs/spark.md §4.2)"
        ) from None


def source_chunks(rows: Iterable[Any]) -> Iterator[Chunk]:
    """The source's rows (Spark `Row`s or tuples in SCHEMA's order) as a spout stage's chunks."""
    loads = json.loads
    for row in rows:
        yield (row[2], row[1], loads(row[3]), row[4])
