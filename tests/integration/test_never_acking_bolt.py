"""A bolt that never acks, behind a fast spout, with real processes: the flow does not stop.

storm-starter's word count on Storm's `storm.rb`: `splitsentence.rb` emits words and acks nothing
(`Storm::Bolt` does not ack by default), behind a spout that emits sentences as fast as it may,
without message ids. Storm's `ShellBolt` keeps the unacked tuples for ever and runs on; here the
oldest are forgotten once the bolt's in-flight bound is reached (docs/protocol.md §4.5). The same
split written with our Python client (whose `Bolt` does not ack by default either), with the
bounds and the message timeout made small so that a few seconds exercise what a long run does;
`python -m benchmarks.never_acking` is the 60 s run with the default bounds.
"""

from __future__ import annotations

import json
import logging
from typing import Any

import psutil

from benchmarks.never_acking import COUNT, SPLIT_NEVER_ACKS, SPOUT
from host.observe.snapshot import Snapshot
from host.runtime.supervisor import Supervisor
from host.topology import TopologyBuilder

BOUND = 50  # host.bolt.max.in.flight
QUEUE = 20  # topology.shellbolt.max.pending


def word_count(tracked: bool) -> Any:
    b = TopologyBuilder(
        "never-acking",
        config={
            "topology.message.timeout.secs": 1,
            "host.bolt.max.in.flight": BOUND,
            "topology.shellbolt.max.pending": QUEUE,
            "host.shutdown.grace.secs": 0.5,
        },
    )
    b.spout(
        "spout", ["python", "-c", SPOUT], outputs=["sentence"], config={"bench.tracked": tracked}
    )
    b.bolt("split", ["python", "-c", SPLIT_NEVER_ACKS], outputs=["word"]).shuffle("spout")
    b.bolt("count", ["python", "-c", COUNT], outputs=[]).fields("split", "word")
    return b.build()


class Sample:
    def __init__(self, snap: Snapshot, rss: int) -> None:
        spout, split = snap["components"]["spout"], snap["components"]["split"]
        self.t = snap["topology"]["uptime_s"]
        self.emitted = spout["emitted"]
        self.to_split = spout["transferred"]  # tuples delivered to split's one task
        self.never_acked = split.get("never_acked", 0)
        self.in_flight, self.queued = split["in_flight"], split["queued"]
        self.timed_out = snap["topology"]["spout_tuples_timed_out"]
        self.rss = rss


def run(tracked: bool, seconds: float) -> tuple[list[Sample], Snapshot]:
    sup = Supervisor(word_count(tracked))
    me = psutil.Process()
    samples: list[Sample] = []
    sup.report_every = 0.25
    sup.on_report = lambda snap: samples.append(Sample(snap, me.memory_info().rss))
    assert sup.run(seconds) == 0
    return samples, sup.snapshot()


def emitted_per_s(samples: list[Sample], start: float, end: float) -> float:
    inside = [s for s in samples if start <= s.t <= end]
    first, last = inside[0], inside[-1]
    return (last.emitted - first.emitted) / (last.t - first.t)


def check_accounting(samples: list[Sample]) -> None:
    """Every tuple delivered to split is in flight, queued, or forgotten: none is lost from the
    count, and what the host holds for it stays within its bounds."""
    for s in samples:
        assert s.to_split == s.never_acked + s.in_flight + s.queued, vars(s)
        assert s.in_flight <= BOUND


def test_the_flow_goes_on_past_a_bolt_that_never_acks_untracked_tuples(caplog):
    caplog.set_level(logging.WARNING)
    samples, snap = run(tracked=False, seconds=10)
    # the precondition: split filled its bound and then had tuples forgotten
    began = next(s for s in samples if s.never_acked)
    assert began.t < 5, "forgetting begins once split has read past tuples without acking"
    frozen_at = BOUND + QUEUE + 10 * 2  # where the flow stopped before: a next's batch or two
    assert samples[-1].emitted > 20 * frozen_at
    # the spout keeps its rate: the last 2 s against the 2 s after forgetting began
    early = emitted_per_s(samples, began.t + 0.5, began.t + 2.5)
    late = emitted_per_s(samples, samples[-1].t - 2, samples[-1].t)
    assert late >= 0.5 * early, (early, late)
    check_accounting(samples)
    # host memory: flat once the flow is steady (the target is < 20 MB over 60 s)
    steady = next(s for s in samples if s.t >= began.t + 1)
    assert samples[-1].rss - steady.rss < 20 * 2**20
    split = snap["components"]["split"]
    assert split["acked"] == 0 and split["errors"] == 0 and split["restarts"] == 0
    assert (
        split["tasks_detail"][0]["never_acked"] == split["never_acked"] >= samples[-1].never_acked
    )
    assert snap["components"]["count"]["acked"] > 0, "the words flowed on downstream"
    assert snap["components"]["count"].get("never_acked") == 0, "count acks: none forgotten"
    warnings = [r.getMessage() for r in caplog.records if "never acked" in r.getMessage()]
    assert len(warnings) == 1 and "split[" in warnings[0] and "does it ack" in warnings[0]


def test_the_flow_goes_on_once_the_spout_tuples_a_bolt_never_acked_time_out(caplog):
    caplog.set_level(logging.WARNING)
    samples, snap = run(tracked=True, seconds=6)
    began = next(s for s in samples if s.never_acked)
    assert began.timed_out > 0, "tracked tuples are forgotten only once their spout tuples are"
    assert samples[-1].emitted > 3 * (BOUND + QUEUE)
    # tuples time out 1 to 1.5 s after their emit, noticed once a second: a cycle of 2 s
    last = [s for s in samples if s.t >= samples[-1].t - 3]
    assert last[-1].emitted > last[0].emitted, "still emitting at the end"
    assert last[-1].never_acked > last[0].never_acked
    check_accounting(samples)
    assert snap["topology"]["spout_tuples_timed_out"] > BOUND
    assert snap["components"]["count"].get("never_acked") == 0, "count acks: none forgotten"
    warnings = [r.getMessage() for r in caplog.records if "never acked" in r.getMessage()]
    assert len(warnings) == 1 and "timed out" in warnings[0]


def test_the_60_s_benchmark_runs(tmp_path, capsys):
    """`python -m benchmarks.never_acking` (the issue's 60 s measurement), for 3 s."""
    from benchmarks import never_acking

    assert never_acking.main(["--duration", "3", "--json", str(tmp_path / "r.json")]) == 0
    out = capsys.readouterr().out
    assert "rate_ratio" in out and "rss_growth_mb" in out
    result = json.loads((tmp_path / "r.json").read_text())["result"]
    assert result["never_acked"] > 0 and result["split_acked"] == 0 and result["targets_met"]
