"""The transactional state on disk (host/batch/store.py): what a restarted host reads back, what a
commit deletes, and the refusal of a spout whose number of tasks changed."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from host.batch.store import BatchStore, write_atomically
from host.errors import TopologyError

ROOT = Path(__file__).resolve().parents[2]


def test_what_is_written_is_read_back_by_a_new_store(tmp_path: Path) -> None:
    store = BatchStore(str(tmp_path))
    assert store.currtx() == 1 and store.metas() == {}
    store.put_meta(1, {"from": 0}, 1)
    store.put_meta(2, {"from": 5}, 3)
    store.put_task_meta(0, 1, {"p0": 7})
    again = BatchStore(str(tmp_path))
    assert again.metas() == {
        1: {"meta": {"from": 0}, "attempt": 1},
        2: {"meta": {"from": 5}, "attempt": 3},
    }
    assert again.task_meta(0, 1) == {"p0": 7} and again.task_meta(1, 1) is None


def test_a_commit_keeps_its_own_metadata_and_drops_what_is_below(tmp_path: Path) -> None:
    store = BatchStore(str(tmp_path))
    for txid in (1, 2, 3):
        store.put_meta(txid, txid, 1)
        store.put_task_meta(0, txid, txid * 10)
    store.committed(2)
    again = BatchStore(str(tmp_path))
    assert again.currtx() == 3
    assert sorted(again.metas()) == [2, 3]  # 2 stays: the next batch's prev_meta
    assert again.task_meta(0, 1) is None and again.task_meta(0, 2) == 20
    assert not any(name.endswith(".tmp") for _, _, names in os.walk(tmp_path) for name in names)


def test_an_atomic_write_replaces_the_whole_file(tmp_path: Path) -> None:
    path = tmp_path / "f.json"
    write_atomically(str(path), {"a": 1})
    write_atomically(str(path), [2])
    assert json.loads(path.read_text()) == [2]
    assert os.listdir(tmp_path) == ["f.json"]


def test_per_task_metadata_is_not_handed_to_another_number_of_tasks(tmp_path: Path) -> None:
    store = BatchStore(str(tmp_path))
    store.check_parallelism("files", 2)
    store.check_parallelism("files", 3)  # nothing stored per task yet: fine
    store.put_task_meta(0, 1, {"offset": 10})
    with pytest.raises(TopologyError, match="written by 3 task"):
        BatchStore(str(tmp_path)).check_parallelism("files", 2)


def test_the_command_line_refuses_it_before_anything_starts(tmp_path: Path) -> None:
    state = tmp_path / "state"
    root = state / "transactional" / "gc"
    BatchStore(str(root)).check_parallelism("numbers", 3)
    BatchStore(str(root)).put_task_meta(0, 1, {"offset": 10})
    topology = ROOT / "examples" / "transactional" / "global-count" / "topology.yaml"
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "host",
            "local",
            str(topology),
            "--state-dir",
            str(state),
            "-c",
            "topology.transactional.id=gc",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
    )
    assert result.returncode == 2
    assert "written by 3 task(s) of batch spout 'numbers'" in result.stderr


def test_the_command_line_refuses_a_state_dir_url_before_anything_starts(tmp_path: Path) -> None:
    topology = ROOT / "examples" / "transactional" / "global-count" / "topology.yaml"
    result = subprocess.run(
        [sys.executable, "-m", "host", "local", str(topology), "--state-dir", "s3a://b/state"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
    )
    assert result.returncode == 2, result.stderr
    assert "error: --state-dir 's3a://b/state': a s3a:// URL is not supported" in result.stderr
    assert list(tmp_path.iterdir()) == []  # no directory "s3a:" made where it ran
