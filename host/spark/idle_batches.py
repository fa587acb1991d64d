"""When a source with nothing new stages an idle (empty) micro-batch anyway: a bolt's ticks come
only while one of its partitions runs (docs/spark.md §2.4), and an idle micro-batch runs every
partition, so a bolt that reports or flushes on a tick does so every period while no spout emits,
as under `host local`. Used by the plain spouts' stager (staged_spouts.py), the Spark spout's
file-backed inputs (spark_input_source.py) and a transactional spout's source (source.py), whose
idle micro-batches hold no txid (`idle_offset`). Pure."""

from __future__ import annotations

from host.topology import settings as cfg
from host.topology.component_config import tick_freq
from host.topology.model import Topology

IDLE_KEY = "idle"


def idle_batch_secs(topology: Topology) -> float | None:
    """How long a source may go without a micro-batch before it stages an idle one, or None for
    never: `host.spark.idle.batch.secs`, by default the shortest tick period of the topology's
    bolts (no bolt ticks: never)."""
    configured = cfg.settings_for(topology).spark_idle_batch_secs
    if configured is not None:
        return float(configured) if configured > 0 else None
    periods = [f for c in topology.components if (f := tick_freq(topology, c)) is not None]
    return float(min(periods)) if periods else None


def idle_batch_due(
    now: float, last_batch: float, idle_secs: float | None, buffered: int, in_flight: int
) -> bool:
    """Whether a source stages an idle micro-batch at `now`: idle batches are on, nothing is
    buffered (a batch with tuples comes on the trigger anyway), no batch is waiting for its
    commit, and the period has passed since the last batch was staged or committed."""
    return (
        idle_secs is not None and buffered == 0 and in_flight == 0 and now - last_batch >= idle_secs
    )


def idle_offset(start: dict[str, int]) -> dict[str, int]:
    """A transactional source's offset for an idle micro-batch after `start`: the same txid (a
    txid is one of the spout's batches, and the spout has none) and the next idle count, so that
    Spark, which runs a micro-batch only for a new offset, runs one (docs/spark.md §2.4)."""
    return {"txid": int(start["txid"]), IDLE_KEY: int(start.get(IDLE_KEY, 0)) + 1}


def is_idle_offset(offset: dict[str, int]) -> bool:
    """Whether a micro-batch's end offset is an idle one of `idle_offset` (no txid)."""
    return IDLE_KEY in offset
