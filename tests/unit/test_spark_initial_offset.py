"""host/spark/source.py `initial_offset`, every txid source's first offset: a new query starts at
txid 0, and a state directory that already committed txids, met by a new Spark checkpoint, is
refused (its query's checkpoint was lost or not passed) rather than read from txid 1 again."""

from __future__ import annotations

from pathlib import Path

import pytest

from host.batch.store import BatchStore
from host.errors import TopologyError
from host.spark.source import initial_offset


def test_a_new_state_starts_at_txid_zero(tmp_path: Path) -> None:
    assert initial_offset(str(tmp_path / "batches")) == {"txid": 0}  # not even created yet
    BatchStore(str(tmp_path / "batches")).put_meta(1, {"offset": 0}, 0)  # opened, not committed
    assert initial_offset(str(tmp_path / "batches")) == {"txid": 0}


def test_a_state_with_committed_txids_is_refused_naming_it(tmp_path: Path) -> None:
    root = str(tmp_path / "batches")
    store = BatchStore(root)
    store.committed(1)
    store.committed(2)
    with pytest.raises(TopologyError, match=r"txids up to 2 committed.*--checkpoint") as info:
        initial_offset(root)
    assert root in str(info.value)
