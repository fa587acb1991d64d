"""The Spark spout's streaming input beside other spouts (docs/spark.md §4.9): Spark numbers a
streaming query's micro-batches itself, so the input cannot be a source of the engine's query
beside the others (in a union Spark moves only the offsets of the sources with new data, and
the txids would drift from its batch ids). Instead the driver runs the input's streaming
DataFrame as a query of its own, the *relay*, which stages each of its micro-batches as the
spout stages one (components/spark_spout/segments.py `stage`: parquet, a manifest, a rename)
under `<checkpoint>/input/relay-<spout id>/batch-<B>/`; the stager then hands the staged
micro-batches out to the txids (host/spark/spark_input_opener.py), as it hands out a staged
DataFrame's files.

    relay = StreamRelay(spark_input, checkpoint, trigger_secs)
    relay.start(spark)                  # the relay query, from its own checkpoint
    relay.staged_batches()              # [(B, rows)], complete, in order
    relay.opened(end)                   # the stager has handed out every B < end
    relay.committed(end)                # ... and committed them: their staging goes
    relay.close()

Exactly once: a staged micro-batch is complete or absent (the rename); the relay query's own
checkpoint (`relay-<spout id>/query`) replays, after a driver died, the micro-batches it had not
recorded, which are then found staged (kept) or committed (not staged again), and a replay reads
the same rows by Spark's offsets (a source Spark cannot replay is refused, as for the input
alone: host/spark/spark_input_source.py). A txid's share names the staged micro-batches it holds,
stored before the txid is staged, so a replayed txid reads the same ones.

Bounded: the relay waits, inside its micro-batch, while `MAX_AHEAD` staged micro-batches are not
handed out yet, so a query slower than its input holds that many on disk, not all of them.
"""

from __future__ import annotations

import logging
import os
import shutil
import threading
import time
from collections.abc import Sequence
from typing import Any

from components.spark_spout.segments import stage, staged
from host.errors import TopologyError
from host.spark.plan import SPARK_INPUT, Plan
from host.spark.spark_calls import bounded
from host.spark.spark_input import file_backed
from host.spark.spark_input_source import SparkInput
from host.spark.spout_mix import relayed, spout_stages

log = logging.getLogger(__name__)

RELAY_PREFIX = "relay-"  # <checkpoint>/input/relay-<spout id>/
BATCH_PREFIX = "batch-"
MAX_AHEAD = 4  # staged micro-batches not handed out yet, at most
WAIT_SECS = 0.05  # how often a relay waiting for room looks again
STOP_WAIT_SECS = 30.0  # a relay query that does not stop in this long is left to the session


def check_checkpoint(plan: Plan, checkpoint: str, query_dir: str) -> None:
    """Refuses, before anything starts, a checkpoint whose query read a streaming input the other
    way (as its own source, or through a relay) from the way this run would: Spark cannot resume
    a query whose source changed. That happens when idle micro-batches are turned on or off (a
    bolt starts or stops ticking) or spouts are added beside the input (host/spark/spout_mix.py
    `relayed`)."""
    offsets = os.path.join(query_dir, "offsets")
    if not (os.path.isdir(offsets) and os.listdir(offsets)):
        return  # the query has not run a micro-batch: nothing to resume
    relay = relayed(plan)
    for spout in spout_stages(plan):
        if spout.role != SPARK_INPUT or file_backed(plan.topology, spout.id):
            continue
        was = os.path.isdir(os.path.join(checkpoint, "input", RELAY_PREFIX + spout.id))
        if was == (spout.id in relay):
            continue
        before, now = ("through a relay", "as the query's own source")
        if not was:
            before, now = now, before
        raise TopologyError(
            f"the checkpoint {checkpoint} was written with the streaming input read {before}, "
            f"and this run would read it {now} (a relay runs for idle micro-batches, by default "
            "while a bolt ticks, or beside other spouts: docs/spark.md §2.4, §4.9); Spark cannot "
            "resume a query whose source changed: "
            "give a new --checkpoint, or run the topology as it was",
            file=plan.topology.source,
            component=spout.id,
        )


class RelayStopped(RuntimeError):
    """Raised inside the relay's micro-batch when the relay closes while it waits for room: the
    micro-batch must not be recorded as done, since it was not staged."""


def batch_number(name: str) -> int | None:
    """B of a staged micro-batch's directory name, None for anything else (a temporary one)."""
    number = name.removeprefix(BATCH_PREFIX)
    return int(number) if name.startswith(BATCH_PREFIX) and number.isdigit() else None


def relay_share(batches: Sequence[tuple[int, int]], end: int, max_rows: int) -> list[int]:
    """The staged micro-batches for the next txid, given `batches` [(B, rows)] in order and
    `end`, the first B not handed out yet: consecutive ones from `end` while their rows stay
    within `max_rows` (at least one); [] while B `end` is not staged. Pure, so every run cuts
    the same shares from the same staging."""
    rows = dict(batches)
    chosen: list[int] = []
    total = 0
    b = end
    while b in rows and (not chosen or total + rows[b] <= max_rows):
        chosen.append(b)
        total += rows[b]
        b += 1
    return chosen


class StreamRelay:
    """The relay query of one Spark spout's streaming input (see the module's docstring)."""

    def __init__(self, spark_input: SparkInput, checkpoint: str, trigger_secs: float) -> None:
        self.input = spark_input
        self.root = os.path.join(checkpoint, "input", RELAY_PREFIX + spark_input.spec.spout)
        self.query_dir = os.path.join(self.root, "query")
        self.trigger_secs = trigger_secs
        self._opened_end = 0  # every B below it is in a txid's share (the stager's thread sets it)
        self._committed_end = 0  # ... and committed: not staged again when Spark replays it
        self._closing = threading.Event()
        self._query: Any = None

    @property
    def name(self) -> str:
        return f"the relay of Spark spout {self.input.spec.spout!r}"

    def start(self, spark: Any) -> None:
        """Start (or start again) the relay query. A temporary directory left by a staging the
        driver did not finish is removed first: nothing stages while no relay runs."""
        os.makedirs(self.root, exist_ok=True)
        for name in os.listdir(self.root):
            if name.startswith("_tmp-"):
                shutil.rmtree(os.path.join(self.root, name), ignore_errors=True)
        df = self.input.stream(spark)  # the job's streaming DataFrame, checked replayable
        self._query = (
            df.writeStream.foreachBatch(self._stage)
            .option("checkpointLocation", self.query_dir)
            .trigger(processingTime=f"{self.trigger_secs:g} seconds")
            .queryName(f"multilang-relay-{self.input.spec.spout}")
            .start()
        )

    @property
    def opened_end(self) -> int:
        """Every micro-batch below it is in an opened txid's share."""
        return self._opened_end

    @property
    def committed_end(self) -> int:
        """Every micro-batch below it is in a committed txid's share."""
        return self._committed_end

    def failure(self) -> str | None:
        """Why the relay query ended, when it ended by itself; None while it runs."""
        query = self._query
        if query is None or query.isActive or self._closing.is_set():
            return None
        error = query.exception()
        return "it stopped" if error is None else str(error).strip().splitlines()[0]

    def staged_batches(self) -> list[tuple[int, int]]:
        """[(B, rows)] of every complete staged micro-batch, in B order."""
        out = []
        for name in os.listdir(self.root) if os.path.isdir(self.root) else ():
            b = batch_number(name)
            if b is None:
                continue
            manifest = staged(self._uri(b))
            if manifest is not None:
                out.append((b, int(manifest["rows"])))
        return sorted(out)

    def files(self, batches: Sequence[int]) -> list[str]:
        """The parquet files of staged micro-batches, in their row order."""
        out: list[str] = []
        for b in batches:
            manifest = staged(self._uri(b))
            if manifest is None:
                raise RuntimeError(f"{self.name}: staged micro-batch {b} is gone")
            out.extend(f"{self._uri(b)}/{f['name']}" for f in manifest["files"])
        return out

    def opened(self, end: int) -> None:
        self._opened_end = max(self._opened_end, end)

    def committed(self, end: int) -> None:
        """Every B below `end` is committed: its staging is not read again."""
        self._committed_end = max(self._committed_end, end)
        self.opened(end)
        for name in os.listdir(self.root) if os.path.isdir(self.root) else ():
            b = batch_number(name)
            if b is not None and b < end:
                shutil.rmtree(os.path.join(self.root, name), ignore_errors=True)

    def close(self) -> None:
        self._closing.set()
        query, self._query = self._query, None
        if query is None:
            return
        bounded(query.stop, STOP_WAIT_SECS, f"stopping {self.name}", log.warning)

    # -- the relay query's micro-batch (Spark's streaming thread) ------------------------------
    def _stage(self, df: Any, batch_id: int) -> None:
        b = int(batch_id)
        if b < self._committed_end or staged(self._uri(b)) is not None:
            return  # replayed by Spark after a driver died: staged, or committed, already
        while sum(1 for n, _ in self.staged_batches() if n >= self._opened_end) >= MAX_AHEAD:
            if self._closing.is_set():
                raise RelayStopped(f"{self.name} closed before micro-batch {b} was staged")
            time.sleep(WAIT_SECS)
        stage(df, self._uri(b), list(self.input.spec.cfg.fields), {"batch": b})

    def _uri(self, b: int) -> str:
        return os.path.join(self.root, f"{BATCH_PREFIX}{b}")
