"""Where the host behaves as Storm does with real components (issue 20, items 3, 5, 6 and
`topology.debug`): a wrong field count on a stream nobody subscribes to goes unnoticed, failure
reports show the exact bytes a component wrote, tuple ids are Java longs, and `topology.debug`
logs every emit and ack as Storm's executor does."""

from __future__ import annotations

import logging
import re
from pathlib import Path

import msgpack
import pytest

from host.testing import run_topology
from host.topology import TopologyBuilder

COMPONENTS = Path(__file__).parent / "components" / "host"
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1


def ledger_spout(b: TopologyBuilder, tmp_path: Path, n: int, **config) -> None:
    b.spout(
        "spout",
        ["python", "ledger_spout.py"],
        outputs=["sentence"],
        config={"test.messages": n, "test.ledger": str(tmp_path / "ledger"), **config},
    )


def acked_ids(tmp_path: Path) -> list[int]:
    path = tmp_path / "ledger"
    if not path.exists():
        return []
    return [int(line.split()[1]) for line in path.read_text().splitlines() if line[:4] == "ack "]


def all_acked(tmp_path: Path, n: int):
    return lambda result: len(set(acked_ids(tmp_path))) >= n


# ---- item 3: a wrong field count on a stream nobody subscribes to -------------------------------

# A sink that declares ["word"] and emits [word, count]: Storm builds no tuple for a stream
# without subscribers, so it never checks the count, and this bolt runs for ever there.
COUNTING_SINK = r"""
import sys
from multilang import Bolt

class CountingSink(Bolt):
    def initialize(self, conf, context):
        self.counts = {}
        self.seen = open(sys.argv[1], "a", buffering=1)

    def process(self, tup):
        word = tup.values[0]
        self.counts[word] = self.counts.get(word, 0) + 1
        self.emit([word, self.counts[word]], anchors=[tup])  # one value more than declared
        self.emit([word, "extra", 1], stream="side", anchors=[tup])  # and on a named stream
        self.seen.write(word + "\n")
        self.ack(tup)

CountingSink().run()
"""


def counting_topology(tmp_path: Path, n: int, subscribed: bool = False) -> TopologyBuilder:
    b = TopologyBuilder(
        "t",
        config={
            "topology.max.spout.pending": 20,
            "host.restart.backoff.initial.secs": 0.1,
            "host.shutdown.grace.secs": 2,
        },
    )
    ledger_spout(b, tmp_path, n)
    b.bolt(
        "count",
        ["python", "-c", COUNTING_SINK, str(tmp_path / "seen")],
        outputs={"default": ["word"], "side": ["word"]},
        parallelism=2,
    ).shuffle("spout")
    if subscribed:
        b.bolt(
            "sink", ["python", "sink_bolt.py", str(tmp_path / "sink.jsonl")], outputs=[]
        ).shuffle("count")
    return b


@pytest.mark.parametrize("strict", [False, True], ids=["default", "strict"])
def test_wrong_field_count_on_unsubscribed_streams_is_not_a_fault(tmp_path, caplog, strict):
    n = 100
    caplog.set_level(logging.INFO)
    result = run_topology(
        counting_topology(tmp_path, n).build(base_dir=COMPONENTS),
        until=all_acked(tmp_path, n),
        strict=strict,
    )
    assert result.stopped_because == "until" and result.exit_code == 0
    # it kept processing: every sentence went through, and its emits are all recorded
    assert sorted(set(acked_ids(tmp_path))) == list(range(n))
    assert len((tmp_path / "seen").read_text().splitlines()) >= n
    assert len(result.values("count")) >= n and len(result.values("count", "side")) >= n
    assert all(len(v) == 2 for v in result.values("count"))
    assert result.restarts == {"spout": 0, "count": 0}
    assert result.snapshot["components"]["count"]["errors"] == 0
    assert result.errors == []
    warnings = [
        r.getMessage()
        for r in caplog.records
        if r.levelno == logging.WARNING and "nobody subscribes" in r.getMessage()
    ]
    if strict:  # once per component and stream, though two tasks emitted hundreds
        assert len(warnings) == 2, warnings
        assert any("stream 'default', which declares 1 fields" in w for w in warnings)
        assert any("3 values to stream 'side'" in w for w in warnings)
    else:
        assert warnings == []


def test_wrong_field_count_on_a_subscribed_stream_is_still_a_fault(tmp_path, caplog):
    n = 5
    caplog.set_level(logging.INFO)
    result = run_topology(
        counting_topology(tmp_path, n, subscribed=True).build(base_dir=COMPONENTS),
        until=lambda r: r.restarts["count"] >= 2,
        timeout=20,
    )
    assert result.restarts["count"] >= 2 and result.restarts["sink"] == 0
    report = next(e for e in result.errors if e.startswith("count["))
    assert "emit of 2 values to stream 'default', which declares 1 fields" in report
    assert 'it wrote {"command":"emit"' in report  # its own bytes, as it wrote them


# ---- item 5: failure reports show the bytes the component wrote ---------------------------------

# A spout that answers its first `next` with an `ack`, which only bolts may send.
ACKING_SPOUT = r"""
import json, os, sys
hello = json.loads(sys.stdin.readline()); sys.stdin.readline()
open(os.path.join(hello["pidDir"], str(os.getpid())), "w").close()
sys.stdout.write(json.dumps({"pid": os.getpid()}) + "\nend\n"); sys.stdout.flush()
for line in sys.stdin:
    if line.strip() == "end":
        continue
    if json.loads(line).get("command") == "next":
        sys.stdout.write('{"command":"ack","id":"c0"}\nend\n')
    sys.stdout.write('{"command":"sync"}\nend\n'); sys.stdout.flush()
"""


@pytest.mark.parametrize("strict", [False, True], ids=["fault", "strict"])
def test_a_report_holds_the_exact_bytes_a_json_spout_wrote(tmp_path, caplog, strict):
    b = TopologyBuilder(
        "t",
        config={"host.restart.backoff.initial.secs": 0.1, "host.shutdown.grace.secs": 1},
    )
    b.spout("spout", ["python", "-c", ACKING_SPOUT], outputs=["x"])
    b.bolt("sink", ["python", "sink_bolt.py", str(tmp_path / "s")], outputs=[]).shuffle("spout")
    caplog.set_level(logging.INFO)
    result = run_topology(
        b.build(base_dir=COMPONENTS),
        until=lambda r: any("only bolts may" in e for e in r.errors),
        strict=strict,
        timeout=20,
    )
    report = next(e for e in result.errors if "only bolts may" in e)
    assert 'it wrote {"command":"ack","id":"c0"}' in report, report
    assert "as parsed" not in report
    if not strict:  # the host's last message to it, as written, is in the report too
        assert 'the host last wrote to it {"command":"next"' in report, report
        failure = result.snapshot["failures"][0]
        assert '{"command":"ack","id":"c0"}' in failure["last_received"]
    else:
        assert result.restarts["spout"] == 0


BAD_EMIT = {"command": "emit", "stream": "nope", "tuple": [0, 1, 2, "x" * 500]}
# A msgpack bolt (pyleus's framing) that emits on a stream its component does not declare: a
# message with NUL bytes (small ints) and a string too long for the report.
MSGPACK_BOLT = r"""
import os, sys
import msgpack
out = sys.stdout.buffer
unpacker = msgpack.Unpacker(raw=False)
def send(value):
    out.write(msgpack.packb(value, use_bin_type=True)); out.flush()
while True:
    data = os.read(0, 65536)
    if not data:
        break
    unpacker.feed(data)
    for msg in unpacker:
        if "pidDir" in msg:
            open(os.path.join(msg["pidDir"], str(os.getpid())), "w").close()
            send({"pid": os.getpid()})
        elif msg.get("stream") == "__heartbeat":
            send({"command": "sync"})
        elif "tuple" in msg:
            send(BAD_EMIT)
""".replace("BAD_EMIT", repr(BAD_EMIT))


def test_a_msgpack_components_report_shows_escaped_bytes_and_their_size(tmp_path, caplog):
    b = TopologyBuilder(
        "t",
        config={"host.restart.backoff.initial.secs": 0.1, "host.shutdown.grace.secs": 1},
    )
    ledger_spout(b, tmp_path, 3)
    b.bolt("mp", ["python", "-c", MSGPACK_BOLT], outputs=["w"], serializer="msgpack").shuffle(
        "spout"
    )
    caplog.set_level(logging.INFO)
    result = run_topology(
        b.build(base_dir=COMPONENTS),
        until=lambda r: any(e.startswith("mp[") for e in r.errors),
        timeout=20,
    )
    report = next(e for e in result.errors if e.startswith("mp["))
    assert "stream 'nope', which 'mp' does not declare" in report
    assert "as parsed" not in report
    # the exact bytes, escaped: msgpack's map header, its keys, the small ints as \x00..\x02,
    # the long string's str16 header; cut, with the size of the whole message
    assert "it wrote \\x83\\xa7command\\xa4emit\\xa6stream\\xa4nope\\xa5tuple\\x94" in report
    assert "\\x00\\x01\\x02\\xda\\x01\\xf4xxx" in report
    assert f"… ({len(msgpack.packb(BAD_EMIT))} bytes in all)" in report
    # nothing in the log line, nor in the stats file's failure report, is binary
    failure = result.snapshot["failures"][0]
    for text in (report, failure["last_sent"], failure["last_received"]):
        assert text and not re.search(r"[\x00-\x09\x0b-\x1f\x7f-\x9f]", text), repr(text)
        assert "\ufffd" not in text  # no byte replaced by a question mark either
    assert failure["last_sent"].startswith("\\x85")  # the tuple the host wrote (a 5-entry map)


# ---- item 6: tuple ids are Java longs -----------------------------------------------------------

ID_SINK = r"""
import sys
from multilang import Bolt

class IdSink(Bolt):
    def initialize(self, conf, context):
        self.out = open(sys.argv[1], "a", buffering=1)

    def process(self, tup):
        self.out.write(tup.id + "\n")
        self.ack(tup)

IdSink().run()
"""


def test_tuple_ids_a_component_sees_fit_in_a_java_long(tmp_path):
    n = 400
    b = TopologyBuilder("t", config={"topology.max.spout.pending": 50})
    ledger_spout(b, tmp_path, n)
    b.bolt(
        "ids", ["python", "-c", ID_SINK, str(tmp_path / "ids")], outputs=[], parallelism=2
    ).shuffle("spout")
    result = run_topology(b.build(base_dir=COMPONENTS), until=all_acked(tmp_path, n))
    assert result.stopped_because == "until"
    assert sorted(set(acked_ids(tmp_path))) == list(range(n))  # negative ids ack as well
    ids = [int(line) for line in (tmp_path / "ids").read_text().split()]  # decimal strings
    assert len(ids) >= n
    assert all(INT64_MIN <= i <= INT64_MAX for i in ids)
    assert min(ids) < 0 < max(ids)  # both signs, as nextLong() gives (1 - 2**-399 likely)


# ---- topology.debug: Storm's executor log lines --------------------------------------------------

DEBUG_LINE = re.compile(r"^(Emitting|Processing received|BOLT (ack|fail)|SPOUT (Acking|Failing))")


def debug_run(tmp_path: Path, topology_debug: bool | None, sink_debug: bool | None = None):
    """spout -> sink, three tuples; the host's debug lines and (spout task, sink task)."""
    n = 3
    b = TopologyBuilder(
        "t",
        config={} if topology_debug is None else {"topology.debug": topology_debug},
    )
    ledger_spout(b, tmp_path, n)
    b.bolt(
        "sink",
        ["python", "sink_bolt.py", str(tmp_path / "sink.jsonl")],
        outputs=[],
        config={} if sink_debug is None else {"topology.debug": sink_debug},
    ).shuffle("spout")
    result = run_topology(b.build(base_dir=COMPONENTS), until=all_acked(tmp_path, n))
    assert result.stopped_because == "until"
    lines = [
        line.message
        for line in result.logs
        if line.logger == "host" and DEBUG_LINE.match(line.message)
    ]
    tasks = result.supervisor.task_map
    return lines, (tasks.tasks_of("spout")[0], tasks.tasks_of("sink")[0])


def test_topology_debug_logs_each_emit_and_ack_as_storms_executor_does(tmp_path):
    lines, (spout, sink) = debug_run(tmp_path, True)
    for i in range(3):
        sentence = f'["message {i} with some words in it"]'
        emitted = (
            f"Emitting tuple: task={spout} component=spout stream=default values={sentence} "
            f"message id={i}"
        )
        assert emitted in lines, lines
        received = next(
            line
            for line in lines
            if line.startswith(f"Processing received tuple for task {sink} (sink): ")
            and f'"stream":"default","task":{spout},"tuple":{sentence}' in line
        )
        match = re.search(r'"id":"(-?\d+)"}$', received)
        assert match, received
        acked = next(
            line
            for line in lines
            if line.startswith(f"BOLT ack task={sink} (sink) time=") and received[-40:] in line
        )
        assert re.match(rf"BOLT ack task={sink} \(sink\) time=\d+\.\dms tuple: \{{", acked)
        spout_acked = next(
            line
            for line in lines
            if line.startswith(f"SPOUT Acking message id={i}: task={spout} component=spout")
        )
        # in the order Storm's executors would log them
        order = [lines.index(x) for x in (emitted, received, acked, spout_acked)]
        assert order == sorted(order), lines


@pytest.mark.parametrize("setting", [False, None], ids=["false", "unset"])
def test_topology_debug_off_logs_none_of_it(tmp_path, setting):
    lines, _ = debug_run(tmp_path, setting)
    assert lines == []


def test_topology_debug_in_a_components_config_logs_that_component_only(tmp_path):
    lines, (_, sink) = debug_run(tmp_path, None, sink_debug=True)
    assert len(lines) == 6, lines  # 3 tuples received and 3 acked, by the sink; the spout: none
    assert all(
        line.startswith((f"Processing received tuple for task {sink} ", f"BOLT ack task={sink} "))
        for line in lines
    )
