"""The Python client library (`multilang`) in real `python` subprocesses, through ComponentPeer."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from host.testing import ComponentPeer, make_context
from multilang.messages import Ack, Emit, Error, Fail, Log, Metrics, Sync

REPO = Path(__file__).resolve().parents[2]
COMPONENTS = Path(__file__).resolve().parent / "components" / "python"
WORDCOUNT = REPO / "examples" / "wordcount"


def start(script: Path, conf: dict | None = None, context: dict | None = None) -> ComponentPeer:
    peer = ComponentPeer(["python", str(script)])
    try:
        peer.handshake(conf=conf, context=context)
    except BaseException:
        peer.close()
        raise
    return peer


@pytest.fixture
def bolt():
    peer = start(COMPONENTS / "basic_bolt.py")
    yield peer
    peer.close()


@pytest.fixture
def manual():
    peer = start(COMPONENTS / "manual_bolt.py")
    yield peer
    peer.close()


def emit(values, anchors=(), stream="default", task=None, need_task_ids=False, id=None) -> Emit:
    return Emit(values, stream, list(anchors) if anchors else (), task, need_task_ids, id)


# ---- handshake and exit -------------------------------------------------------------------------


def test_handshake_pid_file_then_initialize_sees_conf_and_context():
    context = make_context(taskid=7, componentid="splitter")
    peer = ComponentPeer(["python", str(COMPONENTS / "basic_bolt.py")])
    try:
        pid = peer.handshake(conf={"test.init.log": True, "test.answer": 42}, context=context)
        assert pid == peer.proc.pid
        assert os.listdir(peer.pid_dir) == [str(pid)]
        assert os.path.getsize(os.path.join(peer.pid_dir, str(pid))) == 0
        assert peer.read() == Log(f"init task=7 component=splitter pid={pid} answer=42", 2)
        assert peer.close() == 0
    finally:
        peer.close()


def test_exit_0_on_eof_while_idle(bolt):
    assert bolt.close() == 0
    assert bolt.stderr == b""


def test_exit_0_on_eof_before_the_handshake():
    peer = ComponentPeer(["python", str(COMPONENTS / "basic_bolt.py")])
    assert peer.close() == 0


def test_component_id_falls_back_to_task_to_component():
    context = make_context(taskid=9, componentid="x")
    del context["componentid"]
    context["task->component"]["9"] = "from-map"
    peer = start(COMPONENTS / "basic_bolt.py", conf={"test.init.log": True}, context=context)
    try:
        assert "component=from-map" in peer.read().msg
    finally:
        peer.close()


# ---- BasicBolt ----------------------------------------------------------------------------------


def test_basic_bolt_anchors_every_emit_and_acks(bolt):
    bolt.tuple("-4613382227463211107", ["split", "the cow jumped"])
    assert [bolt.read() for _ in range(4)] == [
        emit(["the"], ["-4613382227463211107"]),
        emit(["cow"], ["-4613382227463211107"]),
        emit(["jumped"], ["-4613382227463211107"]),
        Ack("-4613382227463211107"),
    ]


def test_tuples_are_handled_in_order_with_one_ack_each(bolt):
    for i in range(200):
        bolt.tuple(str(i), ["echo", i])
    got = [bolt.read() for _ in range(400)]
    assert got == [m for i in range(200) for m in (emit([i], [str(i)]), Ack(str(i)))]


def test_exception_sends_error_fails_the_tuple_and_continues(bolt):
    bolt.tuple("t1", ["raise"])
    assert bolt.read() == emit(["before"], ["t1"])
    error = bolt.read()
    assert type(error) is Error
    assert "ValueError: boom on t1" in error.msg and "Traceback" in error.msg
    assert bolt.read() == Fail("t1")
    bolt.tuple("t2", ["echo", "still alive"])
    assert [bolt.read(), bolt.read()] == [emit(["still alive"], ["t2"]), Ack("t2")]


def test_a_value_that_is_not_json_fails_the_tuple(bolt):
    bolt.tuple("t1", ["bad_value"])
    error = bolt.read()
    assert type(error) is Error and "EncodeError" in error.msg
    assert bolt.read() == Fail("t1")


def test_explicit_anchors_replace_the_automatic_one(bolt):
    bolt.tuple("t1", ["anchors"])
    assert [bolt.read(), bolt.read()] == [emit(["explicit"], ["t1", "other-id"]), Ack("t1")]


def test_acking_inside_process_is_not_repeated(bolt):
    bolt.tuple("t1", ["ack_itself"])
    bolt.tuple("t2", ["echo", 2])
    assert [bolt.read() for _ in range(3)] == [Ack("t1"), emit([2], ["t2"]), Ack("t2")]


# ---- ticks and heartbeats -----------------------------------------------------------------------


def test_tick_goes_to_process_tick_and_is_acked(bolt):
    bolt.tick("k1", freq=5)
    assert [bolt.read(), bolt.read()] == [emit(["tick", 5]), Ack("k1")]  # not anchored


def test_failing_process_tick_fails_the_tick(bolt):
    bolt.tick("k0", freq=0)
    error = bolt.read()
    assert type(error) is Error and "tick with frequency 0" in error.msg
    assert bolt.read() == Fail("k0")


def test_heartbeat_is_answered_with_sync_and_never_reaches_process(bolt):
    bolt.heartbeat("hb1")
    bolt.tuple("t1", ["echo", 1])
    bolt.heartbeat("hb2")
    # basic_bolt.py raises on anything it does not know, so a heartbeat reaching process()
    # would show up as an error
    assert [bolt.read() for _ in range(4)] == [Sync(), emit([1], ["t1"]), Ack("t1"), Sync()]


def test_default_tick_hook_just_acks(manual):
    manual.tick("k1")
    assert manual.read() == Ack("k1")


# ---- streams, direct emits, task ids ------------------------------------------------------------


def test_named_stream(bolt):
    bolt.tuple("t1", ["stream"])
    assert bolt.read() == emit(["to errors"], ["t1"], stream="errors")


def test_direct_emit_never_waits_for_task_ids(bolt):
    bolt.tuple("t1", ["direct", 12])
    bolt.tuple("t2", ["direct_ids", 13])
    assert [bolt.read() for _ in range(5)] == [
        emit(["direct"], ["t1"], task=12),
        Ack("t1"),
        emit(["direct"], ["t2"], task=13),
        emit(["got", [13]], ["t2"]),
        Ack("t2"),
    ]


def test_emits_say_need_task_ids_false_by_default(bolt):
    bolt.tuple("t1", ["split", "a b"])
    messages = [bolt.read() for _ in range(3)]
    assert [m.need_task_ids for m in messages[:2]] == [False, False]


def test_task_ids_when_asked_and_stashing_of_what_arrives_meanwhile(bolt):
    bolt.tuple("t1", ["taskids"])
    asking = bolt.read()
    assert asking == emit(["asking"], ["t1"], need_task_ids=True)
    # while it waits: a heartbeat and a tuple arrive before the reply; both wait their turn
    bolt.heartbeat("hb")
    bolt.tuple("t2", ["echo", "second"])
    bolt.tick("k", freq=3)
    assert bolt.quiet(0.2) == []
    bolt.task_ids([4, 6])
    assert [bolt.read() for _ in range(7)] == [
        emit(["got", [4, 6]], ["t1"]),
        Ack("t1"),
        Sync(),
        emit(["second"], ["t2"]),
        Ack("t2"),
        emit(["tick", 3]),
        Ack("k"),
    ]


def test_task_ids_reply_in_the_same_write_as_other_messages(bolt):
    bolt.tuple("t1", ["taskids"])
    assert bolt.read().need_task_ids is True
    # the reply and the next tuple in one chunk, as a busy host writes them
    from multilang.codec import encode
    from multilang.messages import TaskIds, TupleMessage

    bolt.send_raw(
        encode(TupleMessage("t2", "spout", "default", 1, ["echo", 2])) + encode(TaskIds([9]))
    )
    assert [bolt.read() for _ in range(4)] == [
        emit(["got", [9]], ["t1"]),
        Ack("t1"),
        emit([2], ["t2"]),
        Ack("t2"),
    ]


def test_eof_while_waiting_for_task_ids_exits_0(bolt):
    bolt.tuple("t1", ["taskids"])
    assert bolt.read().need_task_ids is True
    assert bolt.close() == 0


# ---- manual Bolt --------------------------------------------------------------------------------


def test_manual_ack_by_tuple_and_by_id_and_unanchored_emits(manual):
    manual.tuple("t1", ["ack"])
    manual.tuple("t2", ["ack_id"])
    manual.tuple("t3", ["fail"])
    assert [manual.read() for _ in range(4)] == [
        emit(["unanchored"]),
        Ack("t1"),
        Ack("t2"),
        Fail("t3"),
    ]


def test_manual_bolt_can_hold_tuples_and_settle_them_later(manual):
    manual.tuple("h1", ["hold"])
    manual.tuple("h2", ["hold"])
    manual.tuple("r", ["release"])
    assert [manual.read() for _ in range(5)] == [
        emit(["released", "h1"], ["h1"]),
        Ack("h1"),
        emit(["released", "h2"], ["h2"]),
        Ack("h2"),
        Ack("r"),
    ]


def test_manual_bolt_exception_fails_only_unsettled_tuples(manual):
    manual.tuple("t1", ["raise"])
    manual.tuple("t2", ["ack_then_raise"])
    manual.tuple("t3", ["ack"])
    first = manual.read()
    assert type(first) is Error and "manual bolt failure" in first.msg
    assert manual.read() == Fail("t1")
    assert manual.read() == Ack("t2")
    second = manual.read()
    assert type(second) is Error and "after the ack" in second.msg
    assert [manual.read(), manual.read()] == [emit(["unanchored"]), Ack("t3")]  # no Fail("t2")


# ---- log, error, metrics, stdout protection -----------------------------------------------------


def test_log_levels_error_and_metrics(bolt):
    bolt.tuple("t1", ["log"])
    assert [bolt.read() for _ in range(9)] == [
        Log("level 0", 0),
        Log("level 1", 1),
        Log("level 2", 2),
        Log("level 3", 3),
        Log("level 4", 4),
        Log("default level", 2),
        Error("an error report"),
        Metrics("my-metric", {"n": 3}),
        Ack("t1"),
    ]


def test_print_becomes_a_log_message(bolt):
    bolt.tuple("t1", ["print"])
    assert [bolt.read() for _ in range(4)] == [
        Log("hello world", 2),
        emit(["after print"], ["t1"]),
        Ack("t1"),
        Log("no newline", 2),  # a partial line is flushed with the batch
    ]


def test_writes_to_fd_1_and_child_processes_go_to_stderr(bolt):
    bolt.tuple("t1", ["fd1"])
    assert [bolt.read(), bolt.read()] == [emit(["after fd1"], ["t1"]), Ack("t1")]
    assert bolt.close() == 0
    assert b"raw bytes on fd 1" in bolt.stderr and b"from a child process" in bolt.stderr


# ---- Spout --------------------------------------------------------------------------------------


def spout(mode: str, **conf) -> ComponentPeer:
    return start(
        COMPONENTS / "spout.py",
        conf={"test.spout.mode": mode, **conf},
        context=make_context(componentid="spout", outputs={"default": ["w", "n"]}, sources={}),
    )


def test_spout_commands_each_end_with_sync():
    peer = spout("plain")
    try:
        peer.command("activate")
        assert [peer.read(), peer.read()] == [Log("activated", 2), Sync()]
        peer.command("next")
        assert [peer.read(), peer.read()] == [emit(["tuple", 1], id=1), Sync()]
        peer.command("next")
        assert [peer.read(), peer.read()] == [emit(["tuple", 2], id=2), Sync()]
        peer.command("ack", 1)
        assert [peer.read(), peer.read()] == [Log("acked 1", 2), Sync()]
        peer.command("fail", 2)
        assert [peer.read(), peer.read()] == [Log("failed 2", 2), Sync()]
        peer.command("deactivate")
        assert [peer.read(), peer.read()] == [Log("deactivated", 2), Sync()]
        peer.command("ack", "string-id")
        assert [peer.read(), peer.read()] == [Log("acked 'string-id'", 2), Sync()]
        assert peer.close() == 0
    finally:
        peer.close()


def test_spout_with_nothing_to_emit_just_syncs():
    peer = spout("empty")
    try:
        for _ in range(3):
            peer.command("next")
            assert peer.read() == Sync()
    finally:
        peer.close()


def test_spout_batch_of_emits_in_one_next():
    peer = spout("batch")
    try:
        peer.command("next")
        assert [peer.read() for _ in range(4)] == [
            emit(["tuple", 1], id=1),
            emit(["tuple", 2], id=2),
            emit(["tuple", 3], id=3),
            Sync(),
        ]
    finally:
        peer.close()


def test_spout_task_ids_when_asked():
    peer = spout("taskids")
    try:
        peer.command("next")
        assert peer.read() == emit(["tuple", 1], id="m1", need_task_ids=True)
        peer.task_ids([5, 6])
        assert [peer.read(), peer.read()] == [Log("task ids [5, 6]", 2), Sync()]
    finally:
        peer.close()


def test_spout_direct_emit_on_a_named_stream():
    peer = spout("direct")
    try:
        peer.command("next")
        assert [peer.read(), peer.read()] == [
            emit(["direct", 1], stream="ctl", task=4, id=1),
            Sync(),
        ]
    finally:
        peer.close()


def test_spout_exception_sends_error_then_sync_and_continues():
    peer = spout("raise")
    try:
        peer.command("next")
        error = peer.read()
        assert type(error) is Error and "next_tuple failed at 1" in error.msg
        assert peer.read() == Sync()
        peer.command("next")
        assert "next_tuple failed at 2" in peer.read().msg
        assert peer.read() == Sync()
    finally:
        peer.close()


def test_spout_emit_in_initialize_comes_before_the_first_sync():
    peer = spout("plain", **{"test.spout.init_emit": True})
    try:
        peer.command("activate")
        assert [peer.read() for _ in range(3)] == [
            emit(["initializing"]),
            Log("activated", 2),
            Sync(),
        ]
    finally:
        peer.close()


def test_spout_logs_unknown_commands_and_still_syncs():
    peer = spout("plain")
    try:
        peer.command("rewind")
        log = peer.read()
        assert type(log) is Log and "rewind" in log.msg and log.level == 3
        assert peer.read() == Sync()
    finally:
        peer.close()


def test_unknown_host_messages_are_logged_and_skipped(bolt):
    bolt.send_raw(b'{"surprise": true}\nend\n')
    bolt.tuple("t1", ["echo", 1])
    log = bolt.read()
    assert type(log) is Log and "surprise" in log.msg
    assert [bolt.read(), bolt.read()] == [emit([1], ["t1"]), Ack("t1")]


# ---- the word-count components ------------------------------------------------------------------


def test_sentences_replays_a_failed_id_before_new_ones_and_stops_at_the_limit():
    peer = start(
        WORDCOUNT / "sentences.py",
        conf={"wordcount.sentences.limit": 3},
        context=make_context(
            componentid="sentences", outputs={"default": ["sentence"]}, sources={}
        ),
    )
    try:
        sent = {}
        for _ in range(2):
            peer.command("next")
            e, s = peer.read(), peer.read()
            assert type(e) is Emit and s == Sync() and e.need_task_ids is False
            sent[e.id] = e.values
        assert list(sent) == [0, 1]
        peer.command("fail", 0)
        assert peer.read() == Sync()
        peer.command("next")
        assert peer.read() == emit(sent[0], id=0)  # the replay comes first
        assert peer.read() == Sync()
        peer.command("next")
        third = peer.read()
        assert third.id == 2 and third.values != sent[0]
        assert peer.read() == Sync()
        peer.command("next")
        assert peer.read() == Sync()  # limit reached: nothing new
        for msg_id in (1, 0, 2):
            peer.command("ack", msg_id)
        assert [peer.read() for _ in range(4)] == [
            Sync(),
            Sync(),
            Log("all 3 sentences acked (1 replays)", 2),
            Sync(),
        ]
        assert peer.close() == 0
    finally:
        peer.close()


def test_sentences_emits_a_batch_per_next_with_unique_ids():
    peer = start(
        WORDCOUNT / "sentences.py",
        conf={"wordcount.sentences.per.next": 4},
        context=make_context(
            componentid="sentences", outputs={"default": ["sentence"]}, sources={}
        ),
    )
    try:
        ids = []
        for _ in range(3):
            peer.command("next")
            got = peer.read_until(Sync)
            assert len(got) == 5
            ids += [m.id for m in got[:-1]]
        assert ids == list(range(12))
    finally:
        peer.close()


def test_report_writes_its_table_at_ticks_and_at_exit(tmp_path):
    path = tmp_path / "report.json"
    peer = start(
        WORDCOUNT / "report.py",
        conf={"wordcount.report.path": str(path)},
        context=make_context(
            componentid="report", outputs={}, sources={"count": {"default": ["word", "count"]}}
        ),
    )
    try:
        peer.tuple("1", ["cow", 1], comp="count")
        peer.tuple("2", ["moon", 1], comp="count")
        peer.tuple("3", ["cow", 2], comp="count")
        assert [peer.read() for _ in range(3)] == [Ack("1"), Ack("2"), Ack("3")]
        peer.tick("k1", freq=2)
        log = peer.read()
        assert log == Log("top 10: cow=2, moon=1", 2)
        assert peer.read() == Ack("k1")
        assert json.loads(path.read_text()) == {"cow": 2, "moon": 1}
        peer.tick("k2", freq=2)
        assert peer.read() == Ack("k2")  # unchanged: no summary
        peer.tuple("4", ["é", 5], comp="count")
        assert peer.read() == Ack("4")
        assert peer.close() == 0
        assert json.loads(path.read_text(encoding="utf-8")) == {"cow": 2, "moon": 1, "é": 5}
        assert sorted(os.listdir(tmp_path)) == ["report.json"]
    finally:
        peer.close()


def test_stdout_protection_can_be_turned_off():
    peer = start(COMPONENTS / "raw_stdout_bolt.py")
    try:
        peer.tuple("t1", ["x"])
        # the raw write goes straight out; the library's own output follows at the batch's end
        assert [peer.read(), peer.read()] == [Log("raw on fd 1", 2), Ack("t1")]
    finally:
        peer.close()


# ---- the data path's frames, put together without a dict ---------------------------------------


def written(peer: ComponentPeer) -> list:
    """The JSON the component wrote, as it wrote it (the transcript keeps every payload)."""
    return [json.loads(line[3:]) for line in peer.transcript if line.startswith("<- ")]


def script(tmp_path: Path, source: str) -> Path:
    path = tmp_path / "component.py"
    path.write_text("from multilang import BasicBolt, Bolt, Spout\n" + source)
    return path


def test_plain_emits_and_acks_have_exactly_the_keys_of_the_general_path(bolt):
    bolt.tuple("17", ["echo", "a", 1])
    bolt.tuple("18", ["stream"])  # the general path, for comparison
    assert len([bolt.read() for _ in range(4)]) == 4
    assert written(bolt)[-4:] == [
        {"command": "emit", "tuple": ["a", 1], "anchors": ["17"], "need_task_ids": False},
        {"command": "ack", "id": "17"},
        {
            "command": "emit",
            "tuple": ["to errors"],
            "stream": "errors",
            "anchors": ["18"],
            "need_task_ids": False,
        },
        {"command": "ack", "id": "18"},
    ]


@pytest.mark.parametrize(
    "tid",
    ['q"uo\\te/é ☃\n', "²³", "-4613382227463211107", "0", "123456789012345678901234567890", ""],
)
def test_any_tuple_id_comes_back_exactly_in_anchors_and_ack(bolt, tid):
    bolt.tuple(tid, ["echo", "x"])
    assert [bolt.read(), bolt.read()] == [emit(["x"], [tid]), Ack(tid)]


def test_values_beyond_what_ujson_writes_are_emitted_exactly(bolt):
    big = 2**70 + 1
    bolt.tuple("1", ["echo", big, -big, "é☃𝄞", {"a/b": [None, True, 1.5]}])
    assert [bolt.read(), bolt.read()] == [
        emit([big, -big, "é☃𝄞", {"a/b": [None, True, 1.5]}], ["1"]),
        Ack("1"),
    ]


def test_unencodable_values_fail_the_tuple_and_other_emits_go_through(tmp_path):
    peer = start(
        script(
            tmp_path,
            """
class B(BasicBolt):
    def process(self, tup):
        kind = tup.values[0]
        if kind == "surrogate":
            self.emit(["ok", "\\udc00"])
        elif kind == "bytes":
            self.emit([b"raw", object()])  # bytes alone go out as base64 text
        elif kind == "iterable":
            self.emit(("a", 1))
            self.emit(["empty anchors"], anchors=[])
        elif kind == "unanchored":
            self.emit(["later"], anchors=None)

B().run()
""",
        )
    )
    try:
        for n, kind in enumerate(["surrogate", "bytes", "iterable", "unanchored"]):
            peer.tuple(str(n), [kind])
        for n in range(2):
            error = peer.read()
            assert type(error) is Error and "EncodeError" in error.msg
            assert peer.read() == Fail(str(n))
        assert [peer.read() for _ in range(5)] == [
            emit(["a", 1], ["2"]),
            emit(["empty anchors"], ["2"]),
            Ack("2"),
            emit(["later"], ["3"]),
            Ack("3"),
        ]
    finally:
        peer.close()


def test_emits_outside_process_are_unanchored_and_an_unencodable_id_is_refused(tmp_path):
    peer = start(
        script(
            tmp_path,
            """
class B(Bolt):
    def initialize(self, conf, context):
        self.emit(["from initialize"])
        self.held = []

    def process(self, tup):
        if tup.values[0] == "hold":
            self.held.append(tup)
            return
        for held in self.held:
            self.emit(["anchored", held.id], anchors=[held])
            self.ack(held)
        self.held = []
        self.emit(["unanchored"])
        try:
            self.ack("\\ud800")
        except Exception as exc:
            self.log(type(exc).__name__)
        self.fail(tup)

B().run()
""",
        )
    )
    try:
        assert peer.read() == emit(["from initialize"])
        peer.tuple("h", ["hold"])
        peer.tuple("r", ["release"])
        assert [peer.read() for _ in range(5)] == [
            emit(["anchored", "h"], ["h"]),
            Ack("h"),
            emit(["unanchored"]),
            Log("EncodeError", 2),
            Fail("r"),
        ]
    finally:
        peer.close()


def test_spout_message_ids_of_every_json_type(tmp_path):
    peer = start(
        script(
            tmp_path,
            """
IDS = ['q"uo\\\\te/é', 2**70, -3, 0, True, False, 1.5, {"k": [1]}, [], "12"]

class S(Spout):
    def next_tuple(self):
        for msg_id in IDS:
            self.emit(["v"], id=msg_id)
        self.emit(("untracked",))

    def ack(self, msg_id):
        self.log(repr(msg_id))

S().run()
""",
        ),
        context=make_context(componentid="spout", outputs={"default": ["w"]}, sources={}),
    )
    ids = ['q"uo\\te/é', 2**70, -3, 0, True, False, 1.5, {"k": [1]}, [], "12"]
    try:
        peer.command("next")
        got = peer.read_until(Sync)
        assert got == [emit(["v"], id=i) for i in ids] + [emit(["untracked"]), Sync()]
        assert [type(m.id) for m in got[: len(ids)]] == [type(i) for i in ids]
        assert written(peer)[-2] == {
            "command": "emit",
            "tuple": ["untracked"],
            "need_task_ids": False,
        }
        assert written(peer)[1] == {
            "command": "emit",
            "tuple": ["v"],
            "id": 'q"uo\\te/é',
            "need_task_ids": False,
        }
        peer.command("ack", 2**70)
        peer.command("ack", "7")
        assert [peer.read() for _ in range(4)] == [
            Log(repr(2**70), 2),
            Sync(),
            Log("'7'", 2),
            Sync(),
        ]
    finally:
        peer.close()


def test_spout_unencodable_emits_raise_encode_error(tmp_path):
    peer = start(
        script(
            tmp_path,
            """
from multilang.client import EncodeError

class S(Spout):
    def next_tuple(self):
        for values, msg_id in ((["\\ud800"], 1), (["ok"], "\\ud800"), ([object()], None),
                               (["ok"], object())):
            try:
                self.emit(values, id=msg_id)
            except EncodeError:
                self.log("refused")
        self.emit(["fine"], id=2)

S().run()
""",
        ),
        context=make_context(componentid="spout", outputs={"default": ["w"]}, sources={}),
    )
    try:
        peer.command("next")
        assert peer.read_until(Sync) == [Log("refused", 2)] * 4 + [emit(["fine"], id=2), Sync()]
    finally:
        peer.close()


SLOW_COUNTING_BOLT = r"""
import sys, time
from multilang import BasicBolt

class Slow(BasicBolt):
    def initialize(self, conf, context):
        self.log_file = open(sys.argv[1], "a", buffering=1)
        time.sleep(0.5)  # the test writes every tuple meanwhile: they come in one read

    def process(self, tup):
        time.sleep(0.005)
        self.log_file.write(tup.id + "\n")

Slow().run()
"""


def test_a_long_read_is_answered_in_parts(tmp_path):
    # with more than FLUSH_EVERY tuples in one read, the first acks are written while the rest
    # are still being processed (the host acks and routes them meanwhile), not after the last
    from multilang.client_io import FLUSH_EVERY
    from multilang.codec import encode
    from multilang.messages import TupleMessage

    n = 300
    assert n > 2 * FLUSH_EVERY
    done = tmp_path / "processed"
    peer = ComponentPeer(["python", "-c", SLOW_COUNTING_BOLT, str(done)])
    try:
        peer.handshake()
        peer.send_raw(
            b"".join(encode(TupleMessage(str(i), "spout", "default", 1, [i])) for i in range(n))
        )
        first = peer.read_until(Ack)[-1]
        processed_then = len(done.read_text().split())
        assert first == Ack("0")
        assert processed_then < n  # without the partial flush it would be all of them
        acks = [first] + [m for m in (peer.read() for _ in range(n - 1)) if isinstance(m, Ack)]
        assert [a.id for a in acks] == [str(i) for i in range(n)]
    finally:
        assert peer.close() == 0
