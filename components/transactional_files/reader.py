"""Reading a batch of whole lines from a file at a byte offset: the pure part of the file spout.

A batch is a byte range `[offset, next)` that holds exactly `lines` complete lines (each ends with
`\\n`). `read_new` finds the range of the next batch (at most `max_lines` lines from `offset`; a
last line without its newline is left for a later batch, as it may still be being written);
`read_range` reads a stored range again, byte for byte, so a replay emits the same lines
(docs/transactional.md §2.3: a transactional spout emits the same tuples for the same metadata).
"""

from __future__ import annotations

import os
from dataclasses import dataclass

CHUNK = 64 * 1024


class ReplayError(ValueError):
    """A stored range can no longer be read as it was (the file shrank or was rewritten)."""


@dataclass(frozen=True)
class Batch:
    """Complete lines of one file, and the byte range they came from."""

    offset: int
    next: int
    lines: tuple[str, ...]


def decode(raw: bytes) -> str:
    """One line's text: UTF-8 (bad bytes replaced), without its `\\n` or `\\r\\n`."""
    if raw.endswith(b"\n"):
        raw = raw[:-1]
        if raw.endswith(b"\r"):
            raw = raw[:-1]
    return raw.decode("utf-8", "replace")


def read_new(path: str, offset: int, max_lines: int) -> Batch:
    """Up to `max_lines` complete lines from byte `offset`. A file that does not exist (yet) is
    empty; one shorter than `offset` was truncated or replaced, which is an error."""
    if max_lines < 1:
        raise ValueError(f"max_lines must be >= 1, got {max_lines}")
    try:
        fh = open(path, "rb")
    except FileNotFoundError:
        if offset:
            raise ReplayError(f"{path}: gone, but {offset} bytes of it were read before") from None
        return Batch(offset, offset, ())
    with fh:
        size = os.fstat(fh.fileno()).st_size
        if size < offset:
            raise ReplayError(
                f"{path}: {size} bytes, but {offset} bytes of it were read before "
                f"(truncated or replaced; a file may only grow)"
            )
        fh.seek(offset)
        raws: list[bytes] = []
        position = offset
        pending = b""
        while len(raws) < max_lines:
            chunk = fh.read(CHUNK)
            if not chunk:
                break
            pending += chunk
            start = 0
            while len(raws) < max_lines:
                end = pending.find(b"\n", start)
                if end < 0:
                    break
                raws.append(pending[start : end + 1])
                position += end + 1 - start
                start = end + 1
            pending = pending[start:]
    return Batch(offset, position, tuple(decode(r) for r in raws))


def read_range(path: str, offset: int, next: int, lines: int) -> Batch:
    """The lines of the stored range `[offset, next)`, which must still hold `lines` complete
    lines; anything else means the file changed under us (ReplayError)."""
    if next < offset:
        raise ValueError(f"bad range [{offset}, {next})")
    if next == offset:
        if lines:
            raise ReplayError(f"{path}: an empty range cannot hold {lines} lines")
        return Batch(offset, next, ())
    try:
        with open(path, "rb") as fh:
            fh.seek(offset)
            data = fh.read(next - offset)
    except FileNotFoundError:
        raise ReplayError(f"{path}: gone, cannot replay bytes [{offset}, {next})") from None
    if len(data) != next - offset or not data.endswith(b"\n"):
        raise ReplayError(
            f"{path}: bytes [{offset}, {next}) are not what was read before "
            f"(the file was truncated or rewritten)"
        )
    raws = data.split(b"\n")[:-1]  # the range ends with a newline: the last piece is empty
    if len(raws) != lines:
        raise ReplayError(
            f"{path}: bytes [{offset}, {next}) hold {len(raws)} lines, {lines} were read before"
        )
    return Batch(offset, next, tuple(decode(r + b"\n") for r in raws))
