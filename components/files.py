"""Durable files: what is written survives a crash whole or not at all. The one place for it in the
project (the components' checkpoints and sinks, the host's batch state, the Spark engine's staging
and stored metadata).

A rename is atomic but not durable until its directory is fsynced, and a file's content is not on
disk until the file is fsynced: after a crash a reader could otherwise find the new name with
empty or partial content. Hence write, fsync the file, rename, fsync the directory.
"""

from __future__ import annotations

import os
import uuid


def write_atomically(path: str, data: bytes) -> None:
    """`data` at `path`, whole or not at all: a temporary file beside it (0600), fsynced, renamed
    over `path`, and the directory fsynced. The temporary name is unique, so that writers of one
    path in other processes or threads (a retried Spark task and its straggler writing the same
    txid's file) never write into each other's temporary file; the last rename wins whole."""
    directory = os.path.dirname(path) or "."
    tmp = os.path.join(directory, f".{os.path.basename(path)}.{uuid.uuid4().hex}.tmp")
    try:
        write_durably(tmp, data)
        os.replace(tmp, path)
    except BaseException:
        _remove(tmp)
        raise
    fsync_dir(directory)


def write_durably(path: str, data: bytes) -> None:
    """`data` at `path` (created 0600 or truncated), fsynced, in place: for a file whose
    directory is renamed into place as a whole afterwards (fsync that directory before)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        os.fsync(fd)
    finally:
        os.close(fd)


def fsync_dir(directory: str) -> None:
    """Make the names created, renamed or removed in `directory` durable."""
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _remove(path: str) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
