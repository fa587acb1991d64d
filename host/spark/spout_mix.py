"""Which spouts of a plan run together on Spark as the query's source, one micro-batch being one
transaction over all of them (docs/spark.md §2.3, §4.9). Pure: no pyspark, no I/O.

    spouts = check_sources(plan)     # every spout stage, or TopologyError before anything starts
    lines = sources_lines(plan)      # what `--explain` says about them

Each kind of source hands Spark one txid per micro-batch: its offset is `{"txid": T}` (the
streaming Spark input's is Spark's batch id, which is the txid less one). Several plain spouts
are one source (host/spark/staged_spouts.py stages every task of every plain spout into the same
txid). Any other mix would be a union of sources in one query, and Spark moves only the offsets of
the sources that have new data at a trigger: a source whose offset is the txid would fall behind
the batch id as soon as another source made a micro-batch without it. The transactional and Kafka
sources also keep one spout's batch metadata (the state's `coordinator/meta/<txid>.json` and
`user/<task index>/`, host local's layout for Storm's one batch spout), so two of them would
write the same files. Such mixes are refused here, with that reason, until a source hands out
every spout's share of a txid together (docs/spark.md §5).
"""

from __future__ import annotations

from host.errors import TopologyError
from host.spark.plan import DRIVER_SPOUT, Plan, Stage

# the spout kinds that run together in one source: today the plain spouts, staged in the driver
COMBINABLE = frozenset({DRIVER_SPOUT})


def spout_stages(plan: Plan) -> tuple[Stage, ...]:
    """The plan's spout stages, in its (topological, then file) order."""
    return tuple(s for s in plan.stages if s.component.is_spout)


def refusal(plan: Plan) -> str | None:
    """Why the plan's spouts cannot run together on Spark, or None when they can."""
    spouts = spout_stages(plan)
    if not spouts:
        return "has no spout: a Spark query needs a source"
    if len(spouts) == 1 or all(s.role in COMBINABLE for s in spouts):
        return None
    kinds = ", ".join(f"{s.id!r} ({s.role})" for s in spouts)
    return (
        f"has {len(spouts)} spouts of which not all are plain spouts: {kinds}. The Spark "
        "engine runs several spouts together, one micro-batch one transaction over all of "
        "them, only when every one is a plain spout staged in the driver; any other kind of "
        "source numbers the micro-batches itself (its offset is the txid), and in a union of "
        "sources Spark moves only the offsets of those with new data, so its txids would drift "
        "from the micro-batches (docs/spark.md §4.9). Run the spouts in separate topologies, or "
        "make them plain spouts"
    )


def check_sources(plan: Plan) -> tuple[Stage, ...]:
    """Every spout stage of the plan, for one source; TopologyError (naming the file and the
    spouts) for a mix that cannot be one transaction per micro-batch."""
    reason = refusal(plan)
    if reason is not None:
        raise TopologyError(reason, file=plan.topology.source)
    return spout_stages(plan)


def sources_lines(plan: Plan) -> list[str]:
    """`--explain`'s lines on the sources: one per spout when there are several, with what a
    micro-batch holds, or the refusal."""
    spouts = spout_stages(plan)
    if len(spouts) < 2:
        return []
    reason = refusal(plan)
    if reason is not None:
        return [f"  sources: refused: the topology {reason}"]
    lines = [
        f"  sources: {len(spouts)} plain spouts, staged together: each micro-batch holds what "
        "every one of them emitted (one staged file per spout task), one transaction over all"
    ]
    for s in spouts:
        tasks = ", ".join(map(str, s.tasks))
        lines.append(f"    {s.id}: {s.role}, task(s) {tasks}")
    return lines
