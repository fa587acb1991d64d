"""Flux topologies run for real: shell components (Python with our client, bash, Node) mixed with
the built-in LogInfoBolt / TestWordCounter / TestWordSpout, through the Supervisor in-process."""

from __future__ import annotations

import json
import logging
import textwrap
import time
from collections import Counter
from pathlib import Path

from host.runtime.supervisor import Supervisor
from host.testing import ComponentPeer, make_context
from host.topology import load
from host.topology.flux_java import BUILTINS, LOG_INFO_BOLT, TEST_WORD_COUNTER, TEST_WORD_SPOUT
from multilang.messages import INFO, Ack, Emit, Error, Fail, Log, Sync

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "storm-flux" / "topology.yaml"
TEST_WORDS = {"nathan", "mike", "jackson", "golda", "bertels"}  # TestWordSpout's
SENTENCES = ["red fox jumps", "blue fox sleeps", "red sun"]  # no TestWordSpout word in them

SENTENCE_SPOUT = '''\
"""N sentences with message ids; every ack or fail goes to the ledger file."""
from multilang import Spout

SENTENCES = %r


class Sentences(Spout):
    def initialize(self, conf, context):
        self.todo = list(range(int(conf["test.messages"])))
        self.ledger = open(conf["test.ledger"], "a", buffering=1)

    def next_tuple(self):
        if self.todo:
            i = self.todo.pop(0)
            self.emit([SENTENCES[i %% len(SENTENCES)]], id=i)

    def ack(self, msg_id):
        self.ledger.write(f"ack {msg_id}\\n")

    def fail(self, msg_id):
        self.ledger.write(f"fail {msg_id}\\n")
        self.todo.append(msg_id)


Sentences().run()
''' % (SENTENCES,)  # noqa: UP031 (the script's own braces stay as they are)

SPLIT = """\
#!/usr/bin/env bash
source "$MULTILANG_SH"
split() { emit_each $1; }
set -f
run_bolt split
"""

SINK = '''\
"""Writes every [word, count] it gets as a JSON line to the file in its conf."""
import json

from multilang import BasicBolt


class Sink(BasicBolt):
    def initialize(self, conf, context):
        self.out = open(conf["test.sink"], "a", buffering=1)

    def process(self, tup):
        self.out.write(json.dumps({"from": tup.component, "values": tup.values}) + "\\n")


Sink().run()
'''


def mixed_topology(tmp_path: Path, n: int) -> Path:
    """Python spout, bash split, TestWordSpout, TestWordCounter, LogInfoBolt and a Python sink;
    the scripts live in resources/ beside the Flux file, as in a topology jar."""
    resources = tmp_path / "resources"
    resources.mkdir()
    (resources / "sentences.py").write_text(SENTENCE_SPOUT)
    (resources / "split.sh").write_text(SPLIT)
    (resources / "sink.py").write_text(SINK)
    flux = tmp_path / "topology.yaml"
    flux.write_text(
        textwrap.dedent(f"""\
        name: flux-mixed
        config:
          topology.max.spout.pending: 20
          host.shutdown.grace.secs: 2
          host.spout.idle.max.sleep.ms: 10
        spouts:
          - id: sentences
            className: org.apache.storm.flux.wrappers.spouts.FluxShellSpout
            constructorArgs: [[python, sentences.py], [sentence]]
            configMethods:
              - {{name: addComponentConfig, args: [test.messages, {n}]}}
              - {{name: addComponentConfig, args: [test.ledger, "{tmp_path / "ledger"}"]}}
          - id: words
            className: org.apache.storm.testing.TestWordSpout
        bolts:
          - id: split
            className: org.apache.storm.flux.wrappers.bolts.FluxShellBolt
            constructorArgs: [[bash, split.sh]]
            configMethods:
              - {{name: setDefaultStream, args: [[word]]}}
            parallelism: 2
          - id: count
            className: org.apache.storm.testing.TestWordCounter
            parallelism: 2
          - id: log
            className: org.apache.storm.flux.wrappers.bolts.LogInfoBolt
          - id: sink
            className: org.apache.storm.flux.wrappers.bolts.FluxShellBolt
            constructorArgs: [[python, sink.py]]
            configMethods:
              - {{name: addComponentConfig, args: [test.sink, "{tmp_path / "sink.jsonl"}"]}}
        streams:
          - {{from: sentences, to: split, grouping: {{type: SHUFFLE}}}}
          - {{from: split, to: count, grouping: {{type: FIELDS, args: [word]}}}}
          - {{from: words, to: count, grouping: {{type: FIELDS, args: [word]}}}}
          - {{from: count, to: log, grouping: {{type: SHUFFLE}}}}
          - {{from: count, to: sink, grouping: {{type: GLOBAL}}}}
        """)
    )
    return flux


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def acked(tmp_path: Path) -> Counter:
    path = tmp_path / "ledger"
    lines = path.read_text().split("\n") if path.exists() else []
    return Counter(int(line.split()[1]) for line in lines if line.startswith("ack "))


def run_until(sup: Supervisor, done, limit: float = 30.0) -> int:
    sup.report_every = 0.2

    def check(snap: dict) -> None:
        if done(snap):
            sup.request_stop("test condition met")

    sup.on_report = check
    return sup.run(limit)


def test_shell_components_and_builtins_exchange_and_ack_tuples(tmp_path, caplog):
    n = 60
    topology = load(mixed_topology(tmp_path, n))
    assert topology.component("split").cwd == str(tmp_path / "resources")
    caplog.set_level(logging.INFO)
    sup = Supervisor(topology)

    def done(snap: dict) -> bool:
        seen = {r["values"][0] for r in read_jsonl(tmp_path / "sink.jsonl")}
        return len(acked(tmp_path)) >= n and len(seen & TEST_WORDS) >= 2

    assert run_until(sup, done) == 0
    # every sentence tree (split -> count -> log and sink) completed: acked once, never failed
    acks = acked(tmp_path)
    assert set(acks) == set(range(n)) and max(acks.values()) == 1
    assert "fail" not in (tmp_path / "ledger").read_text()
    snap = sup.snapshot()
    # TestWordSpout emits without a message id, as Storm's: only the sentences are tracked
    assert snap["topology"]["spout_tuples_acked"] == n
    assert snap["topology"]["spout_tuples_failed"] == 0
    comps = snap["components"]
    assert comps["words"]["emitted"] >= 2 and comps["words"]["acked"] == 0
    for cid in ("split", "count", "log", "sink"):
        assert comps[cid]["errors"] == 0 and comps[cid]["restarts"] == 0, cid
        assert comps[cid]["failed"] == 0 and comps[cid]["acked"] > 0, cid
    assert comps["log"]["emitted"] == 0  # LogInfoBolt declares no output
    # TestWordCounter: [word, count], counting up per word; sentence words counted exactly
    counted = [r["values"] for r in read_jsonl(tmp_path / "sink.jsonl")]
    assert all(r["from"] == "count" for r in read_jsonl(tmp_path / "sink.jsonl"))
    finals: dict[str, int] = {}
    for word, count in counted:
        assert count == finals.get(word, 0) + 1, (word, count)  # one task per word, in order
        finals[word] = count
    expected = Counter(w for i in range(n) for w in SENTENCES[i % len(SENTENCES)].split())
    assert {w: c for w, c in finals.items() if w not in TEST_WORDS} == dict(expected)
    assert set(finals) - set(expected) <= TEST_WORDS
    # LogInfoBolt logged tuples from count at INFO
    logged = [
        r.getMessage()
        for r in caplog.records
        if r.levelno == logging.INFO and r.getMessage().startswith("log[")
    ]
    assert any("source: count:" in m and "stream: default" in m for m in logged)


def test_the_storm_flux_example_runs(caplog):
    """examples/storm-flux: Node spout, Python split bolt, TestWordCounter, LogInfoBolt."""
    topology = load(EXAMPLE)
    assert [c.id for c in topology.components] == [
        "sentence-spout",
        "splitsentence",
        "count",
        "log",
    ]
    caplog.set_level(logging.INFO)
    sup = Supervisor(topology)

    def done(snap: dict) -> bool:
        return (
            snap["topology"]["spout_tuples_acked"] >= 50
            and snap["components"]["log"]["acked"] >= 50
        )

    assert run_until(sup, done) == 0
    snap = sup.snapshot()
    assert snap["topology"]["spout_tuples_failed"] == 0
    for cid, comp in snap["components"].items():
        assert comp["errors"] == 0 and comp["restarts"] == 0, cid
    assert snap["components"]["count"]["emitted"] > 0
    assert any("source: count:" in r.getMessage() for r in caplog.records)


# ---- each built-in over its real pipes ----------------------------------------------------------


def builtin_peer(class_name: str, tmp_path: Path) -> ComponentPeer:
    """The built-in launched as the supervisor launches it: its command, the topology's
    directory (here an empty one) as cwd."""
    return ComponentPeer(list(BUILTINS[class_name].command), cwd=str(tmp_path))


def test_log_info_bolt_logs_each_tuple_at_info_and_acks_it(tmp_path):
    peer = builtin_peer(LOG_INFO_BOLT, tmp_path)
    try:
        peer.handshake(
            context=make_context(outputs={}, sources={"count": {"default": ["word", "count"]}})
        )
        times = "PROC_START_TIME(sampled): null EXEC_START_TIME(sampled): null"
        peer.tuple("t1", ["mike", 3], comp="count", task=5)
        log, ack = peer.read(), peer.read()
        # Storm's TupleImpl.toString, the values as Java writes a List
        assert log == Log(f"source: count:5, stream: default, id: t1, [mike, 3] {times}", INFO)
        assert ack == Ack("t1")
        peer.tuple("t2", [None, True, 1.0, 1e10, {"a": 1}, ["b", ["c"]]], comp="count", task=5)
        log, ack = peer.read(), peer.read()
        assert log.msg == (
            f"source: count:5, stream: default, id: t2, "
            f"[null, true, 1.0, 1.0E10, {{a=1}}, [b, [c]]] {times}"
        )
        assert ack == Ack("t2")
        peer.tick(freq=5)  # a basic bolt executes tick tuples like any other: logged too
        log, ack = peer.read(), peer.read()
        assert log.msg == f"source: __system:-1, stream: __tick, id: tick-1, [5] {times}"
        assert ack == Ack("tick-1")
        peer.heartbeat()
        assert peer.read() == Sync()
    finally:
        assert peer.close() == 0


def test_test_word_counter_counts_and_emits_anchored(tmp_path):
    peer = builtin_peer(TEST_WORD_COUNTER, tmp_path)
    try:
        peer.handshake(context=make_context(outputs={"default": ["word", "count"]}))
        for i, word in enumerate(["golda", "mike", "golda"]):
            peer.tuple(f"t{i}", [word, "extra fields are ignored"])
        got = [peer.read() for _ in range(6)]
        assert got == [
            Emit(["golda", 1], anchors=["t0"], need_task_ids=False),
            Ack("t0"),
            Emit(["mike", 1], anchors=["t1"], need_task_ids=False),
            Ack("t1"),
            Emit(["golda", 2], anchors=["t2"], need_task_ids=False),
            Ack("t2"),
        ]
        peer.tuple("bad", [42])  # Storm's casts to String and dies; ours fails the tuple
        error, fail = peer.read(), peer.read()
        assert isinstance(error, Error) and "counts strings" in error.msg
        assert fail == Fail("bad")
    finally:
        assert peer.close() == 0


def test_test_word_spout_emits_unreliable_words_paced(tmp_path):
    peer = builtin_peer(TEST_WORD_SPOUT, tmp_path)
    try:
        peer.handshake(context=make_context(outputs={"default": ["word"]}, sources={}))
        emits: list[Emit] = []
        deadline = time.monotonic() + 10
        while len(emits) < 3 and time.monotonic() < deadline:
            peer.command("next")  # answered at once, with a word only every 100 ms
            messages = peer.read_until(Sync)
            new = [m for m in messages if isinstance(m, Emit)]
            if not new:
                time.sleep(0.02)  # back off as the host does for an idle spout
            emits += new
        assert len(emits) >= 3
        for emit in emits:
            assert emit.values[0] in TEST_WORDS and len(emit.values) == 1
            assert emit.stream == "default" and emit.id is None  # no message id, as Storm's
        peer.command("ack", "anything")  # Storm's ack and fail do nothing
        assert peer.read() == Sync()
    finally:
        assert peer.close() == 0
