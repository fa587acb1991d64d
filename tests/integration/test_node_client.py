"""The Node client library (`require('multilang')`), driven through real `node` processes.

Each test starts a small component from tests/integration/components/node/ (or the word-count
example) under ComponentPeer, which plays the host over the real pipes.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from host.testing import ComponentPeer, make_context
from multilang.messages import Ack, Emit, Error, Fail, Log, Metrics, Sync
from multilang.paths import client_environment

HERE = Path(__file__).resolve().parent
COMPONENTS = HERE / "components" / "node"
ROOT = HERE.parents[1]
COUNT_JS = ROOT / "examples" / "wordcount" / "count.js"


@pytest.fixture
def start():
    """start(script, conf=None, context=None) -> a ComponentPeer past the handshake."""
    peers: list[ComponentPeer] = []

    def _start(
        script: str | Path,
        conf: dict | None = None,
        context: dict | None = None,
        handshake: bool = True,
    ) -> ComponentPeer:
        peer = ComponentPeer(["node", str(COMPONENTS / script)])
        peers.append(peer)
        if handshake:
            peer.handshake(conf, context)
        return peer

    yield _start
    for peer in peers:
        if not peer.proc.stdin.closed:
            peer.close()


def emitted(msg, values, anchors=(), stream="default", task=None, need_task_ids=False, id=None):
    assert isinstance(msg, Emit), f"expected an emit, got {msg!r}"
    assert msg.values == values
    assert list(msg.anchors) == list(anchors)
    assert (msg.stream, msg.task, msg.need_task_ids, msg.id) == (stream, task, need_task_ids, id)


# ---- handshake ----------------------------------------------------------------------------------


def test_handshake_writes_pid_file_then_calls_initialize(start):
    peer = start("basic_bolt.js", handshake=False)
    pid = peer.handshake({"test.init": True, "test.key": "v"}, make_context(componentid="counter"))
    assert pid == peer.proc.pid
    assert os.listdir(peer.pid_dir) == [str(pid)]
    assert os.path.getsize(os.path.join(peer.pid_dir, str(pid))) == 0
    assert peer.read() == Log("init counter v", 2)
    assert peer.close() == 0


def test_initialize_failure_is_reported_then_exits_1(start):
    peer = start("basic_bolt.js", {"test.init-fail": True})
    error = peer.read()
    assert (
        isinstance(error, Error)
        and "initialize failed" in error.msg
        and "cannot start" in error.msg
    )
    assert peer.proc.wait(5) == 1


# ---- bolts --------------------------------------------------------------------------------------


def test_emit_is_anchored_and_the_tuple_acked(start):
    peer = start("basic_bolt.js")
    peer.tuple("-4613382227463211107", ["emit", "hello"])
    emitted(peer.read(), ["hello"], anchors=["-4613382227463211107"])
    assert peer.read() == Ack("-4613382227463211107")
    peer.tuple("2", ["unanchored", "free"])
    emitted(peer.read(), ["free"])
    assert peer.read() == Ack("2")
    assert peer.close() == 0


def test_emit_to_a_stream_and_to_a_direct_task(start):
    peer = start("basic_bolt.js")
    peer.tuple("1", ["stream", "s"])
    emitted(peer.read(), ["s"], anchors=["1"], stream="other")
    assert peer.read() == Ack("1")
    peer.tuple("2", ["direct", "d", 7])
    emitted(peer.read(), ["d"], anchors=["2"], task=7)
    assert peer.read() == Ack("2")
    # A direct emit never gets a reply from the host: asking for its task ids answers at once.
    peer.tuple("3", ["direct-taskids", "d", 9])
    emitted(peer.read(), ["d"], anchors=["3"], task=9)
    assert peer.read() == Log("ids [9]", 2)
    assert peer.read() == Ack("3")


def test_task_ids_when_asked_with_messages_stashed_meanwhile(start):
    peer = start("basic_bolt.js")
    peer.tuple("1", ["taskids", "x"])
    emitted(peer.read(), ["x"], anchors=["1"], need_task_ids=True)
    peer.tuple("2", ["emit", "y"])
    peer.heartbeat("hb")
    assert peer.quiet(0.2) == []  # both held back until the reply arrives
    peer.task_ids([4, 5])
    assert peer.read() == Log("ids [4,5]", 2)
    assert peer.read() == Ack("1")
    emitted(peer.read(), ["y"], anchors=["2"])
    rest = [peer.read(), peer.read()]  # process is async: its ack may come after the sync
    assert sorted(map(repr, rest)) == sorted(map(repr, [Ack("2"), Sync()]))


def test_unexpected_task_ids_and_unknown_messages_are_logged(start):
    peer = start("basic_bolt.js")
    peer.task_ids([1])
    log = peer.read()
    assert isinstance(log, Log) and log.level == 3 and "task-id list" in log.msg
    peer.send_raw(b'{"surprise":1}\nend\n')
    log = peer.read()
    assert isinstance(log, Log) and log.level == 3 and "surprise" in log.msg
    peer.tuple("1", ["emit", "still here"])
    emitted(peer.read(), ["still here"], anchors=["1"])
    assert peer.read() == Ack("1")


def test_heartbeat_is_answered_with_sync_and_never_processed(start):
    peer = start("basic_bolt.js")
    peer.heartbeat("hb-1")
    assert peer.read() == Sync()
    peer.tuple(
        "1", ["emit", "next"]
    )  # had process seen the heartbeat, an error/fail would be first
    emitted(peer.read(), ["next"], anchors=["1"])


def test_tick_goes_to_the_tick_hook_and_is_acked(start):
    peer = start("basic_bolt.js")
    peer.tick("tick-1", freq=5)
    assert peer.read() == Log("tick 5", 2)
    assert peer.read() == Ack("tick-1")


def test_thrown_error_fails_the_tuple_and_the_bolt_keeps_working(start):
    peer = start("basic_bolt.js")
    peer.tuple("1", ["throw"])
    error = peer.read()
    assert isinstance(error, Error) and "Error: boom" in error.msg and "basic_bolt.js" in error.msg
    assert peer.read() == Fail("1")
    peer.tuple("2", ["reject"])
    error = peer.read()
    assert isinstance(error, Error) and "async boom" in error.msg
    assert peer.read() == Fail("2")
    peer.tuple("3", ["bad-values"])
    error = peer.read()
    assert isinstance(error, Error) and "values must be an array" in error.msg
    assert peer.read() == Fail("3")
    peer.tuple("4", ["emit", "ok"])
    emitted(peer.read(), ["ok"], anchors=["4"])
    assert peer.read() == Ack("4")
    assert peer.close() == 0


def test_tuples_are_processed_concurrently_and_acked_in_any_order(start):
    peer = start("basic_bolt.js")
    peer.tuple("1", ["wait", "k"])  # waits until tuple 3 opens its gate
    peer.tuple("2", ["emit", "meanwhile"])
    emitted(peer.read(), ["meanwhile"], anchors=["2"])
    assert peer.read() == Ack("2")  # acked while tuple 1 is still in progress
    peer.tuple("3", ["release", "k"])
    got = [peer.read() for _ in range(3)]
    assert Ack("3") in got
    got.remove(Ack("3"))
    emitted(got[0], ["after k"], anchors=["1"])
    assert got[1] == Ack("1")


def test_emit_after_the_tuple_was_acked_is_refused(start):
    peer = start("basic_bolt.js")
    peer.tuple("1", ["late-emit"])
    assert peer.read() == Ack("1")
    log = peer.read()
    assert isinstance(log, Log) and log.level == 3 and "emit after tuple 1 was acked" in log.msg


def test_log_levels(start):
    peer = start("basic_bolt.js")
    peer.tuple("1", ["log"])
    logs = peer.read_until(Ack)
    assert logs == [
        Log("t", 0),
        Log("d", 1),
        Log("i", 2),
        Log("w", 3),
        Log("e", 4),
        Log("default", 2),
        Ack("1"),
    ]


def test_metrics_and_error_reports(start):
    peer = start("basic_bolt.js")
    peer.tuple("1", ["metrics"])
    assert peer.read() == Metrics("my-metric", {"n": 1})
    assert peer.read() == Metrics("count", None)
    assert peer.read() == Ack("1")
    peer.tuple("2", ["error", "this"])
    assert peer.read() == Error("reported this")
    assert peer.read() == Ack("2")


def test_console_log_goes_to_stderr_not_the_protocol(start):
    peer = start("basic_bolt.js")
    peer.tuple("1", ["print"])
    emitted(peer.read(), ["printed"], anchors=["1"])
    assert peer.read() == Ack("1")
    assert peer.close() == 0
    assert b"printed to stdout" in peer.stderr


def test_uncaught_exception_outside_process_is_reported_then_exits_1(start):
    peer = start("basic_bolt.js")
    peer.tuple("1", ["crash"])
    assert peer.read() == Ack("1")
    error = peer.read()
    assert isinstance(error, Error) and "late crash" in error.msg
    assert peer.proc.wait(5) == 1


def test_callback_style_done_acks_and_done_err_fails(start):
    peer = start("callback_bolt.js")
    peer.tuple("1", ["fine"])
    emitted(peer.read(), ["fine"], anchors=["1"])
    assert peer.read() == Ack("1")
    peer.tuple("2", ["bad"])
    error = peer.read()
    assert isinstance(error, Error) and "callback boom" in error.msg
    assert peer.read() == Fail("2")
    assert peer.close() == 0


def test_manual_bolt_acks_and_fails_by_hand(start):
    peer = start("manual_bolt.js")
    peer.tuple("1", ["ack", "v"])
    emitted(peer.read(), ["v"], anchors=["1"])
    assert peer.read() == Ack("1")
    peer.tuple("2", ["fail"])
    assert peer.read() == Fail("2")
    peer.tuple("3", ["hold"])
    peer.tuple("4", ["hold"])
    peer.tuple("5", ["flush"])
    emitted(peer.read(), ["flushed"], anchors=["3", "4"])
    assert [peer.read() for _ in range(3)] == [Ack("3"), Ack("4"), Ack("5")]
    # A second ack would kill the component in the host: refused and reported, nothing sent.
    peer.tuple("6", ["double"])
    assert peer.read() == Ack("6")
    error = peer.read()
    assert isinstance(error, Error) and "not a pending input tuple" in error.msg
    peer.tuple("7", ["throw"])
    error = peer.read()
    assert isinstance(error, Error) and "manual boom" in error.msg
    assert peer.read() == Fail("7")
    assert peer.quiet(0.1) == []
    assert peer.close() == 0


def test_spec_key_that_hides_a_library_method_is_refused():
    code = "const {BasicBolt} = require('multilang'); new BasicBolt({process() {}, log() {}});"
    result = subprocess.run(
        ["node", "-e", code], env=client_environment(), capture_output=True, timeout=10
    )
    assert result.returncode != 0
    assert b'"log" in the spec would hide' in result.stderr
    assert result.stdout == b""


# ---- spouts -------------------------------------------------------------------------------------


def test_spout_commands_are_each_answered_with_sync(start):
    peer = start("spout.js")
    peer.command("activate")
    assert peer.read_until(Sync) == [Log("activated", 2), Sync()]
    peer.command("next")
    emitted(peer.read(), ["sentence 0"], id=0)
    assert peer.read() == Sync()
    peer.command("next")
    emitted(peer.read(), ["sentence 1"], id=1)
    assert peer.read() == Sync()
    peer.command("next")  # nothing left to emit
    assert peer.read() == Sync()
    peer.command("ack", 0)
    assert peer.read_until(Sync) == [Log("acked 0", 2), Sync()]
    peer.command("fail", 1)
    emitted(peer.read(), ["replay"], stream="replays", id=1)
    assert peer.read() == Sync()
    peer.command("deactivate")
    assert peer.read_until(Sync) == [Log("deactivated", 2), Sync()]
    assert peer.quiet(0.1) == []
    assert peer.close() == 0


def test_spout_waits_for_task_ids_before_sync(start):
    peer = start("spout.js", {"test.mode": "taskids"})
    peer.command("next")
    emitted(peer.read(), ["asks"], id="a", need_task_ids=True)
    assert peer.quiet(0.2) == []  # no sync before the reply
    peer.task_ids([7])
    assert peer.read() == Log("ids [7]", 2)
    assert peer.read() == Sync()


def test_spout_hook_error_is_reported_then_synced(start):
    peer = start("spout.js", {"test.mode": "throw"})
    peer.command("next")
    error = peer.read()
    assert isinstance(error, Error) and "spout boom" in error.msg
    assert peer.read() == Sync()
    peer.command("next")
    emitted(peer.read(), ["sentence 0"], id=0)
    assert peer.read() == Sync()


def test_async_spout_stays_in_lock_step(start):
    peer = start("spout.js", {"test.mode": "async"})
    peer.command("next")
    peer.command("next")  # a misbehaving host: the second waits until the first is answered
    emitted(peer.read(), ["async 0"], id=0)
    assert peer.read() == Sync()
    emitted(peer.read(), ["async 1"], id=1)
    assert peer.read() == Sync()


def test_spout_emit_in_initialize_waits_for_its_task_ids(start):
    peer = start("spout.js", {"test.mode": "init-emit"})
    emitted(peer.read(), ["init"], need_task_ids=True)
    peer.command("activate")  # as the host would: it reads the emit during the first command
    assert peer.quiet(0.2) == []
    peer.task_ids([3])
    assert peer.read_until(Sync) == [Log("init ids [3]", 2), Log("activated", 2), Sync()]


# ---- ending -------------------------------------------------------------------------------------


def test_exit_0_on_stdin_eof_even_while_waiting_for_task_ids(start):
    idle = start("basic_bolt.js")
    assert idle.close() == 0
    waiting = start("basic_bolt.js")
    waiting.tuple("1", ["taskids", "x"])
    emitted(waiting.read(), ["x"], anchors=["1"], need_task_ids=True)
    assert waiting.close() == 0
    spout = start("spout.js")
    assert spout.close() == 0


def test_output_written_before_eof_is_not_lost(start):
    peer = start("basic_bolt.js")
    # A small input that fits in the pipe together with the EOF, and an emit far larger than
    # a pipe buffer: the client sees EOF while most of its output is still queued.
    peer.tuple("1", ["big", 2_000_000])
    peer.proc.stdin.close()
    emitted(peer.read(), ["x" * 2_000_000], anchors=["1"])
    assert peer.read() == Ack("1")
    assert peer.proc.wait(5) == 0


def test_exit_0_on_eof_before_the_handshake(start):
    peer = start("basic_bolt.js", handshake=False)
    assert peer.quiet(0.1) == []  # nothing may be written before the handshake
    assert os.listdir(peer.pid_dir) == []
    assert peer.close() == 0


# ---- the word-count example ---------------------------------------------------------------------


def test_wordcount_count_js_counts_across_tuples():
    peer = ComponentPeer(["node", str(COUNT_JS)], cwd=str(COUNT_JS.parent))
    try:
        peer.handshake(
            context=make_context(
                componentid="count",
                outputs={"default": ["word", "count"]},
                sources={"split": {"default": ["word"]}},
            )
        )
        words = ["the", "cow", "the", "moon", "the", "cow"]
        for i, word in enumerate(words):
            peer.tuple(str(100 + i), [word], comp="split", task=4)
            if i == 2:
                peer.heartbeat()
        got = [peer.read() for _ in range(2 * len(words) + 1)]
    finally:
        code = peer.close()
    assert Sync() in got
    got.remove(Sync())
    expected_counts = [1, 1, 2, 1, 3, 2]
    for i, (word, count) in enumerate(zip(words, expected_counts)):
        emitted(got[2 * i], [word, count], anchors=[str(100 + i)])
        assert got[2 * i + 1] == Ack(str(100 + i))
    assert code == 0
