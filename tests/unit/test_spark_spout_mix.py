"""Which spouts run together on the Spark engine (host/spark/spout_mix.py; docs/spark.md §4.9):
plain spouts are one staged source, beside any transactional and Kafka sources, which open each
txid together, and beside Spark spouts, whose next files join each txid (a streaming input's
micro-batches staged by its relay query); `--explain` shows every source. Pure: no Spark."""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given
from hypothesis import strategies as st

from host.errors import TopologyError
from host.spark.engine import check_supported
from host.spark.explain import explain
from host.spark.plan import DRIVER_SPOUT, KAFKA_SOURCE, SPARK_INPUT, TRANSACTIONAL_SOURCE, plan
from host.spark.spout_mix import check_sources, refusal
from host.topology.model import BATCH_SPOUT, BOLT, SPOUT, Component, Grouping, Input, Topology

KAFKA = ("python", "-m", "components.kafka_spout")
SPARK_SPOUT = ("python", "-m", "components.spark_spout")
STREAMING = {"spark.spout.source": "streaming"}


def spout(id: str, command: tuple[str, ...] = ("python", "s.py"), **kw: object) -> Component:
    return Component(id, SPOUT, command, outputs={"default": ("id", "text")}, **kw)  # type: ignore[arg-type]


def topology(*spouts: Component) -> Topology:
    inputs = tuple(Input(s.id, "default", Grouping("shuffle")) for s in spouts)
    sink = Component("sink", BOLT, ("python", "b.py"), outputs={}, inputs=inputs, parallelism=2)
    return Topology("several", (*spouts, sink), source="several.yaml")


def test_plain_spouts_run_together_in_every_language():
    p = plan(
        topology(
            spout("py", parallelism=2),
            spout("js", ("node", "s.js")),
            spout("sh", ("bash", "s.sh")),
        )
    )
    stages = check_sources(p)
    assert [s.id for s in stages] == ["py", "js", "sh"]
    assert {s.role for s in stages} == {DRIVER_SPOUT}
    assert check_supported(p).id == "py"
    assert refusal(p) is None


def test_one_spout_of_any_kind_runs_alone():
    for one in (spout("k", KAFKA), spout("b", batch=BATCH_SPOUT), spout("p")):
        assert refusal(plan(topology(one))) is None


@pytest.mark.parametrize(
    "spouts, first_batch_spout",
    [
        ((spout("p"), spout("k", KAFKA)), "k"),
        ((spout("b", batch=BATCH_SPOUT), spout("p")), "b"),
        ((spout("p1", parallelism=2), spout("k", KAFKA), spout("p2", ("node", "s.js"))), "k"),
        ((spout("k1", KAFKA), spout("k2", KAFKA, parallelism=3)), "k1"),
        ((spout("b", batch=BATCH_SPOUT), spout("k", KAFKA), spout("p")), "b"),
    ],
)
def test_plain_spouts_run_beside_transactional_and_kafka_sources_which_open_the_txids(
    spouts, first_batch_spout
):
    p = plan(topology(*spouts))
    assert refusal(p) is None
    assert [s.id for s in check_sources(p)] == [s.id for s in spouts]
    assert check_supported(p).id == first_batch_spout
    assert check_supported(p).role in (KAFKA_SOURCE, TRANSACTIONAL_SOURCE)


@pytest.mark.parametrize(
    "spouts",
    [
        (spout("s", SPARK_SPOUT, config=STREAMING), spout("p")),
        (spout("k", KAFKA), spout("s", SPARK_SPOUT, config=STREAMING), spout("d", SPARK_SPOUT)),
        (spout("s", SPARK_SPOUT, config=STREAMING), spout("t", SPARK_SPOUT, config=STREAMING)),
    ],
)
def test_a_streaming_spark_input_runs_beside_any_spout_through_its_relay(spouts):
    p = plan(topology(*spouts))
    assert refusal(p) is None
    assert [s.id for s in check_sources(p)] == [s.id for s in spouts]
    check_supported(p)  # the engine takes it
    lines = explain(p).splitlines()
    streaming = [s.id for s in spouts if s.config == STREAMING]
    names = ", ".join(repr(i) for i in streaming)
    plural = "s" if len(streaming) > 1 else ""
    assert (
        f"  the streaming input{plural} of {names}: a relay query in the driver stages each of "
        "Spark's micro-batches of it, and those are its next files, in order"
    ) in lines
    for i in streaming:
        assert any(
            line.startswith(f"    {i}: {SPARK_INPUT} (streaming, relayed), task(s) ")
            for line in lines
        ), lines


def test_a_topology_without_a_spout_is_refused_naming_the_file():
    sink = Component("sink", BOLT, ("python", "b.py"), outputs={})
    p = plan(Topology("none", (sink,), source="none.yaml"))
    with pytest.raises(TopologyError) as caught:
        check_sources(p)
    assert str(caught.value).startswith("none.yaml: ")
    assert "has no spout" in str(caught.value)


@pytest.mark.parametrize(
    "spouts",
    [
        (spout("s", SPARK_SPOUT), spout("p")),
        (spout("s", SPARK_SPOUT, config={"spark.spout.source": "directory"}), spout("k", KAFKA)),
        (spout("k", KAFKA), spout("s", SPARK_SPOUT), spout("b", batch=BATCH_SPOUT)),
        (spout("s", SPARK_SPOUT), spout("t", SPARK_SPOUT)),
    ],
)
def test_a_spark_spout_reading_a_dataframe_or_directories_runs_beside_any_spout(spouts):
    p = plan(topology(*spouts))
    assert refusal(p) is None
    assert [s.id for s in check_sources(p)] == [s.id for s in spouts]


def test_explain_says_what_a_spark_input_adds_to_each_micro_batch():
    lines = explain(plan(topology(spout("s", SPARK_SPOUT), spout("p")))).splitlines()
    at = lines.index(
        "  sources: the Spark input of 's' beside 1 plain spout staged in the driver: each "
        "micro-batch holds what the plain spouts emitted by then and the input's next files "
        "(none when it has nothing new), once a trigger interval when either has something, "
        "one transaction over all"
    )
    assert lines[at + 1 : at + 3] == [
        f"    s: {SPARK_INPUT}, task(s) 3",
        "    p: driver-staged plain spout, task(s) 2",
    ]
    lines = explain(plan(topology(spout("k", KAFKA), spout("s", SPARK_SPOUT)))).splitlines()
    at = lines.index(
        "  sources: 'k' opens the txids: each micro-batch is one of its batches (none while it "
        "has none), one transaction over all"
    )
    assert lines[at + 1] == (
        "  and the Spark input of 's' adds its next files to each of those micro-batches (none "
        "when it has nothing new)"
    )


def test_explain_lists_every_source_of_several_plain_spouts():
    text = explain(plan(topology(spout("py", parallelism=2), spout("js", ("node", "s.js")))))
    lines = text.splitlines()
    at = lines.index(
        "  sources: 2 plain spouts, staged together: each micro-batch holds what every one of "
        "them emitted (one staged file per spout task), one transaction over all"
    )
    # in the plan's order (the file's); task ids as `host local` gives them (code-point order of
    # the ids, __acker first)
    assert lines[at + 1 : at + 3] == [
        "    py: driver-staged plain spout, task(s) 3, 4",
        "    js: driver-staged plain spout, task(s) 2",
    ]
    # beside a Kafka source, which opens the txids
    lines = explain(plan(topology(spout("py"), spout("k", KAFKA)))).splitlines()
    at = lines.index(
        "  sources: 'k' opens the txids and 1 plain spout staged beside: each micro-batch is one "
        "batch of 'k' with what the plain spouts emitted by then (none while it has no batch), "
        "one transaction over all"
    )
    assert lines[at + 1 : at + 3] == [
        "    py: driver-staged plain spout, task(s) 3",
        f"    k: {KAFKA_SOURCE}, task(s) 2",
    ]
    # two Kafka sources and two plain spouts
    lines = explain(
        plan(topology(spout("a", KAFKA), spout("b", KAFKA), spout("c"), spout("d")))
    ).splitlines()
    assert (
        "  sources: 'a', 'b' open the txids and 2 plain spouts staged beside: each micro-batch "
        "is one batch of 'a', 'b' with what the plain spouts emitted by then (none while one of "
        "them has no batch), one transaction over all"
    ) in lines
    # two Kafka sources alone
    lines = explain(plan(topology(spout("a", KAFKA), spout("b", KAFKA)))).splitlines()
    assert (
        "  sources: 2 batch spouts ('a', 'b'), opened together: each micro-batch is one batch of "
        "each (none while one of them has no batch), one transaction over all"
    ) in lines
    # a single spout's plan has no sources line
    assert "sources:" not in explain(plan(topology(spout("py"))))


# ---- the staged batch's cut: fair between the tasks of every spout -----------------------------


def test_a_batch_is_shared_fairly_between_the_spouts_tasks():
    from host.spark.batch_shares import fair_shares

    assert fair_shares([30, 40], 100) == [30, 40]  # it all fits
    assert fair_shares([500, 0, 500], 200) == [100, 0, 100]  # one fast spout keeps no one out
    assert fair_shares([10, 500, 500], 201) == [10, 96, 95]  # the rest of a small one shared
    assert fair_shares([7, 7, 7], 10) == [4, 3, 3]  # the remainder to the first tasks


@given(st.lists(st.integers(0, 1000), min_size=1, max_size=8), st.integers(1, 3000))
def test_fair_shares_fill_the_batch_and_cut_only_the_largest(sizes, limit):
    from host.spark.batch_shares import fair_shares

    shares = fair_shares(sizes, limit)
    assert sum(shares) == min(sum(sizes), limit)
    assert all(0 <= n <= size for n, size in zip(shares, sizes, strict=True))
    cut_short = [n for n, size in zip(shares, sizes, strict=True) if n < size]
    if cut_short:  # a task cut short got at least as much as any other task, less one
        assert min(cut_short) >= max(shares) - 1


def test_idle_micro_batches_are_txids_beside_plain_spouts_alone_and_hold_none_beside_batch_spouts():
    """Ticks go on through idle micro-batches: beside plain spouts alone each is a txid of its
    own; beside a batch spout or a Kafka spout, alone or with others, whose coordinators say
    when there is a txid, one holds none (docs/spark.md §2.4, §4.9)."""

    def ticking(*spouts: Component) -> Topology:
        t = topology(*spouts)
        sink = dataclasses.replace(t.components[-1], config={"topology.tick.tuple.freq.secs": 1})
        return dataclasses.replace(t, components=(*t.components[:-1], sink))

    assert "  idle micro-batches: one after 1 s" in explain(plan(ticking(spout("p"))))
    no_txid = "  idle micro-batches: one after 1 s with none, while a batch spout's coordinator"
    for spouts in (
        (spout("b", batch=BATCH_SPOUT),),
        (spout("k", KAFKA),),
        (spout("p"), spout("k", KAFKA)),
        (spout("p"), spout("b", batch=BATCH_SPOUT)),
    ):
        explained = explain(plan(ticking(*spouts)))
        assert no_txid in explained
        assert "one holds no txid, so only the plain bolts run in it" in explained
        assert "an idle one after 1 s brings the end one" in explained  # the plain sink's ticks
        assert explained.count("idle micro-batches:") == 1
    # a ticking batch bolt beside the plain sink: no idle micro-batch brings its end tick
    t = ticking(spout("b", batch=BATCH_SPOUT))
    inputs = (Input("b", "default", Grouping("shuffle")),)
    tick = {"topology.tick.tuple.freq.secs": 1}
    counting = Component(
        "partial", BOLT, ("p",), outputs={}, inputs=inputs, batch="bolt", config=tick
    )
    with_batch_bolt = explain(plan(dataclasses.replace(t, components=(*t.components, counting))))
    partial_stage = with_batch_bolt[with_batch_bolt.index("bolt partial:") :]
    assert "none between micro-batches" in partial_stage.split("\n  stage")[0]
