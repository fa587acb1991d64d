"""One partition's batches as metadata (the pure part of `emit_new` / `emit_again`).

A partition's metadata of a txid is `{"file", "offset", "next", "lines", "line"}`: the byte range
`[offset, next)` of `file` holding `lines` complete lines, the first of them line number `line`
(1-based). The next batch starts where this one ended (`next`, `line + lines`); a replay reads
exactly the stored range again (Storm's `PartitionedTransactionalSpoutExecutor`: new batches from
the last metadata, replays from the stored one).
"""

from __future__ import annotations

from typing import Any

from .reader import Batch, ReplayError, read_new, read_range

Meta = dict[str, Any]


def start(last_meta: Meta | None) -> tuple[int, int]:
    """Where the batch after `last_meta` starts: (byte offset, line number)."""
    if last_meta is None:
        return 0, 1
    return int(last_meta["next"]), int(last_meta["line"]) + int(last_meta["lines"])


def new_batch(path: str, last_meta: Meta | None, max_lines: int) -> tuple[Batch, Meta]:
    """The next batch of `path` after `last_meta` (None: from the start), and its metadata."""
    if last_meta is not None and last_meta.get("file") != path:
        raise ReplayError(
            f"this partition was {last_meta.get('file')!r} and is now {path!r}: the list of "
            f"files changed (a new file matching the glob sorts before an old one?); keep the "
            f"list, or start over with a new topology.transactional.id"
        )
    offset, line = start(last_meta)
    batch = read_new(path, offset, max_lines)
    meta = {
        "file": path,
        "offset": batch.offset,
        "next": batch.next,
        "lines": len(batch.lines),
        "line": line,
    }
    return batch, meta


def replay_batch(meta: Meta) -> Batch:
    """Exactly the batch `meta` describes (its own file, whatever the partition's is now)."""
    return read_range(str(meta["file"]), int(meta["offset"]), int(meta["next"]), int(meta["lines"]))


def rows(meta: Meta, batch: Batch) -> list[list[Any]]:
    """The tuples of a batch: [file, line number, line]."""
    first = int(meta["line"])
    return [[meta["file"], first + i, text] for i, text in enumerate(batch.lines)]
