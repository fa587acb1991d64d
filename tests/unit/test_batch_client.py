"""The Python client side of `batch/1` (docs/transactional.md §4, §5; multilang/batch*.py).

Golden transcripts (tests/transcripts/batch-*.txt): a real component process from
tests/integration/components/python/batch_*.py is fed each transcript's host lines over its pipes,
one at a time, and must write exactly the transcript's component lines (pid numbers aside; an
`error`'s traceback is compared by its last line, which is all the transcript keeps). The host
lines are also the scripts below: `BATCH_TRANSCRIPTS_RECORD=1 pytest tests/unit/test_batch_client.py`
writes the files again from them (then read the diff: the files are the reference).

Then the pure parts: the decoder, the per-attempt state (hypothesis against a model) and the
partition ownership.
"""

from __future__ import annotations

import json
import os
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from host.testing import ComponentPeer
from host.testing.peer import make_context
from multilang.batch_messages import (
    BatchCommit,
    BatchControl,
    BatchEmit,
    BatchHostDecoder,
    BatchInit,
    Tx,
    TxTuple,
    batch_host_message,
)
from multilang.batch_state import AttemptStates, owned_partitions, task_index
from multilang.codec import ProtocolError
from multilang.messages import Ack, Fail, Handshake, Pid, SpoutCommand, Sync, TupleMessage

REPO = Path(__file__).resolve().parents[2]
TRANSCRIPTS = REPO / "tests" / "transcripts"
COMPONENTS = REPO / "tests" / "integration" / "components" / "python"
RECORD = os.environ.get("BATCH_TRANSCRIPTS_RECORD") == "1"


# ---- the host's batch messages, as the contract writes them ------------------------------------


def tup(id: str, values: list, txid: int, attempt: int, comp: str = "split") -> dict:
    return {
        "id": id,
        "comp": comp,
        "stream": "default",
        "task": 5,
        "tuple": values,
        "tx": {"txid": txid, "attempt": attempt},
    }


def control(id: str, op: str, txid: int, attempt: int, commit: bool | None = None) -> dict:
    batch: dict[str, Any] = {"op": op, "txid": txid, "attempt": attempt}
    if commit is not None:
        batch["commit"] = commit
    return {
        "id": id,
        "comp": None,
        "stream": "__heartbeat",
        "task": -1,
        "tuple": [],
        "batch": batch,
    }


def finish(id: str, txid: int, attempt: int, commit: bool = False) -> dict:
    return control(id, "finish", txid, attempt, commit)


def abort(id: str, txid: int, attempt: int) -> dict:
    return control(id, "abort", txid, attempt)


def heartbeat(id: str) -> dict:
    return {"id": id, "comp": None, "stream": "__heartbeat", "task": -1, "tuple": []}


def tick(id: str) -> dict:
    return {"id": id, "comp": "__system", "stream": "__tick", "task": -1, "tuple": [1]}


def batch_init(txid: int, prev_meta: Any) -> dict:
    return {"command": "batch_init", "id": "", "txid": txid, "prev_meta": prev_meta}


def batch_emit(
    txid: int,
    attempt: int,
    meta: Any,
    task_meta: Any = None,
    prev_task_meta: Any = None,
    committed: int = 0,
) -> dict:
    return {
        "command": "batch_emit",
        "id": "",
        "tx": {"txid": txid, "attempt": attempt},
        "meta": meta,
        "task_meta": task_meta,
        "prev_task_meta": prev_task_meta,
        "committed": committed,
        "replay": attempt > 1,
    }


def batch_commit(txid: int, attempt: int) -> dict:
    return {"command": "batch_commit", "id": "", "tx": {"txid": txid, "attempt": attempt}}


def batch_context(
    role: str, taskid: int = 3, componentid: str = "count", tasks: int = 1, committed: int = 0
) -> dict:
    """A handshake context with `context.batch` (§4.1); the component has `tasks` tasks, from
    task 3 on."""
    if role == "spout":
        ctx = make_context(taskid, componentid, outputs={"default": ["n"]}, sources={})
    else:
        ctx = make_context(taskid, componentid, outputs={"default": ["word", "count"]})
    for t in range(3, 3 + tasks):
        ctx["task->component"][str(t)] = componentid
    ctx["task->component"].pop("2", None)  # no acker: the acker does not track batches
    ctx["batch"] = {
        "protocol": 1,
        "role": role,
        "transactional_id": "wc",
        "committed_txid": committed,
    }
    return ctx


@dataclass
class Script:
    component: str
    messages: list[dict]
    context: dict
    conf: dict = field(default_factory=dict)


SCRIPTS: dict[str, Script] = {
    "batch-bolt-finish.txt": Script(
        "batch_count_bolt.py",
        [
            tup("-101", ["red"], 7, 1),
            tup("102", ["green"], 7, 1),
            heartbeat("12345"),
            finish("8823", 7, 1),
            finish("8824", 8, 1),  # an attempt that brought this task no tuple
        ],
        batch_context("bolt", committed=6),
    ),
    "batch-bolt-abort.txt": Script(
        "batch_count_bolt.py",
        [
            tup("201", ["a"], 9, 1),
            abort("9001", 9, 1),
            heartbeat("12346"),
            tup("202", ["b"], 9, 2),
            tup("203", ["c"], 10, 1),
            tup("204", ["d"], 10, 2),  # a higher attempt: attempt 1's state is dropped
            tup("205", ["late"], 10, 1),
            finish("9002", 9, 2),
            finish("9003", 10, 2),
            tup("206", ["after"], 9, 2),  # its finish came already
            tup("207", ["old"], 5, 1),  # committed before this task started
        ],
        batch_context("bolt", committed=6),
    ),
    "batch-bolt-fail.txt": Script(
        "batch_count_bolt.py",
        [
            tup("301", ["bad"], 11, 1),
            tup("302", ["bad-finish"], 11, 1),
            tick("303"),
            finish("9004", 11, 1),
            tup("304", ["again"], 11, 2),
            finish("9005", 11, 2),
        ],
        batch_context("bolt"),
    ),
    "batch-committer.txt": Script(
        "batch_sum_committer.py",
        [
            tup("401", ["x", 2], 1, 1, comp="count"),
            tup("402", ["y", 3], 1, 1, comp="count"),
            finish("9101", 1, 1, commit=True),
            tup("403", ["x", 4], 2, 1, comp="count"),
            abort("9102", 2, 1),
            tup("404", ["x", 4], 2, 2, comp="count"),
            tup("405", ["z", 1], 2, 2, comp="count"),
            finish("9103", 2, 2, commit=True),
        ],
        batch_context("committer", componentid="sum"),
    ),
    "batch-spout-init.txt": Script(
        "batch_numbers_spout.py",
        [
            batch_init(1, None),
            batch_init(2, {"from": 0, "to": 3}),
            batch_init(3, {"from": 3, "to": 6}),  # not ready: a bare sync
        ],
        batch_context("spout", componentid="numbers"),
        {"test.last_txid": 2},
    ),
    "batch-spout-emit.txt": Script(
        "batch_numbers_spout.py",
        [
            {"command": "activate", "id": ""},
            batch_emit(1, 1, {"from": 0, "to": 3}),
            batch_emit(2, 1, {"from": 3, "to": 6}),
            batch_commit(1, 1),
            batch_emit(2, 2, {"from": 3, "to": 6}, committed=1),
            batch_commit(2, 2),
        ],
        batch_context("spout", taskid=4, componentid="numbers", tasks=2),
    ),
    "batch-spout-fatal.txt": Script(
        "batch_numbers_spout.py",
        [batch_emit(1, 1, {"from": 0, "to": 3})],
        batch_context("spout", componentid="numbers"),
        {"test.raise_in_emit": True},
    ),
    "batch-partitioned-spout.txt": Script(
        "batch_files_spout.py",
        [
            batch_init(1, None),
            batch_emit(1, 1, {"partitions": 3}),
            batch_emit(
                2,
                1,
                {"partitions": 3},
                prev_task_meta={"0": {"from": 0, "to": 2}, "2": {"from": 0, "to": 2}},
            ),
            batch_emit(
                2,
                2,
                {"partitions": 3},
                task_meta={"0": {"from": 2, "to": 4}, "2": {"from": 2, "to": 4}},
                prev_task_meta={"0": {"from": 0, "to": 2}, "2": {"from": 0, "to": 2}},
            ),
            batch_commit(2, 2),
        ],
        batch_context("spout", componentid="files", tasks=2),
    ),
    "batch-opaque-spout.txt": Script(
        "batch_topic_spout.py",
        [
            batch_emit(1, 1, {"partitions": 2}),
            batch_emit(1, 2, {"partitions": 2}, task_meta={"1": {"next": 1}}),
            batch_commit(1, 2),
            batch_emit(2, 1, {"partitions": 2}, prev_task_meta={"1": {"next": 2}}, committed=1),
        ],
        batch_context("spout", taskid=4, componentid="topic", tasks=2),
    ),
    "batch-no-host-support.txt": Script(
        "batch_count_bolt.py",
        [],
        make_context(3, "count", outputs={"default": ["word", "count"]}),
    ),
}


# ---- transcripts: writing and reading -----------------------------------------------------------


def _compact(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def _normal(text: str) -> Any:
    """A component line as compared: its JSON value, with the pid's number zeroed and an error's
    traceback cut to its last line (paths and line numbers vary)."""
    value = json.loads(text)
    if type(value) is dict and "pid" in value:
        value["pid"] = 0
    if type(value) is dict and value.get("command") == "error":
        value["msg"] = value["msg"].rstrip("\n").rsplit("\n", 1)[-1]
    return value


def _answered(host: dict, msg: Any) -> bool:
    """Whether `msg` is the component's last answer to `host` (used only when recording)."""
    if "command" in host:
        return type(msg) is Sync
    if "batch" not in host and host.get("stream") == "__heartbeat":
        return type(msg) is Sync
    return type(msg) in (Ack, Fail)


def _start(component: str) -> ComponentPeer:
    return ComponentPeer([sys.executable, str(COMPONENTS / component)])


def _handshake_line(peer: ComponentPeer, conf: dict, context: dict) -> str:
    conf = {"topology.name": "batch-test", "topology.debug": False, **conf}
    return _compact({"pidDir": peer.pid_dir, "conf": conf, "context": context})


def _send_line(peer: ComponentPeer, line: str) -> None:
    peer.send_raw(line.encode("utf-8") + b"\nend\n")


def _drain_to_exit(peer: ComponentPeer) -> int:
    peer.close_stdin()
    while not peer.stdout_closed:
        peer._pump(0.2)
    return peer.close()


def record(name: str) -> None:
    script = SCRIPTS[name]
    peer = _start(script.component)
    try:
        _send_line(peer, _handshake_line(peer, script.conf, script.context))
        pid = peer.poll()
        for host in script.messages if type(pid) is Pid else []:
            _send_line(peer, _compact(host))
            if "batch" in host and host["batch"]["op"] == "abort":
                continue  # not answered
            while (msg := peer.poll()) is not None and not _answered(host, msg):
                pass
        code = _drain_to_exit(peer)
    finally:
        peer.close()
    lines = [f"   component: {script.component}"]
    for line in peer.transcript:
        if line.startswith("-> "):
            line = line.replace(peer.pid_dir, "<pidDir>")
        elif line.startswith("<- ") and '"command":"error"' in line.replace(" ", ""):
            line = "<- " + _compact(_normal(line[3:]))
        elif line.startswith("   stderr: "):
            text = line[len("   stderr: ") :]
            if not text or text[0].isspace() or text.startswith("Traceback"):
                continue  # keep the reason, not the traceback's frames
        lines.append(line)
    lines.append(f"   exit code: {code}")
    (TRANSCRIPTS / name).write_text("\n".join(lines) + "\n", encoding="utf-8")


@dataclass
class Golden:
    component: str
    handshake: dict
    segments: list[tuple[str, list[str]]]  # (host line, the component lines after it)
    pid: list[str]  # the component lines after the handshake (the pid reply, or none)
    stderr: list[str]
    exit_code: int


def load(path: Path) -> Golden:
    component, stderr, code = "", [], None
    handshake: dict | None = None
    pid: list[str] = []
    segments: list[tuple[str, list[str]]] = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("-> "):
            if handshake is None:
                handshake = json.loads(line[3:])
            else:
                segments.append((line[3:], []))
        elif line.startswith("<- "):
            (segments[-1][1] if segments else pid).append(line[3:])
        elif line.startswith("   component: "):
            component = line.split(": ", 1)[1]
        elif line.startswith("   stderr: "):
            stderr.append(line.split(": ", 1)[1])
        elif line.startswith("   exit code: "):
            code = int(line.rsplit(" ", 1)[1])
    assert component and handshake is not None and code is not None, f"{path.name} is incomplete"
    return Golden(component, handshake, segments, pid, stderr, code)


FILES = sorted(TRANSCRIPTS.glob("batch-*.txt"))


@pytest.mark.skipif(not RECORD, reason="set BATCH_TRANSCRIPTS_RECORD=1 to write the transcripts")
@pytest.mark.parametrize("name", sorted(SCRIPTS))
def test_record(name):
    record(name)


def test_every_script_has_its_transcript():
    assert sorted(p.name for p in FILES) == sorted(SCRIPTS)
    readme = (TRANSCRIPTS / "README.md").read_text(encoding="utf-8")
    assert all(f"| {name} |" in readme for name in SCRIPTS), "a transcript not in the README"


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_transcript_host_lines_are_the_script(path):
    golden, script = load(path), SCRIPTS[path.name]
    assert golden.component == script.component
    assert golden.handshake["context"] == script.context
    assert [json.loads(host) for host, _ in golden.segments] == script.messages


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_component_answers_like_the_transcript(path):
    golden = load(path)
    peer = _start(golden.component)
    try:
        _send_line(peer, _compact({**golden.handshake, "pidDir": peer.pid_dir}))
        got_pid = [peer.read() for _ in golden.pid]
        assert all(type(m) is Pid for m in got_pid)
        for host, replies in golden.segments:
            _send_line(peer, host)
            for _ in replies:
                peer.read()
        code = _drain_to_exit(peer)
    finally:
        peer.close()
    assert code == golden.exit_code, peer.stderr
    stderr = peer.stderr.decode("utf-8", "replace")
    assert all(line in stderr for line in golden.stderr), stderr
    # the whole exchange, in order: what was sent, and every line written after it
    expected: list[tuple[str, Any]] = [("<-", _normal(line)) for line in golden.pid]
    for host, lines in golden.segments:
        expected.append(("->", json.loads(host)))
        expected.extend(("<-", _normal(line)) for line in lines)
    got = [
        (line[:2], _normal(line[3:]) if line[:2] == "<-" else json.loads(line[3:]))
        for line in peer.transcript[1:]  # after the handshake
        if line[:3] in ("-> ", "<- ")
    ]
    assert got == expected


# ---- what the transcripts show, said plainly -----------------------------------------------------


def _golden_lines(name: str) -> list[Any]:
    return [
        (line[:2], _normal(line[3:]))
        for line in (TRANSCRIPTS / name).read_text(encoding="utf-8").splitlines()
        if line[:3] in ("-> ", "<- ")
    ]


def test_a_finish_is_answered_after_the_emits_anchored_to_it():
    lines = _golden_lines("batch-bolt-finish.txt")
    after = lines[lines.index(("->", finish("8823", 7, 1))) + 1 :][:2]
    assert after == [
        ("<-", {"command": "emit", "tuple": [7, 2], "anchors": ["8823"], "need_task_ids": False}),
        ("<-", {"command": "ack", "id": "8823"}),
    ]


def test_batch_components_announce_batch_1_and_plain_ones_do_not():
    pid = _golden_lines("batch-bolt-finish.txt")[1][1]
    assert pid["ext"] == ["pipeline/1", "batch/1"]
    peer = _start("transcript_bolt.py")  # a plain BasicBolt, in a batch context
    try:
        peer.handshake(context=batch_context("bolt"))
        assert peer.extensions == ("pipeline/1",)
        # it takes a finish for a heartbeat, as every plain library does (§4.2)
        _send_line(peer, _compact(finish("77", 1, 1)))
        assert type(peer.read()) is Sync
    finally:
        assert peer.close() == 0


def test_batch_components_refuse_msgpack():
    peer = ComponentPeer(
        [sys.executable, str(COMPONENTS / "batch_count_bolt.py")], serializer="msgpack"
    )
    try:
        peer.send(Handshake(peer.pid_dir, {}, batch_context("bolt")))
        assert peer.poll() is None  # no pid reply: stdout closed
        code = peer.proc.wait(10)
    finally:
        peer.close()
    assert code == 1
    assert b"batch components speak JSON only" in peer.stderr


# ---- the decoder --------------------------------------------------------------------------------


def _frames(*values: Any) -> bytes:
    return b"".join(_compact(v).encode() + b"\nend\n" for v in values)


def test_decoder_types_every_batch_message():
    decoder = BatchHostDecoder()
    got = decoder.feed(
        _frames(
            tup("1", ["a"], 7, 2),
            finish("8", 7, 2, commit=True),
            abort("9", 7, 2),
            heartbeat("10"),
            batch_init(3, {"a": 1}),
            batch_emit(3, 2, {"m": 1}, task_meta={"0": 1}, prev_task_meta=None, committed=2),
            batch_commit(3, 2),
            {"command": "activate", "id": ""},
        )
    )
    assert got == [
        TxTuple(TupleMessage("1", "split", "default", 5, ["a"]), Tx(7, 2)),
        BatchControl("finish", "8", Tx(7, 2), True),
        BatchControl("abort", "9", Tx(7, 2), False),
        TupleMessage("10", None, "__heartbeat", -1, []),
        BatchInit(3, {"a": 1}),
        BatchEmit(Tx(3, 2), {"m": 1}, {"0": 1}, None, 2, True),
        BatchCommit(Tx(3, 2)),
        SpoutCommand("activate", ""),
    ]


def test_the_batch_key_wins_over_the_heartbeat_shape():
    msg = batch_host_message(finish("8823", 7, 2))
    assert type(msg) is BatchControl and msg.op == "finish" and msg.id == "8823"


@pytest.mark.parametrize(
    "bad",
    [
        {**finish("1", 1, 1), "batch": {"op": "explode", "txid": 1, "attempt": 1}},
        {**tup("1", [], 1, 1), "tx": {"txid": "7", "attempt": 1}},
        {"command": "batch_emit", "id": ""},
        {"command": "batch_init", "id": ""},
    ],
)
def test_a_malformed_batch_message_is_reported_and_the_next_ones_kept(bad):
    decoder = BatchHostDecoder()
    with pytest.raises(ProtocolError) as caught:
        decoder.feed(_frames(heartbeat("1"), bad, heartbeat("2")))
    assert [m.id for m in caught.value.decoded] == ["1"]
    assert [m.id for m in decoder.feed(b"")] == ["2"]


def test_decoder_keeps_an_incomplete_frame_for_the_next_feed():
    decoder = BatchHostDecoder()
    data = _frames(tup("1", ["a"], 7, 1), finish("2", 7, 1))
    assert decoder.feed(data[:30]) == []
    assert [type(m) for m in decoder.feed(data[30:])] == [TxTuple, BatchControl]


# ---- per-attempt state --------------------------------------------------------------------------


def _opened(states: AttemptStates, tx: Tx) -> tuple[Any, bool]:
    got = states.open(tx)
    assert got is not None, f"{tx} taken for stale"
    return got


def test_a_higher_attempt_drops_the_lower_ones_state():
    states = AttemptStates()
    first, new = _opened(states, Tx(7, 1))
    first.count = 3
    assert new and Tx(7, 1) in states
    second, new = _opened(states, Tx(7, 2))
    assert new and second is not first and not hasattr(second, "count")
    assert Tx(7, 1) not in states and states.open(Tx(7, 1)) is None  # stale now
    assert states.open(Tx(7, 2)) == (second, False)


def test_retired_attempts_stay_stale_and_a_replay_starts_afresh():
    states = AttemptStates(committed_txid=4)
    assert states.open(Tx(4, 9)) is None  # committed before the task started
    states.open(Tx(5, 1))
    states.retire(Tx(5, 1))  # finished (or aborted)
    assert len(states) == 0 and states.open(Tx(5, 1)) is None
    batch, new = _opened(states, Tx(5, 2))
    assert new and batch.tx == Tx(5, 2)
    states.retire(Tx(5, 1))  # a late abort of the lower attempt leaves the open one
    assert Tx(5, 2) in states


def test_retired_memory_is_bounded():
    states = AttemptStates(memory=3)
    for txid in range(1, 10):
        states.open(Tx(txid, 1))
        states.retire(Tx(txid, 1))
    assert len(states._retired) == 3 and list(states._retired) == [7, 8, 9]


_events = st.lists(
    st.tuples(
        st.sampled_from(["open", "retire"]),
        st.integers(min_value=1, max_value=4),
        st.integers(min_value=1, max_value=4),
    ),
    max_size=40,
)


@settings(max_examples=300, deadline=None)
@given(events=_events, committed=st.integers(min_value=0, max_value=2))
def test_attempt_states_match_a_model(events, committed):
    """Model: per txid, the highest attempt seen and whether it is retired. A message is stale
    when its txid is committed or its attempt is below the highest seen, or equal and retired;
    at most one attempt per txid is open, and it is the highest seen."""
    states = AttemptStates(committed)
    highest: dict[int, int] = {}
    retired: dict[int, int] = {}
    kept: dict[Tx, Any] = {}
    for op, txid, attempt in events:
        tx = Tx(txid, attempt)
        if op == "retire":
            states.retire(tx)
            retired[txid] = max(retired.get(txid, 0), attempt)
            highest[txid] = max(highest.get(txid, 0), attempt)
            continue
        stale = (
            txid <= committed or attempt < highest.get(txid, 0) or attempt <= retired.get(txid, 0)
        )
        got = states.open(tx)
        if stale:
            assert got is None
            continue
        assert got is not None
        batch, new = got
        assert batch.tx == tx
        assert new == (tx not in kept), "a state lives until retired or superseded"
        kept = {k: v for k, v in kept.items() if k.txid != txid}
        kept[tx] = batch
        highest[txid] = attempt
        kept = {k: v for k, v in kept.items() if k.attempt > retired.get(k.txid, 0)}
        assert states.open_attempts() == sorted(kept)
    open_txids = [tx.txid for tx in states.open_attempts()]
    assert len(open_txids) == len(set(open_txids))


# ---- partitions ---------------------------------------------------------------------------------


@given(partitions=st.integers(min_value=0, max_value=50), tasks=st.integers(1, 8))
def test_every_partition_has_exactly_one_owner(partitions, tasks):
    owned = [owned_partitions(partitions, i, tasks) for i in range(tasks)]
    assert sorted(p for ps in owned for p in ps) == list(range(partitions))
    assert all(p % tasks == i for i, ps in enumerate(owned) for p in ps)


def test_task_index_is_the_position_among_the_components_tasks():
    ctx = batch_context("spout", taskid=4, componentid="files", tasks=3)
    ctx["task->component"].update({"9": "files", "7": "other"})
    assert task_index(ctx) == (1, 4)  # files: 3, 4, 5, 9
    assert task_index({**ctx, "taskid": 9}) == (3, 4)
    assert task_index({"taskid": 3}) == (0, 1)


def test_partitioned_spout_task_owns_its_partitions():
    lines = _golden_lines("batch-partitioned-spout.txt")
    emitted = {tuple(v["tuple"]) for d, v in lines if d == "<-" and v.get("command") == "emit"}
    assert {f for f, _ in emitted} == {"file0", "file2"}  # task index 0 of 2, of 3 partitions


def test_an_emit_outside_a_batch_is_refused():
    from multilang.batch_spouts import TransactionalSpout

    with pytest.raises(RuntimeError, match="only while it emits a batch"):
        TransactionalSpout().emit([1])


def test_recorded_pid_replies_are_from_the_run():
    # the transcripts keep the real pid numbers, as the other transcripts do
    for path in FILES:
        golden = load(path)
        for line in golden.pid:
            assert re.fullmatch(r'\{"pid":\d+,"ext":\["pipeline/1","batch/1"\]\}', line)
