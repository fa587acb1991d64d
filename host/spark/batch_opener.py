"""Transactional sources beside plain spouts or beside each other (docs/spark.md §4.9): each batch
spout's coordinator, asked by the stager (host/spark/staged_spouts.py) for each txid's metadata
before the plain spouts' share of that txid is cut, so that one micro-batch is one txid of all.

    root = source_root(state_root, "words", alone=False)
    opener = BatchOpener(topology, "words", root, run_id)
    opener.open(txid)      # True once txid's metadata is stored; False: the spout is not ready
    opener.close()

The spout is a `batch: spout` (ours, or the Kafka spout run as its transactional form,
host/spark/kafka_source.py). Its coordinator (task index 0) runs in the driver, in the stager's
thread, which starts it: its parent-death signal is tied to that thread (docs/architecture.md,
"Starting a process"). The txid's tuples are the spout tasks' `batch_emit`s, read by the
executors as with the spout alone (host/spark/source.py `read_spout_partition`).

Each such spout keeps its batch state in host local's layout for one batch spout (host/batch/
store.py: `coordinator/meta/<txid>.json`, `user/<task index>/`, `currtx`): the state directory
itself when it is the only one, which is where a checkpoint of that spout alone has it; with
several, a directory of its own each, `sources/<spout id>/` (`source_root`), whose metadata and
`currtx` the engine keeps in step with the state directory's (host/spark/engine.py).
"""

from __future__ import annotations

import logging
import os
from urllib.parse import quote

from host.runtime.context import assign_tasks
from host.spark.batch_spout_process import BatchSpoutProcess
from host.spark.component_process import ComponentFailed
from host.spark.source import currtx, open_txid
from host.topology.model import Topology

log = logging.getLogger("host.spark")

SOURCES_SUBDIR = "sources"


def source_root(state_root: str, spout: str, alone: bool) -> str:
    """Where batch spout `spout` keeps its batch state: the state directory when it is the only
    batch spout of the topology (`alone`), else a directory of its own under it."""
    if alone:
        return state_root
    return os.path.join(state_root, SOURCES_SUBDIR, quote(spout, safe=""))


class BatchOpener:
    def __init__(
        self, topology: Topology, spout: str, state_root: str, run_id: str, max_failures: int = 3
    ) -> None:
        self.topology = topology
        self.spout = spout
        self.root = state_root
        self.run_id = run_id
        self.tasks = assign_tasks(topology).tasks_of(spout)
        # coordinator processes that may break in a row before the run ends: the engine's
        # --max-restarts, as a query whose source's coordinator breaks is restarted that often
        self.max_failures = max_failures
        self.failures = 0
        self._coordinator: BatchSpoutProcess | None = None

    def open(self, txid: int) -> bool:
        """Store txid's metadata (kept when stored already: a restarted driver re-opens the
        txid it stored and never staged). False when the coordinator is not ready, or broke
        (logged; a new process is started at the next call, as `host local` restarts a task).
        ComponentFailed once it broke more than `max_failures` times in a row, and a
        TopologyError (a spout that numbers its own batches): for the caller to end the run
        with."""
        coordinator = self._coordinator
        if coordinator is None:
            coordinator = self._coordinator = BatchSpoutProcess(
                self.topology,
                self.spout,
                self.tasks[0],
                committed_txid=currtx(self.root) - 1,
                run_id=self.run_id,
            )
        try:
            opened = open_txid(self.root, self.spout, coordinator, txid)
        except ComponentFailed as exc:
            self.close()
            self.failures += 1
            if self.failures > self.max_failures:
                raise
            log.error("%s; txid %d waits for the next coordinator process", exc, txid)
            return False
        self.failures = 0
        return opened

    def close(self) -> None:
        if self._coordinator is not None:
            self._coordinator.close()
            self._coordinator = None
