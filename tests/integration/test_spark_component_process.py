"""host.spark.component_process: real components driven as a Spark partition drives them.

The repository's own bolts -- the word-count split in bash (examples/wordcount), Python and Node
(benchmarks/components), the global count's batch bolt in Python and Node (examples/transactional)
-- and small Python bolts written here for the faults (a crash half-way, a failed tuple, silence,
stderr, a bolt that never acks). The last test runs the split bolt inside real PySpark (local[2]),
task i in partition i.
"""

from __future__ import annotations

import json
import logging
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import psutil
import pytest

from host.runtime.context import assign_tasks
from host.spark.component_process import ComponentFailed, ComponentProcess, Tx
from host.spark.process_cache import close_all, shared_process
from host.topology.files import load
from host.topology.model import Topology
from host.topology.native import from_document

REPO = Path(__file__).resolve().parents[2]
BENCH = REPO / "benchmarks" / "components"
SENTENCES = [
    "the cow jumped over the moon",
    "an apple a day keeps the doctor away",
    "four score and seven years ago",
    "snow white and the seven dwarfs",
    "i am at two with nature",
]
DEADLINE = 60.0  # generous: other test runs share the two cores


def sentences(n: int) -> list[str]:
    return [f"{SENTENCES[i % len(SENTENCES)]} n{i}" for i in range(n)]


def split_topology(
    command: list[str], base_dir: Path = BENCH, config: dict | None = None
) -> Topology:
    """spout `s` -> bolt `split` (2 tasks) -> bolt `count` (fields on word)."""
    return from_document(
        {
            "name": "split-test",
            "config": config or {},
            "spouts": {"s": {"command": ["python", "-c", "pass"], "outputs": ["sentence"]}},
            "bolts": {
                "split": {
                    "command": command,
                    "outputs": ["word"],
                    "parallelism": 2,
                    "inputs": {"s": "shuffle"},
                },
                "count": {
                    "command": ["python", "-c", "pass"],
                    "outputs": ["word", "count"],
                    "inputs": {"split": {"fields": ["word"]}},
                },
            },
        },
        base_dir=base_dir,
    )


def bolt_snippet(body: str) -> list[str]:
    return ["python", "-c", textwrap.dedent(body)]


def split_tasks(topology: Topology) -> tuple[int, ...]:
    return assign_tasks(topology).tasks_of("split")


def inputs(lines: list[str], source_task: int = 1) -> Any:
    return (("s", "default", source_task, [line]) for line in lines)


def words_of(proc: ComponentProcess, lines: list[str]) -> list[str]:
    return [e.values[0] for e in proc.run_bolt(inputs(lines))]


def expected_words(lines: list[str]) -> list[str]:
    return [w for line in lines for w in line.split()]


@pytest.fixture
def procs():
    """ComponentProcesses to close at the end of the test, whatever happened."""
    made: list[ComponentProcess] = []
    yield made
    for p in made:
        p.close(grace=1.0)


# ---- the repository's split bolts ----------------------------------------------------------------

SPLITS = {
    "python": (["python", "split.py"], BENCH),
    "node": (["node", "split.js"], BENCH),
    "bash": (["bash", "split.sh"], REPO / "examples" / "wordcount"),
}


@pytest.mark.parametrize("lang", sorted(SPLITS))
def test_split_bolt_emits_every_word_in_order(lang, procs):
    command, base = SPLITS[lang]
    topology = split_topology(command, base)
    task = split_tasks(topology)[1]
    proc = ComponentProcess(topology, "split", task)
    procs.append(proc)
    lines = sentences(3000)
    assert words_of(proc, lines) == expected_words(lines)


def test_the_example_topology_file_runs_as_under_host_local(procs):
    """examples/wordcount/topology.yaml's bash split, with the context host local gives task 7."""
    topology = load(REPO / "examples" / "wordcount" / "topology.yaml")
    tasks = split_tasks(topology)
    assert len(tasks) == 2
    proc = ComponentProcess(topology, "split", tasks[1])
    procs.append(proc)
    assert proc.context["taskid"] == tasks[1]
    assert proc.context["componentid"] == "split"
    lines = sentences(500)
    assert words_of(proc, lines) == expected_words(lines)
    # our bash library took shell-frames/1 (multilang/shell_frames.py): it was written bash
    # commands, and a process started again takes them again
    assert proc.ser.name == "shell-frames" and proc.base_ser.name == "json"
    proc.close(grace=1.0)
    assert words_of(proc, lines[:50]) == expected_words(lines[:50])
    assert proc.ser.name == "shell-frames"


def test_storm_py_style_task_id_replies_are_answered(procs, tmp_path):
    """A bolt that waits for each emit's task ids (need_task_ids true) gets them: the count
    bolt's task, by the same fields hash as host local's router."""
    topology = split_topology(
        bolt_snippet(
            """
            from multilang import BasicBolt
            class Split(BasicBolt):
                def process(self, tup):
                    for w in tup.values[0].split():
                        tasks = self.emit([w], need_task_ids=True)
                        self.emit([f"{w}->{tasks}"], need_task_ids=True)
            Split().run()
            """
        ),
        tmp_path,
    )
    proc = ComponentProcess(topology, "split", split_tasks(topology)[0])
    procs.append(proc)
    out = words_of(proc, ["red fox"])
    count_task = assign_tasks(topology).tasks_of("count")
    assert out[0] == "red" and out[2] == "fox"
    assert out[1] == f"red->{list(count_task)}" and out[3] == f"fox->{list(count_task)}"


# ---- batch bolts ---------------------------------------------------------------------------------

GLOBAL_COUNT = REPO / "examples" / "transactional" / "global-count"


@pytest.mark.parametrize("file", ["topology.yaml", "topology-node.yaml"])
def test_batch_bolt_gets_tx_and_finish(file, procs):
    topology = load(GLOBAL_COUNT / file)
    task = assign_tasks(topology).tasks_of("partial")[2]
    proc = ComponentProcess(topology, "partial", task)
    procs.append(proc)
    assert proc.context["batch"]["role"] == "bolt"
    numbers = list(range(1, 101))
    out = list(proc.run_bolt((("numbers", "default", 1, [n]) for n in numbers), tx=Tx(7, 1)))
    assert [(e.stream, e.values) for e in out] == [("default", [100, sum(numbers)])]
    # the next batch, in the same process: its own state
    out = list(proc.run_bolt((("numbers", "default", 1, [n]) for n in [5, 6]), tx=Tx(8, 1)))
    assert [e.values for e in out] == [[2, 11]]
    # an empty partition still finishes its batch
    assert [e.values for e in proc.run_bolt([], tx=Tx(9, 1))] == [[0, 0]]


def test_batch_bolt_needs_a_tx_and_a_plain_bolt_refuses_one(procs):
    topology = load(GLOBAL_COUNT / "topology.yaml")
    proc = ComponentProcess(topology, "partial", assign_tasks(topology).tasks_of("partial")[0])
    with pytest.raises(ValueError, match="needs the batch's tx"):
        proc.run_bolt([])
    plain = split_topology(*SPLITS["python"])
    with pytest.raises(ValueError, match="takes no tx"):
        ComponentProcess(plain, "split", split_tasks(plain)[0]).run_bolt([], tx=Tx(1))


# ---- faults --------------------------------------------------------------------------------------


def test_a_bolt_that_crashes_half_way_fails_the_run_naming_component_and_task(procs, tmp_path):
    topology = split_topology(
        bolt_snippet(
            """
            import os, sys
            from multilang import BasicBolt
            class Crash(BasicBolt):
                def process(self, tup):
                    if tup.values[0] == "boom":
                        sys.stderr.write("about to crash\\n"); sys.stderr.flush()
                        os._exit(3)
                    self.emit([tup.values[0]])
            Crash().run()
            """
        ),
        tmp_path,
    )
    task = split_tasks(topology)[1]
    proc = ComponentProcess(topology, "split", task)
    procs.append(proc)
    lines = ["a"] * 50 + ["boom"] + ["b"] * 5000
    with pytest.raises(ComponentFailed) as info:
        words_of(proc, lines)
    err = info.value
    assert (err.component, err.task) == ("split", task)
    assert f"split[{task}]" in str(err) and "exit status 3" in str(err)
    assert "about to crash" in str(err)
    assert proc.child is None and proc.broken
    # the next run starts a new process
    assert words_of(proc, ["c", "d"]) == ["c", "d"]


def test_a_failed_tuple_fails_the_run_with_the_tuple(procs, tmp_path):
    topology = split_topology(
        bolt_snippet(
            """
            from multilang import Bolt
            class Picky(Bolt):
                def process(self, tup):
                    if tup.values[0] == "poison":
                        self.fail(tup)
                    else:
                        self.emit([tup.values[0]], anchors=[tup]); self.ack(tup)
            Picky().run()
            """
        ),
        tmp_path,
    )
    task = split_tasks(topology)[0]
    proc = ComponentProcess(topology, "split", task)
    procs.append(proc)
    with pytest.raises(ComponentFailed) as info:
        words_of(proc, ["ok"] * 10 + ["poison"] + ["ok"] * 10)
    assert info.value.task == task
    assert "failed tuple" in str(info.value) and "poison" in str(info.value)


def test_a_bad_frame_fails_the_run_with_its_bytes(procs, tmp_path):
    topology = split_topology(
        bolt_snippet(
            """
            import os
            from multilang import BasicBolt
            class Noisy(BasicBolt):
                protect_stdout = False
                def process(self, tup):
                    os.write(1, b"hello world\\nend\\n")
            Noisy().run()
            """
        ),
        tmp_path,
    )
    proc = ComponentProcess(topology, "split", split_tasks(topology)[0])
    procs.append(proc)
    with pytest.raises(ComponentFailed, match="protocol error.*hello world"):
        words_of(proc, ["x"])


def test_no_answer_within_the_message_timeout_fails_the_run(procs, tmp_path):
    topology = split_topology(
        bolt_snippet(
            """
            import time
            from multilang import BasicBolt
            class Stuck(BasicBolt):
                def process(self, tup):
                    time.sleep(3600)
            Stuck().run()
            """
        ),
        tmp_path,
        config={"topology.message.timeout.secs": 1},
    )
    proc = ComponentProcess(topology, "split", split_tasks(topology)[0])
    procs.append(proc)
    started = time.monotonic()
    with pytest.raises(ComponentFailed, match="no answer for 1s"):
        words_of(proc, ["x", "y"])
    assert time.monotonic() - started < DEADLINE
    assert proc.child is None


def test_a_bolt_that_never_acks_still_ends_its_partition(procs, tmp_path):
    """Our Python `Bolt` acks nothing unless told (as storm.rb's): its tuples are forgotten once
    it answered a heartbeat written after them (docs/protocol.md §4.5)."""
    topology = split_topology(
        bolt_snippet(
            """
            from multilang import Bolt
            class NoAck(Bolt):
                def process(self, tup):
                    for w in tup.values[0].split():
                        self.emit([w], anchors=[tup])
            NoAck().run()
            """
        ),
        tmp_path,
        config={"host.bolt.max.in.flight": 50},
    )
    proc = ComponentProcess(topology, "split", split_tasks(topology)[0])
    procs.append(proc)
    lines = sentences(400)  # eight windows' worth
    assert words_of(proc, lines) == expected_words(lines)


def test_abandoning_a_run_half_way_kills_the_process(procs):
    topology = split_topology(*SPLITS["python"])
    proc = ComponentProcess(topology, "split", split_tasks(topology)[0])
    procs.append(proc)
    run = proc.run_bolt(inputs(sentences(5000)))
    next(run)
    pid = proc.pid
    assert pid is not None and psutil.pid_exists(pid)
    run.close()  # what a cancelled Spark task does to its iterator
    assert proc.child is None and not _alive(pid)


# ---- stderr --------------------------------------------------------------------------------------


def test_every_stderr_line_is_logged_with_component_and_task(procs, tmp_path, caplog):
    topology = split_topology(
        bolt_snippet(
            """
            import sys
            from multilang import BasicBolt
            class Chatty(BasicBolt):
                def process(self, tup):
                    n = tup.values[0]
                    sys.stderr.write(f"line {n}\\npart")
                    sys.stderr.flush()
                    sys.stderr.write(f"ial {n}\\n")
                    sys.stderr.flush()
            Chatty().run()
            """
        ),
        tmp_path,
    )
    task = split_tasks(topology)[1]
    proc = ComponentProcess(topology, "split", task)
    procs.append(proc)
    caplog.set_level(logging.INFO, logger="host.spark")
    list(proc.run_bolt(inputs([str(i) for i in range(20)])))
    pid = proc.pid
    proc.close()  # stderr is drained to its end
    lines = [r.getMessage() for r in caplog.records if r.name == "host.spark"]
    for i in range(20):
        assert f"split[{task}] pid={pid}: line {i}" in lines
        assert f"split[{task}] pid={pid}: partial {i}" in lines


# ---- reuse and clean-up --------------------------------------------------------------------------


def test_shared_process_is_reused_and_a_broken_one_replaced():
    topology = split_topology(*SPLITS["python"])
    task = split_tasks(topology)[0]
    try:
        first = shared_process(topology, "split", task)
        assert words_of(first, ["a b"]) == ["a", "b"]
        pid = first.pid
        # the same topology unpickled again (as for each Spark task) finds the same process
        again = shared_process(split_topology(*SPLITS["python"]), "split", task)
        assert again is first
        assert words_of(again, ["c"]) == ["c"] and again.pid == pid
        # killed while idle: replaced on the next use
        os.kill(pid, signal.SIGKILL)
        _wait_gone(pid)
        third = shared_process(topology, "split", task)
        assert words_of(third, ["d"]) == ["d"] and third.pid != pid
    finally:
        close_all()
    assert not _alive(third.pid or pid)


CHILD = """
import sys, time
from host.spark.process_cache import shared_process
from tests.integration.test_spark_component_process import SPLITS, split_topology, split_tasks
topology = split_topology(*SPLITS[sys.argv[1]])
proc = shared_process(topology, "split", split_tasks(topology)[0])
assert [e.values[0] for e in proc.run_bolt([("s", "default", 1, ["a b"])])] == ["a", "b"]
print(proc.pid, flush=True)
if sys.argv[2] == "exit":
    sys.exit(0)
time.sleep(600)
"""


@pytest.mark.parametrize(
    ("lang", "end"),
    [
        ("python", "SIGKILL"),
        ("node", "SIGKILL"),
        ("bash", "SIGKILL"),
        ("python", "SIGTERM"),
        ("python", "exit"),
    ],
)
def test_no_component_outlives_its_worker(lang, end):
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, lang, end], cwd=REPO, stdout=subprocess.PIPE, text=True
    )
    try:
        assert child.stdout is not None
        line = child.stdout.readline()
        assert line.strip().isdigit(), f"the child wrote {line!r}"
        pid = int(line)
        if end != "exit":
            assert _alive(pid)
            child.send_signal(getattr(signal, end))
        child.wait(DEADLINE)
        _wait_gone(pid, 3.0)
    finally:
        child.kill()
        child.wait()


def _alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def _wait_gone(pid: int, secs: float = DEADLINE) -> None:
    deadline = time.monotonic() + secs
    while _alive(pid):
        assert time.monotonic() < deadline, f"process {pid} still alive after {secs}s"
        time.sleep(0.05)


# ---- inside real Spark -----------------------------------------------------------------------------


def split_partition(topology: Topology, index: int, lines: Any) -> Any:
    """Partition `index` of the split stage is the split bolt's task `index` (docs/spark.md)."""
    task = split_tasks(topology)[index]
    proc = shared_process(topology, "split", task)
    for emit in proc.run_bolt(("s", "default", 1, [line]) for line in lines):
        yield (task, emit.values[0])


@pytest.mark.spark
def test_split_bolt_inside_pyspark_partitions():
    from tests.integration.components.spark.support import spark_session

    topology = split_topology(*SPLITS["python"])
    lines = sentences(4000)
    sc = spark_session().sparkContext
    rdd = sc.parallelize(lines, 2)
    out = rdd.mapPartitionsWithIndex(lambda i, it: split_partition(topology, i, it)).collect()
    assert [w for _, w in out] == expected_words(lines)
    assert {t for t, _ in out} == set(split_tasks(topology))
    # a second job: the workers' processes are reused where Spark reused the workers
    out = rdd.mapPartitionsWithIndex(lambda i, it: split_partition(topology, i, it)).collect()
    assert [w for _, w in out] == expected_words(lines)


# ---- the batch API and the fast decoding path ------------------------------------------------------


@pytest.mark.parametrize("lang", sorted(SPLITS))
def test_run_bolt_rows_gives_every_word_in_order_in_batches(lang, procs):
    command, base = SPLITS[lang]
    topology = split_topology(command, base)
    proc = ComponentProcess(topology, "split", split_tasks(topology)[0])
    procs.append(proc)
    lines = sentences(3000)
    batches = list(proc.run_bolt_rows(inputs(lines)))
    assert {(r.stream, r.task) for r in batches} == {("default", None)}
    assert [v[0] for r in batches for v in r.values] == expected_words(lines)
    assert len(batches) < len(expected_words(lines))  # batches, not one row at a time


def test_rows_keep_streams_and_direct_tasks_apart_and_in_order(procs, tmp_path):
    """Plain emits (the fast path) mixed with emits to another stream and direct emits (the
    general decoder), in one run: each run of emits is its own Rows, in the bolt's order."""

    def document(sink_task: int) -> dict:
        bolt = f"""
            from multilang import BasicBolt
            class Mixed(BasicBolt):
                def process(self, tup):
                    n = int(tup.values[0])
                    self.emit([f"w{{n}}"])
                    if n % 3 == 0:
                        self.emit([f"o{{n}}", n], stream="other")
                    if n % 5 == 0:
                        self.emit([f"d{{n}}"], direct_task={sink_task})
            Mixed().run()
            """
        noop = ["python", "-c", "pass"]
        return {
            "name": "rows-test",
            "spouts": {"s": {"command": noop, "outputs": ["sentence"]}},
            "bolts": {
                "split": {
                    "command": bolt_snippet(bolt),
                    "outputs": {"default": ["word"], "other": ["word", "n"]},
                    "inputs": {"s": "shuffle"},
                },
                "sink": {"command": noop, "outputs": [], "inputs": {"split": "direct"}},
            },
        }

    sink = assign_tasks(from_document(document(0), base_dir=tmp_path)).tasks_of("sink")[0]
    topology = from_document(document(sink), base_dir=tmp_path)
    proc = ComponentProcess(topology, "split", split_tasks(topology)[0])
    procs.append(proc)
    n = 300
    expected = []
    for i in range(n):
        expected.append(("default", None, [f"w{i}"]))
        if i % 3 == 0:
            expected.append(("other", None, [f"o{i}", i]))
        if i % 5 == 0:
            expected.append(("default", sink, [f"d{i}"]))
    got = [
        (r.stream, r.task, v)
        for r in proc.run_bolt_rows(inputs([str(i) for i in range(n)]))
        for v in r.values
    ]
    assert got == expected
    emits = list(proc.run_bolt(inputs([str(i) for i in range(n)])))
    assert [(e.stream, e.task, e.values) for e in emits] == expected


def test_a_wrong_field_count_in_a_plain_emit_fails_the_run(procs, tmp_path):
    topology = split_topology(
        bolt_snippet(
            """
            from multilang import BasicBolt
            class Two(BasicBolt):
                def process(self, tup):
                    self.emit([tup.values[0]])
                    if tup.values[0] == "bad":
                        self.emit(["a", "b"])
            Two().run()
            """
        ),
        tmp_path,
    )
    proc = ComponentProcess(topology, "split", split_tasks(topology)[0])
    procs.append(proc)
    with pytest.raises(ComponentFailed, match="emit of 2 values to stream 'default'"):
        words_of(proc, ["ok"] * 500 + ["bad"] + ["ok"] * 500)


def test_a_plain_emit_anchored_to_an_acked_tuple_fails_the_run(procs, tmp_path):
    """A plain emit after its tuple's ack, in the same read as the ack: the fast path checks
    anchors in order, as the general one does."""
    topology = split_topology(
        bolt_snippet(
            """
            from multilang import Bolt
            class Late(Bolt):
                def process(self, tup):
                    self.emit([tup.values[0]], anchors=[tup])
                    self.ack(tup)
                    if tup.values[0] == "late":
                        self.emit(["again"], anchors=[tup])
            Late().run()
            """
        ),
        tmp_path,
    )
    proc = ComponentProcess(topology, "split", split_tasks(topology)[0])
    procs.append(proc)
    with pytest.raises(ComponentFailed, match="which is not pending"):
        words_of(proc, ["ok"] * 200 + ["late"] + ["ok"] * 200)


# ---- tick tuples (docs/spark.md §2.4) ------------------------------------------------------------

TICK_SINK = ["python", str(REPO / "tests" / "support" / "tick_sink.py")]
STORM_RB = REPO / "tests" / "integration" / "components" / "batch_compat" / "storm" / "storm.rb"


def read_jsonl(path: Path) -> list[Any]:
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def ruby_bolt(body: str) -> list[str]:
    """A storm.rb bolt (Storm's own Ruby library) whose class body is `body`."""
    code = f"require '{STORM_RB}'\nclass B < Storm::Bolt\n{textwrap.dedent(body)}\nend\nB.new.run\n"
    return ["ruby", "-e", code]


def tick_sink(tmp_path: Path, freq: int, window: int = 1000) -> tuple[ComponentProcess, int]:
    topology = split_topology(
        TICK_SINK,
        tmp_path,
        config={
            "topology.tick.tuple.freq.secs": freq,
            "host.bolt.max.in.flight": window,
            "test.sink.dir": str(tmp_path / "out"),
        },
    )
    task = split_tasks(topology)[0]
    return ComponentProcess(topology, "split", task), task


def test_a_sink_that_acks_only_on_ticks_gets_one_at_the_end_of_each_run(procs, tmp_path):
    """No period passes within these runs (an hour's): each run ends only because its one end
    tick makes the sink write and ack what it holds. An empty run gets its end tick too."""
    proc, task = tick_sink(tmp_path, freq=3600)
    procs.append(proc)
    rows, ticks = tmp_path / "out" / f"rows-{task}.jsonl", tmp_path / "out" / f"ticks-{task}.jsonl"
    first, second = sentences(200), [f"second {i}" for i in range(150)]
    assert words_of(proc, first) == []
    assert read_jsonl(rows) == [[s] for s in first]
    assert read_jsonl(ticks) == [["__system", "__tick", -1, [3600], 200]]
    pid = proc.pid
    assert words_of(proc, []) == []
    assert words_of(proc, second) == []
    assert proc.pid == pid  # one process for the three runs
    assert read_jsonl(rows) == [[s] for s in first + second]
    assert [t[4] for t in read_jsonl(ticks)] == [200, 0, 150]


def test_periodic_ticks_come_while_the_input_is_written(procs, tmp_path):
    """120 tuples through a window of 50 to a sink that holds them all until a tick: only
    periodic ticks (1 s) can make room, so the run ends only if they come while the input is
    still being written; then one more at the end. The tuples after the previous run's end tick
    are not taken for a bolt that never acks: no tick came after them yet."""
    proc, task = tick_sink(tmp_path, freq=1, window=50)
    procs.append(proc)
    assert words_of(proc, []) == []
    lines = [f"row {i}" for i in range(120)]
    assert words_of(proc, lines) == []
    assert read_jsonl(tmp_path / "out" / f"rows-{task}.jsonl") == [[s] for s in lines]
    ticks = read_jsonl(tmp_path / "out" / f"ticks-{task}.jsonl")
    assert {(c, s, t, tuple(v)) for c, s, t, v, _ in ticks} == {("__system", "__tick", -1, (1,))}
    flushed = [n for *_, n in ticks[1:]]  # the first: the empty run's end tick
    assert ticks[0][4] == 0 and sum(flushed) == 120
    assert len(flushed) >= 3 and max(flushed) <= 50  # at least two periodic ticks, and the end


def test_what_a_bolt_emits_on_its_end_tick_belongs_to_the_run(procs, tmp_path):
    topology = split_topology(
        bolt_snippet(
            """
            from multilang import BasicBolt
            class Total(BasicBolt):
                def initialize(self, conf, context):
                    self.n = 0
                def process(self, tup):
                    self.n += len(tup.values[0].split())
                def process_tick(self, tup):
                    self.emit([f"total {self.n} tick {tup.values[0]}"], anchors=[tup])
                    self.n = 0
            Total().run()
            """
        ),
        tmp_path,
        config={"topology.tick.tuple.freq.secs": 3600},
    )
    proc = ComponentProcess(topology, "split", split_tasks(topology)[0])
    procs.append(proc)
    lines = sentences(300)
    assert words_of(proc, lines) == [f"total {len(expected_words(lines))} tick 3600"]
    assert words_of(proc, ["a b c"]) == ["total 3 tick 3600"]


NEVER_ACKING_RB = """
def process(tup)
  return if tup.stream == '__tick'
  tup.values[0].split.each { |w| emit([w], anchor: tup) }
end
"""


@pytest.mark.parametrize(
    "config, lines",
    [
        # 1 s ticks, eight windows' worth: once it has read past a tick with tuples before it
        # unacked, it is a bolt that never acks, and its tuples are forgotten as without ticks
        pytest.param({"topology.tick.tuple.freq.secs": 1}, 400, id="periodic-ticks"),
        # an hour's period: the first window is not waited on for the hour until a tick, only
        # for topology.message.timeout.secs (5 s; heartbeats, 1 s, answered: not a silent
        # bolt), as host local waits for an untracked tuple; then the rest flows
        pytest.param(
            {"topology.tick.tuple.freq.secs": 3600, "topology.message.timeout.secs": 5},
            200,
            id="distant-tick",
        ),
    ],
)
def test_a_storm_rb_bolt_that_never_acks_still_ends_its_partition_with_ticks(
    config, lines, procs, tmp_path
):
    """storm.rb's Bolt acks nothing unless told, ticks included (they reach `process`): its
    partitions end all the same (docs/protocol.md §4.5, docs/spark.md §4.3), its next run too."""
    topology = split_topology(
        ruby_bolt(NEVER_ACKING_RB),
        tmp_path,
        config={**config, "host.bolt.max.in.flight": 50},
    )
    proc = ComponentProcess(topology, "split", split_tasks(topology)[0])
    procs.append(proc)
    text = sentences(lines)
    assert words_of(proc, text) == expected_words(text)
    assert words_of(proc, text[:10]) == expected_words(text[:10])


def test_a_bolt_that_acks_its_tuples_and_not_its_ticks_ends_its_partition(procs, tmp_path, caplog):
    """A tick the bolt read past without acking it, and nothing answered since: forgotten, as
    host local forgets a tuple no spout tuple tracks; said once in the log."""
    topology = split_topology(
        ruby_bolt(
            """
            def process(tup)
              return if tup.stream == '__tick'
              tup.values[0].split.each { |w| emit([w], anchor: tup) }
              ack(tup)
            end
            """
        ),
        tmp_path,
        config={"topology.tick.tuple.freq.secs": 3600},
    )
    proc = ComponentProcess(topology, "split", split_tasks(topology)[0])
    procs.append(proc)
    caplog.set_level(logging.INFO, logger="host.spark")
    lines = sentences(50)
    assert words_of(proc, lines) == expected_words(lines)
    assert words_of(proc, []) == []
    assert words_of(proc, lines) == expected_words(lines)
    warned = [
        r.getMessage() for r in caplog.records if "was not acked: forgotten" in r.getMessage()
    ]
    assert len(warned) == 1 and "tick tuple" in warned[0], warned


def test_a_failed_tick_fails_the_run(procs, tmp_path):
    topology = split_topology(
        ruby_bolt(
            """
            def process(tup)
              if tup.stream == '__tick' then fail(tup) else ack(tup) end
            end
            """
        ),
        tmp_path,
        config={"topology.tick.tuple.freq.secs": 3600},
    )
    proc = ComponentProcess(topology, "split", split_tasks(topology)[0])
    procs.append(proc)
    with pytest.raises(ComponentFailed, match=r"it failed tick tuple \d+.*__tick"):
        words_of(proc, ["x"])
    assert proc.child is None
