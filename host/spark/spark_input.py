"""The Spark spout's input plugged into the Spark engine directly (docs/spark.md §4.8): what the
spout (`python -m components.spark_spout`) would read under `host local` -- its DataFrame, its
output directories, its Structured Streaming query -- is read by Spark itself as the query's
source, with no spout process.

Pure: the spout's settings as the spout itself parses them (components/spark_spout/config.py,
from the same handshake conf and context `host local` gives it), the plan's warnings for the
settings that do nothing on Spark, and the rules that cut the input into micro-batches. The Spark
side is host/spark/spark_input_source.py; tests/unit/test_spark_input.py checks this module.

How each input becomes micro-batches (each one transaction, txid = Spark batch id + 1):

- **streaming**: the spout's streaming DataFrame *is* the query's source: Spark's own offsets
  (in the query's checkpoint) decide each micro-batch, so a replay reads the same rows; a
  source Spark documents as not replayable (the socket source) is refused when the engine
  starts (`not_replayable`);
- **dataframe**: staged once as parquet (as the spout stages it), then its part files in order,
  consecutive files up to `host.spark.batch.max.tuples` rows per micro-batch (at least one
  file); then nothing more: the spout's "emit every row once, then finished";
- **directory**: one micro-batch per complete output directory (its `_SUCCESS` written), in the
  spout's name order; a parent's later directories wait for the first unfinished one, as the
  spout waits for it. A single output directory is one micro-batch, then nothing more.

A micro-batch's files are stored with its txid before Spark is told the offset, so a replay
reads exactly the files the first run read.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from components.spark_spout.checkpoint import order_of
from components.spark_spout.config import PREFIX, ConfigError, SpoutConfig, from_conf
from host.errors import TopologyError
from host.runtime.context import HandshakeCache, assign_tasks
from host.topology.model import Topology

DATAFRAME, DIRECTORY, STREAMING = "dataframe", "directory", "streaming"
# the spout's path settings, relative to its working directory under `host local`
PATH_KEYS = tuple(PREFIX + k for k in ("checkpoint.dir", "staging.dir", "dead.letter", "path")) + (
    PREFIX + "streaming.checkpoint",
)
# what the spout does per row or per process; on Spark a micro-batch is replayed whole, and the
# query's checkpoint and the engine's --checkpoint hold the progress
NO_EFFECT = tuple(
    PREFIX + k
    for k in (
        "retries",
        "dead.letter",
        "checkpoint.interval.ms",
        "rows.per.next",
        "max.pending",
        "read.ahead",
        "poll.secs",
        "staging.dir",
        "streaming.checkpoint",
        "trigger.secs",
        "log.level",
    )
)


@dataclass(frozen=True)
class InputSpec:
    """A Spark spout's input as the engine reads it."""

    spout: str  # the component id
    task: int  # its one task: every row is this task's emit
    cfg: SpoutConfig  # parsed as the spout parses it
    conf: dict[str, Any]  # its handshake conf: the job's second argument
    cwd: str  # its working directory: the job's module is imported from there

    @property
    def source(self) -> str:
        return self.cfg.source


def _absolute_paths(conf: dict[str, Any], cwd: str) -> dict[str, Any]:
    """The spout resolves its relative paths against its own working directory (the topology's
    directory); the engine's driver runs elsewhere, so they are made absolute first."""
    out = dict(conf)
    for key in PATH_KEYS:
        value = out.get(key)
        if isinstance(value, str) and value and "://" not in value and not os.path.isabs(value):
            out[key] = os.path.join(cwd, value)
    return out


def input_spec(topology: Topology, spout: str, run_id: str = "spark") -> InputSpec:
    """The spout's settings, checked as the spout checks them; a TopologyError naming the file and
    the component for what the spout would refuse (docs/spark.md §2.5)."""
    tasks = assign_tasks(topology)
    handshake = HandshakeCache(topology, tasks, run_id)
    task = tasks.tasks_of(spout)[0]
    component = topology.component(spout)
    conf = _absolute_paths(handshake.conf(spout), component.cwd)
    try:
        cfg = from_conf(conf, handshake.context(spout, task))
    except ConfigError as exc:
        raise TopologyError(
            f"is a Spark spout whose settings the spout itself refuses: {exc}",
            file=topology.source,
            component=spout,
        ) from None
    return InputSpec(spout, task, cfg, conf, component.cwd)


def file_backed(topology: Topology, spout: str) -> bool:
    """Whether the spout's input is a DataFrame or output directories, read by the engine's own
    data source (which can hand Spark idle micro-batches), rather than a streaming query whose
    micro-batches are Spark's. Never raises, as `warnings`."""
    component = topology.component(spout)
    given = {**topology.config, **component.config}
    return given.get(PREFIX + "source", DATAFRAME) != STREAMING


def warnings(topology: Topology, spout: str) -> tuple[str, ...]:
    """The plan's warnings for a Spark spout's input: settings that do nothing on Spark. Never
    raises: the settings' errors are reported when the engine starts (`input_spec`)."""
    component = topology.component(spout)
    given = {**topology.config, **component.config}
    unused = [k for k in NO_EFFECT if k in given]
    out = []
    if unused:
        out.append(
            f"{', '.join(unused)}: no effect on Spark (a failed tuple fails its micro-batch, "
            "which is replayed whole; progress is the query's checkpoint)"
        )
    if "dead" in component.outputs:
        out.append("the `dead` stream gets nothing on Spark: no row is dead-lettered")
    if given.get(PREFIX + "source") == STREAMING:
        out.append(
            "the streaming query's source is checked when the engine starts, not here (building "
            "it needs Spark): a source Spark cannot replay (socket) is refused then"
        )
    return tuple(out)


# ---- streaming sources Spark cannot replay ----------------------------------------------------------

# Spark's table of its built-in sources (Structured Streaming Programming Guide, "Input Sources")
# marks the file source (every file format), Kafka, rate and rate-micro-batch fault-tolerant: the
# offsets in the query's checkpoint read the same rows again. The socket source is not: what it
# has read lives in the driver's memory only, so a micro-batch Spark planned but the engine had
# not staged when the driver died cannot be read again. Keyed by the provider's class name (its
# package has moved between Spark versions); any other source, a user's Python data source or a
# third-party one, cannot be classified here and runs.
NOT_REPLAYABLE = {
    "TextSocketSourceProvider": (
        "Spark's socket source keeps the lines it has read in the driver's memory only (Spark "
        "documents it as not fault-tolerant, for testing), so a micro-batch Spark planned but "
        "the engine had not staged when the driver died would be lost"
    ),
}


@dataclass(frozen=True)
class StreamingRelation:
    """One streaming source of the job's DataFrame, as its analyzed plan names it."""

    name: str  # Spark's name for it: the format's short name ("socket"), FileSource[path], ...
    provider: str  # the class that provides it (its package included)


def not_replayable(relations: Sequence[StreamingRelation]) -> list[tuple[StreamingRelation, str]]:
    """The relations whose source Spark cannot replay, each with why; [] when every one can be,
    or cannot be classified."""
    out = []
    for relation in relations:
        reason = NOT_REPLAYABLE.get(relation.provider.rsplit(".", 1)[-1])
        if reason is not None:
            out.append((relation, reason))
    return out


# ---- micro-batches of files -------------------------------------------------------------------------


def next_files(rows: Sequence[int], first: int, max_rows: int) -> int:
    """The end (exclusive) of the micro-batch that starts at file `first`, given each file's row
    count: consecutive files while the total stays within `max_rows`, at least one file. A
    function of the manifest alone, so every run cuts the same micro-batches."""
    end, total = first, 0
    while end < len(rows) and (end == first or total + rows[end] <= max_rows):
        total += rows[end]
        end += 1
    return end


def dataframe_batch(manifest: Mapping[str, Any], staging: str, prev: Any, max_rows: int) -> Any:
    """The metadata of the micro-batch after `prev` (the last one's, or None) over a staged
    DataFrame, None when every file is handed over."""
    files = list(manifest["files"])
    first = int(prev["end"]) if isinstance(prev, Mapping) and "end" in prev else 0
    if first >= len(files):
        return None
    end = next_files([int(f["rows"]) for f in files], first, max_rows)
    chosen = files[first:end]
    return {
        "input": DATAFRAME,
        "staging": staging,
        "files": [f"{staging}/{f['name']}" for f in chosen],
        "rows": sum(int(f["rows"]) for f in chosen),
        "end": end,
    }


def idle_meta(prev: Any, source: str) -> dict[str, Any]:
    """An idle micro-batch's metadata (host/spark/idle_batches.py): no files, and the position of
    the batch before it (a DataFrame's `end`, a directory's `name`), so that the next batch goes
    on from there."""
    base = dict(prev) if isinstance(prev, Mapping) else {"input": source}
    return {**base, "files": [], "rows": 0, "idle": True}


def next_directory(
    names: Sequence[str], complete: Mapping[str, bool], prev_name: str | None
) -> str | None:
    """The output directory to read next: the first, in the spout's name order, after the one
    read last; None while it is not complete (later ones wait for it, as the spout waits) or
    when there is none yet."""
    ordered = sorted(names, key=order_of)
    after = [n for n in ordered if prev_name is None or order_of(n) > order_of(prev_name)]
    if not after or not complete.get(after[0], False):
        return None
    return after[0]
