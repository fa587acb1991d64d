"""never-acking: a bolt that never acks, behind a fast spout, for 60 s (issue 20, item 4).

storm-starter's word count on Storm's `storm.rb`: `splitsentence.rb` emits words and acks nothing
(`Storm::Bolt` does not ack by default), behind a spout that emits sentences as fast as it is
asked, without message ids (storm-starter's `RandomSentenceSpout`). Written here with our Python
client, whose `Bolt` does not ack by default either; `count` acks what it gets. The host's
default bounds (`host.bolt.max.in.flight` 1000, `topology.shellbolt.max.pending` 100,
`topology.message.timeout.secs` 30). `--tracked`: the spout gives message ids, so the tuples
split never acks are forgotten only once their spout tuples time out.

The host runs in this process (as `python -m host local` does), so its RSS is this process's.
Targets: the spout's emit rate over the last 10 s >= 0.5x its rate over the first 10 s; host RSS
growth < 20 MB over the run (from 1 s in, once the components are up).

    python -m benchmarks.never_acking [--duration 60] [--tracked] [--json PATH]
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from dataclasses import asdict, dataclass
from typing import Any

import psutil

from host.observe.snapshot import Snapshot
from host.runtime.supervisor import Supervisor
from host.topology import TopologyBuilder

SPOUT = """
from multilang import Spout
SENTENCES = ["the cow jumped over the moon", "an apple a day keeps the doctor away",
             "four score and seven years ago", "snow white and the seven dwarfs",
             "i am at two with nature"]
class Sentences(Spout):
    def initialize(self, conf, context):
        self.tracked = conf.get("bench.tracked", False)
        self.n = 0
    def next_tuple(self):
        for _ in range(10):
            self.n += 1
            sentence = SENTENCES[self.n % len(SENTENCES)]
            if self.tracked:
                self.emit([sentence], id=self.n)
            else:
                self.emit([sentence])
Sentences().run()
"""

# splitsentence.rb on storm.rb: every word emitted unanchored, nothing acked
SPLIT_NEVER_ACKS = """
from multilang import Bolt
class Split(Bolt):
    def process(self, tup):
        for word in tup.values[0].split(" "):
            self.emit([word])
Split().run()
"""

COUNT = """
from multilang import BasicBolt
class Count(BasicBolt):
    def initialize(self, conf, context):
        self.counts = {}
    def process(self, tup):
        word = tup.values[0]
        self.counts[word] = self.counts.get(word, 0) + 1
Count().run()
"""

SAMPLE_EVERY = 0.5
WINDOW = 10.0  # seconds: the first and the last window's emit rates are compared
RSS_FROM = 1.0  # RSS growth is measured from this far into the run
RSS_TARGET = 20 * 2**20


@dataclass
class Sample:
    t: float
    emitted: int
    never_acked: int
    in_flight: int
    queued: int
    timed_out: int
    rss: int


def topology(tracked: bool) -> Any:
    b = TopologyBuilder("never-acking")
    b.spout("spout", [sys.executable, "-c", SPOUT], ["sentence"], config={"bench.tracked": tracked})
    b.bolt("split", [sys.executable, "-c", SPLIT_NEVER_ACKS], ["word"]).shuffle("spout")
    b.bolt("count", [sys.executable, "-c", COUNT], []).fields("split", "word")
    return b.build()


def measure(duration: float, tracked: bool) -> tuple[list[Sample], Snapshot]:
    sup = Supervisor(topology(tracked))
    me = psutil.Process()
    samples: list[Sample] = []

    def sample(snap: Snapshot) -> None:
        split = snap["components"]["split"]
        samples.append(
            Sample(
                t=snap["topology"]["uptime_s"],
                emitted=snap["components"]["spout"]["emitted"],
                never_acked=split.get("never_acked", 0),
                in_flight=split["in_flight"],
                queued=split["queued"],
                timed_out=snap["topology"]["spout_tuples_timed_out"],
                rss=me.memory_info().rss,
            )
        )

    sup.report_every = SAMPLE_EVERY
    sup.on_report = sample
    code = sup.run(duration)
    if code:
        raise SystemExit(f"the run failed: {sup.failure}")
    return samples, sup.snapshot()


def rate(samples: list[Sample], start: float, end: float) -> float:
    inside = [s for s in samples if start <= s.t <= end]
    if len(inside) < 2:
        return 0.0
    return (inside[-1].emitted - inside[0].emitted) / (inside[-1].t - inside[0].t)


def summarise(samples: list[Sample], snap: Snapshot, duration: float, tracked: bool) -> dict:
    end = samples[-1].t
    first = rate(samples, 0.0, WINDOW)
    last = rate(samples, end - WINDOW, end)
    base = next(s for s in samples if s.t >= RSS_FROM)
    split = snap["components"]["split"]
    out = {
        "duration_s": duration,
        "tracked": tracked,
        "emit_rate_first_10s": round(first, 1),
        "emit_rate_last_10s": round(last, 1),
        "rate_ratio": round(last / first, 3) if first else None,
        "emitted": snap["components"]["spout"]["emitted"],
        "never_acked": split.get("never_acked", 0),
        "split_acked": split["acked"],
        "count_acked": snap["components"]["count"]["acked"],
        "spout_tuples_timed_out": snap["topology"]["spout_tuples_timed_out"],
        "max_in_flight": max(s.in_flight for s in samples),
        "max_queued": max(s.queued for s in samples),
        "rss_at_1s_mb": round(base.rss / 2**20, 1),
        "rss_at_end_mb": round(samples[-1].rss / 2**20, 1),
        "rss_growth_mb": round((samples[-1].rss - base.rss) / 2**20, 1),
        "rss_max_mb": round(max(s.rss for s in samples) / 2**20, 1),
        # the longest time the spout emitted nothing, once it had started
        "longest_stall_s": round(longest_stall(samples), 2),
    }
    out["targets_met"] = bool(
        out["rate_ratio"] is not None
        and out["rate_ratio"] >= 0.5
        and samples[-1].rss - base.rss < RSS_TARGET
    )
    return out


def longest_stall(samples: list[Sample]) -> float:
    longest, since = 0.0, None
    for before, after in zip(samples, samples[1:]):
        if not before.emitted:
            continue
        if after.emitted == before.emitted:
            since = before.t if since is None else since
            longest = max(longest, after.t - since)
        else:
            since = None
    return longest


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.never_acking", description=__doc__)
    parser.add_argument("--duration", type=float, default=60.0)
    parser.add_argument("--tracked", action="store_true", help="the spout gives message ids")
    parser.add_argument("--json", metavar="PATH", help="also write the result here")
    parser.add_argument("--samples", action="store_true", help="print every sample too")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(message)s")
    samples, snap = measure(args.duration, args.tracked)
    result = summarise(samples, snap, args.duration, args.tracked)
    if args.samples:
        for s in samples:
            print(json.dumps(asdict(s)))
    width = max(map(len, result))
    for key, value in result.items():
        print(f"{key:<{width}}  {value}")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            json.dump({"result": result, "samples": [asdict(s) for s in samples]}, fh, indent=1)
    return 0 if result["targets_met"] else 1


if __name__ == "__main__":
    sys.exit(main())
