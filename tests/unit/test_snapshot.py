"""host.observe.snapshot: a real run's snapshot (live and final, and as the stats file's JSON)
has every key of the schema with its type, and nothing the schema does not describe; and the
run-time checker used for that (tests/support/typed_dict_check.py) finds what it should.

No `from __future__ import annotations`: the TypedDicts below must see their `NotRequired`."""

import json
from typing import Any, NotRequired, TypedDict

import pytest

from host.observe.snapshot import Snapshot
from host.observe.web.server import to_json
from host.testing import FakeClock, TopologyResult, run_topology
from host.topology import TopologyBuilder
from tests.support.typed_dict_check import typed_dict_problems

# enough that the host's 1-in-8 sample of process latency (random tuple ids) has a sample:
# none in 400 has a chance of (7/8)**400, 1e-23 (in 40 it was 0.5 %: the test failed so)
WORDS = [[f"w{i % 5}"] for i in range(400)]

# counts every word, logs the first, reports a custom metric; exits at its first tick once it has
# counted every word (the file named by argv[1] marks that it did), for a failure report and a
# restart. Not at its first tick ever: under load the fake clock can reach the tick before the
# words, and the harness's spout does not replay what a crash fails. What it wrote is flushed
# before it exits, so every word's ack, metric and log reach the host.
COUNT_BOLT = f"""
import os, sys
from multilang import BasicBolt
class Count(BasicBolt):
    def initialize(self, conf, context):
        self.counts = {{}}
        self.seen = 0
    def process(self, tup):
        word = tup.values[0]
        self.counts[word] = self.counts.get(word, 0) + 1
        self.seen += 1
        if len(self.counts) == 1:
            self.log(f"first word {{word}}")
        self.metrics("words", 1)
        self.emit([word, self.counts[word]])
    def process_tick(self, tup):
        if self.seen == {len(WORDS)} and not os.path.exists(sys.argv[1]):
            open(sys.argv[1], "w").close()
            self.flush()
            os._exit(3)
Count().run()
"""


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    marker = tmp_path_factory.mktemp("snapshot") / "crashed"
    b = TopologyBuilder("schema")
    b.spout("words", ["python", "-c", "raise SystemExit(3)"], outputs=["word"])
    b.bolt(
        "count",
        ["python", "-c", COUNT_BOLT, str(marker)],
        outputs=["word", "count"],
        config={"topology.tick.tuple.freq.secs": 5},
    ).shuffle("words")
    live: list[Snapshot] = []

    def until(result: TopologyResult) -> bool:
        if not live and result.values("count"):
            live.append(result.snapshot)
        restarted = any(line.message.startswith("restarting count") for line in result.logs)
        return restarted and result.quiescent

    result = run_topology(
        b.build(), inputs={"words": WORDS}, until=until, clock=FakeClock(), timeout=30
    )
    assert result.stopped_because == "until", result.report()
    assert live, result.report()
    return result, live[0]


def test_the_final_snapshot_fits_the_schema_exactly(run):
    result, _ = run
    assert typed_dict_problems(result.snapshot, Snapshot, extra_keys=False) == []


def test_a_live_snapshot_fits_the_schema_exactly(run):
    _, live = run
    assert typed_dict_problems(live, Snapshot, extra_keys=False) == []
    assert "running" in live["components"]["count"]["states"]


def test_the_stats_file_and_the_web_ui_json_fit_the_schema(run):
    result, live = run
    assert typed_dict_problems(json.loads(json.dumps(result.snapshot)), Snapshot) == []
    assert typed_dict_problems(json.loads(to_json(live)), Snapshot) == []


def test_the_run_exercised_every_optional_key(run):
    """So that the checks above covered the optional parts of the schema too."""
    result, _ = run
    snap = result.snapshot
    count, words = snap["components"]["count"], snap["components"]["words"]
    optional = {"process_latency_ms", "last_error", "last_error_at", "metrics", "capacity"}
    assert optional | {"never_acked"} <= set(count)
    assert "never_acked" in count["tasks_detail"][0]
    assert "capacity" not in words and "never_acked" not in words  # a bolt's
    assert count["metrics"]["words"] == len(WORDS)
    assert count["restarts"] == 1 and count["tasks_detail"][0]["restarts"] == 1
    assert [f["component"] for f in snap["failures"]] == ["count"]
    assert any(log["message"] == "first word w0" for log in snap["recent_logs"])
    assert snap["topology"]["spout_tuples_acked"] == len(WORDS)


# ---- the checker --------------------------------------------------------------------------------


class Inner(TypedDict):
    n: int
    ratio: float
    note: NotRequired[str]


class Outer(TypedDict):
    name: str
    pid: int | None
    items: list[Inner]
    by_id: dict[str, Inner]
    extra: dict[str, Any]


def good() -> dict[str, Any]:
    return {
        "name": "x",
        "pid": None,
        "items": [{"n": 1, "ratio": 0.5}, {"n": 2, "ratio": 2, "note": "an int is a float"}],
        "by_id": {"a": {"n": 3, "ratio": 1.5}},
        "extra": {"anything": [1, "b"]},
    }


def test_checker_accepts_a_fitting_value():
    assert typed_dict_problems(good(), Outer, extra_keys=False) == []


@pytest.mark.parametrize(
    "change, problem",
    [
        (lambda v: v.pop("name"), "(top): Outer key 'name' is missing"),
        (lambda v: v.update(pid="7"), "pid: expected int | None, got '7'"),
        (lambda v: v["items"][1].pop("n"), "items[1]: Inner key 'n' is missing"),
        (lambda v: v["items"][0].update(n=True), "items[0].n: expected int, got True"),
        (lambda v: v["items"][0].update(ratio=None), "items[0].ratio: expected float, got None"),
        (lambda v: v["items"][0].update(note=3), "items[0].note: expected str, got 3"),
        (lambda v: v.update(items={}), "items: expected a list, got {}"),
        (lambda v: v["by_id"].update(b=[]), "by_id.b: expected an object (Inner), got []"),
        (lambda v: v["by_id"].update({1: v["by_id"]["a"]}), "by_id key 1: expected str, got 1"),
    ],
)
def test_checker_names_each_problem_and_where(change, problem):
    value = good()
    change(value)
    assert typed_dict_problems(value, Outer) == [problem]


def test_checker_reports_unknown_keys_only_when_asked():
    value = good()
    value["items"][0]["later"] = 1
    assert typed_dict_problems(value, Outer) == []
    assert typed_dict_problems(value, Outer, extra_keys=False) == [
        "items[0]: Inner has no key 'later'"
    ]
