"""The batch spouts a Spark query reads (docs/spark.md §4.7, §4.9): every Kafka spout mapped onto
the transactional Kafka spout, and the directory each batch spout keeps its batch state in, kept
in step with the state directory's txids.

    plan = with_kafka_as_batch_spouts(plan, checkpoint)
    states = BatchStates(state_root, batch_spouts)
    states.prepare()               # before the query: directories, parallelism, currtx in step
    states.attempt(txid, attempt)  # in foreachBatch, before any tuple of the txid is read
    states.committed(txid)         # once the state directory's currtx has moved past it

One batch spout keeps its state in the state directory itself (host local's layout for Storm's
one batch spout, and where a checkpoint of it has always had it). With several, each has its own
(host/spark/batch_opener.py `source_root`), and the state directory's txid metadata only names
them: there the engine writes each txid's attempt into every spout's record too, since a spout
task's read takes the attempt from its own (host/spark/source.py `read_spout_partition`), and
moves their `currtx` after the state directory's, which is the engine's record of what is
committed. A driver that died between the two has them one txid behind: `prepare` moves them on.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from host.batch.store import BatchStore
from host.errors import TopologyError
from host.spark.batch_opener import source_root
from host.spark.kafka_commits import topology_instance
from host.spark.kafka_source import as_transactional, is_storm_kafka, with_topology_id
from host.spark.plan import KAFKA_SOURCE, Plan, Stage
from host.spark.plan import plan as make_plan
from host.spark.source import currtx, meta_record
from host.spark.spout_mix import spout_stages


def with_kafka_as_batch_spouts(plan: Plan, checkpoint: str) -> Plan:
    """The plan with each Kafka spout run as the transactional Kafka spout with its settings
    (§4.7; TopologyError for what that cannot run); the plan itself when it has none."""
    topology = plan.topology
    for spout in spout_stages(plan):
        if spout.role != KAFKA_SOURCE:
            continue
        topology = as_transactional(topology, spout.id)
        if is_storm_kafka(spout.component):  # its nodes name the checkpoint's instance
            instance = topology_instance(checkpoint, topology.name)
            topology = with_topology_id(topology, spout.id, instance)
    return plan if topology is plan.topology else make_plan(topology)


class BatchStates:
    """Where each batch spout's state is, and the bookkeeping that keeps it in step."""

    def __init__(self, state_root: str, batch_spouts: Sequence[Stage]) -> None:
        self.state_root = state_root
        self.spouts = tuple(batch_spouts)
        alone = len(self.spouts) == 1
        self.roots = {s.id: source_root(state_root, s.id, alone) for s in self.spouts}
        # the spouts with a directory of their own (none when one spout uses the state's)
        self.own = {spout: root for spout, root in self.roots.items() if root != state_root}

    def prepare(self) -> None:
        """Before the query starts: each directory made, its spout's parallelism checked
        against what its stored task metadata was written by, its currtx moved up to the state
        directory's."""
        committed = currtx(self.state_root) - 1
        for spout in self.spouts:
            root = self.roots[spout.id]
            os.makedirs(root, exist_ok=True)
            store = BatchStore(root)
            store.check_parallelism(spout.id, spout.partitions)
            if root != self.state_root and store.currtx() <= committed:
                store.committed(committed)

    def attempt(self, txid: int, attempt: int) -> None:
        """Run `attempt` of txid: stored in every own directory's record of it (the state
        directory's is the engine's to write)."""
        for spout, root in self.own.items():
            record = meta_record(root, txid)
            if record is None:
                raise TopologyError(
                    f"no stored metadata for txid {txid} of batch spout {spout!r} in {root}: "
                    "the state directory names it as opened by every batch spout"
                )
            BatchStore(root).put_meta(txid, record.get("meta"), attempt)

    def committed(self, txid: int) -> None:
        for root in self.own.values():
            BatchStore(root).committed(txid)
