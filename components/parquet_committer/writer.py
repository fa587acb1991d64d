"""The Parquet committer's write (pure: no protocol): one file per txid, `part-<txid:020d>.parquet`,
written to a hidden temporary file and renamed into place (the Parquet sink's
`write_table_atomically`), skipped when the txid's file is already there. The rename is the
commit: the sink contract of docs/transactional.md §7 (apply and record the txid atomically; skip a
txid already applied), with the file's presence as the record."""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import pyarrow as pa

from components.audit import content_hash
from components.parquet_sink.sink import build_table, write_table_atomically

TEMPORARY = re.compile(r"\.part-\d{20}\.parquet\.tmp")
#: Key-value metadata in each file's schema: what the chaos tests compare across attempts.
TXID_KEY, ATTEMPT_KEY, HASH_KEY = "multilang.txid", "multilang.attempt", "multilang.content_hash"


def part_name(txid: int) -> str:
    return f"part-{txid:020d}.parquet"


def remove_temporaries(directory: str) -> list[str]:
    """Delete the temporary files a crash left behind (hidden by their leading dot anyway)."""
    removed = []
    for name in sorted(os.listdir(directory)):
        if TEMPORARY.fullmatch(name):
            os.unlink(os.path.join(directory, name))
            removed.append(name)
    return removed


def write_batch(
    directory: str,
    txid: int,
    attempt: int,
    fields: Sequence[str],
    tuples: Sequence[Sequence[Any]],
    types: Mapping[str, pa.DataType],
    compression: str = "snappy",
    on_mixed: Callable[[str], None] = lambda name: None,
    before_write: Callable[[], None] | None = None,
) -> bool:
    """Write the txid's file; False (nothing written) when it is there already. An empty batch
    is a file with no rows, so every committed txid has its file."""
    final = os.path.join(directory, part_name(txid))
    if os.path.exists(final):
        return False
    n = len(fields)
    columns: list[list[Any]] = [[] for _ in range(n)]
    for t in tuples:
        if len(t) != n:
            raise ValueError(
                f"a tuple has {len(t)} values, the files have {n} columns "
                f"({', '.join(fields)}): {list(t)!r}"
            )
        for i in range(n):
            columns[i].append(t[i])
    table = build_table(list(fields), columns, types, on_mixed)
    table = table.replace_schema_metadata(
        {TXID_KEY: str(txid), ATTEMPT_KEY: str(attempt), HASH_KEY: content_hash(tuples)}
    )
    if before_write is not None:
        before_write()
    write_table_atomically(table, final, compression)
    return True
