"""host.testing, the public test harness: run_component and run_topology over real bash, Node and
Python components, the fake clock, the pytest fixtures and `python -m host test-component`."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from collections import Counter
from itertools import pairwise
from pathlib import Path

import pytest

from host.testing import FakeClock, heartbeat, run_component, run_topology, tick
from host.topology import TopologyBuilder
from multilang.messages import Log, Metrics

ROOT = Path(__file__).resolve().parents[2]
WORDCOUNT_DIR = ROOT / "examples" / "wordcount"
WORDCOUNT = WORDCOUNT_DIR / "topology.yaml"
SENTENCES = [  # examples/wordcount/sentences.py
    "the cow jumped over the moon",
    "an apple a day keeps the doctor away",
    "four score and seven years ago",
    "snow white and the seven dwarfs",
    "i am at two with nature",
]

PY_BOLT = """
from multilang import BasicBolt
class Words(BasicBolt):
    def process(self, tup):
        if tup.values[0] == "boom":
            raise ValueError("boom is not a sentence")
        self.log(f"got {tup.values[0]!r}")
        for word in tup.values[0].split():
            tasks = self.emit([word], stream="words", need_task_ids=True)
            self.metrics("delivered_to", len(tasks))
    def process_tick(self, tup):
        self.log(f"tick {tup.values[0]}")
Words().run()
"""

NEVER_ACK_BOLT = """
from multilang import Bolt
class Hold(Bolt):
    def process(self, tup):
        self.log(f"holding {tup.values[0]}")
Hold().run()
"""

TICK_LOG_BOLT = """
from multilang import BasicBolt
class Ticks(BasicBolt):
    def process(self, tup):
        pass
    def process_tick(self, tup):
        self.log(f"tick {tup.values[0]}")
Ticks().run()
"""

# a bare bolt (no library) that reports every heartbeat it answers, as a metric
HEARTBEAT_COUNTING_BOLT = r"""
import json, os, sys
hello = json.loads(sys.stdin.readline()); sys.stdin.readline()
open(os.path.join(hello["pidDir"], str(os.getpid())), "w").close()
sys.stdout.write('{"pid": %d}\nend\n' % os.getpid()); sys.stdout.flush()
for line in sys.stdin:
    if line.strip() == "end":
        continue
    msg = json.loads(line)
    if msg.get("stream") == "__heartbeat":
        sys.stdout.write('{"command":"metrics","name":"heartbeats","params":null}\nend\n')
        sys.stdout.write('{"command":"sync"}\nend\n')
    else:
        sys.stdout.write('{"command":"ack","id":"%s"}\nend\n' % msg["id"])
    sys.stdout.flush()
"""

HANG_ON_TUPLE_BOLT = """
import time
from multilang import Bolt
class Hang(Bolt):
    def process(self, tup):
        time.sleep(3600)
Hang().run()
"""


def word_counts(sentences: list[str]) -> Counter:
    return Counter(w for s in sentences for w in s.split())


# ---- run_component ------------------------------------------------------------------------------


def test_run_component_bash_split_bolt():
    result = run_component(
        ["bash", "split.sh"], [["the cow jumped"], ["over the moon"]], cwd=WORDCOUNT_DIR
    )
    assert result.ok, result.transcript_text
    assert result.values() == [["the"], ["cow"], ["jumped"], ["over"], ["the"], ["moon"]]
    assert result.acked == ["1", "2"] and result.failed == [] and result.pending == []
    assert [list(e.anchors) for e in result.emits] == [["1"]] * 3 + [["2"]] * 3
    assert not any(e.need_task_ids for e in result.emits)
    lines = result.transcript
    assert lines[0].startswith('-> {"pidDir":') and lines[1].startswith('<- {"pid":')
    tuple_line = lines.index(
        '-> {"comp":"spout","stream":"default","task":1,"tuple":["the cow jumped"],"id":"1"}'
    )
    assert lines[tuple_line + 1] == (
        '<- {"command":"emit","tuple":["the"],"anchors":["1"],"need_task_ids":false}'
    )
    assert '<- {"command":"ack","id":"2"}' in lines
    assert lines[-1] == "   exit code: 0"


def test_run_component_node_count_bolt():
    result = run_component(["node", "count.js"], [["the"], ["cow"], ["the"]], cwd=WORDCOUNT_DIR)
    assert result.ok, result.transcript_text
    assert result.values() == [["the", 1], ["cow", 1], ["the", 2]]
    assert result.acked == ["1", "2", "3"]


def test_run_component_python_bolt_streams_task_ids_ticks_heartbeats_and_errors():
    context = {
        "taskid": 3,
        "componentid": "words",
        "task->component": {"1": "spout", "2": "__acker", "3": "words", "4": "sink", "5": "sink"},
        "streams": ["words"],
        "stream->outputfields": {"words": ["word"]},
        "stream->target->grouping": {"words": {"sink": {"type": "SHUFFLE"}}},
        "source->stream->grouping": {"spout": {"default": {"type": "SHUFFLE"}}},
        "source->stream->fields": {"spout": {"default": ["sentence"]}},
    }
    result = run_component(
        ["python", "-c", PY_BOLT],
        [["a b"], heartbeat(), tick(5), {"values": ["boom"], "id": "x9"}, ["c"]],
        context=context,
    )
    assert result.exit_code == 0 and result.protocol_error is None and not result.timed_out
    assert result.values("words") == [["a"], ["b"], ["c"]]
    assert all(e.need_task_ids and e.anchors for e in result.emits)
    assert result.task_id_replies == [[4, 5]] * 3  # the stream's subscribers in the context
    assert result.metrics == [Metrics("delivered_to", 2)] * 3
    assert result.acked == ["1", "__tick-3", "5"] and result.failed == ["x9"]
    assert len(result.errors) == 1 and "boom is not a sentence" in result.errors[0]
    assert Log("got 'a b'", 2) in result.logs and Log("tick 5", 2) in result.logs
    assert result.problems == []
    assert "-> [4,5]" in result.transcript
    hb = result.transcript.index(
        '-> {"id":"__heartbeat-2","comp":null,"stream":"__heartbeat","task":-1,"tuple":[]}'
    )
    assert result.transcript[hb + 1] == '<- {"command":"sync"}'


def test_run_component_spout_is_asked_for_next_and_acked():
    failed_once: set = set()

    def respond(msg_id):  # fail message 1 the first time, ack everything else
        if msg_id == 1 and msg_id not in failed_once:
            failed_once.add(msg_id)
            return "fail"
        return "ack"

    result = run_component(
        ["python", "sentences.py", "--limit", "3"],
        kind="spout",
        nexts=5,
        respond=respond,
        cwd=WORDCOUNT_DIR,
    )
    assert result.ok, result.transcript_text
    # 1 failed, so the spout replays it (same id) before emitting 2; the fifth next finds
    # nothing left to emit
    assert [(e.values, e.id) for e in result.emits] == [
        ([SENTENCES[0]], 0),
        ([SENTENCES[1]], 1),
        ([SENTENCES[1]], 1),
        ([SENTENCES[2]], 2),
    ]
    assert result.acked == [0, 1, 2] and result.failed == [1]
    commands = [line for line in result.transcript if line.startswith('-> {"command"')]
    assert commands[0] == '-> {"command":"activate","id":""}'
    assert commands[-1] == '-> {"command":"deactivate","id":""}'
    assert commands.count('-> {"command":"next","id":""}') == 5


def test_run_component_reports_a_bolt_that_does_not_answer():
    result = run_component(["python", "-c", NEVER_ACK_BOLT], [["x"], ["y"]], reply_timeout=0.2)
    assert result.exit_code == 0 and result.pending == ["1", "2"]
    assert result.transcript.count("<- (timeout)") == 2
    assert [log.msg for log in result.logs] == ["holding x", "holding y"]


# ---- run_topology -------------------------------------------------------------------------------


def test_wordcount_example_with_fixed_inputs_counts_exactly():
    sentences = SENTENCES * 4
    result = run_topology(WORDCOUNT, inputs={"sentences": [[s] for s in sentences]})
    assert result.stopped_because == "quiescent", result.report()
    assert sorted(result.acked["sentences"]) == list(range(len(sentences)))
    assert result.failed == {} and result.errors == []
    expected = word_counts(sentences)
    assert result.values("sentences") == [[s] for s in sentences]
    assert Counter(w for [w] in result.values("split")) == expected
    # the count bolt emitted (word, 1), (word, 2), ... (word, n) exactly once for every word
    assert Counter(map(tuple, result.values("count"))) == Counter(
        (w, k) for w, n in expected.items() for k in range(1, n + 1)
    )
    assert set(result.restarts.values()) == {0}
    snap = result.snapshot
    assert snap["topology"]["spout_tuples_acked"] == len(sentences)
    assert snap["components"]["count"]["executed"] == sum(expected.values())
    assert result.quiescent and result.exit_code == 0


def test_inputs_for_a_bolt_replace_it_and_silence_the_spout_that_fed_it():
    words = ["the", "cow", "the", "moon", "the"]
    result = run_topology(WORDCOUNT, inputs={"split": [[w] for w in words]})
    assert result.stopped_because == "quiescent", result.report()
    assert "sentences" not in result.emitted  # nothing would reach the replaced split bolt
    # split has two tasks: each emitted its share (tuples 0, 2, 4 and 1, 3), in order
    assert sorted(result.values("split")) == sorted([w] for w in words)
    by_task: dict[int, list] = {}
    for e in result.emits:
        if e.component == "split":
            by_task.setdefault(e.task, []).append(e.msg_id)
    assert sorted(by_task.values()) == [[0, 2, 4], [1, 3]]
    assert Counter(map(tuple, result.values("count"))) == Counter(
        [("the", 1), ("the", 2), ("the", 3), ("cow", 1), ("moon", 1)]
    )
    assert sorted(result.acked["split"]) == list(range(len(words)))


def test_fixed_inputs_are_shared_between_spout_tasks_and_named_streams_kept(tmp_path):
    b = TopologyBuilder("t")
    b.spout(
        "src",
        ["python", "-c", "raise SystemExit(3)"],
        parallelism=2,
        outputs={"default": ["n"], "other": ["n", "m"]},
    )
    b.bolt(
        "sink",
        [
            "python",
            str(ROOT / "tests/integration/components/host/sink_bolt.py"),
            str(tmp_path / "sink.jsonl"),
        ],
        outputs=[],
    ).shuffle("src").shuffle("src", stream="other")
    inputs = [[i] for i in range(10)] + [{"values": [1, 2], "stream": "other"}]
    result = run_topology(b.build(base_dir=tmp_path), inputs={"src": inputs})
    assert result.stopped_because == "quiescent", result.report()
    assert sorted(result.acked["src"]) == list(range(11))
    src_tasks = result.supervisor.task_map.tasks_of("src")
    assert len(src_tasks) == 2 and {e.task for e in result.emits} == set(src_tasks)
    assert sorted(result.values("src")) == [[i] for i in range(10)]
    assert result.values("src", "other") == [[1, 2]]
    arrived = [json.loads(x) for x in (tmp_path / "sink.jsonl").read_text().splitlines()]
    assert sorted((a["comp"], a["stream"], tuple(a["values"])) for a in arrived) == sorted(
        [("src", "default", (i,)) for i in range(10)] + [("src", "other", (1, 2))]
    )


@pytest.mark.parametrize(
    "inputs,message",
    [
        ({"nope": [["x"]]}, "not a component"),
        ({"sentences": [["a", "b"]]}, "2 values for stream 'default'"),
        ({"sentences": [{"values": ["a"], "stream": "x"}]}, "does not declare stream 'x'"),
        ({"sentences": [[object()]]}, "JSON values"),
    ],
)
def test_bad_inputs_are_one_clear_error_before_anything_starts(inputs, message):
    with pytest.raises((ValueError, TypeError), match=message):
        run_topology(WORDCOUNT, inputs=inputs)


# the example's spout never runs dry; few trees in flight keep the drain at the end short
ENDLESS = {"topology.max.spout.pending": 10}


def test_until_stops_an_endless_spout():
    result = run_topology(
        WORDCOUNT, until=lambda r: len(r.acked.get("sentences", [])) >= 50, config=ENDLESS
    )
    assert result.stopped_because == "until" and len(result.acked["sentences"]) >= 50
    assert not result.quiescent and result.exit_code == 0


def test_timeout_bounds_a_run_that_never_ends():
    result = run_topology(WORDCOUNT, until=lambda r: False, timeout=1.0, config=ENDLESS)
    assert result.stopped_because == "timeout" and result.exit_code == 0


# ---- the fake clock -----------------------------------------------------------------------------


def never_ack_topology():
    b = TopologyBuilder("hold", config={"topology.message.timeout.secs": 30})
    b.spout("spout", ["python", "-c", "raise SystemExit(3)"], outputs=["x"])
    b.bolt("hold", ["python", "-c", NEVER_ACK_BOLT], outputs=[]).shuffle("spout")
    return b.build()


def test_fake_clock_times_a_tuple_out_after_the_message_timeout():
    clock = FakeClock()
    result = run_topology(
        never_ack_topology(),
        inputs={"spout": [["x"]]},
        clock=clock,
        until=lambda r: r.failed.get("spout"),
    )
    assert result.stopped_because == "until", result.report()
    assert result.failed == {"spout": [0]} and result.timed_out == {"spout": [0]}
    assert result.acked == {}
    # Storm's rotating buckets: a tuple times out 30 to 45 s after it was emitted
    assert 30 <= result.uptime <= 46
    assert result.snapshot["topology"]["spout_tuples_timed_out"] == 1
    assert result.component_logs("hold") == ["holding x"]
    assert clock.now == pytest.approx(1000.0 + result.uptime, abs=5)  # shutdown: real time


def test_fake_clock_ticks_arrive_every_five_fake_seconds():
    b = TopologyBuilder("ticks")
    b.spout("spout", ["python", "-c", "raise SystemExit(3)"], outputs=["x"])
    b.bolt(
        "ticker",
        ["python", "-c", TICK_LOG_BOLT],
        outputs=[],
        config={"topology.tick.tuple.freq.secs": 5},
    ).shuffle("spout")
    result = run_topology(
        b.build(), inputs={"spout": []}, clock=FakeClock(), until=lambda r: r.uptime >= 21
    )
    ticks = [line for line in result.logs if line.component == "ticker"]
    assert [line.text for line in ticks] == ["tick 5"] * 4
    times = [line.at for line in ticks]
    assert [b - a for a, b in pairwise(times)] == [5.0, 5.0, 5.0]


def test_fake_clock_heartbeats_come_every_fake_second():
    b = TopologyBuilder("hb")
    b.spout("spout", ["python", "-c", "raise SystemExit(3)"], outputs=["x"])
    b.bolt("bare", ["python", "-c", HEARTBEAT_COUNTING_BOLT], outputs=[]).shuffle("spout")
    result = run_topology(
        b.build(),
        inputs={"spout": [["a"], ["b"]]},
        clock=FakeClock(),
        until=lambda r: r.uptime >= 60,
    )
    assert result.acked == {"spout": [0, 1]}
    heartbeats = result.snapshot["components"]["bare"]["metrics"]["heartbeats"]
    assert 58 <= heartbeats <= 61


def test_fake_clock_still_declares_a_hung_bolt_hung():
    b = TopologyBuilder(
        "hang", config={"topology.subprocess.timeout.secs": 3, "host.restart.max": 0}
    )
    b.spout("spout", ["python", "-c", "raise SystemExit(3)"], outputs=["x"])
    b.bolt("hang", ["python", "-c", HANG_ON_TUPLE_BOLT], outputs=[]).shuffle("spout")
    result = run_topology(b.build(), inputs={"spout": [["x"]]}, clock=FakeClock())
    assert result.stopped_because == "failure"
    assert any("hung: silent" in e for e in result.errors), result.report()
    assert result.failed == {"spout": [0]}  # failed at once when the task holding it died
    assert 3 <= result.uptime <= 6


def test_fake_clock_moves_only_when_told():
    clock = FakeClock(start=5.0)
    assert clock() == clock.now == 5.0
    clock.advance(2.5)
    assert clock() == 7.5
    with pytest.raises(ValueError):
        clock.advance(-1)


# ---- the pytest plugin --------------------------------------------------------------------------


def test_fixtures_make_both_one_liners(run_component, run_topology, fake_clock):
    assert run_component(["bash", "split.sh"], [["a b"]], cwd=WORDCOUNT_DIR).values() == [
        ["a"],
        ["b"],
    ]
    result = run_topology(WORDCOUNT, inputs={"sentences": [["a b a"]]})
    assert sorted(map(tuple, result.values("count"))) == [("a", 1), ("a", 2), ("b", 1)]
    assert isinstance(fake_clock, FakeClock)


def test_plugin_loads_in_a_users_suite_and_reports_the_transcript(tmp_path):
    (tmp_path / "test_user.py").write_text(
        textwrap.dedent(f"""
        def test_split(run_component):
            result = run_component(["bash", "split.sh"], [["x y"]], cwd={str(WORDCOUNT_DIR)!r})
            assert result.values() == [["nope"]]
    """)
    )
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "-p",
            "no:hypothesispytest",
            str(tmp_path / "test_user.py"),
        ],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=120,
        check=False,
    )
    assert done.returncode == 1, done.stdout + done.stderr
    assert "run_component #1: bash split.sh" in done.stdout
    assert '<- {"command":"emit","tuple":["x"],"anchors":["1"],"need_task_ids":false}' in (
        done.stdout
    )


# ---- python -m host test-component --------------------------------------------------------------


def host(*args: str, stdin: str = "") -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "host", *args],
        input=stdin,
        capture_output=True,
        text=True,
        cwd=WORDCOUNT_DIR,
        timeout=60,
        check=False,
    )


def test_cli_prints_the_transcript_of_a_bolt():
    done = host(
        "test-component",
        "--",
        "bash",
        "split.sh",
        stdin='["the cow"]\n\n{"values": ["jumped"], "id": "7"}\n',
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith('-> {"pidDir":') and lines[1].startswith('<- {"pid":')
    assert lines[3:] == [
        '-> {"comp":"spout","stream":"default","task":1,"tuple":["the cow"],"id":"1"}',
        '<- {"command":"emit","tuple":["the"],"anchors":["1"],"need_task_ids":false}',
        '<- {"command":"emit","tuple":["cow"],"anchors":["1"],"need_task_ids":false}',
        '<- {"command":"ack","id":"1"}',
        '-> {"comp":"spout","stream":"default","task":1,"tuple":["jumped"],"id":"7"}',
        '<- {"command":"emit","tuple":["jumped"],"anchors":["7"],"need_task_ids":false}',
        '<- {"command":"ack","id":"7"}',
        "   stdin closed",
        "   exit code: 0",
    ]


def test_cli_drives_a_spout_and_takes_conf():
    done = host(
        "test-component",
        "--spout",
        "--nexts",
        "2",
        "--respond",
        "fail",
        "--conf",
        '{"wordcount.sentences.limit": 1}',
        "--",
        "python",
        "sentences.py",
    )
    assert done.returncode == 0, done.stderr
    assert '"wordcount.sentences.limit":1' in done.stdout.splitlines()[0]
    emits = [line for line in done.stdout.splitlines() if '"command":"emit"' in line]
    assert len(emits) == 2  # the sentence, and its replay after the fail
    assert '-> {"command":"fail","id":0}' in done.stdout


@pytest.mark.parametrize(
    "args,stdin,message",
    [
        (("--", "bash", "split.sh"), "not json\n", "stdin line 1: not JSON"),
        (("--", "bash", "split.sh"), '"a string"\n', "stdin line 1: expected an array"),
        (("--conf", "[1]", "--", "bash", "split.sh"), "", "--conf: expected a JSON object"),
        (("--", "no-such-program-here"), '["x"]\n', "error: cannot start"),
    ],
)
def test_cli_user_errors_are_one_line_and_exit_2(args, stdin, message):
    done = host("test-component", *args, stdin=stdin)
    assert done.returncode == 2 and message in done.stderr
    assert "Traceback" not in done.stderr


def test_cli_exits_1_when_the_component_breaks_the_protocol():
    done = host(
        "test-component",
        "--",
        "python",
        "-c",
        "import sys; sys.stdin.readline(); print('garbage'); print('end')",
    )
    assert done.returncode == 1
    assert "protocol error" in done.stdout or "no pid reply" in done.stdout
