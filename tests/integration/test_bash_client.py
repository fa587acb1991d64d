"""The bash client library (multilang/bash/multilang.sh) against real bash processes.

Each test starts a component from tests/integration/components/bash (or the word-count split
bolt) through ComponentPeer, speaks the protocol to it over its real pipes and checks what it
answers, decoded by the host's own ComponentDecoder.
"""

from __future__ import annotations

import os
import shutil
import signal
import time
from pathlib import Path

import pytest

from host.testing import ComponentPeer, make_context
from multilang.messages import Ack, Emit, Error, Fail, Log, Metrics, Sync

ROOT = Path(__file__).resolve().parents[2]
COMPONENTS = Path(__file__).resolve().parent / "components" / "bash"
SCRIPTED = str(COMPONENTS / "scripted_bolt.sh")
MANUAL = str(COMPONENTS / "manual_bolt.sh")
SPOUT = str(COMPONENTS / "spout.sh")
SPLIT = str(ROOT / "examples" / "wordcount" / "split.sh")

# Strings that break naive quoting on either side of the pipe.
NASTY = [
    "tab\there",
    "new\nline",
    "\nend\n",
    "end",
    "quote\"s and 'single'",
    "back\\slash\\",
    "\\n is not a newline",
    "unicode: é ü 中文 😀 \u2028 \u00a0",
    "edges: \ufffe \uffff \ufdd0 \U0010ffff \ufeff \u0300\u0301",
    "controls: \r \x01 \x07 \x08 \x0c \x1b \x1f \x7f \u0085",
    "$HOME `id` $(id) %s %d *",
    "-n",
    "--",
    "",
    "  spaced  ",
    "[1,2]",
    "x" * 5000,
]


# Every test runs twice: as under Storm (the library's jq co-process reads the host's JSON), and
# as under this host, which offers shell-frames/1 (multilang/shell_frames.py: the library stops
# jq after the handshake and reads bash commands). Tests that send JSON of their own run the
# first only.
@pytest.fixture(params=["jq", "shell-frames"])
def peers(request):
    started: list[ComponentPeer] = []
    offered = request.param == "shell-frames"

    def start(script: str, env: dict | None = None) -> ComponentPeer:
        peer = ComponentPeer(["bash", script], env=env, shell_frames=offered)
        started.append(peer)
        return peer

    yield start
    for peer in started:
        if peer.proc.poll() is None:
            peer.close()
        shutil.rmtree(peer.pid_dir, ignore_errors=True)


def bolt(peers, script: str = SCRIPTED, env: dict | None = None, conf: dict | None = None):
    peer = peers(script, env)
    peer.handshake(conf=conf, context=make_context(taskid=3, componentid="bolt"))
    if script == SCRIPTED:
        init = peer.read()
        assert isinstance(init, Log) and init.msg.startswith("init ")
    return peer


def emits_then_ack(peer: ComponentPeer, tuple_id: str) -> list[Emit]:
    messages = peer.read_until(Ack)
    assert messages[-1] == Ack(tuple_id)
    assert all(isinstance(m, Emit) for m in messages[:-1]), messages
    return messages[:-1]


def children(pid: int) -> list[int]:
    with open(f"/proc/{pid}/task/{pid}/children") as f:
        return [int(p) for p in f.read().split()]


def gone(pid: int, timeout: float = 2.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with open(f"/proc/{pid}/stat") as f:
                if f.read().split(") ")[1].startswith("Z"):
                    return True  # a zombie is dead; only its parent's wait is missing
        except FileNotFoundError:
            return True
        time.sleep(0.01)
    return False


# ---- handshake ----------------------------------------------------------------------------------


def test_handshake_writes_pid_file_and_runs_on_init(peers):
    peer = peers(SCRIPTED)
    pid = peer.handshake(conf={"topology.name": "wc"}, context=make_context(3, "bolt"))
    assert pid == peer.proc.pid
    assert os.listdir(peer.pid_dir) == [str(pid)]
    assert os.path.getsize(os.path.join(peer.pid_dir, str(pid))) == 0
    init = peer.read()
    assert init == Log(
        "init task=3 component=bolt name=wc task1=spout conf_is_json={ context_is_json={", 2
    )
    assert peer.close() == 0


# ---- bolts --------------------------------------------------------------------------------------


def test_emit_is_anchored_and_tuple_acked(peers):
    peer = bolt(peers)
    peer.tuple("-4613382227463211107", ["emit", "a", "b"])
    [emit] = emits_then_ack(peer, "-4613382227463211107")
    assert emit == Emit(["a", "b"], "default", ["-4613382227463211107"], None, False)


def test_tuple_variables(peers):
    peer = bolt(peers)
    peer.tuple("77", ["vars", "x", "y"], comp="source", stream="lines", task=12)
    [emit] = emits_then_ack(peer, "77")
    assert emit.values == ["77", "source", "lines", "12", "2"]


@pytest.mark.parametrize("locale", ["C.UTF-8", "C"])
def test_nasty_strings_round_trip(peers, locale):
    peer = bolt(peers, env={**os.environ, "LC_ALL": locale})
    peer.tuple("1", ["emit", *NASTY])
    [emit] = emits_then_ack(peer, "1")
    assert emit.values == NASTY
    peer.tuple("2", ["each", *NASTY])
    emits = emits_then_ack(peer, "2")
    assert [e.values for e in emits] == [[s] for s in NASTY]
    assert all(list(e.anchors) == ["2"] for e in emits)
    peer.tuple("3", ["quote", NASTY[4] + NASTY[8]])
    [emit] = emits_then_ack(peer, "3")
    assert emit.values == [NASTY[4] + NASTY[8], 7]


def test_non_string_values_arrive_as_json_text(peers):
    peer = bolt(peers)
    peer.tuple("1", ["emit", 3, 2.5, True, None, [1, "a"], {"k": "v"}])
    [emit] = emits_then_ack(peer, "1")
    assert emit.values == ["3", "2.5", "true", "null", '[1,"a"]', '{"k":"v"}']


def test_nul_characters_are_dropped(peers):
    # A bash variable cannot hold NUL; the rest of the string must survive intact.
    peer = bolt(peers)
    peer.tuple("1", ["emit", "a\x00b", "tail"])
    [emit] = emits_then_ack(peer, "1")
    assert emit.values == ["ab", "tail"]


def test_emit_json_sends_raw_values(peers):
    peer = bolt(peers)
    peer.tuple("1", ["json", '[ "w", 3, {"n": [true, null]} ]'])
    [emit] = emits_then_ack(peer, "1")
    assert emit.values == ["w", 3, {"n": [True, None]}]
    assert list(emit.anchors) == ["1"]


def test_named_stream(peers):
    peer = bolt(peers)
    peer.tuple("1", ["stream", "errors", "bad row", "17"])
    [emit] = emits_then_ack(peer, "1")
    assert emit == Emit(["bad row", "17"], "errors", ["1"], None, False)


def test_direct_emit(peers):
    peer = bolt(peers)
    peer.tuple("1", ["direct", "12", "flush"])
    [emit] = emits_then_ack(peer, "1")
    assert emit == Emit(["flush"], "default", ["1"], 12, False)


def test_explicit_anchors_and_unanchored(peers):
    peer = bolt(peers)
    peer.tuple("1", ["anchors", "10", "11", "v"])
    [emit] = emits_then_ack(peer, "1")
    assert list(emit.anchors) == ["10", "11"]
    peer.tuple("2", ["unanchored", "v"])
    [emit] = emits_then_ack(peer, "2")
    assert list(emit.anchors) == [] and emit.values == ["v"]


def test_task_ids_when_asked_with_messages_stashed_meanwhile(peers):
    peer = bolt(peers)
    peer.tuple("1", ["taskids", "w"])
    emit = peer.read()
    assert emit == Emit(["w"], "default", ["1"], None, True)
    # Before the reply: a heartbeat and another tuple; both must wait for the reply.
    peer.heartbeat("hb")
    peer.tuple("2", ["emit", "second"])
    assert peer.quiet(0.2) == []
    peer.task_ids([4, 7])
    assert peer.read() == Log("tasks: 4 7", 2)
    assert peer.read() == Ack("1")
    assert peer.read() == Sync()
    [second] = emits_then_ack(peer, "2")
    assert second.values == ["second"] and not second.need_task_ids


def test_heartbeat_answered_with_sync(peers):
    peer = bolt(peers)
    peer.heartbeat("-880213")
    assert peer.read() == Sync()
    assert peer.quiet(0.1) == []


def test_tick_goes_to_on_tick_and_is_acked(peers):
    peer = bolt(peers)
    peer.tick("t1", freq=5)
    assert peer.read() == Log("tick freq=5 id=t1 comp=__system stream=__tick", 2)
    assert peer.read() == Ack("t1")


def test_failing_tick_hook_fails_the_tick(peers):
    peer = bolt(peers)
    peer.tick("t1", freq=99)
    assert [peer.read(), peer.read()] == [
        Error("on_tick returned status 1 for tick tuple t1"),
        Fail("t1"),
    ]


def test_tick_without_hook_is_acked(peers):
    peer = bolt(peers, script=SPLIT)
    peer.tick("t1")
    assert peer.read() == Ack("t1")


def test_non_zero_return_fails_the_tuple_and_the_bolt_continues(peers):
    peer = bolt(peers)
    peer.tuple("1", ["fail", "3"])
    emit, error, fail = peer.read_until(Fail)
    assert emit.values == ["before failing"] and list(emit.anchors) == ["1"]
    assert error == Error("act returned status 3 for tuple 1")
    assert fail == Fail("1")
    peer.tuple("2", ["emit", "still alive"])
    [emit] = emits_then_ack(peer, "2")
    assert emit.values == ["still alive"]


def test_emit_with_bad_option_fails_the_tuple(peers):
    peer = bolt(peers)
    peer.tuple("1", ["badopt", "x"])
    log, error, fail = peer.read_until(Fail)
    assert log.level == 4 and "unknown option '--nope'" in log.msg
    assert error == Error("act returned status 2 for tuple 1") and fail == Fail("1")


def test_user_ack_is_not_repeated(peers):
    peer = bolt(peers)
    peer.tuple("1", ["selfack"])
    assert peer.read() == Ack("1")
    emit = peer.read()
    assert isinstance(emit, Emit)
    peer.heartbeat()
    assert peer.read() == Sync()  # no second ack in between


def test_log_levels(peers):
    peer = bolt(peers)
    for i, level in enumerate(["trace", "debug", "info", "warn", "error", "0", "4", "", "loud"]):
        peer.tuple(str(i), ["log", f"m{i}", level])
    expected = [0, 1, 2, 3, 4, 0, 4, 2, 2]
    for i, level in enumerate(expected):
        assert peer.read() == Log(f"m{i}", level)
        assert peer.read() == Ack(str(i))


def test_error_and_metrics(peers):
    peer = bolt(peers)
    peer.tuple("1", ["error", 'broken "thing"\n'])
    assert peer.read() == Error('broken "thing"\n')
    assert peer.read() == Ack("1")
    peer.tuple("2", ["metrics", "my-metric", '{"a": [1, 2]}'])
    assert peer.read() == Metrics("my-metric", {"a": [1, 2]})
    assert peer.read() == Ack("2")
    peer.tuple("3", ["metrics", "counter"])
    assert peer.read() == Metrics("counter", None)
    assert peer.read() == Ack("3")


def test_stdout_of_user_code_goes_to_stderr(peers):
    peer = bolt(peers)
    peer.tuple("1", ["echo"])
    [emit] = emits_then_ack(peer, "1")
    assert emit.values == ["after echo"]
    assert peer.close() == 0
    assert b"to stdout, must not reach the protocol" in peer.stderr


def _jq_children(pid: int) -> list[int]:
    with open(f"/proc/{pid}/task/{pid}/children") as f:
        children = [int(c) for c in f.read().split()]
    out = []
    for c in children:
        try:
            with open(f"/proc/{c}/cmdline", "rb") as f:
                if f.read().split(b"\0")[0].endswith(b"jq"):
                    out.append(c)
        except FileNotFoundError:
            pass
    return out


@pytest.mark.parametrize("offered", [False, True])
def test_offered_shell_frames_the_library_stops_jq_and_takes_them(offered):
    peer = ComponentPeer(["bash", SCRIPTED], shell_frames=offered)
    try:
        peer.handshake(context=make_context(taskid=3, componentid="bolt"))
        took = [e.split(";")[0] for e in peer.extensions if e.startswith("shell-frames/")]
        assert took == (["shell-frames/1"] if offered else [])
        # it answered the handshake after jq was gone; without the offer jq reads for it
        assert bool(_jq_children(peer.proc.pid)) == (not offered)
        assert peer.shell_frames == offered
        peer.read()  # on_init's log
        peer.tuple("1", ["emit", "a'b c", "é"])
        assert emits_then_ack(peer, "1")[0].values == ["a'b c", "é"]
        assert peer.close() == 0  # the end of its input, read by jq or by bash itself
    finally:
        peer.close()
        shutil.rmtree(peer.pid_dir, ignore_errors=True)


@pytest.mark.parametrize("peers", ["jq"], indirect=True)  # malformed JSON is jq's to read
def test_unknown_host_message_is_logged_and_ignored(peers):
    peer = bolt(peers)
    peer.send_raw(b'{"what": 1}\nend\nnot json\nend\n')
    first, second = peer.read(), peer.read()
    assert first.level == second.level == 3
    assert "unrecognised host message" in first.msg and "not json" in second.msg
    peer.tuple("1", ["emit", "ok"])
    assert emits_then_ack(peer, "1")[0].values == ["ok"]


def test_all_messages_of_one_tuple_come_in_one_write(peers):
    peer = bolt(peers)
    words = [f"w{i}" for i in range(40)]  # about 3 KB: below PIPE_BUF, so one write is atomic
    peer.tuple("1", ["each", *words])
    # One read of the pipe holds the whole batch: the library wrote it with one printf.
    peer._pump(5)
    assert len(peer.inbox) == 41 and peer.inbox[-1] == Ack("1")


def syscalls_written(pid: int) -> int:
    """How many write system calls the process has made so far."""
    with open(f"/proc/{pid}/io") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("syscw:"))


BURST_BOLT = """#!/usr/bin/env bash
source "$MULTILANG_SH"
act() {
    case $1 in
        sleep) sleep "$2" ;;
        *) emit "$1" ;;
    esac
}
run_bolt act
"""


def test_a_burst_is_answered_in_few_writes_and_a_lone_tuple_at_once(peers, tmp_path):
    script = tmp_path / "burst_bolt.sh"
    script.write_text(BURST_BOLT)
    peer = peers(str(script))
    peer.handshake(context=make_context(taskid=3, componentid="bolt"))
    before = syscalls_written(peer.proc.pid)
    # While the bolt sleeps on the first tuple, jq gets the whole burst ready.
    peer.tuple("0", ["sleep", "0.5"])
    for i in range(1, 251):
        peer.tuple(str(i), [f"w{i}"])
    assert peer.read() == Ack("0")
    for i in range(1, 251):
        assert emits_then_ack(peer, str(i))[0].values == [f"w{i}"]
    writes = syscalls_written(peer.proc.pid) - before
    # Not one write per tuple; but not one for the whole burst either: at most 100 tuples are
    # answered per write, so that the host gets acks while the bolt works on the rest.
    assert 3 <= writes <= 25, writes
    # A tuple that comes alone is answered at once: nothing waits for more input.
    started = time.monotonic()
    peer.tuple("lone", ["alone"])
    assert emits_then_ack(peer, "lone")[0].values == ["alone"]
    assert time.monotonic() - started < 2
    assert peer.close() == 0


def test_output_beyond_the_stdio_buffer_goes_out_in_few_writes(peers):
    # stdio would write what follows the first 4 KiB of one printf line by line.
    peer = bolt(peers)
    words = [f"word{i:03d}" + "x" * 100 for i in range(100)]  # about 17 KB of emits
    before = syscalls_written(peer.proc.pid)
    peer.tuple("1", ["each", *words])
    assert [e.values for e in emits_then_ack(peer, "1")] == [[w] for w in words]
    assert syscalls_written(peer.proc.pid) - before <= 3


# ---- several tuples in one write ---------------------------------------------------------------
# The host writes what it routed to a task in one loop turn at once. Under shell-frames/1 it joins
# the tuples into one frame for a library that announced `joined` (multilang/shell_frames.py
# `join_frames`); under Storm (jq) they are frames one after another. Either way each tuple is
# answered in order, as if it had come alone.


def frames_in(data: bytes, chars: bool) -> int:
    """How many shell frames `data` holds: each is 10 digits of length, then that many
    characters (or bytes)."""
    count = 0
    while data:
        length, body = int(data[:10]), data[10:]
        data = body[len(body.decode()[:length].encode()) if chars else length :]
        count += 1
    return count


@pytest.mark.parametrize("locale", ["C.UTF-8", "C"])
def test_tuples_written_together_are_answered_one_by_one(peers, locale):
    peer = bolt(peers, env={**os.environ, "LC_ALL": locale})
    batch = [(i + 1, ["emit", s]) for i, s in enumerate(NASTY)]
    batch += [(100, ["each", "a", "b"]), (101, ["fail", "4"]), (102, ["vars", "x"])]
    data = peer.tuples(batch, comp="source", stream="lines", task=12)
    if peer.shell_frames:
        ser = peer.serializer
        assert ser.joined  # the library said it reads joined frames
        assert frames_in(data, ser.chars) == 1  # so all of them went in one
    for i, s in enumerate(NASTY):
        [emit] = emits_then_ack(peer, str(i + 1))
        assert emit.values == [s] and list(emit.anchors) == [str(i + 1)]
    assert [e.values for e in emits_then_ack(peer, "100")] == [["a"], ["b"]]
    emit, error, fail = peer.read_until(Fail)
    assert emit.values == ["before failing"] and list(emit.anchors) == ["101"]
    assert (error, fail) == (Error("act returned status 4 for tuple 101"), Fail("101"))
    [emit] = emits_then_ack(peer, "102")  # the variables are the tuple's own, not a neighbour's
    assert emit.values == ["102", "source", "lines", "12", "1"]
    assert peer.quiet(0.2) == []


def test_a_task_id_wait_inside_joined_tuples_keeps_their_order(peers):
    # The first tuple of the write waits for its task ids; the others, read with it, run after
    # the reply, before what came later (a heartbeat written while it waited).
    peer = bolt(peers)
    peer.tuples([(1, ["taskids", "w"]), (2, ["emit", "second"]), (3, ["emit", "third"])])
    assert peer.read() == Emit(["w"], "default", ["1"], None, True)
    peer.heartbeat("hb")
    assert peer.quiet(0.2) == []
    peer.task_ids([4, 7])
    assert peer.read() == Log("tasks: 4 7", 2)
    assert peer.read() == Ack("1")
    assert emits_then_ack(peer, "2")[0].values == ["second"]
    assert emits_then_ack(peer, "3")[0].values == ["third"]
    assert peer.read() == Sync()


def test_more_tuples_than_a_joined_frame_holds(peers):
    from multilang.shell_frames import JOIN_MAX

    peer = bolt(peers)
    n = 2 * JOIN_MAX + 5
    data = peer.tuples([(i, ["emit", f"w{i}"]) for i in range(1, n + 1)])
    if peer.shell_frames:
        assert frames_in(data, peer.serializer.chars) == 3
    for i in range(1, n + 1):
        assert emits_then_ack(peer, str(i))[0].values == [f"w{i}"]


def test_emit_each_anchored_to_an_id_a_format_would_misread(peers):
    # emit_each's fast path is a printf format holding the anchor: an id with % or \ must not
    # be read as a conversion or an escape.
    peer = bolt(peers)
    for tid in ["a%sb%d", "back\\slash\\n", "100%"]:
        peer.tuple(tid, ["each", "x", "y"])
        emits = emits_then_ack(peer, tid)
        assert [(e.values, list(e.anchors)) for e in emits] == [(["x"], [tid]), (["y"], [tid])]
    peer.tuple("5", ["each"])  # no words: no emits
    assert peer.read() == Ack("5")


@pytest.mark.parametrize("locale", ["C.UTF-8", "C"])
def test_emit_each_with_nothing_to_escape(peers, locale):
    # Strings without quotes, backslashes or control characters take emit_each's batch path.
    words = [
        "&",
        "a&b",
        "%s %d %%",
        "$HOME `id` $(id) ${x}",
        "unicode: é ü 中文 😀 \u00a0",
        "*",
        "-n",
        "--",
        "",
        "  spaced  ",
        "[1,2]",
        "it's",
        "end",
        "x" * 5000,
    ]
    peer = bolt(peers, env={**os.environ, "LC_ALL": locale})
    peer.tuple("7", ["each", *words])
    emits = emits_then_ack(peer, "7")
    assert [e.values for e in emits] == [[w] for w in words]
    assert all(list(e.anchors) == ["7"] and not e.need_task_ids for e in emits)
    peer.tuple("8", ["each"])
    assert peer.read() == Ack("8")


@pytest.mark.parametrize("peers", ["jq"], indirect=True)  # JSON is jq's to read
def test_multi_line_host_json_is_accepted(peers):
    peer = bolt(peers)
    peer.send_raw(
        b'\n{"id": "1", "comp": "spout",\n "stream": "default", "task": 1,\n'
        b' "tuple": ["emit", "a\\nb"]}\nend\n'
    )
    [emit] = emits_then_ack(peer, "1")
    assert emit.values == ["a\nb"]


# ---- manual bolts -------------------------------------------------------------------------------


def test_manual_bolt_acks_and_fails_by_id(peers):
    peer = bolt(peers, script=MANUAL)
    peer.tuple("1", ["keep"])
    peer.tuple("2", ["keep"])
    assert [m.values for m in peer.read_until(Emit) + peer.read_until(Emit)] == [["kept"]] * 2
    assert peer.quiet(0.2) == []  # nothing acked on its own
    peer.tuple("3", ["ack-held"])
    assert peer.read_until(Ack) + peer.read_until(Ack) + peer.read_until(Ack) == [
        Ack("1"),
        Ack("2"),
        Ack("3"),
    ]
    peer.tuple("4", ["keep"])
    peer.tuple("5", ["fail-held"])
    assert list(peer.read().anchors) == ["4"]
    assert [peer.read(), peer.read()] == [Fail("4"), Fail("5")]


def test_manual_bolt_non_zero_return(peers):
    peer = bolt(peers, script=MANUAL)
    peer.tuple("1", ["fail-now"])
    assert [peer.read(), peer.read()] == [Fail("1"), Error("hold returned status 4 for tuple 1")]
    peer.tuple("2", ["bad"])
    assert [peer.read(), peer.read()] == [Error("hold returned status 5 for tuple 2"), Fail("2")]


# ---- spouts -------------------------------------------------------------------------------------


def test_spout_commands(peers):
    peer = peers(SPOUT)
    peer.handshake(conf={"test.limit": 3}, context=make_context(2, "spout", sources={}))
    assert peer.read() == Log("open limit=3", 2)
    peer.command("activate")
    assert peer.read_until(Sync) == [Log("activated", 2), Sync()]

    peer.command("next")
    assert peer.read_until(Sync) == [Emit(["s1"], id="m1", need_task_ids=False), Sync()]
    peer.command("next")
    assert peer.read_until(Sync) == [
        Emit(["s2"], id="m2", need_task_ids=False),
        Emit(["unreliable"], need_task_ids=False),
        Emit(["numeric id"], "odd", id=2, need_task_ids=False),
        Sync(),
    ]
    peer.command("next")
    assert peer.read_until(Emit) == [Emit(["s3"], id="m3", need_task_ids=False)]
    assert peer.read() == Emit(["wants task ids"], id="m3b", need_task_ids=True)
    peer.task_ids([5])
    assert peer.read_until(Sync) == [Log("tasks: 5", 2), Sync()]
    peer.command("next")  # exhausted: nothing to emit, just sync
    assert peer.read() == Sync()

    peer.command("ack", "m1")
    assert peer.read_until(Sync) == [Log('ack m1 json="m1"', 2), Sync()]
    peer.command("ack", 2)
    assert peer.read_until(Sync) == [Log("ack 2 json=2", 2), Sync()]
    peer.command("fail", "m2")
    assert peer.read_until(Sync) == [
        Log('fail m2 json="m2"', 2),
        Error("failed returned status 1"),
        Sync(),
    ]
    peer.command("deactivate")
    assert peer.read_until(Sync) == [Log("deactivated", 2), Sync()]
    assert peer.close() == 0


def test_a_tuple_for_a_spout_is_logged_and_ignored(peers):
    peer = peers(SPOUT)
    peer.handshake(conf={"test.limit": 1}, context=make_context(2, "spout", sources={}))
    peer.read()
    peer.tuple("9", ["stray"], stream="words")
    log = peer.read()
    assert log.level == 3 and "a spout received a tuple on stream 'words'" in log.msg
    peer.command("next")
    assert peer.read_until(Sync) == [Emit(["s1"], id="m1", need_task_ids=False), Sync()]


def test_spout_without_hooks_still_syncs(peers):
    peer = peers(SPOUT)
    peer.handshake(conf={"test.limit": 0}, context=make_context(2, "spout", sources={}))
    peer.read()
    peer.command("next")
    assert peer.read() == Sync()
    peer.command("bogus")
    log, sync = peer.read(), peer.read()
    assert log.level == 3 and "bogus" in log.msg and sync == Sync()


# ---- ending -------------------------------------------------------------------------------------


@pytest.mark.parametrize("peers", ["jq"], indirect=True)  # jq past the handshake
def test_exit_0_on_stdin_eof_without_leftover_jq(peers):
    peer = bolt(peers)
    [jq] = children(peer.proc.pid)
    with open(f"/proc/{jq}/comm") as f:
        assert f.read().strip() == "jq"
    for i in range(20):
        peer.tuple(str(i), ["emit", "x"])
        emits_then_ack(peer, str(i))
    assert children(peer.proc.pid) == [jq]  # the same single jq: no process per tuple
    assert peer.close() == 0
    assert gone(jq)


@pytest.mark.parametrize("peers", ["jq"], indirect=True)  # jq past the handshake
def test_jq_dies_when_bash_is_terminated(peers):
    peer = bolt(peers)
    [jq] = children(peer.proc.pid)
    peer.proc.send_signal(signal.SIGTERM)
    assert peer.proc.wait(5) == 143
    assert gone(jq)


@pytest.mark.parametrize("peers", ["jq"], indirect=True)  # jq past the handshake
def test_jq_dies_when_user_code_exits(peers):
    peer = bolt(peers)
    [jq] = children(peer.proc.pid)
    peer.tuple("1", ["exit", "7"])
    assert peer.proc.wait(5) == 7
    assert gone(jq)


def test_eof_before_handshake_exits_0(peers):
    peer = peers(SCRIPTED)
    assert peer.close() == 0


# ---- the word-count split bolt ------------------------------------------------------------------


def test_split_emits_one_anchored_word_per_word(peers):
    peer = bolt(peers, script=SPLIT)
    peer.tuple("42", ["the cow  jumped\tover * -n"])
    emits = emits_then_ack(peer, "42")
    assert [e.values for e in emits] == [["the"], ["cow"], ["jumped"], ["over"], ["*"], ["-n"]]
    assert all(list(e.anchors) == ["42"] and not e.need_task_ids for e in emits)
    peer.tuple("43", [""])
    assert peer.read() == Ack("43")
    assert peer.close() == 0
