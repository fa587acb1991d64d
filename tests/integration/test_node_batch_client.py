"""The Node client's side of `batch/1` (docs/transactional.md §4, §5), through real `node`
processes.

Each test starts a component from tests/integration/components/node/batch_*.js under
ComponentPeer, writes the host's batch messages to it as raw JSON frames and checks the frames it
answers. Those are read as plain JSON objects (not the host's typed messages), so each assertion
states exactly the wire form the contract gives.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from host.testing import ComponentPeer, make_context
from multilang.codec import Framer
from multilang.component_decoding import component_message
from multilang.serializers import JsonSerializer

COMPONENTS = Path(__file__).resolve().parent / "components" / "node"
BOLT = COMPONENTS / "batch_bolt.js"
SPOUT = COMPONENTS / "batch_spout.js"
PLAIN_BOLT = COMPONENTS / "basic_bolt.js"
NO_BATCH_HOST = "batch components need a host that speaks batch/1"


class _RawDecoder:
    """The component's frames as parsed JSON, except the pid reply (ComponentPeer wants a Pid)."""

    def __init__(self, max_frame: int):
        self.framer = Framer(max_frame)
        self.awaiting_pid = True

    def feed(self, data: bytes) -> list[Any]:
        out: list[Any] = []
        for payload in self.framer.feed(data):
            value = json.loads(payload)
            if self.awaiting_pid and isinstance(value, dict) and "pid" in value:
                self.awaiting_pid = False
                value = component_message(value, awaiting_pid=True)
            out.append(value)
        return out


class RawJson(JsonSerializer):
    def decoder(self, max_frame: int) -> Any:
        return _RawDecoder(max_frame)


def batch_context(
    role: str, taskid: int = 3, tasks: list[int] | None = None, component: str = "comp"
) -> dict[str, Any]:
    """A handshake context of a batch component (§4.1); `tasks`: all tasks of its component."""
    context = make_context(taskid=taskid, componentid=component)
    for task in tasks or [taskid]:
        context["task->component"][str(task)] = component
    context["batch"] = {
        "protocol": 1,
        "role": role,
        "transactional_id": "test-tx",
        "committed_txid": 0,
    }
    return context


@pytest.fixture
def start():
    """start(script, *args, conf=, context=, handshake=) -> a ComponentPeer reading raw JSON."""
    peers: list[ComponentPeer] = []

    def _start(
        script: Path,
        *args: str,
        conf: dict[str, Any] | None = None,
        context: dict[str, Any] | None = None,
        handshake: bool = True,
    ) -> ComponentPeer:
        peer = ComponentPeer(["node", str(script), *args], serializer=RawJson())
        peers.append(peer)
        if handshake:
            peer.handshake(conf, context)
        return peer

    yield _start
    for peer in peers:
        if peer.proc.stdin is not None and not peer.proc.stdin.closed:
            peer.close()


def send(peer: ComponentPeer, message: dict[str, Any]) -> None:
    peer.send_raw(json.dumps(message).encode() + b"\nend\n")


def tx_tuple(peer: ComponentPeer, id: str, values: list[Any], txid: int, attempt: int) -> None:
    """A tuple of an attempt: the usual keys, then `tx` (§4.2)."""
    send(
        peer,
        {
            "id": id,
            "comp": "split",
            "stream": "default",
            "task": 1,
            "tuple": values,
            "tx": {"txid": txid, "attempt": attempt},
        },
    )


def batch_op(peer: ComponentPeer, id: str, op: str, txid: int, attempt: int, **more: Any) -> None:
    """`finish` or `abort`: heartbeat-shaped, with a `batch` key (§4.2)."""
    send(
        peer,
        {
            "id": id,
            "comp": None,
            "stream": "__heartbeat",
            "task": -1,
            "tuple": [],
            "batch": {"op": op, "txid": txid, "attempt": attempt, **more},
        },
    )


def heartbeat(peer: ComponentPeer, id: str = "hb") -> None:
    send(peer, {"id": id, "comp": None, "stream": "__heartbeat", "task": -1, "tuple": []})


def ack(id: str) -> dict[str, Any]:
    return {"command": "ack", "id": id}


def fail(id: str) -> dict[str, Any]:
    return {"command": "fail", "id": id}


def log(msg: str, level: int = 2) -> dict[str, Any]:
    return {"command": "log", "msg": msg, "level": level}


def emit(values: list[Any], anchors: list[str] | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {"command": "emit", "tuple": values}
    if anchors is not None:
        out["anchors"] = anchors
    out["need_task_ids"] = False
    return out


SYNC = {"command": "sync"}


def meta(value: Any) -> dict[str, Any]:
    return {"command": "batch_meta", "meta": value}


def read_n(peer: ComponentPeer, n: int) -> list[Any]:
    return [peer.read() for _ in range(n)]


def stderr_after_exit(peer: ComponentPeer) -> str:
    """All the component wrote to stderr; call once it has exited (then the pipe ends)."""
    assert peer.proc.stderr is not None and peer.proc.returncode is not None
    data = peer.stderr
    while chunk := os.read(peer.proc.stderr.fileno(), 65536):
        data += chunk
    return data.decode()


def assert_error(msg: Any, text: str) -> None:
    assert isinstance(msg, dict) and msg.get("command") == "error", msg
    assert text in msg["msg"], msg


# ---- handshake (§4.1) ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("script", "args", "role"),
    [
        (BOLT, (), "bolt"),
        (BOLT, ("committer",), "committer"),
        (SPOUT, ("transactional",), "spout"),
        (SPOUT, ("partitioned",), "spout"),
        (SPOUT, ("opaque",), "spout"),
    ],
)
def test_batch_classes_announce_batch_1(start, script, args, role):
    peer = start(script, *args, context=batch_context(role))
    assert peer.extensions == ("pipeline/1", "batch/1")
    if script == BOLT:
        heartbeat(peer)
        assert peer.read() == SYNC
    else:
        assert peer.read() == log("task 0 of 1")  # open(conf, context) ran
    assert peer.close() == 0


def test_plain_classes_do_not_announce_batch_1(start):
    peer = start(PLAIN_BOLT)
    assert peer.extensions == ("pipeline/1",)
    assert peer.close() == 0


@pytest.mark.parametrize(
    ("script", "args"), [(BOLT, ()), (BOLT, ("committer",)), (SPOUT, ("transactional",))]
)
def test_started_without_context_batch_fails_fast(start, script, args):
    peer = start(script, *args, context=make_context())  # what Storm would send
    assert peer.read() == {"command": "error", "msg": NO_BATCH_HOST}
    assert peer.proc.wait(10) == 1
    assert peer.poll(1) is None  # and nothing else: no initialize/open ran
    assert NO_BATCH_HOST in stderr_after_exit(peer)


def test_a_spout_started_as_a_bolt_is_refused(start):
    peer = start(SPOUT, "partitioned", context=batch_context("bolt"))
    msg = peer.read()
    assert_error(msg, "PartitionedTransactionalSpout cannot run as a batch bolt")
    assert peer.proc.wait(10) == 1


# ---- bolts and committers (§4.2) ----------------------------------------------------------------


def test_tuples_are_acked_one_by_one_then_finish_emits_anchored_and_acks(start):
    peer = start(BOLT, context=batch_context("bolt"))
    tx_tuple(peer, "-11", ["add", "a"], txid=7, attempt=2)
    assert read_n(peer, 2) == [log("begin 7.2"), ack("-11")]  # acked before the batch ends
    tx_tuple(peer, "12", ["emit", "b"], txid=7, attempt=2)
    assert read_n(peer, 2) == [emit(["b"], ["12"]), ack("12")]
    batch_op(peer, "8823", "finish", txid=7, attempt=2, commit=False)
    assert read_n(peer, 2) == [emit([7, 2, "a,b"], ["8823"]), ack("8823")]
    # The attempt's state was dropped: a finish of the next txid starts from nothing.
    batch_op(peer, "8824", "finish", txid=8, attempt=1, commit=False)
    assert read_n(peer, 3) == [log("begin 8.1"), emit([8, 1, ""], ["8824"]), ack("8824")]
    heartbeat(peer)  # a finish is never answered with sync; a heartbeat still is
    assert peer.read() == SYNC
    assert peer.close() == 0


def test_committer_finish_with_commit(start):
    peer = start(BOLT, "committer", context=batch_context("committer"))
    tx_tuple(peer, "1", ["add", "x"], txid=4, attempt=1)
    assert read_n(peer, 2) == [log("begin 4.1"), ack("1")]
    batch_op(peer, "f4", "finish", txid=4, attempt=1, commit=True)
    assert read_n(peer, 2) == [emit([4, 1, "x"], ["f4"]), ack("f4")]
    assert peer.close() == 0


def test_attempts_of_different_txids_keep_their_own_state(start):
    peer = start(BOLT, context=batch_context("bolt"))
    tx_tuple(peer, "1", ["add", "seven"], txid=7, attempt=1)
    assert read_n(peer, 2) == [log("begin 7.1"), ack("1")]
    tx_tuple(peer, "2", ["add", "eight"], txid=8, attempt=1)
    assert read_n(peer, 2) == [log("begin 8.1"), ack("2")]
    tx_tuple(peer, "3", ["add", "seven-again"], txid=7, attempt=1)
    assert peer.read() == ack("3")
    batch_op(peer, "f8", "finish", txid=8, attempt=1, commit=False)
    assert read_n(peer, 2) == [emit([8, 1, "eight"], ["f8"]), ack("f8")]
    batch_op(peer, "f7", "finish", txid=7, attempt=1, commit=False)
    assert read_n(peer, 2) == [emit([7, 1, "seven,seven-again"], ["f7"]), ack("f7")]


def test_abort_drops_the_attempt_and_is_not_answered(start):
    peer = start(BOLT, context=batch_context("bolt"))
    tx_tuple(peer, "1", ["add", "lost"], txid=7, attempt=1)
    assert read_n(peer, 2) == [log("begin 7.1"), ack("1")]
    batch_op(peer, "a1", "abort", txid=7, attempt=1)
    heartbeat(peer)
    assert peer.read() == SYNC  # nothing came for the abort before it
    # A late tuple of the aborted attempt is acked (the host ignores it) and not processed.
    tx_tuple(peer, "2", ["add", "late"], txid=7, attempt=1)
    assert peer.read() == ack("2")
    tx_tuple(peer, "3", ["add", "kept"], txid=7, attempt=2)
    assert read_n(peer, 2) == [log("begin 7.2"), ack("3")]
    batch_op(peer, "f", "finish", txid=7, attempt=2, commit=False)
    assert read_n(peer, 2) == [emit([7, 2, "kept"], ["f"]), ack("f")]


def test_a_higher_attempt_drops_the_lower_ones_state(start):
    peer = start(BOLT, context=batch_context("bolt"))
    tx_tuple(peer, "1", ["add", "old"], txid=5, attempt=1)
    assert read_n(peer, 2) == [log("begin 5.1"), ack("1")]
    tx_tuple(peer, "2", ["add", "new"], txid=5, attempt=2)
    assert read_n(peer, 2) == [log("begin 5.2"), ack("2")]
    tx_tuple(peer, "3", ["add", "stale"], txid=5, attempt=1)  # the old attempt is not begun again
    assert peer.read() == ack("3")
    batch_op(peer, "f", "finish", txid=5, attempt=2, commit=False)
    assert read_n(peer, 2) == [emit([5, 2, "new"], ["f"]), ack("f")]


def test_async_process_acks_each_tuple_when_it_resolves(start):
    peer = start(BOLT, context=batch_context("bolt"))
    tx_tuple(peer, "1", ["wait", "k"], txid=2, attempt=1)  # resolves once tuple 3 opens the gate
    tx_tuple(peer, "2", ["add", "x"], txid=2, attempt=1)
    assert read_n(peer, 2) == [log("begin 2.1"), ack("2")]  # while tuple 1 is still in process
    tx_tuple(peer, "3", ["release", "k"], txid=2, attempt=1)
    assert sorted(json.dumps(m) for m in read_n(peer, 2)) == sorted(
        json.dumps(m) for m in [ack("3"), ack("1")]
    )
    batch_op(peer, "f", "finish", txid=2, attempt=1, commit=False)
    assert read_n(peer, 2) == [emit([2, 1, "x,k,after k"], ["f"]), ack("f")]


def test_tuples_wait_for_an_async_begin(start):
    peer = start(BOLT, conf={"test.async-begin": True}, context=batch_context("bolt"))
    tx_tuple(peer, "1", ["add", "a"], txid=1, attempt=1)  # batch.seen exists only after begin
    tx_tuple(peer, "2", ["add", "b"], txid=1, attempt=1)
    batch_op(peer, "f", "finish", txid=1, attempt=1, commit=False)
    assert read_n(peer, 5) == [
        log("begin 1.1"),
        ack("1"),
        ack("2"),
        emit([1, 1, "a,b"], ["f"]),
        ack("f"),
    ]


def test_a_failing_process_fails_its_tuple_and_a_failing_finish_fails_the_finish(start):
    peer = start(BOLT, context=batch_context("bolt"))
    tx_tuple(peer, "1", ["throw"], txid=3, attempt=1)
    msgs = read_n(peer, 3)
    assert msgs[0] == log("begin 3.1")
    assert_error(msgs[1], "process boom")
    assert msgs[2] == fail("1")
    tx_tuple(peer, "2", ["reject"], txid=3, attempt=1)
    msgs = read_n(peer, 2)
    assert_error(msgs[0], "async process boom")
    assert msgs[1] == fail("2")
    tx_tuple(peer, "3", ["add", "fail-finish"], txid=3, attempt=1)
    assert peer.read() == ack("3")
    batch_op(peer, "f", "finish", txid=3, attempt=1, commit=False)
    msgs = read_n(peer, 2)
    assert_error(msgs[0], "finish boom")
    assert msgs[1] == fail("f")
    # The next attempt starts afresh.
    tx_tuple(peer, "4", ["add", "ok"], txid=3, attempt=2)
    batch_op(peer, "g", "finish", txid=3, attempt=2, commit=False)
    assert read_n(peer, 4) == [log("begin 3.2"), ack("4"), emit([3, 2, "ok"], ["g"]), ack("g")]
    assert peer.close() == 0


# ---- batch spouts (§4.3) ------------------------------------------------------------------------


def test_batch_init_answers_meta_or_not_ready(start):
    peer = start(SPOUT, "transactional", context=batch_context("spout"))
    assert peer.read() == log("task 0 of 1")
    send(peer, {"command": "batch_init", "id": "", "txid": 1, "prev_meta": None})
    assert read_n(peer, 2) == [meta({"from": 0, "to": 4}), SYNC]
    send(peer, {"command": "batch_init", "id": "", "txid": 3, "prev_meta": {"from": 4, "to": 8}})
    assert peer.read() == SYNC  # a bare sync: not ready
    send(peer, {"command": "batch_init", "id": "", "txid": 3, "prev_meta": {"from": 4, "to": 8}})
    assert read_n(peer, 2) == [meta({"from": 8, "to": 12}), SYNC]
    assert peer.close() == 0


def test_batch_emit_emits_this_tasks_share_without_ids_then_commit(start):
    peer = start(SPOUT, "transactional", context=batch_context("spout", taskid=6, tasks=[5, 6]))
    assert peer.read() == log("task 1 of 2")
    send(
        peer,
        {
            "command": "batch_emit",
            "id": "",
            "tx": {"txid": 8, "attempt": 1},
            "meta": {"from": 0, "to": 6},
            "task_meta": None,
            "prev_task_meta": None,
            "committed": 7,
            "replay": False,
        },
    )
    assert read_n(peer, 4) == [emit([1, 8, 1]), emit([3, 8, 1]), emit([5, 8, 1]), SYNC]
    send(peer, {"command": "batch_commit", "id": "", "tx": {"txid": 8, "attempt": 1}})
    assert read_n(peer, 2) == [log("commit 8.1"), SYNC]
    assert peer.close() == 0


def test_async_spout_hooks_answer_commands_one_at_a_time_in_order(start):
    peer = start(SPOUT, "transactional", conf={"test.async": True}, context=batch_context("spout"))
    assert peer.read() == log("task 0 of 1")
    tx = {"txid": 1, "attempt": 1}
    commands = [
        {"command": "batch_init", "id": "", "txid": 1, "prev_meta": None},
        {
            "command": "batch_emit",
            "id": "",
            "tx": tx,
            "meta": {"from": 0, "to": 2},
            "task_meta": None,
            "prev_task_meta": None,
            "committed": 0,
            "replay": False,
        },
        {"command": "batch_commit", "id": "", "tx": tx},
        {"command": "batch_init", "id": "", "txid": 2, "prev_meta": {"from": 0, "to": 4}},
    ]
    peer.send_raw(b"".join(json.dumps(c).encode() + b"\nend\n" for c in commands))  # all ahead
    assert read_n(peer, 8) == [
        meta({"from": 0, "to": 4}),
        SYNC,
        emit([0, 1, 1]),
        emit([1, 1, 1]),
        SYNC,
        log("commit 1.1"),
        SYNC,
        meta({"from": 4, "to": 8}),
    ]
    assert peer.read() == SYNC


def test_a_throwing_emit_batch_ends_the_task(start):
    peer = start(SPOUT, "transactional", context=batch_context("spout"))
    assert peer.read() == log("task 0 of 1")
    send(
        peer,
        {
            "command": "batch_emit",
            "id": "",
            "tx": {"txid": 2, "attempt": 1},
            "meta": {"from": 0, "to": 1, "fail": True},
            "task_meta": None,
            "prev_task_meta": None,
            "committed": 1,
            "replay": False,
        },
    )
    msgs = read_n(peer, 2)
    assert msgs[0] == emit([0, 2, 1])
    assert_error(msgs[1], "emit boom")  # no sync: the host aborts the attempt of a dead task
    assert peer.proc.wait(10) == 1
    assert peer.poll(1) is None


def partitioned_emit(
    peer: ComponentPeer,
    txid: int,
    attempt: int,
    task_meta: Any,
    prev_task_meta: Any,
    partitions: int = 3,
) -> None:
    send(
        peer,
        {
            "command": "batch_emit",
            "id": "",
            "tx": {"txid": txid, "attempt": attempt},
            "meta": partitions,
            "task_meta": task_meta,
            "prev_task_meta": prev_task_meta,
            "committed": txid - 1,
            "replay": task_meta is not None,
        },
    )


@pytest.mark.parametrize("slow", [False, True])
def test_partitioned_spout_new_batches_then_a_replay(start, slow):
    peer = start(
        SPOUT,
        "partitioned",
        conf={"test.async": slow},
        context=batch_context("spout", taskid=4, tasks=[4, 9]),
    )
    assert peer.read() == log("task 0 of 2")  # partitions 0 and 2 of 3 are this task's
    send(peer, {"command": "batch_init", "id": "", "txid": 1, "prev_meta": None})
    assert read_n(peer, 2) == [meta(3), SYNC]  # the coordinator's metadata: how many partitions
    partitioned_emit(peer, 1, 1, task_meta=None, prev_task_meta=None)
    first = {"0": {"from": 0, "to": 2}, "2": {"from": 0, "to": 2}}
    assert read_n(peer, 6) == [
        emit(["0:0", 1]),
        emit(["0:1", 1]),
        emit(["2:0", 1]),
        emit(["2:1", 1]),
        meta(first),
        SYNC,
    ]
    partitioned_emit(peer, 2, 1, task_meta=None, prev_task_meta=first)  # new: from last batch's end
    second = {"0": {"from": 2, "to": 4}, "2": {"from": 2, "to": 4}}
    assert read_n(peer, 6) == [
        emit(["0:2", 2]),
        emit(["0:3", 2]),
        emit(["2:2", 2]),
        emit(["2:3", 2]),
        meta(second),
        SYNC,
    ]
    partitioned_emit(peer, 1, 2, task_meta=first, prev_task_meta=None)  # replay: the same tuples
    assert read_n(peer, 6) == [
        emit(["0:0", 1]),
        emit(["0:1", 1]),
        emit(["2:0", 1]),
        emit(["2:1", 1]),
        meta(first),
        SYNC,
    ]
    send(peer, {"command": "batch_commit", "id": "", "tx": {"txid": 1, "attempt": 2}})
    assert peer.read() == SYNC
    assert peer.close() == 0


def test_partitioned_spout_second_task_owns_the_other_partitions(start):
    peer = start(SPOUT, "partitioned", context=batch_context("spout", taskid=9, tasks=[4, 9]))
    assert peer.read() == log("task 1 of 2")
    partitioned_emit(peer, 1, 1, task_meta=None, prev_task_meta=None)
    assert read_n(peer, 4) == [
        emit(["1:0", 1]),
        emit(["1:1", 1]),
        meta({"1": {"from": 0, "to": 2}}),
        SYNC,
    ]


def test_opaque_spout_always_emits_from_the_previous_metadata(start):
    peer = start(SPOUT, "opaque", context=batch_context("spout"))
    assert peer.read() == log("task 0 of 1")
    send(peer, {"command": "batch_init", "id": "", "txid": 1, "prev_meta": None})
    assert read_n(peer, 2) == [meta(2), SYNC]
    prev = {"0": {"from": 0, "to": 2}, "1": {"from": 4, "to": 6}}
    stale = {"0": {"from": 0, "to": 2}, "1": {"from": 0, "to": 2}}
    # A replay with task_meta: an opaque spout reads on from prev_task_meta all the same.
    partitioned_emit(peer, 2, 2, task_meta=stale, prev_task_meta=prev, partitions=2)
    assert read_n(peer, 6) == [
        emit(["0:2", 2]),
        emit(["0:3", 2]),
        emit(["1:6", 2]),
        emit(["1:7", 2]),
        meta({"0": {"from": 2, "to": 4}, "1": {"from": 6, "to": 8}}),
        SYNC,
    ]
    send(peer, {"command": "batch_commit", "id": "", "tx": {"txid": 2, "attempt": 2}})
    assert read_n(peer, 2) == [log("commit 2.2"), SYNC]
    assert peer.close() == 0


def test_ticks_are_acked_and_a_tuple_without_tx_is_failed(start):
    peer = start(BOLT, context=batch_context("bolt"))
    send(peer, {"id": "t1", "comp": "__system", "stream": "__tick", "task": -1, "tuple": [1]})
    assert peer.read() == ack("t1")
    send(peer, {"id": "p1", "comp": "outsider", "stream": "default", "task": 1, "tuple": ["x"]})
    msgs = read_n(peer, 2)
    assert_error(msgs[0], "got a tuple without tx from outsider")
    assert msgs[1] == fail("p1")
    assert peer.close() == 0


def test_a_partitioned_spout_with_an_initialize_hook_is_refused_at_start(tmp_path):
    script = tmp_path / "wrong.js"
    script.write_text(
        "const { PartitionedTransactionalSpout } = require('multilang');\n"
        "new PartitionedTransactionalSpout({ initialize() {}, partitions: () => 1,\n"
        "  emitNew() {}, emitAgain() {} }).run();\n"
    )
    peer = ComponentPeer(["node", str(script)], serializer=RawJson())
    try:
        assert peer.proc.wait(10) != 0
        assert peer.poll(1) is None
        assert "start up in open(conf, context)" in stderr_after_exit(peer)
    finally:
        peer.close()
