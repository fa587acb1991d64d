"""The topologies the benchmarks run, built with host.topology.TopologyBuilder. Components live in
benchmarks/components/ and take their settings from `bench.*` config keys (see spout.py)."""

from __future__ import annotations

from host.topology import TopologyBuilder
from host.topology.model import Topology

from .harness import COMPONENTS

SPOUT_COMMANDS = {
    "python": ["python", "spout.py"],  # our client: announces pipeline/1
    "pystorm": ["python", "pystorm_spout.py"],  # pystorm from PyPI: announces nothing
}
SPLIT_COMMANDS = {
    "python": ["python", "split.py"],
    "bash": ["bash", "split.sh"],
    "node": ["node", "split.js"],
}
BASE_CONFIG = {
    "topology.max.spout.pending": 1000,
    "topology.message.timeout.secs": 30,
    "host.shutdown.grace.secs": 2,  # the drain after the window is not measured: keep it short
}


def wordcount(
    split: str = "python",
    parallelism: int = 1,
    per_next: int = 100,
    rate: float = 0,
    idle: bool = False,
    config: dict | None = None,
    spout: str = "python",
    pipelining: bool | None = None,
) -> Topology:
    """sentences (`spout`: python or pystorm) -> split (`split`: python, bash or node; shuffle)
    -> count (Python; fields on word), acked; `parallelism` tasks per bolt. `pipelining`: the
    spout's switch (docs/protocol.md §3.5)."""
    conf = {
        **BASE_CONFIG,
        "bench.per.next": per_next,
        "bench.rate": rate,
        "bench.idle": idle,
        **(config or {}),
    }
    b = TopologyBuilder("bench-wordcount", config=conf)
    b.spout("sentences", SPOUT_COMMANDS[spout], outputs=["sentence"], pipelining=pipelining)
    b.bolt("split", SPLIT_COMMANDS[split], outputs=["word"], parallelism=parallelism).shuffle(
        "sentences"
    )
    b.bolt(
        "count", ["python", "count.py"], outputs=["word", "count"], parallelism=parallelism
    ).fields("split", "word")
    return b.build(COMPONENTS)


def sized(
    size: int, per_next: int = 100, parallelism: int = 1, config: dict | None = None
) -> Topology:
    """spout -> relay -> sink, every tuple one string of `size` bytes, acked."""
    conf = {**BASE_CONFIG, "bench.per.next": per_next, "bench.tuple.bytes": size, **(config or {})}
    b = TopologyBuilder("bench-sized", config=conf)
    b.spout("source", ["python", "spout.py"], outputs=["payload"])
    b.bolt("relay", ["python", "relay.py"], outputs=["payload"], parallelism=parallelism).shuffle(
        "source"
    )
    b.bolt("sink", ["python", "sink.py"], outputs=[], parallelism=parallelism).shuffle("relay")
    return b.build(COMPONENTS)


def transactional_wordcount(
    parallelism: int = 1,
    batch_size: int = 1000,
    pending: int = 3,
    state_dir: str = "",
    database: str = "",
    config: dict | None = None,
) -> Topology:
    """The exactly-once word count (docs/transactional.md): a transactional spout of
    `batch_size` sentences per batch -> split (Python, unmodified: a plain member; shuffle) ->
    count (a batch bolt; fields on word) -> store (the SQLite committer, upsert-add)."""
    conf = {
        **BASE_CONFIG,
        "topology.max.spout.pending": pending,
        "bench.batch.size": batch_size,
        "host.state.dir": state_dir,
        **(config or {}),
    }
    b = TopologyBuilder("bench-tx-wordcount", config=conf).transactional("bench-wordcount")
    b.spout("sentences", ["python", "tx_spout.py"], outputs=["sentence"], batch="spout")
    b.bolt("split", ["python", "split.py"], outputs=["word"], parallelism=parallelism).shuffle(
        "sentences"
    )
    b.bolt(
        "count",
        ["python", "tx_count.py"],
        outputs=["word", "count"],
        parallelism=parallelism,
        batch="bolt",
    ).fields("split", "word")
    b.bolt(
        "store",
        ["python", "-m", "components.sqlite_committer"],
        outputs=[],
        batch="committer",
        config={
            "sqlite.committer.path": database,
            "sqlite.committer.table": "counts",
            "sqlite.committer.mode": "upsert-add",
            "sqlite.committer.keys": ["word"],
            "sqlite.committer.values": ["count"],
        },
    ).global_("count")
    return b.build(COMPONENTS)


BUILDERS = {"wordcount": wordcount, "sized": sized, "transactional": transactional_wordcount}


def build(builder: str, params: dict) -> Topology:
    return BUILDERS[builder](**params)
