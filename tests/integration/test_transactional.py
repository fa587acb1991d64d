"""Transactional batches through the real host (docs/transactional.md): a transactional spout, a
batch bolt with three tasks and an exactly-once committer, all real Python processes. The
committer keeps a ledger of the commits it applied, so each test checks the exact invariant:
the total equals the sum of the input, each txid was applied once, in increasing order."""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from host.runtime.supervisor import Supervisor
from host.topology.model import Topology
from host.topology.native import from_document

HERE = Path(__file__).parent / "components" / "python" / "tx"
LIMIT, STEP = 100, 7
EXPECTED_TOTAL = sum(range(LIMIT))
BATCHES = -(-LIMIT // STEP)


def topology(
    tmp: Path,
    *,
    pending: int = 3,
    partial_env: dict[str, str] | None = None,
    ledger_env: dict[str, str] | None = None,
    spout_tasks: int = 2,
    double: bool = False,
    config: dict[str, Any] | None = None,
) -> Topology:
    py = sys.executable
    env = {"LIMIT": str(LIMIT), "STEP": str(STEP)}
    bolts: dict[str, Any] = {
        "partial": {
            "command": [py, str(HERE / "partial_bolt.py")],
            "outputs": ["txid", "total"],
            "batch": "bolt",
            "parallelism": 3,
            "inputs": {"double" if double else "numbers": "shuffle"},
            "env": partial_env or {},
        },
        "ledger": {
            "command": [py, str(HERE / "ledger_committer.py")],
            "batch": "committer",
            "inputs": {"partial": "global"},
            "env": {"LEDGER": str(tmp / "ledger.json"), **(ledger_env or {})},
        },
    }
    if double:
        bolts["double"] = {
            "command": [py, str(HERE / "double_bolt.py")],
            "outputs": ["n"],
            "inputs": {"numbers": "shuffle"},
        }
    return from_document(
        {
            "name": "global-count",
            "transactional": {"id": "gc"},
            "config": {
                "topology.max.spout.pending": pending,
                "host.state.dir": str(tmp / "state"),
                **(config or {}),
            },
            "spouts": {
                "numbers": {
                    "command": [py, str(HERE / "numbers_spout.py")],
                    "outputs": ["n"],
                    "batch": "spout",
                    "parallelism": spout_tasks,
                    "env": env,
                }
            },
            "bolts": bolts,
        }
    )


def run(topo: Topology, done: Callable[[Supervisor], bool], timeout: float = 60.0) -> Supervisor:
    """Run until `done` holds, then stop gracefully; fails the test if `done` never holds."""
    sup = Supervisor(topo)
    sup.start()
    deadline = time.monotonic() + timeout
    try:
        while sup.step(0.05):
            if sup.stop_reason is None and (done(sup) or sup.failure):
                sup.request_stop("the test has what it waited for")
            assert time.monotonic() < deadline, f"not done within {timeout}s: {sup.snapshot()}"
    finally:
        sup.finish()
    return sup


def committed(txid: int) -> Callable[[Supervisor], bool]:
    def check(sup: Supervisor) -> bool:
        batches = sup.path.batches
        return batches is not None and batches.coordinator.committed_txid >= txid

    return check


def ledger(tmp: Path) -> dict[str, Any]:
    return json.loads((tmp / "ledger.json").read_text())


def assert_exactly_once(tmp: Path, total: int = EXPECTED_TOTAL) -> dict[str, Any]:
    state = ledger(tmp)
    txids = [t for t, _ in state["ledger"]]
    assert txids == list(range(1, BATCHES + 1)), "each txid applied once, in order"
    assert state["total"] == total
    return state


@pytest.mark.parametrize("pending", [1, 3])
def test_every_number_counts_once_and_commits_go_in_txid_order(
    tmp_path: Path, pending: int
) -> None:
    sup = run(topology(tmp_path, pending=pending), committed(BATCHES))
    assert sup.failure is None
    state = assert_exactly_once(tmp_path)
    assert all(attempt == 1 for _, attempt in state["ledger"])  # nothing failed: no replay
    snap = sup.snapshot()["batches"]
    assert snap["committed_txid"] == BATCHES and snap["replays"] == 0 and snap["open"] == []


@pytest.mark.parametrize(
    "fault", ["crash:5:1", "fail:4:1", "finish:6:1"], ids=["crash", "fail", "finish"]
)
def test_a_failed_attempt_is_replayed_with_the_same_txid_and_counts_once(
    tmp_path: Path, fault: str
) -> None:
    sup = run(topology(tmp_path, partial_env={"FAULT": fault}), committed(BATCHES))
    state = assert_exactly_once(tmp_path)
    txid = int(fault.split(":")[1])
    # applied once, by a replay (every task that meets the fault in attempt 1 fails it, and one
    # that meets it after the first replay began aborts that one too: 2 or more)
    (applied,) = [a for t, a in state["ledger"] if t == txid]
    assert applied >= 2
    assert sup.snapshot()["batches"]["replays"] >= 1


def test_an_attempt_that_outlives_the_message_timeout_is_replayed(tmp_path: Path) -> None:
    release = tmp_path / "release"
    topo = topology(
        tmp_path,
        partial_env={"FAULT": "hang:3:1", "RELEASE": str(release)},
        config={"topology.message.timeout.secs": 3, "topology.subprocess.timeout.secs": 600},
    )

    def done(sup: Supervisor) -> bool:
        batches = sup.path.batches
        assert batches is not None
        if "timed out" in (batches.figures.last_abort or ""):
            release.touch()  # the hung task goes on only once its attempt was given up
        return batches.coordinator.committed_txid >= BATCHES

    sup = run(topo, done)
    assert release.exists()
    state = assert_exactly_once(tmp_path)
    assert [a for t, a in state["ledger"] if t == 3] == [2]
    assert sup.snapshot()["batches"]["replays"] >= 1


def test_a_plain_bolt_takes_part_without_knowing(tmp_path: Path) -> None:
    run(topology(tmp_path, double=True), committed(BATCHES))
    assert_exactly_once(tmp_path, total=2 * EXPECTED_TOTAL)


def test_a_restarted_host_resumes_from_its_state_and_never_reapplies(tmp_path: Path) -> None:
    # first run: txid 4's commit hangs, so the host is stopped with attempts open after txid 3
    first = topology(tmp_path, ledger_env={"BLOCK": "4"}, config={"host.shutdown.grace.secs": 0})
    sup = run(first, committed(3))
    assert ledger(tmp_path)["txid"] == 3  # the precondition: 4 and later not applied
    assert (tmp_path / "state/transactional/gc/coordinator/currtx").read_text() == "4"
    stored = sorted(os.listdir(tmp_path / "state/transactional/gc/coordinator/meta"))
    assert "4.json" in stored  # its metadata was stored before it was emitted
    assert sup.path.batches is not None
    # second run on the same state: txid 4 is replayed from its stored metadata, then the rest
    again = run(topology(tmp_path), committed(BATCHES))
    assert again.path.batches is not None
    state = assert_exactly_once(tmp_path)
    assert dict(state["ledger"])[4] >= 2  # a replay: a later attempt than the first run's


def test_a_batch_component_whose_library_lacks_batch_1_stops_the_start(tmp_path: Path) -> None:
    topo = topology(tmp_path)
    doc_bolt = {
        "command": [sys.executable, str(HERE / "plain_declared_batch.py")],
        "batch": "bolt",
        "inputs": {"numbers": "shuffle"},
    }
    topo = from_document(
        {
            "name": "refused",
            "transactional": {"id": "r"},
            "config": {"host.state.dir": str(tmp_path / "state")},
            "spouts": {
                "numbers": {
                    "command": [sys.executable, str(HERE / "numbers_spout.py")],
                    "outputs": ["n"],
                    "batch": "spout",
                }
            },
            "bolts": {"plain": doc_bolt},
        }
    )
    sup = run(topo, lambda s: False)
    assert sup.failure is not None
    assert "plain[" in sup.failure and "batch/1" in sup.failure
    assert sup.path.batches is not None and sup.path.batches.coordinator.committed_txid == 0
