"""How much of what the plain spouts buffered goes into one staged micro-batch (docs/spark.md
§4.6, §4.9): the bound, and each task's share of it. Pure."""

from __future__ import annotations

from collections.abc import Sequence

from host.topology import settings as cfg
from host.topology.model import Topology


def max_batch_tuples(topology: Topology) -> int:
    """`host.spark.batch.max.tuples`: the most tuples one staged micro-batch holds (default
    10,000; checked with the rest of the settings: a TopologyError names the key)."""
    return cfg.settings_for(topology).spark_batch_max_tuples


def fair_shares(sizes: Sequence[int], limit: int) -> list[int]:
    """How many of each task's buffered tuples (`sizes`) go into a batch of at most `limit`:
    all of them when they fit; else equal shares, a task with fewer than its share leaving the
    rest to the others, the remainder going to the first tasks. No task (no spout, when several
    are staged together) keeps another out of a batch."""
    if sum(sizes) <= limit:
        return list(sizes)
    shares = [0] * len(sizes)
    left = limit
    waiting = sorted(range(len(sizes)), key=lambda i: sizes[i])  # the smallest first
    while waiting:
        each = left // len(waiting)
        smallest = waiting[0]
        if sizes[smallest] <= each:
            shares[smallest] = sizes[smallest]
            left -= sizes[smallest]
            waiting.pop(0)
            continue
        # every task left has more than `each`, so each can give one more of the remainder
        rest = sorted(waiting)
        extra = left - each * len(rest)
        for k, i in enumerate(rest):
            shares[i] = each + (1 if k < extra else 0)
        break
    return shares
