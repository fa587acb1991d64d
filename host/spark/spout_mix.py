"""Which spouts of a plan run together on Spark as the query's source, one micro-batch being one
transaction over all of them (docs/spark.md §2.3, §4.9). Pure: no pyspark, no I/O.

    spouts = check_sources(plan)     # every spout stage, or TopologyError before anything starts
    lines = sources_lines(plan)      # what `--explain` says about them

Each kind of source hands Spark one txid per micro-batch: its offset is `{"txid": T}` (the
streaming Spark input's is Spark's batch id, which is the txid less one). Several plain spouts
are one source (host/spark/staged_spouts.py stages every task of every plain spout into the same
txid), and beside them transactional and Kafka sources (any number of them: a topology has at
most one `batch: spout`, but may have several Kafka spouts) open each txid together, each from
its own coordinator, and the plain spouts' share is staged into it (host/spark/batch_opener.py).
A Spark spout runs beside them too: the stager adds its input's next share to each txid
(host/spark/spark_input_opener.py), and a txid it has nothing new for holds none of its rows. A
DataFrame's share is its next files, a directory input's its next output directory; a streaming
input's micro-batches are numbered by Spark itself, so beside others they are not a source of
the query (in a union Spark moves only the offsets of the sources with new data, and the txids
would drift from the batch ids): a relay query in the driver stages them and the stager hands
them out as it hands out a DataFrame's files (host/spark/stream_relay.py).
"""

from __future__ import annotations

from host.errors import TopologyError
from host.spark.idle_batches import idle_batch_secs
from host.spark.plan import (
    KAFKA_SOURCE,
    SPARK_INPUT,
    TRANSACTIONAL_SOURCE,
    Plan,
    Stage,
)
from host.spark.spark_input import file_backed

NUMBERING = frozenset({TRANSACTIONAL_SOURCE, KAFKA_SOURCE})


def spout_stages(plan: Plan) -> tuple[Stage, ...]:
    """The plan's spout stages, in its (topological, then file) order."""
    return tuple(s for s in plan.stages if s.component.is_spout)


def relayed(plan: Plan) -> tuple[str, ...]:
    """The Spark spouts whose streaming input runs through a relay query
    (host/spark/stream_relay.py): every one beside other spouts, and one alone when idle
    micro-batches are on (by default while a bolt ticks), so that the stager can make them
    (docs/spark.md §2.4); Spark's own micro-batches of the input come only when it has data."""
    spouts = spout_stages(plan)
    if len(spouts) == 1 and idle_batch_secs(plan.topology) is None:
        return ()
    return tuple(
        s.id for s in spouts if s.role == SPARK_INPUT and not file_backed(plan.topology, s.id)
    )


def numbering(spouts: tuple[Stage, ...]) -> tuple[Stage, ...]:
    """The spouts whose coordinators open the txids (none when all are plain)."""
    return tuple(s for s in spouts if s.role in NUMBERING)


def refusal(plan: Plan) -> str | None:
    """Why the plan's spouts cannot be the query's source, or None when they can: every kind of
    spout runs alone or beside the others."""
    if not spout_stages(plan):
        return "has no spout: a Spark query needs a source"
    return None


def check_sources(plan: Plan) -> tuple[Stage, ...]:
    """Every spout stage of the plan, for one source; TopologyError (naming the file) for a
    plan without one."""
    reason = refusal(plan)
    if reason is not None:
        raise TopologyError(reason, file=plan.topology.source)
    return spout_stages(plan)


def sources_lines(plan: Plan) -> list[str]:
    """`--explain`'s lines on the sources: one per spout when there are several, with what a
    micro-batch holds, or the refusal."""
    spouts = spout_stages(plan)
    relay = relayed(plan)
    if len(spouts) < 2:
        if not relay:
            return []
        return [
            f"  source: the streaming input of {relay[0]!r} runs through a relay query, for the "
            "idle micro-batches (a bolt ticks, or host.spark.idle.batch.secs is set): the relay "
            "stages each of Spark's micro-batches of it, and the driver's stager makes the txids "
            "from those, and idle ones while it has nothing"
        ]
    reason = refusal(plan)
    if reason is not None:
        return [f"  sources: refused: the topology {reason}"]
    sources = numbering(spouts)
    inputs = [s for s in spouts if s.role == SPARK_INPUT]
    plain = len(spouts) - len(sources) - len(inputs)
    names = ", ".join(repr(s.id) for s in sources)
    if not sources and not inputs:
        lines = [
            f"  sources: {len(spouts)} plain spouts, staged together: each micro-batch holds what "
            "every one of them emitted (one staged file per spout task), one transaction over all"
        ]
    elif not sources:
        lines = [
            f"  sources: the Spark input{'s' if len(inputs) > 1 else ''} of "
            f"{', '.join(repr(s.id) for s in inputs)} beside {plain} plain "
            f"spout{'s' if plain != 1 else ''} staged in the driver: each micro-batch holds what "
            "the plain spouts emitted by then and the input's next files (none when it has "
            "nothing new), once a trigger interval when either has something, one transaction "
            "over all"
        ]
    elif not plain and len(sources) == 1:  # beside Spark inputs alone
        lines = [
            f"  sources: {names} opens the txids: each micro-batch is one of its batches (none "
            "while it has none), one transaction over all"
        ]
    elif not plain:
        lines = [
            f"  sources: {len(sources)} batch spouts ({names}), opened together: each "
            "micro-batch is one batch of each (none while one of them has no batch), one "
            "transaction over all"
        ]
    else:
        lines = [
            f"  sources: {names} open{'s' if len(sources) == 1 else ''} the txids and {plain} "
            f"plain spout{'s' if plain > 1 else ''} staged beside: each micro-batch is one batch "
            f"of {names} with what the plain spouts emitted by then (none while "
            f"{'it has' if len(sources) == 1 else 'one of them has'} no batch), one transaction "
            "over all"
        ]
    if sources and inputs:
        lines.append(
            f"  and the Spark input of {', '.join(repr(s.id) for s in inputs)} adds its next "
            "files to each of those micro-batches (none when it has nothing new)"
        )
    streaming = [s for s in inputs if s.id in relay]
    if streaming:
        lines.append(
            f"  the streaming input{'s' if len(streaming) > 1 else ''} of "
            f"{', '.join(repr(s.id) for s in streaming)}: a relay query in the driver stages "
            "each of Spark's micro-batches of it, and those are its next files, in order"
        )
    for s in spouts:
        tasks = ", ".join(map(str, s.tasks))
        tag = " (streaming, relayed)" if s in streaming else ""
        lines.append(f"    {s.id}: {s.role}{tag}, task(s) {tasks}")
    return lines
