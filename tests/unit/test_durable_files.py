"""components/files.py: the project's one way of writing a file durably."""

from __future__ import annotations

import os
import stat
import threading
from pathlib import Path

import pytest

from components.files import fsync_dir, write_atomically, write_durably


def test_write_atomically_replaces_the_file_whole_and_leaves_no_temporary_file(tmp_path: Path):
    target = tmp_path / "state.json"
    target.write_bytes(b"old")
    write_atomically(str(target), b"new content")
    assert target.read_bytes() == b"new content"
    assert os.listdir(tmp_path) == ["state.json"]
    assert stat.S_IMODE(target.stat().st_mode) == 0o600


def test_writers_of_one_path_never_share_a_temporary_file(tmp_path: Path):
    """A retried Spark task and its straggler write the same txid's file at once: each rename
    brings one writer's whole content, never a mix."""
    target = str(tmp_path / "7.json")
    contents = [bytes([65 + i]) * 200_000 for i in range(8)]
    threads = [threading.Thread(target=write_atomically, args=(target, c)) for c in contents]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert Path(target).read_bytes() in contents
    assert os.listdir(tmp_path) == ["7.json"]


def test_a_failed_write_leaves_the_old_file_and_no_temporary_file(tmp_path: Path):
    target = tmp_path / "state.json"
    target.write_bytes(b"old")
    with pytest.raises(TypeError):  # fails once the temporary file exists: text, not bytes
        write_atomically(str(target), "not bytes")  # type: ignore[arg-type]
    assert target.read_bytes() == b"old"
    assert os.listdir(tmp_path) == ["state.json"]


def test_a_missing_directory_is_an_error_naming_it(tmp_path: Path):
    missing = tmp_path / "no" / "such"
    with pytest.raises(FileNotFoundError) as info:
        write_atomically(str(missing / "f.json"), b"x")
    assert str(missing) in str(info.value)
    with pytest.raises(FileNotFoundError):
        fsync_dir(str(missing))


def test_write_durably_writes_in_place_and_truncates(tmp_path: Path):
    target = tmp_path / "0.rows"
    write_durably(str(target), b"a longer first content")
    write_durably(str(target), b"short")
    assert target.read_bytes() == b"short"
    assert stat.S_IMODE(target.stat().st_mode) == 0o600
