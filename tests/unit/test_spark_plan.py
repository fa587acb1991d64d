"""Planning a topology into Spark stages (host/spark/plan.py) and its text (host/spark/explain.py):
pure, no Spark. The fields hash is checked against the local router itself."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from host.errors import RoutingError, TopologyError
from host.runtime.context import assign_tasks
from host.runtime.router import Router, stable_hash
from host.spark.explain import explain
from host.spark.plan import (
    BATCH_BOLT_ROLE,
    BROADCAST,
    COMMITTER_ROLE,
    DRIVER_SPOUT,
    HASH,
    KAFKA_SOURCE,
    PASS_THROUGH,
    PLAIN_BOLT,
    ROUND_ROBIN,
    SINGLE,
    SPARK_INPUT,
    STATE_WARNING,
    TO_NAMED_TASK,
    TRANSACTIONAL_SOURCE,
    plan,
)
from host.topology.files import load
from host.topology.model import (
    BOLT,
    DRPC_SPOUT,
    SPOUT,
    Component,
    Grouping,
    Input,
    Topology,
)

REPO = Path(__file__).resolve().parents[2]
WORDCOUNT = REPO / "examples" / "wordcount" / "topology.yaml"
WORDCOUNT_SQLITE = REPO / "examples" / "transactional" / "wordcount-sqlite" / "topology.yaml"


Outputs = dict[str, tuple[str, ...]]


def spout(
    id: str,
    outputs: Outputs | None = None,
    parallelism: int = 1,
    command: tuple[str, ...] = ("python", "s.py"),
    batch: str | None = None,
) -> Component:
    outputs = {"default": ("word", "n")} if outputs is None else outputs
    return Component(id, SPOUT, command, outputs=outputs, parallelism=parallelism, batch=batch)


def bolt(
    id: str, inputs: list[Input], outputs: Outputs | None = None, parallelism: int = 1
) -> Component:
    outputs = {"default": ("word", "n")} if outputs is None else outputs
    return Component(
        id,
        BOLT,
        ("python", "b.py"),
        outputs=outputs,
        parallelism=parallelism,
        inputs=tuple(inputs),
    )


def edge(
    source: str, grouping: str, fields: tuple[str, ...] = (), stream: str = "default"
) -> Input:
    return Input(source, stream, Grouping(grouping, fields))


def two(
    grouping: str, fields: tuple[str, ...] = (), src_parallelism: int = 1, dst_parallelism: int = 4
) -> Topology:
    return Topology(
        "t",
        (
            spout("src", parallelism=src_parallelism),
            bolt("dst", [edge("src", grouping, fields)], parallelism=dst_parallelism),
        ),
        source="t.yaml",
    )


# ---- groupings -> exchanges ---------------------------------------------------------------------


@pytest.mark.parametrize("grouping", ["shuffle", "none", "local_or_shuffle"])
def test_any_task_groupings_pass_through_when_partition_counts_agree(grouping):
    assert (
        plan(two(grouping, src_parallelism=3, dst_parallelism=3))
        .stage("dst")
        .inputs[0]
        .exchange.kind
        == PASS_THROUGH
    )


@pytest.mark.parametrize("grouping", ["shuffle", "none", "local_or_shuffle"])
def test_any_task_groupings_repartition_round_robin_when_counts_differ(grouping):
    exchange = plan(two(grouping, src_parallelism=1, dst_parallelism=4)).stage("dst").inputs[0]
    assert (exchange.exchange.kind, exchange.exchange.partitions) == (ROUND_ROBIN, 4)


@pytest.mark.parametrize("grouping", ["fields", "partial_key"])
def test_key_groupings_hash_on_the_field_positions(grouping):
    exchange = plan(two(grouping, ("n",))).stage("dst").inputs[0].exchange
    assert (exchange.kind, exchange.fields, exchange.field_indices) == (HASH, ("n",), (1,))


def test_global_goes_to_partition_zero_the_lowest_task():
    p = plan(two("global"))
    exchange = p.stage("dst").inputs[0].exchange
    assert exchange.kind == SINGLE
    assert exchange.first_task == min(p.stage("dst").tasks) == p.stage("dst").tasks[0]


def test_all_is_a_copy_to_every_partition():
    exchange = plan(two("all")).stage("dst").inputs[0].exchange
    assert (exchange.kind, exchange.partitions) == (BROADCAST, 4)


def test_direct_goes_to_the_partition_of_the_named_task():
    p = plan(two("direct"))
    dst = p.stage("dst")
    exchange = dst.inputs[0].exchange
    assert exchange.kind == TO_NAMED_TASK
    assert [exchange.direct_partition(t) for t in dst.tasks] == [0, 1, 2, 3]
    not_its_own = p.stage("src").tasks[0]
    with pytest.raises(RoutingError, match=f"direct emit to task {not_its_own}"):
        exchange.direct_partition(not_its_own)


def test_only_hash_exchanges_have_a_partitioner():
    with pytest.raises(ValueError, match="round-robin exchange has no partitioner"):
        plan(two("shuffle")).stage("dst").inputs[0].exchange.partitioner()


# ---- the same hash as the local router ----------------------------------------------------------


def _router_index(topology: Topology, values: list) -> int:
    """The index, among the receiver's tasks, of the task the local router picks."""
    tasks = assign_tasks(topology)
    component_tasks = {c: list(ts) for c, ts in tasks.component_tasks.items()}
    router = Router(topology, component_tasks)
    (task,) = router.targets("src", "default", values)
    return component_tasks["dst"].index(task)


words = st.text(min_size=0, max_size=12)
values = st.one_of(words, st.integers(-(10**6), 10**6), st.floats(allow_nan=False), st.booleans())


@settings(max_examples=200, deadline=None)
@given(word=words, n=st.integers(0, 50), parallelism=st.integers(1, 9))
def test_a_word_lands_on_the_task_index_the_local_router_picks(word, n, parallelism):
    topology = two("fields", ("word",), dst_parallelism=parallelism)
    partition = plan(topology).stage("dst").inputs[0].exchange.partitioner()
    assert partition([word, n]) == _router_index(topology, [word, n])


@settings(max_examples=200, deadline=None)
@given(a=values, b=values, parallelism=st.integers(1, 9))
def test_a_two_field_key_lands_where_the_local_router_sends_it(a, b, parallelism):
    topology = two("fields", ("n", "word"), dst_parallelism=parallelism)
    partition = plan(topology).stage("dst").inputs[0].exchange.partitioner()
    assert partition([a, b]) == _router_index(topology, [a, b])


@settings(max_examples=100, deadline=None)
@given(word=words, parallelism=st.integers(1, 9))
def test_partial_key_takes_the_routers_first_candidate(word, parallelism):
    # a fresh router has sent nothing, so it picks its first candidate
    topology = two("partial_key", ("word",), dst_parallelism=parallelism)
    partition = plan(topology).stage("dst").inputs[0].exchange.partitioner()
    assert partition([word, 1]) == _router_index(topology, [word, 1])
    assert partition([word, 1]) == stable_hash(word) % parallelism


# ---- task ids -----------------------------------------------------------------------------------


@pytest.mark.parametrize("path", [WORDCOUNT, WORDCOUNT_SQLITE])
def test_partitions_are_the_task_ids_host_local_gives(path):
    topology = load(path)
    p = plan(topology)
    tasks = assign_tasks(topology)
    assert {s.id: s.tasks for s in p.stages} == {
        c.id: tasks.tasks_of(c.id) for c in topology.components
    }
    assert all(s.partitions == s.component.parallelism for s in p.stages)


def test_task_ids_follow_the_acker_setting():
    with_acker = two("shuffle")
    without = Topology(with_acker.name, with_acker.components, {"topology.acker.executors": 0})
    assert plan(with_acker).stage("dst").tasks == assign_tasks(with_acker).tasks_of("dst")
    assert plan(without).stage("dst").tasks == assign_tasks(without).tasks_of("dst")
    assert plan(with_acker).stage("dst").tasks != plan(without).stage("dst").tasks


# ---- stage order, fan-out, union ----------------------------------------------------------------


def test_stages_come_after_the_stages_they_read():
    # declared sink first: the plan still orders it last
    topology = Topology(
        "t",
        (
            bolt("sink", [edge("mid", "shuffle")]),
            bolt("mid", [edge("src", "shuffle")]),
            spout("src"),
        ),
    )
    assert [s.id for s in plan(topology).stages] == ["src", "mid", "sink"]


def test_several_streams_fan_out_from_one_cached_result():
    streams = {"default": ("word", "n"), "errors": ("line",)}
    topology = Topology(
        "t",
        (
            spout("src"),
            bolt("split", [edge("src", "shuffle")], outputs=streams, parallelism=2),
            bolt("count", [edge("split", "fields", ("word",))], parallelism=3),
            bolt("audit", [edge("split", "shuffle")]),
            bolt("bad", [edge("split", "global", stream="errors")]),
        ),
    )
    split = plan(topology).stage("split")
    assert split.cached and split.readers == 3
    assert {s: [(e.target, e.exchange.kind) for e in es] for s, es in split.outputs.items()} == {
        "default": [("count", HASH), ("audit", ROUND_ROBIN)],
        "errors": [("bad", SINGLE)],
    }


def test_one_reader_is_not_cached_and_an_unread_stream_is_recorded_empty():
    topology = Topology(
        "t",
        (
            spout("src", outputs={"default": ("word", "n"), "unused": ("x",)}),
            bolt("dst", [edge("src", "shuffle")]),
        ),
    )
    src = plan(topology).stage("src")
    assert not src.cached and src.outputs["unused"] == ()


def test_several_inputs_are_a_union_of_their_sources_and_streams():
    topology = Topology(
        "t",
        (
            spout("a"),
            spout("b", outputs={"default": ("word", "n"), "late": ("word", "n")}, parallelism=2),
            bolt(
                "merge",
                [edge("a", "shuffle"), edge("b", "fields", ("word",), stream="late")],
                parallelism=2,
            ),
        ),
    )
    merge = plan(topology).stage("merge")
    assert merge.union
    assert [(e.source, e.stream, e.exchange.kind) for e in merge.inputs] == [
        ("a", "default", ROUND_ROBIN),
        ("b", "late", HASH),
    ]


def test_a_spout_nobody_reads_is_planned():
    p = plan(Topology("t", (spout("lonely"),)))
    assert [s.id for s in p.stages] == ["lonely"] and p.stage("lonely").readers == 0


# ---- sources and roles --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("command", "batch", "kind"),
    [
        (("python", "-m", "components.spark_spout"), None, SPARK_INPUT),
        (("python3", "-m", "components.spark_spout"), "spout", SPARK_INPUT),
        (("python", "-m", "components.transactional_files"), "spout", TRANSACTIONAL_SOURCE),
        (("python", "-m", "components.kafka_spout"), None, KAFKA_SOURCE),
        (("python", "-m", "components.storm_builtins.storm_kafka_spout"), None, KAFKA_SOURCE),
        (("node", "sentences.js"), None, DRIVER_SPOUT),
        (("python", "components/spark_spout.py"), None, DRIVER_SPOUT),
    ],
)
def test_each_spout_is_classified_by_its_command_and_batch_role(command, batch, kind):
    topology = Topology("t", (spout("src", command=command, batch=batch),))
    assert plan(topology).stage("src").role == kind


def test_bolt_roles_and_the_state_warning_only_for_plain_bolts():
    p = plan(load(WORDCOUNT_SQLITE))
    assert {s.id: s.role for s in p.stages} == {
        "lines": TRANSACTIONAL_SOURCE,
        "split": PLAIN_BOLT,
        "count": BATCH_BOLT_ROLE,
        "store": COMMITTER_ROLE,
    }
    assert [s.id for s in p.stages if STATE_WARNING in s.warnings] == ["split"]
    assert all(s.in_batch_group for s in p.stages)


def test_a_bolt_with_ticks_gets_them_on_spark_without_a_warning():
    p = plan(load(WORDCOUNT))
    report = p.stage("report")
    assert report.tick_freq == 5
    assert not any("tick" in w for w in report.warnings)
    assert [s.id for s in p.stages if s.tick_freq is not None] == ["report"]


# ---- refusals -----------------------------------------------------------------------------------


def test_a_cycle_is_refused_naming_the_file_and_a_component_on_it(tmp_path):
    for script in ("s.py", "a.py", "b.py"):
        (tmp_path / script).write_text("")
    path = tmp_path / "cycle.yaml"
    path.write_text(
        "name: cyc\n"
        "spouts:\n"
        "  src: {command: [python, s.py], outputs: [w]}\n"
        "bolts:\n"
        "  a: {command: [python, a.py], outputs: [w], inputs: {src: shuffle, b: shuffle}}\n"
        "  b: {command: [python, b.py], outputs: [w], inputs: {a: {fields: [w]}}}\n"
    )
    topology = load(path)  # host local runs cycles: only Spark refuses them
    with pytest.raises(TopologyError) as refused:
        plan(topology)
    assert str(refused.value) == (
        f"{path}: component 'a': is on a cycle (a -> b -> a): a Spark stage reads only stages "
        "computed before it, so a topology on Spark must have no cycle"
    )


def test_a_drpc_part_is_refused_naming_the_file_and_the_component():
    topology = Topology(
        "d",
        (
            Component(
                "drpc",
                SPOUT,
                (),
                outputs={"default": ("args", "return-info")},
                in_host=DRPC_SPOUT,
                drpc_function="exclaim",
            ),
            bolt("exclaim", [edge("drpc", "shuffle")]),
        ),
        source="d.yaml",
    )
    with pytest.raises(TopologyError) as refused:
        plan(topology)
    assert str(refused.value) == (
        "d.yaml: component 'drpc': is a DRPC part (drpc-spout): DRPC requests are served by the "
        "local host's DRPC server, which does not run on Spark; run this topology with "
        "`host local`"
    )


# ---- explain ------------------------------------------------------------------------------------

STATE = (
    "    warning: state is not kept between micro-batches: a plain bolt's memory may start empty "
    "at any batch (another executor, a retried task); keep state in a committer"
)
SHIPPED = (
    "shipped to the executors as archives when the master is not local (host.spark.ship: auto)"
)
HASH_WORD = "hash partitioning on word (field 0) into 2 partitions, the local router's hash"

WORDCOUNT_PLAN = f"""\
examples/wordcount/topology.yaml: plan for topology 'wordcount' on Spark: 4 stage(s), 6 partition(s)
  idle micro-batches: one after 5 s with none, while the spouts emit nothing \
(host.spark.idle.batch.secs), so that ticking bolts get their ticks
  component directories: examples/wordcount (sentences, split, count, report): {SHIPPED}
  stage 1: spout sentences: driver-staged plain spout
    runs: python sentences.py (Python)
    partitions: 1 = task 5
    role: runs in the driver: what it emits in a trigger interval is staged as that micro-batch, \
acked when the batch commits, failed if it is abandoned
    outputs:
      default [sentence] -> split (round-robin)
  stage 2: bolt split: plain bolt
    runs: bash split.sh (bash)
    partitions: 2 = tasks 6, 7
    role: processes and acks each tuple as under `host local`
    inputs:
      sentences default [sentence], shuffle: round-robin repartition into 2 partitions
    outputs:
      default [word] -> count (hash)
{STATE}
  stage 3: bolt count: plain bolt
    runs: node count.js (Node)
    partitions: 2 = tasks 2, 3
    role: processes and acks each tuple as under `host local`
    inputs:
      split default [word], fields(word): {HASH_WORD}
    outputs:
      default [word, count] -> report (single)
{STATE}
  stage 4: bolt report: plain bolt
    runs: python report.py (Python)
    partitions: 1 = task 4
    role: processes and acks each tuple as under `host local`
    ticks: every 5 s while its partition's input is written, and one at the end of that input, \
before the partition waits for its last acks (topology.tick.tuple.freq.secs = 5); between \
micro-batches, an idle one after 5 s brings the end one
    inputs:
      count default [word, count], global: all to partition 0 (task 4) of 1 partition
{STATE}
"""

WORDCOUNT_SQLITE_PLAN = f"""\
examples/transactional/wordcount-sqlite/topology.yaml: plan for topology 'wordcount-sqlite' on \
Spark: 4 stage(s), 7 partition(s)
  transactional id: wordcount-sqlite: each micro-batch is one transaction, committed in txid order
  component directories: examples/transactional/wordcount-sqlite (lines, split, count, store): \
{SHIPPED}
  stage 1: spout lines: transactional source
    runs: python -m components.transactional_files (Python)
    partitions: 2 = tasks 4, 5
    role: its batches are the micro-batches (txid = Spark batch id + 1); a batch's metadata is its \
offset, so a replay emits the same tuples
    outputs:
      default [file, lineno, line] -> split (pass-through)
  stage 2: bolt split: plain bolt in the batch group
    runs: python split.py (Python)
    partitions: 2 = tasks 6, 7
    role: processes and acks each tuple as under `host local`
    inputs:
      lines default [file, lineno, line], shuffle: no exchange (partition i feeds partition i)
    outputs:
      default [word] -> count (hash)
{STATE}
  stage 3: bolt count: batch bolt in the batch group
    runs: python count.py (Python)
    partitions: 2 = tasks 2, 3
    role: gets finish-batch at the end of its partition's batch
    inputs:
      split default [word], fields(word): {HASH_WORD}
    outputs:
      default [word, count] -> store (single)
  stage 4: bolt store: committer in the batch group
    runs: python -m components.sqlite_committer (Python)
    partitions: 1 = task 8
    role: gets finish in txid order (txid = Spark batch id + 1), after every partition of its \
batch has finished
    inputs:
      count default [word, count], global: all to partition 0 (task 8) of 1 partition
"""


@pytest.mark.parametrize(
    ("path", "expected"), [(WORDCOUNT, WORDCOUNT_PLAN), (WORDCOUNT_SQLITE, WORDCOUNT_SQLITE_PLAN)]
)
def test_explain_prints_one_block_per_stage(path, expected):
    text = explain(plan(load(path)))
    assert text.replace(f"{REPO}/", "") == expected


def test_explain_says_union_and_cache():
    topology = Topology(
        "t",
        (
            spout("a"),
            spout("b", outputs={"default": ("word", "n"), "late": ("word", "n")}),
            bolt(
                "merge",
                [edge("a", "shuffle"), edge("b", "shuffle"), edge("b", "all", stream="late")],
            ),
        ),
    )
    text = explain(plan(topology))
    assert "    inputs (a union of 3):" in text
    assert "    outputs (cached: read 2 times, computed once):" in text
    assert "      b late [word, n], all: a copy to each of 1 partition" in text
