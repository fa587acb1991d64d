"""The supervisor with real child processes: routing, acking, flow control and faults.

The host runs in the test process (through `host.testing.run_topology` where it runs a topology to
a condition, a bare Supervisor where a test samples it while it runs); every component is a real
subprocess using our clients. Spout-side truth comes from the ledger spout's own record of acks and
fails.
"""

from __future__ import annotations

import json
import logging
import os
from collections import Counter
from pathlib import Path

import psutil
import pytest

from host.runtime.supervisor import Supervisor
from host.testing import FakeClock, run_topology
from host.topology import TopologyBuilder

COMPONENTS = Path(__file__).parent / "components" / "host"
WORDS_PER_MESSAGE = 7  # "message {i} with some words in it"


def ledger(path: Path) -> tuple[Counter, Counter]:
    acks, fails = Counter(), Counter()
    if path.exists():
        for line in path.read_text().splitlines():
            kind, msg_id = line.split()
            (acks if kind == "ack" else fails)[int(msg_id)] += 1
    return acks, fails


def ledger_topology(
    tmp_path: Path,
    bolt: list[str],
    n: int = 200,
    config: dict | None = None,
    bolt_parallelism: int = 1,
    per_next: int = 1,
):
    b = TopologyBuilder(
        "t",
        config={
            "topology.max.spout.pending": 50,
            "host.restart.backoff.initial.secs": 0.1,
            "host.shutdown.grace.secs": 2,
            **(config or {}),
        },
    )
    b.spout(
        "spout",
        ["python", "ledger_spout.py"],
        outputs=["sentence"],
        config={
            "test.messages": n,
            "test.ledger": str(tmp_path / "ledger"),
            "test.per.next": per_next,
        },
    )
    b.bolt("split", bolt, outputs=["word"], parallelism=bolt_parallelism).shuffle("spout")
    b.bolt(
        "sink", ["python", "sink_bolt.py", str(tmp_path / "sink.jsonl")], outputs=[], parallelism=2
    ).fields("split", "word")
    return b.build(base_dir=COMPONENTS)


def all_acked(tmp_path: Path, n: int):
    """An `until` for run_topology: the spout's ledger holds an ack of every message."""
    return lambda result: len(ledger(tmp_path / "ledger")[0]) >= n


def assert_every_message_acked_once(tmp_path: Path, n: int) -> Counter:
    acks, fails = ledger(tmp_path / "ledger")
    assert set(acks) == set(range(n)), f"missing acks: {sorted(set(range(n)) - set(acks))[:20]}"
    assert max(acks.values()) == 1, "a message id was acked twice"
    return fails


def assert_no_children_left(sup: Supervisor) -> None:
    for pid in sup.started_pids:
        assert not is_running(pid), f"pid {pid} still running"
    assert not os.path.exists(sup.pid_dir)


def test_clean_run_acks_everything_and_counts_exactly(tmp_path):
    n = 300
    result = run_topology(
        ledger_topology(
            tmp_path,
            ["python", "faulty_bolt.py", "none", "0", str(tmp_path / "m")],
            n=n,
            per_next=3,
        )
    )
    assert result.exit_code == 0 and result.stopped_because == "quiescent"
    fails = assert_every_message_acked_once(tmp_path, n)
    assert not fails
    assert sorted(result.acked["spout"]) == list(range(n))  # the host saw what the spout did
    snap = result.snapshot
    top, comps = snap["topology"], snap["components"]
    assert top["spout_tuples_acked"] == n and top["spout_tuples_failed"] == 0
    assert top["complete_latency_ms"]["p50"] is not None
    assert comps["spout"]["emitted"] == n
    assert comps["split"]["executed"] == n and comps["split"]["emitted"] == n * WORDS_PER_MESSAGE
    assert comps["sink"]["executed"] == n * WORDS_PER_MESSAGE
    # per task: the two sink tasks share the words, and add up to the component's figures
    sink_tasks = comps["sink"]["tasks_detail"]
    assert len(sink_tasks) == 2 and all(d["executed"] > 0 for d in sink_tasks)
    for key in ("executed", "acked", "failed", "emitted"):
        assert sum(d[key] for d in sink_tasks) == comps["sink"][key]
    assert {"acked_per_s", "failed_per_s", "timed_out_per_s"} <= set(top)
    arrived = [json.loads(line) for line in (tmp_path / "sink.jsonl").read_text().splitlines()]
    assert len(arrived) == n * WORDS_PER_MESSAGE
    # fields grouping: every word went to exactly one sink task
    tasks_per_word: dict[str, set] = {}
    for a in arrived:
        tasks_per_word.setdefault(a["values"][0], set()).add(a["task"])
    assert all(len(tasks) == 1 for tasks in tasks_per_word.values())
    assert {a["comp"] for a in arrived} == {"split"}
    assert_no_children_left(result.supervisor)


@pytest.mark.parametrize("mode", ["crash", "garbage", "hang", "exit"])
def test_faulty_bolt_is_reported_restarted_and_its_tuples_replayed(tmp_path, mode, caplog):
    n = 200
    caplog.set_level(logging.INFO)
    result = run_topology(
        ledger_topology(
            tmp_path,
            ["python", "faulty_bolt.py", mode, "40", str(tmp_path / "marker")],
            n=n,
            config={"topology.subprocess.timeout.secs": 2},
        ),
        until=all_acked(tmp_path, n),
    )
    assert result.exit_code == 0 and result.stopped_because == "until"
    fails = assert_every_message_acked_once(tmp_path, n)
    assert fails, "the tuples in flight at the fault were failed for replay"
    split = result.snapshot["components"]["split"]
    assert split["restarts"] == 1 and split["errors"] >= 1
    errors = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    report = next(e for e in errors if e.startswith("split["))
    assert "pid=" in report and "failed for replay" in report
    expected = {
        "crash": "killed by SIGKILL",
        "garbage": "this is not json",
        "hang": "hung: silent",
        "exit": "exit status 0",
    }[mode]
    assert expected in report
    assert_no_children_left(result.supervisor)


def test_stderr_flood_is_drained_and_does_not_stop_the_bolt(tmp_path, caplog):
    n = 150
    caplog.set_level(logging.INFO)
    result = run_topology(
        ledger_topology(
            tmp_path, ["python", "faulty_bolt.py", "flood", "20", str(tmp_path / "marker")], n=n
        ),
        until=all_acked(tmp_path, n),
    )
    assert result.exit_code == 0 and result.stopped_because == "until"
    assert not assert_every_message_acked_once(tmp_path, n)
    assert result.snapshot["components"]["split"]["restarts"] == 0
    messages = [r.getMessage() for r in caplog.records]
    assert any("stderr lines not shown" in m for m in messages)
    assert sum(1 for m in messages if m.startswith("split[") and "xxxx" in m) <= 1000


@pytest.mark.parametrize(
    "mode,expected",
    [
        ("ack_unknown", "ack of tuple '12345', which is not pending"),
        ("ack_twice", "which is not pending"),
        ("anchor_acked", "emit anchored to tuple"),
        ("unknown_stream", "stream 'nope', which 'split' does not declare"),
        ("wrong_fields", "emit of 2 values to stream 'default', which declares 1 fields"),
        ("numeric_ack_id", "which is not pending"),
    ],
)
def test_protocol_misuse_is_a_fault_of_that_component_only(tmp_path, caplog, mode, expected):
    n = 60
    caplog.set_level(logging.INFO)
    result = run_topology(
        ledger_topology(
            tmp_path, ["python", "misuse_bolt.py", mode, str(tmp_path / "marker")], n=n
        ),
        until=all_acked(tmp_path, n),
    )
    assert result.exit_code == 0 and result.stopped_because == "until"
    assert_every_message_acked_once(tmp_path, n)
    comps = result.snapshot["components"]
    assert comps["split"]["restarts"] == 1
    assert comps["spout"]["restarts"] == 0 and comps["sink"]["restarts"] == 0
    errors = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    assert any(e.startswith("split[") and expected in e for e in errors), errors


def test_handshake_timeout_restarts_then_gives_up(tmp_path, caplog):
    b = TopologyBuilder(
        "t",
        config={
            "host.handshake.timeout.secs": 0.5,
            "host.restart.backoff.initial.secs": 0.1,
            "host.restart.max": 2,
            "host.shutdown.grace.secs": 1,
        },
    )
    b.spout("mute", ["python", "-c", "import time; time.sleep(60)"], outputs=["x"])
    b.bolt("sink", ["python", "sink_bolt.py", str(tmp_path / "s")], outputs=[]).shuffle("mute")
    sup = Supervisor(b.build(base_dir=COMPONENTS))
    caplog.set_level(logging.INFO)
    assert sup.run(20) == 1
    assert "mute[" in sup.failure and "giving up" in sup.failure
    errors = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    assert any("no pid reply within 0.5s" in e for e in errors)
    assert_no_children_left(sup)


def test_message_timeout_fails_and_spout_replays(tmp_path):
    # the sink never acks the first incarnation's tuples (a bolt "losing" them): they time out
    n = 20
    b = TopologyBuilder(
        "t",
        config={
            "topology.message.timeout.secs": 1,
            "topology.max.spout.pending": 100,
            "host.shutdown.grace.secs": 1,
        },
    )
    b.spout(
        "spout",
        ["python", "ledger_spout.py"],
        outputs=["sentence"],
        config={"test.messages": n, "test.ledger": str(tmp_path / "ledger")},
    )
    b.bolt(
        "split",
        ["python", "-c", DROP_FIRST_N_BOLT, str(tmp_path / "dropped"), "5"],
        outputs=["word"],
    ).shuffle("spout")
    # in fake time: the timeouts need no waiting
    result = run_topology(
        b.build(base_dir=COMPONENTS), until=all_acked(tmp_path, n), clock=FakeClock()
    )
    assert result.exit_code == 0 and result.stopped_because == "until"
    fails = assert_every_message_acked_once(tmp_path, n)
    assert sum(fails.values()) == 5
    assert len(result.timed_out["spout"]) == 5
    top = result.snapshot["topology"]
    assert top["spout_tuples_timed_out"] == 5 and top["spout_tuples_failed"] == 5


DROP_FIRST_N_BOLT = """
import sys
from multilang import Bolt
class Drop(Bolt):
    def initialize(self, conf, context):
        self.left = int(sys.argv[2])
    def process(self, tup):
        if self.left > 0:
            self.left -= 1
            return
        self.ack(tup)
Drop().run()
"""

NEVER_ACK_BOLT = """
from multilang import Bolt
class Hold(Bolt):
    def process(self, tup):
        pass
Hold().run()
"""


def test_max_spout_pending_caps_the_trees_in_flight(tmp_path):
    b = TopologyBuilder(
        "t", config={"topology.max.spout.pending": 7, "host.shutdown.grace.secs": 0.5}
    )
    b.spout(
        "spout",
        ["python", "ledger_spout.py"],
        outputs=["sentence"],
        config={"test.messages": 1000, "test.ledger": str(tmp_path / "ledger"), "test.per.next": 3},
    )
    b.bolt("hold", ["python", "-c", NEVER_ACK_BOLT], outputs=[]).shuffle("spout")
    sup = Supervisor(b.build(base_dir=COMPONENTS))
    seen = []
    sup.report_every = 0.2
    sup.on_report = lambda snap: seen.append(snap["topology"]["spout_tuples_pending"])
    sup.run(2.0)
    # one `next` may emit up to 3 more while the cap is checked per `next`, as in Storm
    assert max(seen) >= 7 and max(seen) <= 7 + 2
    assert sup.snapshot()["components"]["spout"]["emitted"] == max(seen)


PIPELINE_PROBE_SPOUT = r"""
import json, os, select, sys, time
buf = b""
def messages():
    global buf
    while True:
        while b"\nend\n" not in buf:
            data = os.read(0, 65536)
            if not data:
                return
            buf += data
        msg, buf = buf.split(b"\nend\n", 1)
        yield json.loads(msg)
def send(obj):
    os.write(1, (json.dumps(obj) + "\nend\n").encode())
inbox = messages()
hello = next(inbox)
open(os.path.join(hello["pidDir"], str(os.getpid())), "w").close()
send({"pid": os.getpid(), "ext": sys.argv[2:]})
probe = open(sys.argv[1], "a", buffering=1)
n = 0
for msg in inbox:
    if msg.get("command") == "next":
        n += 1
        if n <= 3:
            send({"command": "emit", "tuple": [n], "id": n, "need_task_ids": False})
        if n == 3:  # is the next `next` already here, before this one's sync?
            time.sleep(0.3)
            ahead = b'"next"' in buf or bool(select.select([0], [], [], 0)[0])
            probe.write(f"ahead {ahead}\n")
    send({"command": "sync"})
"""


@pytest.mark.parametrize(
    "announce, pipelining, ahead",
    [(True, None, True), (False, None, False), (False, True, True), (True, False, False)],
)
def test_a_spout_gets_its_next_next_before_it_syncs(tmp_path, announce, pipelining, ahead):
    # `next`s are written ahead of the previous sync, once the spout has emitted, only to a
    # spout whose library announces pipeline/1 or whose `pipelining` switch is on; otherwise one
    # command at a time, as Storm's ShellSpout (docs/protocol.md, "Protocol extensions")
    config = {"host.shutdown.grace.secs": 0.5}
    b = TopologyBuilder("t", config=config)
    argv = ["python", "-c", PIPELINE_PROBE_SPOUT, str(tmp_path / "probe")]
    b.spout("spout", argv + (["pipeline/1"] if announce else []), ["n"], pipelining=pipelining)
    b.bolt("sink", ["python", "sink_bolt.py", str(tmp_path / "s")], outputs=[]).shuffle("spout")
    sup = Supervisor(b.build(base_dir=COMPONENTS))
    sup.run(1.5)
    assert (tmp_path / "probe").read_text() == f"ahead {ahead}\n"
    assert sup.snapshot()["topology"]["spout_tuples_acked"] == 3


def test_run_quiets_the_garbage_collector_and_restores_it(tmp_path):
    import gc

    from host.runtime.supervisor import GC_THRESHOLD

    before = gc.get_threshold()
    seen = []
    b = TopologyBuilder("t", config={"host.shutdown.grace.secs": 0.5})
    b.spout("spout", ["python", "-c", PIPELINE_PROBE_SPOUT, str(tmp_path / "probe")], outputs=["n"])
    b.bolt("sink", ["python", "sink_bolt.py", str(tmp_path / "s")], outputs=[]).shuffle("spout")
    sup = Supervisor(b.build(base_dir=COMPONENTS))
    sup.on_report = lambda snap: seen.append((gc.get_threshold()[0], gc.get_freeze_count() > 0))
    sup.run(1.0)
    assert seen and set(seen) == {(GC_THRESHOLD, True)}
    assert gc.get_threshold() == before and gc.get_freeze_count() == 0


def test_slow_bolt_backpressure_keeps_queues_bounded(tmp_path):
    b = TopologyBuilder(
        "t",
        config={
            "topology.shellbolt.max.pending": 10,
            "host.bolt.max.in.flight": 10,
            "host.shutdown.grace.secs": 0.5,
        },
    )
    b.spout(
        "spout",
        ["python", "ledger_spout.py"],
        outputs=["sentence"],
        config={
            "test.messages": 100000,
            "test.ledger": str(tmp_path / "ledger"),
            "test.per.next": 50,
        },
    )
    b.bolt(
        "split", ["python", "faulty_bolt.py", "none", "0", str(tmp_path / "m")], outputs=["word"]
    ).shuffle("spout")
    b.bolt("slow", ["python", "-c", SLOW_BOLT], outputs=[]).shuffle("split")
    sup = Supervisor(b.build(base_dir=COMPONENTS))
    peaks = Counter()
    sup.report_every = 0.1

    def watch(snap):
        for cid, c in snap["components"].items():
            peaks[cid] = max(peaks[cid], c["in_flight"] + c["queued"])
        peaks["pending"] = max(peaks["pending"], snap["topology"]["spout_tuples_pending"])

    sup.on_report = watch
    sup.run(3.0)
    # no max.spout.pending: only the bounded bolt queues hold the spout back
    assert peaks["slow"] <= 10 + 10 + 7 * 50  # in flight + backlog limit + one read's worth
    # ... + what the `next`s already written emit (fewer than AHEAD_TUPLES, 200, are expected
    # from them: 4 of 50 each, with room to spare)
    assert peaks["split"] <= 10 + 10 + 8 * 50
    assert peaks["pending"] < 2000


SLOW_BOLT = """
import time
from multilang import Bolt
class Slow(Bolt):
    def process(self, tup):
        time.sleep(0.01)
        self.ack(tup)
Slow().run()
"""


def test_acking_off_acks_spout_tuples_as_they_are_emitted(tmp_path):
    n = 50
    b = TopologyBuilder(
        "t", config={"topology.acker.executors": 0, "host.shutdown.grace.secs": 0.5}
    )
    b.spout(
        "spout",
        ["python", "ledger_spout.py"],
        outputs=["sentence"],
        config={"test.messages": n, "test.ledger": str(tmp_path / "ledger")},
    )
    b.bolt("hold", ["python", "-c", NEVER_ACK_BOLT], outputs=[]).shuffle("spout")
    result = run_topology(b.build(base_dir=COMPONENTS), until=all_acked(tmp_path, n))
    assert result.exit_code == 0 and result.stopped_because == "until"
    assert_every_message_acked_once(tmp_path, n)
    assert result.snapshot["topology"]["spout_tuples_pending"] == 0


def test_named_streams_direct_emits_task_ids_and_ticks(tmp_path):
    n = 30
    b = TopologyBuilder("t", config={"host.shutdown.grace.secs": 1})
    b.spout(
        "spout",
        ["python", "ledger_spout.py"],
        outputs=["sentence"],
        config={"test.messages": n, "test.ledger": str(tmp_path / "ledger")},
    )
    b.bolt(
        "router", ["python", "streams_bolt.py"], outputs={"words": ["word"], "lengths": ["length"]}
    ).shuffle("spout")
    b.bolt(
        "all_sink",
        ["python", "sink_bolt.py", str(tmp_path / "all.jsonl")],
        outputs=[],
        parallelism=2,
    ).all("router", stream="words")
    b.bolt(
        "direct_sink",
        ["python", "sink_bolt.py", str(tmp_path / "direct.jsonl")],
        outputs=[],
        parallelism=2,
        config={"topology.tick.tuple.freq.secs": 1},
    ).direct("router", stream="lengths")
    result = run_topology(
        b.build(base_dir=COMPONENTS), until=lambda r: all_acked(tmp_path, n)(r) and r.uptime > 2.2
    )
    assert result.exit_code == 0 and result.stopped_because == "until"
    assert_every_message_acked_once(tmp_path, n)
    all_rows = [json.loads(x) for x in (tmp_path / "all.jsonl").read_text().splitlines()]
    direct_rows = [json.loads(x) for x in (tmp_path / "direct.jsonl").read_text().splitlines()]
    words = [r for r in all_rows if "values" in r]
    assert len(words) == 2 * n * WORDS_PER_MESSAGE  # all grouping: both tasks got every word
    assert {r["stream"] for r in words} == {"words"}
    lengths = [r for r in direct_rows if "values" in r]
    assert len(lengths) == n and len({r["task"] for r in lengths}) == 1  # the lowest task only
    assert {r["stream"] for r in lengths} == {"lengths"}
    ticks = [r for r in direct_rows if "tick" in r]
    assert ticks and all(r["tick"] == [1] for r in ticks)
    assert not [r for r in all_rows if "tick" in r], "ticks go only where configured"
    metrics = result.snapshot["components"]["router"]["metrics"]
    # need_task_ids replies: every word went to both all_sink tasks
    assert metrics["task_ids_seen"] == 2 * n * WORDS_PER_MESSAGE
    sentences = [f"message {i} with some words in it" for i in range(n)]
    assert result.values("router", "words") == [[w] for s in sentences for w in s.split()]


@pytest.mark.parametrize(
    "spout",
    [["python", "ledger_spout.py"], ["node", "ledger_spout.js"], ["bash", "ledger_spout.sh"]],
    ids=["python", "node", "bash"],
)
@pytest.mark.parametrize("ack_batch", [1, 100])
def test_spout_acks_in_batches_or_one_by_one_in_every_client(tmp_path, spout, ack_batch):
    """Batched ack/fail commands (host.spout.ack.batch) reach every client library's spout in
    order, each answered by its own sync; 1 is Storm's strict one-command exchange. A bolt that
    fails every 5th tuple once makes the spouts replay while acks are batched."""
    n = 300
    b = TopologyBuilder(
        "t",
        config={
            "topology.max.spout.pending": 200,
            "host.spout.ack.batch": ack_batch,
            "host.shutdown.grace.secs": 1,
        },
    )
    b.spout(
        "spout",
        spout,
        outputs=["sentence"],
        config={"test.messages": n, "test.ledger": str(tmp_path / "ledger"), "test.per.next": 20},
    )
    b.bolt("flaky", ["python", "-c", FAIL_EVERY_FIFTH_ONCE_BOLT], outputs=[]).shuffle("spout")
    result = run_topology(b.build(base_dir=COMPONENTS), until=all_acked(tmp_path, n))
    assert result.exit_code == 0 and result.stopped_because == "until"
    fails = assert_every_message_acked_once(tmp_path, n)
    assert set(fails) == {i for i in range(n) if i % 5 == 0}
    assert sorted(result.failed["spout"]) == sorted(fails)  # the host saw what the spout did
    comps = result.snapshot["components"]
    assert comps["spout"]["restarts"] == 0 and comps["spout"]["errors"] == 0


FAIL_EVERY_FIFTH_ONCE_BOLT = """
from multilang import Bolt
class Flaky(Bolt):
    def initialize(self, conf, context):
        self.failed = set()
    def process(self, tup):
        i = int(tup.values[0].split()[1])
        if i % 5 == 0 and i not in self.failed:
            self.failed.add(i)
            self.fail(tup)
        else:
            self.ack(tup)
Flaky().run()
"""


LOGS_AND_EMITS_BEFORE_PID_BOLT = r"""
import json, os, sys
# Like storm.js logging in initialize(): protocol messages written before the pid reply.
hello = json.loads(sys.stdin.readline()); sys.stdin.readline()
sys.stdout.write('{"command":"log","msg":"initializing","level":2}\nend\n')
sys.stdout.write('{"command":"metrics","name":"early","params":3}\nend\n')
open(os.path.join(hello["pidDir"], str(os.getpid())), "w").close()
sys.stdout.write('{"pid": %d}\nend\n' % os.getpid())
sys.stdout.flush()
for line in sys.stdin:  # then a bare bolt: ack every tuple, sync every heartbeat
    if line.strip() == "end":
        continue
    msg = json.loads(line)
    if msg.get("stream") == "__heartbeat":
        assert msg["task"] == -1 and msg["comp"] is None and msg["tuple"] == []
        sys.stdout.write('{"command":"metrics","name":"heartbeats","params":null}\nend\n')
        sys.stdout.write('{"command":"sync"}\nend\n')
    else:
        sys.stdout.write('{"command":"ack","id":"%s"}\nend\n' % msg["id"])
    sys.stdout.flush()
"""


def test_messages_written_before_the_pid_are_handled_after_the_handshake(tmp_path, caplog):
    n = 20
    b = TopologyBuilder("t", config={"host.shutdown.grace.secs": 1})
    b.spout(
        "spout",
        ["python", "ledger_spout.py"],
        outputs=["sentence"],
        config={"test.messages": n, "test.ledger": str(tmp_path / "ledger")},
    )
    b.bolt("early", ["python", "-c", LOGS_AND_EMITS_BEFORE_PID_BOLT], outputs=[]).shuffle("spout")
    caplog.set_level(logging.INFO)
    result = run_topology(
        b.build(base_dir=COMPONENTS), until=lambda r: all_acked(tmp_path, n)(r) and r.uptime > 2.5
    )
    assert result.exit_code == 0 and result.stopped_because == "until"
    assert_every_message_acked_once(tmp_path, n)
    comps = result.snapshot["components"]
    assert comps["early"]["restarts"] == 0 and comps["early"]["errors"] == 0
    # heartbeats: about one a second, answered with sync (else the bolt would be declared hung)
    assert comps["early"]["metrics"]["early"] == 3
    assert 2 <= comps["early"]["metrics"]["heartbeats"] <= 4
    assert any(r.getMessage().endswith(": initializing") for r in caplog.records)


ACTIVATION_SPOUT = """
from multilang import Spout
class Once(Spout):
    def initialize(self, conf, context):
        self.sent = False
    def activate(self):
        self.log("activated")
    def deactivate(self):
        self.log("deactivated")
    def next_tuple(self):
        if not self.sent:
            self.sent = True
            self.emit(["only"], id=1)
    def ack(self, msg_id):
        self.log(f"acked {msg_id}")
Once().run()
"""


def test_spout_is_activated_once_and_deactivated_on_shutdown(tmp_path, caplog):
    b = TopologyBuilder("t", config={"host.shutdown.grace.secs": 1})
    b.spout("spout", ["python", "-c", ACTIVATION_SPOUT], outputs=["x"])
    b.bolt("sink", ["python", "sink_bolt.py", str(tmp_path / "s")], outputs=[]).shuffle("spout")
    caplog.set_level(logging.INFO)
    result = run_topology(b.build(base_dir=COMPONENTS))
    assert result.exit_code == 0 and result.stopped_because == "quiescent"
    assert result.acked == {"spout": [1]}
    assert result.component_logs("spout") == ["activated", "acked 1", "deactivated"]
    said = [
        r.getMessage().split(": ", 1)[1]
        for r in caplog.records
        if r.getMessage().startswith("spout[")
    ]
    assert said == ["activated", "acked 1", "deactivated"]


@pytest.mark.parametrize(
    "mode,expected",
    [
        ("ack_unknown", "ack of tuple '12345', which is not pending"),
        ("unknown_stream", "stream 'nope', which 'split' does not declare"),
        ("wrong_fields", "emit of 2 values to stream 'default', which declares 1 fields"),
    ],
)
def test_strict_mode_reports_misuse_and_keeps_the_component(tmp_path, caplog, mode, expected):
    n = 40
    topology = ledger_topology(
        tmp_path,
        ["python", "misuse_bolt.py", mode, str(tmp_path / "marker")],
        n=n,
        config={"topology.message.timeout.secs": 2},
    )
    caplog.set_level(logging.INFO)
    result = run_topology(
        topology, until=all_acked(tmp_path, n), strict=True, clock=FakeClock()
    )  # the 2 s message timeout, in fake time
    assert result.exit_code == 0 and result.stopped_because == "until"
    assert_every_message_acked_once(tmp_path, n)
    split = result.snapshot["components"]["split"]
    assert split["restarts"] == 0 and split["errors"] == 1
    assert expected in split["last_error"]
    errors = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    assert any("--strict" in e and expected in e for e in errors), errors


FORGETS_SYNC_ONCE_SPOUT = r"""
import json, os, sys
hello = json.loads(sys.stdin.readline()); sys.stdin.readline()
open(os.path.join(hello["pidDir"], str(os.getpid())), "w").close()
print(json.dumps({"pid": os.getpid()}) + "\nend", flush=True)
nexts = 0
for line in sys.stdin:
    if line.strip() == "end":
        continue
    msg = json.loads(line)
    if isinstance(msg, list):  # the task ids of the emit below
        continue
    command = msg["command"]
    if command == "next":
        nexts += 1
        if nexts == 1:
            print('{"command":"emit","tuple":["x"]}\nend', flush=True)
            continue  # forgets the sync this once
    print('{"command":"sync"}\nend', flush=True)
"""


def test_strict_mode_reports_a_missing_sync(tmp_path, caplog):
    b = TopologyBuilder(
        "t", config={"host.shutdown.grace.secs": 0.5, "topology.subprocess.timeout.secs": 60}
    )
    b.spout("spout", ["python", "-c", FORGETS_SYNC_ONCE_SPOUT], outputs=["x"])
    b.bolt("sink", ["python", "sink_bolt.py", str(tmp_path / "s")], outputs=[]).shuffle("spout")
    sup = Supervisor(b.build(base_dir=COMPONENTS), strict=True)
    caplog.set_level(logging.INFO)
    sup.run(3.5)
    errors = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    assert any(
        e.startswith("spout[") and "no sync" in e and "1 emits since" in e for e in errors
    ), errors
    assert sup.snapshot()["components"]["spout"]["restarts"] == 0


def is_running(pid: int) -> bool:
    """A process of the run still runs (a zombie, reaped or not, does not)."""
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False
