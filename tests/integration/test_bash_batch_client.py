"""The bash client's side of the batch/1 extension (docs/transactional.md §4, §5) against real bash
processes: run_batch_bolt, run_committer and run_transactional_spout.

Each test starts a component from tests/integration/components/bash/batch_*.sh through
ComponentPeer, writes the extension's frames to its stdin as the host would and checks the frames
it writes back. Those are read as the JSON objects the component wrote (`RawFrames`), so that the
checks are of the wire format itself, whatever types the host decodes them into.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from host.testing import ComponentPeer, make_context
from multilang.codec import DEFAULT_MAX_FRAME, Framer
from multilang.component_decoding import component_message
from multilang.messages import Handshake

COMPONENTS = Path(__file__).resolve().parent / "components" / "bash"
BOLT = str(COMPONENTS / "batch_bolt.sh")
COMMITTER = str(COMPONENTS / "batch_committer.sh")
SPOUT = str(COMPONENTS / "batch_spout.sh")
PLAIN_BOLT = str(COMPONENTS / "scripted_bolt.sh")
NEEDS_BATCH = "batch components need a host that speaks batch/1"

Frame = dict[str, Any]
Start = Callable[..., ComponentPeer]


class RawFrames:
    """A stand-in for the host's decoder: each frame as the JSON object the component wrote, but
    the pid reply as `Pid` (ComponentPeer.handshake checks it)."""

    def __init__(self) -> None:
        self.framer = Framer(DEFAULT_MAX_FRAME)

    def feed(self, data: bytes) -> list[Any]:
        out: list[Any] = []
        for payload in self.framer.feed(data):
            value = json.loads(payload)
            is_pid = isinstance(value, dict) and "pid" in value and "command" not in value
            out.append(component_message(value, awaiting_pid=True) if is_pid else value)
        return out


@pytest.fixture
def start() -> Iterator[Start]:
    started: list[ComponentPeer] = []

    def start(script: str, env: dict[str, str] | None = None) -> ComponentPeer:
        peer = ComponentPeer(["bash", script], env=env)
        peer.decoder = RawFrames()
        started.append(peer)
        return peer

    yield start
    for peer in started:
        if peer.proc.poll() is None:
            peer.close()
        shutil.rmtree(peer.pid_dir, ignore_errors=True)


def batch_context(role: str, committed: int = 0, componentid: str = "counter") -> dict[str, Any]:
    context = make_context(taskid=3, componentid=componentid)
    context["batch"] = {
        "protocol": 1,
        "role": role,
        "transactional_id": "wc",
        "committed_txid": committed,
    }
    return context


def started(start: Start, script: str, role: str, committed: int = 0, **kw: Any) -> ComponentPeer:
    peer = start(script, **kw)
    peer.handshake(context=batch_context(role, committed))
    assert "batch/1" in peer.extensions
    return peer


def send(peer: ComponentPeer, frame: Frame) -> None:
    peer.send_raw(json.dumps(frame).encode() + b"\nend\n")


def tx_tuple(peer: ComponentPeer, id: str, values: list[Any], txid: int, attempt: int) -> None:
    send(
        peer,
        {
            "id": id,
            "comp": "numbers",
            "stream": "default",
            "task": 1,
            "tuple": values,
            "tx": {"txid": txid, "attempt": attempt},
        },
    )


def batch_message(peer: ComponentPeer, id: str, batch: dict[str, Any]) -> None:
    """finish / abort: heartbeat-shaped, with a `batch` key (§4.2)."""
    send(
        peer,
        {"id": id, "comp": None, "stream": "__heartbeat", "task": -1, "tuple": [], "batch": batch},
    )


def finish(peer: ComponentPeer, id: str, txid: int, attempt: int, commit: bool = False) -> None:
    batch_message(peer, id, {"op": "finish", "txid": txid, "attempt": attempt, "commit": commit})


def abort(peer: ComponentPeer, txid: int, attempt: int) -> None:
    batch_message(peer, "0", {"op": "abort", "txid": txid, "attempt": attempt})


def until(peer: ComponentPeer, command: str) -> list[Frame]:
    """Frames up to and including the first with this command."""
    out: list[Frame] = []
    while not out or out[-1].get("command") != command:
        out.append(peer.read())
    return out


def emit(values: list[Any], anchor: str | None = None) -> Frame:
    frame: Frame = {"command": "emit", "tuple": values}
    if anchor is not None:
        frame["anchors"] = [anchor]
    frame["need_task_ids"] = False
    return frame


def ack(id: str) -> Frame:
    return {"command": "ack", "id": id}


def fail(id: str) -> Frame:
    return {"command": "fail", "id": id}


def log(msg: str) -> Frame:
    return {"command": "log", "msg": msg, "level": 2}


SYNC: Frame = {"command": "sync"}


def nothing_pending(peer: ComponentPeer) -> None:
    """Everything written before was handled: a heartbeat is answered by the next frame."""
    peer.heartbeat()
    assert peer.read() == SYNC


# ---- handshake ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("script", "role"),
    [(BOLT, "bolt"), (BOLT, "committer"), (COMMITTER, "committer"), (SPOUT, "spout")],
)
def test_batch_runners_announce_batch_1(start, script, role):
    peer = start(script)
    peer.handshake(context=batch_context(role, committed=41))
    assert peer.extensions == ("pipeline/1", "batch/1")
    if script == BOLT:
        assert peer.read() == log(f"init role={role} id=wc committed=41")
    assert peer.close() == 0


def test_plain_runners_do_not_announce_batch_1(start):
    peer = start(PLAIN_BOLT)
    peer.handshake(context=batch_context("bolt"))
    assert peer.extensions == ("pipeline/1",)
    assert peer.close() == 0


def ended(peer: ComponentPeer) -> tuple[int, list[Any], str]:
    """Waits for the component to exit: its status, the frames it wrote, its stderr."""
    status = peer.proc.wait(10)
    deadline = time.monotonic() + 10
    while peer.sel.get_map() and time.monotonic() < deadline:  # until both pipes are at EOF
        peer._pump(0.5)
    frames, peer.inbox = peer.inbox, []
    return status, frames, peer.stderr.decode()


@pytest.mark.parametrize("script", [BOLT, COMMITTER, SPOUT])
def test_without_context_batch_they_fail_fast(start, script):
    peer = start(script)
    peer.send(Handshake(peer.pid_dir, {"topology.name": "t"}, make_context(3, "counter")))
    status, frames, stderr = ended(peer)
    assert (status, frames) == (1, [])  # no pid reply
    assert stderr == f"multilang.sh: {NEEDS_BATCH}\n"
    assert list(Path(peer.pid_dir).iterdir()) == []


@pytest.mark.parametrize(
    ("script", "runner", "role"),
    [
        (COMMITTER, "run_committer", "bolt"),
        (SPOUT, "run_transactional_spout", "committer"),
        (BOLT, "run_batch_bolt", "spout"),
    ],
)
def test_a_runner_that_does_not_fit_the_declared_role_fails_fast(start, script, runner, role):
    peer = start(script)
    peer.send(Handshake(peer.pid_dir, {"topology.name": "t"}, batch_context(role)))
    status, frames, stderr = ended(peer)
    assert (status, frames) == (1, [])
    assert (
        stderr == f'multilang.sh: {runner} cannot run component counter, declared "batch: {role}"\n'
    )


# ---- batch bolts --------------------------------------------------------------------------------


def test_tuple_of_an_attempt_is_processed_anchored_and_acked(start):
    peer = started(start, BOLT, "bolt")
    assert peer.read() == log("init role=bolt id=wc committed=0")
    tx_tuple(peer, "-42", ["vars", "x", 3], txid=7, attempt=2)
    assert until(peer, "ack") == [emit(["7", "2", "7-2", "-42", "numbers", "3"], "-42"), ack("-42")]
    tx_tuple(peer, "43", ["emit", "a", "b"], txid=7, attempt=2)
    assert until(peer, "ack") == [emit(["a", "b"], "43"), ack("43")]


def test_finish_reports_its_attempt_anchored_to_the_finish_then_acks_it(start):
    peer = started(start, BOLT, "bolt")
    peer.read()
    # Two attempts in flight at once: each finish sees only its own tuples.
    for i, txid in enumerate([7, 8, 7, 7, 8]):
        tx_tuple(peer, str(i), ["count"], txid=txid, attempt=1)
    assert [peer.read() for _ in range(5)] == [ack(str(i)) for i in range(5)]
    finish(peer, "8823", txid=7, attempt=1)
    assert until(peer, "ack") == [emit([7, 1, 3, False, "8823", 1], "8823"), ack("8823")]
    finish(peer, "8824", txid=8, attempt=1)
    assert until(peer, "ack") == [emit([8, 1, 2, False, "8824", 0], "8824"), ack("8824")]
    nothing_pending(peer)  # a finish is never answered as a heartbeat


def test_finish_of_an_attempt_without_tuples_still_runs(start):
    peer = started(start, BOLT, "bolt")
    peer.read()
    finish(peer, "f1", txid=3, attempt=1)
    assert until(peer, "ack") == [emit([3, 1, 0, False, "f1", 0], "f1"), ack("f1")]


def test_failing_process_fails_the_tuple_and_the_bolt_goes_on(start):
    peer = started(start, BOLT, "bolt")
    peer.read()
    tx_tuple(peer, "1", ["fail"], txid=7, attempt=1)
    assert until(peer, "fail") == [
        emit(["before failing"], "1"),
        {"command": "error", "msg": "process returned status 3 for tuple 1"},
        fail("1"),
    ]
    tx_tuple(peer, "2", ["count"], txid=7, attempt=1)
    assert peer.read() == ack("2")


def test_failing_finish_fails_the_finish(start):
    peer = started(start, BOLT, "bolt")
    peer.read()
    tx_tuple(peer, "1", ["fail-finish"], txid=7, attempt=1)
    assert peer.read() == ack("1")
    finish(peer, "f7", txid=7, attempt=1)
    assert until(peer, "fail") == [
        emit(["failing finish"], "f7"),
        {"command": "error", "msg": "finish returned status 4 for the finish of txid 7 attempt 1"},
        fail("f7"),
    ]
    # The attempt is over for the library: its replay is a fresh attempt, no on_abort for it.
    tx_tuple(peer, "2", ["count"], txid=7, attempt=2)
    assert peer.read() == ack("2")


def test_abort_drops_the_attempt_and_is_not_answered(start):
    peer = started(start, BOLT, "bolt")
    peer.read()
    tx_tuple(peer, "1", ["count"], txid=7, attempt=1)
    tx_tuple(peer, "2", ["count"], txid=8, attempt=1)
    assert [peer.read(), peer.read()] == [ack("1"), ack("2")]
    abort(peer, txid=7, attempt=1)
    assert peer.read() == log("abort 7-1 had=1")
    nothing_pending(peer)  # no answer to the abort
    # The replay starts from nothing, and no second on_abort comes for attempt 1.
    tx_tuple(peer, "3", ["count"], txid=7, attempt=2)
    assert peer.read() == ack("3")
    finish(peer, "f", txid=7, attempt=2)
    assert until(peer, "ack") == [emit([7, 2, 1, False, "f", 1], "f"), ack("f")]


def test_a_higher_attempt_drops_the_lower_one(start):
    peer = started(start, BOLT, "bolt")
    peer.read()
    tx_tuple(peer, "1", ["count"], txid=7, attempt=1)
    tx_tuple(peer, "2", ["count"], txid=7, attempt=1)
    assert [peer.read(), peer.read()] == [ack("1"), ack("2")]
    tx_tuple(peer, "3", ["count"], txid=7, attempt=3)  # first seen by a tuple
    assert [peer.read(), peer.read()] == [log("abort 7-1 had=2"), ack("3")]
    tx_tuple(peer, "4", ["count"], txid=8, attempt=1)
    assert peer.read() == ack("4")
    finish(peer, "f8", txid=8, attempt=2)  # first seen by a finish
    assert until(peer, "ack") == [
        log("abort 8-1 had=1"),
        emit([8, 2, 0, False, "f8", 1], "f8"),
        ack("f8"),
    ]
    finish(peer, "f7", txid=7, attempt=3)
    assert until(peer, "ack") == [emit([7, 3, 1, False, "f7", 0], "f7"), ack("f7")]


def test_an_abort_of_a_higher_attempt_drops_the_lower_one_too(start):
    peer = started(start, BOLT, "bolt")
    peer.read()
    tx_tuple(peer, "1", ["count"], txid=7, attempt=1)
    assert peer.read() == ack("1")
    abort(peer, txid=7, attempt=2)
    assert [peer.read(), peer.read()] == [log("abort 7-1 had=1"), log("abort 7-2 had=none")]
    nothing_pending(peer)


def over(what: str, txid: int, attempt: int) -> Frame:
    msg = f"multilang.sh: failing a {what} of txid {txid} attempt {attempt}, which is over"
    return {"command": "log", "msg": msg, "level": 3}


def test_messages_of_an_attempt_that_is_over_are_failed_unread(start):
    peer = started(start, BOLT, "bolt", committed=5)
    peer.read()
    tx_tuple(peer, "1", ["count"], txid=7, attempt=2)
    assert peer.read() == ack("1")
    # Attempt 1 is dead once attempt 2 is seen: nothing of it runs (attempt 2's count stays 1).
    tx_tuple(peer, "2", ["emit", "stale"], txid=7, attempt=1)
    assert [peer.read(), peer.read()] == [over("tuple", 7, 1), fail("2")]
    finish(peer, "old", txid=7, attempt=1)
    assert [peer.read(), peer.read()] == [over("finish", 7, 1), fail("old")]
    finish(peer, "f", txid=7, attempt=2)
    assert until(peer, "ack") == [emit([7, 2, 1, False, "f", 0], "f"), ack("f")]
    # Finished: a late message of it, or of a lower attempt, is over too.
    tx_tuple(peer, "3", ["count"], txid=7, attempt=2)
    assert [peer.read(), peer.read()] == [over("tuple", 7, 2), fail("3")]
    finish(peer, "again", txid=7, attempt=2)
    assert [peer.read(), peer.read()] == [over("finish", 7, 2), fail("again")]
    # Aborted: the same.
    tx_tuple(peer, "4", ["count"], txid=8, attempt=1)
    assert peer.read() == ack("4")
    abort(peer, txid=8, attempt=1)
    assert peer.read() == log("abort 8-1 had=1")
    tx_tuple(peer, "5", ["count"], txid=8, attempt=1)
    assert [peer.read(), peer.read()] == [over("tuple", 8, 1), fail("5")]
    # A txid committed before the start (the handshake's committed_txid is 5).
    tx_tuple(peer, "6", ["count"], txid=5, attempt=1)
    assert [peer.read(), peer.read()] == [over("tuple", 5, 1), fail("6")]
    finish(peer, "f5", txid=5, attempt=3)
    assert [peer.read(), peer.read()] == [over("finish", 5, 3), fail("f5")]
    tx_tuple(peer, "7", ["count"], txid=6, attempt=1)  # above it: as usual
    assert peer.read() == ack("7")


def test_many_closed_txids_are_remembered_boundedly(start):
    peer = started(start, BOLT, "bolt")
    peer.read()
    for first in range(1, 2101, 100):  # beyond the 2048 at which the oldest are forgotten
        # in rounds: the answers must be read while the pipes have room
        for txid in range(first, first + 100):
            finish(peer, f"f{txid}", txid=txid, attempt=1)
        for txid in range(first, first + 100):
            assert until(peer, "ack")[-1] == ack(f"f{txid}")
    finish(peer, "late", txid=2100, attempt=1)  # recent: still known as over
    assert [peer.read(), peer.read()] == [over("finish", 2100, 1), fail("late")]
    finish(peer, "first", txid=1, attempt=1)  # forgotten: the memory is bounded
    assert until(peer, "ack") == [emit([1, 1, 0, False, "first", 0], "first"), ack("first")]


def test_heartbeats_ticks_and_tuples_without_tx(start):
    peer = started(start, BOLT, "bolt")
    peer.read()
    nothing_pending(peer)
    peer.tick("t1")  # ticks too: acked (the component has no on_tick)
    assert peer.read() == ack("t1")
    peer.tuple("5", ["emit", "plain"])  # no `tx`: no attempt to give it to
    assert until(peer, "fail") == [
        {
            "command": "log",
            "msg": "multilang.sh: a batch bolt received tuple 5 without a transaction (tx), failed",
            "level": 3,
        },
        fail("5"),
    ]


def test_run_batch_bolt_under_a_committer_role_gets_commit_true(start):
    peer = started(start, BOLT, "committer")
    peer.read()
    tx_tuple(peer, "1", ["count"], txid=4, attempt=1)
    assert peer.read() == ack("1")
    finish(peer, "c", txid=4, attempt=1, commit=True)
    assert until(peer, "ack") == [emit([4, 1, 1, True, "c", 0], "c"), ack("c")]


# ---- committers ---------------------------------------------------------------------------------


def test_committer_stores_in_txid_order_and_skips_a_stored_txid(start):
    peer = started(start, COMMITTER, "committer", committed=5)
    for i, (n, txid) in enumerate([(10, 6), (20, 6), (5, 7)]):
        tx_tuple(peer, str(i), [n], txid=txid, attempt=1)
        assert peer.read() == ack(str(i))
    finish(peer, "c6", txid=6, attempt=1, commit=True)
    assert until(peer, "ack") == [emit([6, 30, True], "c6"), ack("c6")]
    finish(peer, "c7", txid=7, attempt=1, commit=True)
    assert until(peer, "ack") == [emit([7, 35, True], "c7"), ack("c7")]
    # A replay of txid 7 (its ack was lost, say): stored already, so skipped.
    tx_tuple(peer, "9", [5], txid=7, attempt=2)
    assert peer.read() == ack("9")
    finish(peer, "c7b", txid=7, attempt=2, commit=True)
    assert until(peer, "ack") == [log("skip txid 7: stored already"), ack("c7b")]
    # txids at or below the handshake's committed_txid were stored before the start.
    finish(peer, "c5", txid=5, attempt=1, commit=True)
    assert [peer.read(), peer.read()] == [over("finish", 5, 1), fail("c5")]


# ---- transactional spouts -----------------------------------------------------------------------


def test_batch_init_answers_meta_then_sync(start):
    peer = started(start, SPOUT, "spout")
    send(peer, {"command": "batch_init", "id": "", "txid": 1, "prev_meta": None})
    assert until(peer, "sync") == [
        log("init txid=1 prev=null"),
        {"command": "batch_meta", "meta": 0},
        SYNC,
    ]
    send(peer, {"command": "batch_init", "id": "", "txid": 2, "prev_meta": 0})
    assert until(peer, "sync") == [
        log("init txid=2 prev=0"),
        {"command": "batch_meta", "meta": 3},
        SYNC,
    ]


def test_batch_init_not_ready_and_skipping_txids(start):
    peer = started(start, SPOUT, "spout")
    send(peer, {"command": "batch_init", "id": "", "txid": 3, "prev_meta": {"a": [1]}})
    assert until(peer, "sync") == [log('init txid=3 prev={"a":[1]}'), SYNC]  # not ready
    send(peer, {"command": "batch_init", "id": "", "txid": 5, "prev_meta": 3})
    assert until(peer, "sync") == [
        log("init txid=5 prev=3"),
        {"command": "batch_meta", "meta": {"from": "5 is 7"}, "txid": 7},
        SYNC,
    ]


def emit_command(txid: int, attempt: int, meta: Any, **kw: Any) -> Frame:
    return {
        "command": "batch_emit",
        "id": "",
        "tx": {"txid": txid, "attempt": attempt},
        "meta": meta,
        "task_meta": kw.get("task_meta"),
        "prev_task_meta": kw.get("prev_task_meta"),
        "committed": kw.get("committed", txid - 1),
        "replay": kw.get("replay", False),
    }


def test_batch_emit_emits_without_ids_then_its_meta_then_sync(start):
    peer = started(start, SPOUT, "spout")
    send(peer, emit_command(8, 1, 3, prev_task_meta={"done": 3, "txid": 7}, committed=6))
    assert until(peer, "sync") == [
        log(
            'emit txid=8 attempt=1 meta=3 task_meta=null prev_task_meta={"done":3,"txid":7} '
            "replay=false committed=6 vars=8/1"
        ),
        emit([3, "n3"]),
        emit([4, "n4"]),
        emit([5, "n5"]),
        {"command": "batch_meta", "meta": {"done": 6, "txid": 8}},
        SYNC,
    ]
    # The replay: the same tuples from the same meta.
    send(peer, emit_command(8, 2, 3, task_meta={"done": 6, "txid": 8}, replay=True, committed=7))
    assert until(peer, "sync") == [
        log(
            'emit txid=8 attempt=2 meta=3 task_meta={"done":6,"txid":8} prev_task_meta=null '
            "replay=true committed=7 vars=8/2"
        ),
        emit([3, "n3"]),
        emit([4, "n4"]),
        emit([5, "n5"]),
        {"command": "batch_meta", "meta": {"done": 6, "txid": 8}},
        SYNC,
    ]


def test_batch_meta_goes_after_the_emits_and_no_message_ids(start):
    peer = started(start, SPOUT, "spout")
    send(peer, emit_command(2, 1, "late"))
    assert until(peer, "sync")[1:] == [
        emit(["after meta"]),
        {"command": "batch_meta", "meta": "reported early"},
        SYNC,
    ]
    send(peer, emit_command(3, 1, "id"))
    frames = until(peer, "sync")[1:]
    assert frames[0]["level"] == 4 and "no message id" in frames[0]["msg"]
    assert frames[1:] == [log("emit_id status 2"), SYNC]


def test_batch_commit_calls_the_commit_function(start):
    peer = started(start, SPOUT, "spout")
    send(peer, {"command": "batch_commit", "id": "", "tx": {"txid": 8, "attempt": 2}})
    frames = until(peer, "sync")
    assert frames[0] == log("commit txid=8 attempt=2")
    assert frames[1]["level"] == 4 and "batch_meta: only inside" in frames[1]["msg"]
    assert frames[2:] == [log("batch_meta in commit: status 2"), SYNC]


def test_batch_commit_without_a_commit_function_just_syncs(start):
    peer = started(start, SPOUT, "spout", env={**os.environ, "BATCH_SPOUT_NO_COMMIT": "1"})
    send(peer, {"command": "batch_commit", "id": "", "tx": {"txid": 8, "attempt": 1}})
    assert peer.read() == SYNC
    peer.command("activate")  # the other spout commands are still answered
    assert peer.read() == SYNC


@pytest.mark.parametrize(
    ("command", "message"),
    [
        (
            {"command": "batch_init", "id": "", "txid": 4, "prev_meta": 3},
            "init returned status 1 for batch_init of txid 4",
        ),
        (
            emit_command(9, 1, "die"),
            "emit_batch returned status 5 for batch_emit of txid 9 attempt 1",
        ),
        (
            {"command": "batch_commit", "id": "", "tx": {"txid": 13, "attempt": 1}},
            "commit returned status 1 for batch_commit of txid 13 attempt 1",
        ),
    ],
)
def test_a_failing_init_emit_or_commit_ends_the_task_without_a_sync(start, command, message):
    peer = started(start, SPOUT, "spout")
    send(peer, command)
    status, frames, stderr = ended(peer)
    assert status == 1
    assert frames[-1] == {"command": "error", "msg": f"{message}; the task exits"}
    assert SYNC not in frames and not any(f.get("command") == "batch_meta" for f in frames)
    assert stderr == f"multilang.sh: {message}; exiting\n"
