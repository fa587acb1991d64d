"""host.runtime.context (task ids, handshake conf and context) and host.topology.settings (defaults, effective
config, -c overrides)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from host.runtime.context import (
    HandshakeCache,
    TaskMap,
    assign_tasks,
    build_conf,
    build_context,
    grouping_json,
)
from host.topology import TopologyBuilder
from host.topology.model import (
    ALL,
    BOLT,
    DIRECT,
    FIELDS,
    GLOBAL,
    LOCAL_OR_SHUFFLE,
    NONE,
    PARTIAL_KEY,
    SHUFFLE,
    SPOUT,
    Component,
    Grouping,
    Input,
    Topology,
)
from host.topology.settings import Settings

FIXTURES = Path(__file__).parent / "topologies"
SCRIPT = ["python", "sentences.py"]  # exists in FIXTURES

CONTEXT_KEYS = {
    "taskid",
    "componentid",
    "task->component",
    "streams",
    "stream->outputfields",
    "stream->target->grouping",
    "source->stream->grouping",
    "source->stream->fields",
}


def spout(id: str, outputs=None, parallelism: int = 1, config=None) -> Component:
    return Component(
        id,
        SPOUT,
        tuple(SCRIPT),
        outputs or {"default": ("x",)},
        parallelism=parallelism,
        config=config or {},
    )


def bolt(id: str, inputs=(), outputs=None, parallelism: int = 1, config=None) -> Component:
    return Component(
        id,
        BOLT,
        tuple(SCRIPT),
        outputs or {},
        tuple(inputs),
        parallelism=parallelism,
        config=config or {},
    )


def shuffle(source: str, stream: str = "default") -> Input:
    return Input(source, stream, Grouping(SHUFFLE))


def wordcount(config=None) -> Topology:
    """The topology of docs/protocol.md §15.1: sentences -> split -> count."""
    b = TopologyBuilder("wc", config=config)
    b.spout("sentences", SCRIPT, outputs=["sentence"])
    b.bolt("split", SCRIPT, outputs=["word"]).shuffle("sentences")
    b.bolt("count", SCRIPT, outputs=["word", "count"], parallelism=2).fields("split", "word")
    return b.build(base_dir=FIXTURES)


# ---- task numbering -----------------------------------------------------------------------------


def test_tasks_with_the_acker():
    t = Topology("t", (bolt("b", [shuffle("a")], parallelism=2), spout("a")))
    tasks = assign_tasks(t)
    assert tasks.task_to_component == {1: "__acker", 2: "a", 3: "b", 4: "b"}
    assert tasks.component_tasks == {"__acker": (1,), "a": (2,), "b": (3, 4)}
    assert tasks.tasks == (1, 2, 3, 4)
    assert tasks.component_of(3) == "b" and tasks.tasks_of("b") == (3, 4)
    assert tasks.tasks_of("nobody") == ()


def test_tasks_without_the_acker():
    t = Topology(
        "t",
        (spout("a"), bolt("b", [shuffle("a")], parallelism=2)),
        config={"topology.acker.executors": 0},
    )
    assert assign_tasks(t).task_to_component == {1: "a", 2: "b", 3: "b"}


def test_several_acker_tasks():
    t = Topology(
        "t",
        (spout("a"), bolt("b", [shuffle("a")], parallelism=2)),
        config={"topology.acker.executors": 2},
    )
    assert assign_tasks(t).component_tasks == {"__acker": (1, 2), "a": (3,), "b": (4, 5)}


def test_tasks_follow_code_point_order_of_ids():
    # upper case < '_' < lower case, as Storm sorts
    t = Topology("t", (spout("zeta"), spout("Alpha", parallelism=2), spout("beta"), spout("_x")))
    assert assign_tasks(t).task_to_component == {
        1: "Alpha",
        2: "Alpha",
        3: "__acker",
        4: "_x",
        5: "beta",
        6: "zeta",
    }


# ---- groupings in the context -------------------------------------------------------------------


@pytest.mark.parametrize(
    "grouping, encoded",
    [
        (Grouping(FIELDS, ("word", "n")), {"type": "FIELDS", "fields": ["word", "n"]}),
        (Grouping(GLOBAL), {"type": "FIELDS", "fields": []}),
        (Grouping(SHUFFLE), {"type": "SHUFFLE"}),
        (Grouping(ALL), {"type": "ALL"}),
        (Grouping(NONE), {"type": "NONE"}),
        (Grouping(DIRECT), {"type": "DIRECT"}),
        (Grouping(LOCAL_OR_SHUFFLE), {"type": "LOCAL_OR_SHUFFLE"}),
        (Grouping(PARTIAL_KEY, ("word",)), {"type": "CUSTOM_SERIALIZED"}),
    ],
)
def test_grouping_json(grouping, encoded):
    assert grouping_json(grouping) == encoded


# ---- context ------------------------------------------------------------------------------------


def test_context_of_the_split_bolt_of_spec_15_1():
    t = wordcount()
    tasks = assign_tasks(t)
    assert tasks.task_to_component == {
        1: "__acker",
        2: "count",
        3: "count",
        4: "sentences",
        5: "split",
    }
    context = build_context(t, tasks, "split", 5)
    # as in §15.1, except that our task ids follow Storm's numbering rule exactly
    assert context == {
        "taskid": 5,
        "componentid": "split",
        "task->component": {
            "1": "__acker",
            "2": "count",
            "3": "count",
            "4": "sentences",
            "5": "split",
        },
        "streams": ["default"],
        "stream->outputfields": {"default": ["word"]},
        "stream->target->grouping": {"default": {"count": {"type": "FIELDS", "fields": ["word"]}}},
        "source->stream->grouping": {"sentences": {"default": {"type": "SHUFFLE"}}},
        "source->stream->fields": {"sentences": {"default": ["sentence"]}},
    }
    assert json.loads(json.dumps(context)) == context  # JSON-ready: string keys, lists


def test_spout_context_has_every_key_and_no_sources():
    t = wordcount({"topology.acker.executors": 0})
    tasks = assign_tasks(t)
    context = build_context(t, tasks, t.component("sentences"), 3)
    assert set(context) == CONTEXT_KEYS
    assert context["task->component"] == {
        "1": "count",
        "2": "count",
        "3": "sentences",
        "4": "split",
    }
    assert context["source->stream->grouping"] == {}
    assert context["source->stream->fields"] == {}
    assert context["stream->target->grouping"] == {"default": {"split": {"type": "SHUFFLE"}}}


def test_context_streams_targets_and_source_fields():
    a = spout("a", outputs={"default": ("w", "n"), "errors": ("reason",), "quiet": ()})
    b = bolt(
        "b",
        [Input("a", "errors", Grouping(GLOBAL))],
        outputs={"default": ("x",), "side": ("y", "z")},
    )
    c = bolt("c", [Input("a", "errors", Grouping(ALL)), Input("b", "side", Grouping(DIRECT))])
    t = Topology("t", (a, b, c))
    tasks = assign_tasks(t)
    ctx_a = build_context(t, tasks, "a", tasks.tasks_of("a")[0])
    assert ctx_a["streams"] == ["default", "errors", "quiet"]
    assert ctx_a["stream->outputfields"] == {
        "default": ["w", "n"],
        "errors": ["reason"],
        "quiet": [],
    }
    # only streams with subscribers
    assert ctx_a["stream->target->grouping"] == {
        "errors": {"b": {"type": "FIELDS", "fields": []}, "c": {"type": "ALL"}}
    }
    ctx_c = build_context(t, tasks, "c", tasks.tasks_of("c")[0])
    assert ctx_c["streams"] == [] and ctx_c["stream->target->grouping"] == {}
    assert ctx_c["source->stream->grouping"] == {
        "a": {"errors": {"type": "ALL"}},
        "b": {"side": {"type": "DIRECT"}},
    }
    # every stream of every source, with the exact declared fields
    assert ctx_c["source->stream->fields"] == {
        "a": {"default": ["w", "n"], "errors": ["reason"], "quiet": []},
        "b": {"default": ["x"], "side": ["y", "z"]},
    }


def test_context_for_a_task_of_another_component_is_refused():
    t = wordcount()
    with pytest.raises(ValueError, match="task 1 belongs to '__acker', not to 'split'"):
        build_context(t, assign_tasks(t), "split", 1)


# ---- conf ---------------------------------------------------------------------------------------


def test_conf_has_what_storm_and_the_libraries_expect():
    t = wordcount({"topology.max.spout.pending": 100, "app.greeting": "hi"})
    conf = build_conf(t, "split", "1700000000")
    assert conf["topology.name"] == "wc"
    assert conf["storm.id"] == "wc-1700000000"
    assert conf["storm.cluster.mode"] == "local"
    assert conf["topology.debug"] is False
    assert conf["topology.message.timeout.secs"] == 30
    assert conf["topology.max.spout.pending"] == 100
    assert conf["app.greeting"] == "hi"
    assert "topology.tick.tuple.freq.secs" not in conf  # bolts: only when configured
    assert json.loads(json.dumps(conf)) == conf


def test_conf_leaves_out_unset_keys_and_gives_spouts_the_timeout_as_tick():
    t = wordcount({"topology.message.timeout.secs": 12, "topology.max.spout.pending": None})
    spout_conf = build_conf(t, t.component("sentences"), 3)
    assert "topology.max.spout.pending" not in spout_conf
    assert spout_conf["topology.tick.tuple.freq.secs"] == 12
    assert spout_conf["storm.id"] == "wc-3"


def test_handshake_cache_matches_the_functions_and_hands_out_copies():
    t = wordcount()
    tasks = assign_tasks(t)
    cache = HandshakeCache(t, tasks, "r1")
    first = cache.context("count", 3)
    assert first == build_context(t, tasks, "count", 3)
    assert cache.context("count", 2)["taskid"] == 2
    first["source->stream->fields"]["split"]["default"].append("corrupted")
    assert cache.context("count", 3) == build_context(t, tasks, "count", 3)
    conf = cache.conf("count")
    assert conf == build_conf(t, "count", "r1")
    conf["topology.name"] = "changed"
    assert cache.conf("count")["topology.name"] == "wc"
    with pytest.raises(ValueError):
        cache.context("count", 4)


# ---- property: task maps and contexts agree -----------------------------------------------------

ids = st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,5}", fullmatch=True).filter(
    lambda s: not s.startswith("__")
)
GROUPINGS = [
    Grouping(SHUFFLE),
    Grouping(ALL),
    Grouping(GLOBAL),
    Grouping(NONE),
    Grouping(DIRECT),
    Grouping(LOCAL_OR_SHUFFLE),
    Grouping(FIELDS, ("a",)),
    Grouping(PARTIAL_KEY, ("a",)),
]


@st.composite
def topologies(draw) -> Topology:
    names = draw(st.lists(ids, min_size=1, max_size=6, unique=True))
    n_spouts = draw(st.integers(1, len(names)))
    outputs = {
        n: {
            s: ("a", "b")
            for s in draw(st.lists(st.sampled_from(["default", "s1"]), min_size=1, unique=True))
        }
        for n in names
    }
    b = TopologyBuilder(
        "prop", config={"topology.acker.executors": draw(st.sampled_from([None, 0, 1, 3]))}
    )
    for i, name in enumerate(names):
        parallelism = draw(st.integers(1, 4))
        if i < n_spouts:
            b.spout(name, SCRIPT, outputs[name], parallelism)
            continue
        declarer = b.bolt(name, SCRIPT, outputs[name], parallelism)
        pairs = [(src, s) for src in names for s in outputs[src]]
        for src, stream in draw(
            st.lists(st.sampled_from(pairs), min_size=1, max_size=3, unique=True)
        ):
            g = draw(st.sampled_from(GROUPINGS))
            declarer.grouping(src, g.type, g.fields, stream)
    return b.build(base_dir=FIXTURES)


def check_task_map(t: Topology, tasks: TaskMap) -> None:
    ackers = Settings.from_config(t.config).acker_tasks
    total = sum(c.parallelism for c in t.components) + ackers
    assert tasks.tasks == tuple(range(1, total + 1))
    blocks = [tasks.tasks_of(cid) for cid in sorted(tasks.component_tasks)]
    assert [task for block in blocks for task in block] == list(range(1, total + 1))
    for c in t.components:
        assert len(tasks.tasks_of(c.id)) == c.parallelism
    assert len(tasks.tasks_of("__acker")) == ackers


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(topologies())
def test_random_topologies_have_consistent_tasks_and_contexts(t):
    tasks = assign_tasks(t)
    check_task_map(t, tasks)
    contexts = {
        task: build_context(t, tasks, cid, task)
        for task, cid in tasks.task_to_component.items()
        if cid != "__acker"
    }
    expected_map = {str(k): v for k, v in tasks.task_to_component.items()}
    for task, ctx in contexts.items():
        assert set(ctx) == CONTEXT_KEYS
        assert ctx["taskid"] == task and ctx["componentid"] == tasks.component_of(task)
        assert ctx["task->component"] == expected_map
    by_component = {ctx["componentid"]: ctx for ctx in contexts.values()}
    for c in t.bolts:
        for inp in c.inputs:
            mine = by_component[c.id]["source->stream->grouping"][inp.source][inp.stream]
            theirs = by_component[inp.source]["stream->target->grouping"][inp.stream][c.id]
            assert mine == theirs == grouping_json(inp.grouping)
            assert (
                by_component[c.id]["source->stream->fields"][inp.source]
                == by_component[inp.source]["stream->outputfields"]
            )
