"""The spout's progress file: which rows are done (acked, or dead-lettered), written atomically.

Rows live in *segments* (a staged file, a directory's part file, a micro-batch), each named by a
key that also gives its order: `part-00003`, `<dir>/part-00001`, `batch-17` (see `order_of`).
Segments are fed in that order, so progress is a *watermark* (every segment up to and including
this key is done) plus, for the few segments after it that are under way, the offsets done:

    {"version": 1, "source": "dataframe", "fingerprint": "...",
     "watermark": "part-00002",
     "segments": {"part-00003": {"rows": 5000, "done": [[0, 1200], [1210, 1300]]}},
     "acked": 13210, "dead": 1, "finished": false, "updated": "2024-05-01T12:30:00+00:00"}

`done` ranges are half-open [start, end). A row is never emitted again once a checkpoint that
covers it is on disk. The file is written to a temporary file in the same directory, fsynced,
renamed over the old one, and the directory fsynced: a crash leaves the old or the new file,
never a mix. The directory is created owner-only (0700) and the file is 0600.
"""

from __future__ import annotations

import datetime
import json
import os
import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from components.files import write_atomically

VERSION = 1
FILE_NAME = "checkpoint.json"
_NUMBERED = re.compile(r"^(?:part|batch)-(\d+)$")


def order_of(key: str) -> tuple:
    """The sort key of a segment key: path parts, with `part-N` / `batch-N` compared as numbers."""
    out: list = []
    for part in key.split("/"):
        m = _NUMBERED.match(part)
        out.append((1, int(m.group(1)), "") if m else (0, 0, part))
    return tuple(out)


_ONES = bytes([0] + [1] * 255)  # translate table: any non-zero byte (acked, dead) -> 1


def to_ranges(bitmap: bytes | bytearray) -> list[list[int]]:
    """Half-open ranges of the non-zero bytes of `bitmap` (done rows). Uses bytes.find, so a
    segment of a million rows costs a few C-speed scans, not a Python loop per row."""
    flat = bytes(bitmap).translate(_ONES)
    ranges = []
    n = len(flat)
    pos = flat.find(b"\x01")
    while 0 <= pos < n:
        end = flat.find(b"\x00", pos)
        if end < 0:
            end = n
        ranges.append([pos, end])
        pos = flat.find(b"\x01", end)
    return ranges


def fill(bitmap: bytearray, ranges: Iterable[Iterable[int]], value: int = 1) -> int:
    """Mark `ranges` in `bitmap`; returns how many rows were newly marked."""
    marked = 0
    n = len(bitmap)
    for start, end in ranges:
        start, end = max(0, int(start)), min(n, int(end))
        if end > start:
            marked += bitmap.count(0, start, end)
            bitmap[start:end] = bytes([value]) * (end - start)
    return marked


@dataclass
class Checkpoint:
    source: str
    fingerprint: str
    watermark: str | None = None
    segments: dict[str, dict] = field(default_factory=dict)  # key -> {"rows", "done"}
    acked: int = 0
    dead: int = 0
    finished: bool = False

    def is_done(self, key: str, offset: int) -> bool:
        """Whether the row (key, offset) is covered by this checkpoint."""
        if self.watermark is not None and order_of(key) <= order_of(self.watermark):
            return True
        seg = self.segments.get(key)
        if not seg:
            return False
        return any(a <= offset < b for a, b in seg["done"])

    def as_json(self) -> dict:
        return {
            "version": VERSION,
            "source": self.source,
            "fingerprint": self.fingerprint,
            "watermark": self.watermark,
            "segments": self.segments,
            "acked": self.acked,
            "dead": self.dead,
            "finished": self.finished,
            "updated": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        }

    @classmethod
    def from_json(cls, doc: dict) -> Checkpoint:
        return cls(
            source=doc["source"],
            fingerprint=doc["fingerprint"],
            watermark=doc.get("watermark"),
            segments=dict(doc.get("segments") or {}),
            acked=int(doc.get("acked", 0)),
            dead=int(doc.get("dead", 0)),
            finished=bool(doc.get("finished", False)),
        )


class CheckpointError(Exception):
    """The checkpoint cannot be used (unreadable, or made for another job)."""


def ensure_dir(path: str) -> None:
    """Create `path` owner-only; an existing directory is left as it is."""
    os.makedirs(path, mode=0o700, exist_ok=True)


def load(directory: str, source: str, fingerprint: str) -> Checkpoint:
    """The checkpoint in `directory`, or a fresh one. A checkpoint written for another source or
    job is an error rather than silently ignored: resuming it would skip or repeat rows."""
    path = os.path.join(directory, FILE_NAME)
    try:
        with open(path, encoding="utf-8") as fh:
            doc = json.load(fh)
    except FileNotFoundError:
        return Checkpoint(source, fingerprint)
    except (OSError, ValueError) as exc:
        raise CheckpointError(f"cannot read the checkpoint {path}: {exc}") from None
    if not isinstance(doc, dict) or doc.get("version") != VERSION:
        raise CheckpointError(f"{path} is not a version-{VERSION} spark spout checkpoint")
    if doc.get("source") != source or doc.get("fingerprint") != fingerprint:
        raise CheckpointError(
            f"the checkpoint {path} was written for another job (source "
            f"{doc.get('source')!r}, fingerprint {doc.get('fingerprint')!r}; now {source!r}, "
            f"{fingerprint!r}): delete it to start over, or set spark.spout.checkpoint.dir to "
            f"another directory"
        )
    return Checkpoint.from_json(doc)


def save(directory: str, checkpoint: Checkpoint) -> None:
    write_atomically(
        os.path.join(directory, FILE_NAME),
        json.dumps(checkpoint.as_json(), separators=(",", ":")).encode(),
    )
