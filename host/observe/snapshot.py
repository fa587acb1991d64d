"""The stats snapshot: one run's figures as one JSON object, and the types that describe it.

The supervisor builds a snapshot on every report (twice a second) and at the end of the run.
The same object is drawn by the live view (`host.observe.view`), served to the web UI's page as
`/api/snapshot` (`host.observe.web.server`; `static/app.js` reads the same keys), written as the
`--stats-json` file by `python -m host local` (`host.cli`), and returned to tests as
`TopologyResult.snapshot` (`host.testing`).

What is promised to users of the stats file is docs/contracts.md ("Stats file"): a subset of
these keys, counts exact, and further keys may be added, so readers ignore keys they do not know.
The types below describe every key the host writes today, for the code that reads them:
- counts (tuples emitted, executed, acked, failed, timed out, restarts, errors) are exact, never
  sampled; latencies are percentiles of sampled histograms, in milliseconds, within about 6 %
  (`host.observe.metrics.LatencyHistogram`); rates are per second since the previous snapshot;
  `cpu_percent` and `rss_bytes` are measured by psutil, None when not (yet) known;
- a key typed as required is always present; a `NotRequired` one only when it means something
  (a bolt's capacity, a component's last error, ...).

A transactional topology's snapshot also has a `batches` section (docs/transactional.md §6).

These are TypedDicts, so mypy checks the key names that the view, the web server and the CLI
read. (No `from __future__ import annotations` here: Python 3.11's TypedDict counts a key
annotated `NotRequired[...]` as required when the annotation is a string.)
"""

from typing import Any, NotRequired, TypedDict


class CompleteLatency(TypedDict):
    """Milliseconds from a spout tuple's emit to its tree being fully acked (spout tuples with
    a message id; None until one completes). The batches' latencies have the same shape."""

    p50: float | None
    p99: float | None
    mean: float | None


class ProcessLatency(TypedDict):
    """Milliseconds from a tuple written to a bolt task to its ack or fail (1 tuple in 8)."""

    p50: float | None
    p99: float | None


class TopologyStats(TypedDict):
    """The `topology` section: the run as a whole."""

    name: str
    uptime_s: float  # seconds on the run's clock since the start
    spout_tuples_acked: int  # spout tuples (with a message id) whose tree was fully acked
    spout_tuples_failed: int  # failed, timed out or lost with their spout task
    spout_tuples_timed_out: int  # of the failed: failed by topology.message.timeout.secs
    spout_tuples_pending: int  # tuple trees the acker holds now
    acked_per_s: float
    failed_per_s: float
    timed_out_per_s: float
    complete_latency_ms: CompleteLatency


class ComponentCounters(TypedDict):
    """A component's counters, summed over its tasks (`ComponentStats.as_json`)."""

    tasks: int  # parallelism
    emitted: int  # emit calls that were routed
    transferred: int  # tuple copies delivered to bolt tasks
    executed: int  # input tuples the bolt acked or failed
    acked: int  # bolts: acks sent; spouts: spout tuples fully acked
    failed: int  # bolts: fails sent; spouts: spout tuples failed or timed out
    restarts: int
    errors: int  # faults and `error` commands
    # bolts: tuples written to it that it never acked or failed, forgotten to make room once
    # their spout tuples had timed out or failed, or (not tracked) it had read past them
    # without acking (docs/protocol.md §4.5)
    never_acked: NotRequired[int]
    process_latency_ms: NotRequired[ProcessLatency]  # bolts, once a sample exists
    last_error: NotRequired[str]  # once it had an error: the newest of its tasks'
    last_error_at: NotRequired[float]  # wall-clock time (epoch seconds) of last_error
    metrics: NotRequired[dict[str, Any]]  # custom metrics (the `metrics` command), if any


class TaskSnapshot(TypedDict):
    """One task of a component (an element of `tasks_detail`)."""

    task: int  # the task id, as in the handshake context
    pid: int | None  # None while not running
    state: str  # a `host.runtime.process.State` value: "starting", "running", "backoff", ...
    emitted: int
    executed: int
    acked: int
    failed: int
    in_flight: int  # bolts: tuples written to it and not yet acked or failed
    queued: int  # bolts: tuples waiting for room among those in flight
    never_acked: NotRequired[int]  # bolts: as the component's, for this task
    restarts: int
    errors: int
    last_error: str | None
    last_error_at: float | None  # wall-clock time (epoch seconds)
    capacity: float  # share of the time with tuples in flight, 0..1 (bolts; 0.0 for spouts)
    cpu_percent: float | None
    rss_bytes: int | None


class ComponentSnapshot(ComponentCounters):
    """An element of `components`: the counters plus what its tasks are doing now."""

    in_flight: int  # summed over the tasks
    queued: int
    states: list[str]  # the distinct states of its tasks, sorted
    capacity: NotRequired[float]  # bolts: the busiest task's (as in Storm's UI)
    cpu_percent: float | None  # summed over the tasks measured
    rss_bytes: int | None
    tasks_detail: list[TaskSnapshot]


class LogEntry(TypedDict):
    """A line a component logged (its `log` commands and its stderr), newest last."""

    time: float  # wall-clock time (epoch seconds)
    component: str
    task: int
    level: str  # a `logging` level name: "INFO", "WARNING", "ERROR", ...
    message: str  # at most 500 characters, longer lines are cut


class FailureReport(TypedDict):
    """A task that was killed (a crash, a hang, protocol misuse), with what explains it."""

    time: float  # wall-clock time (epoch seconds)
    component: str
    task: int
    pid: int | None
    reason: str
    exit: str | None  # its exit status, as text, when known
    stderr: list[str]  # its last stderr lines, at most 10
    last_sent: str | None  # the start of the last thing the host wrote to it
    last_received: str | None  # the end of what it last wrote


class RecentActivity(TypedDict):
    """The bounded recent history kept by `host.observe.observations.Observations`."""

    recent_logs: list[LogEntry]  # at most RECENT_LOGS, oldest first
    failures: list[FailureReport]  # at most RECENT_FAILURES, oldest first


class OpenAttempt(TypedDict):
    """An open attempt of a batch (an element of `batches.open`, lowest txid first)."""

    txid: int
    attempt: int  # 1 for the first try of the txid, +1 on each replay (stored across runs)
    # "processing", "processed" or "committing" (docs/transactional.md §2.2); a plain str, not a
    # Literal, so that tests/support/typed_dict_check.py checks it like every other key
    phase: str
    age_s: float  # seconds since this attempt was emitted
    tuples: int  # tuples of the attempt delivered to tasks so far
    finished: int  # tasks of the batch group that finished it ...
    tasks: int  # ... of all the batch group's tasks


class CommittedBatch(TypedDict):
    """A batch committed in this run (an element of `batches.recent`, oldest first)."""

    txid: int
    attempt: int  # the attempt that committed
    tuples: int
    processing_ms: float  # from the attempt's first emit until its commit phase began
    commit_ms: float  # the commit phase alone
    committed_at: float  # wall-clock time (epoch seconds)


class BatchStats(TypedDict):
    """The `batches` section: the transactional batches of the run (docs/transactional.md §6)."""

    transactional_id: str  # topology.transactional.id
    committed_txid: int  # the last committed txid, 0 before the first ever
    open: list[OpenAttempt]  # lowest txid first
    committed: int  # txids committed in this run
    committed_tuples: int  # the spout tuples of those batches
    replays: int  # attempts aborted in this run (each is emitted again)
    last_abort: str | None  # why the latest attempt was aborted, None if none was
    batch_latency_ms: CompleteLatency  # from an attempt's first emit to its commit
    commit_latency_ms: CompleteLatency  # the commit phase alone
    recent: list[CommittedBatch]  # the last 20 committed, oldest first


class DrpcLatency(TypedDict):
    p50: float | None
    p99: float | None
    max: float | None


class DrpcStats(TypedDict):
    """The `drpc` section: the DRPC server of the run (docs/drpc.md §6)."""

    url: str  # where it listens
    functions: list[str]
    pending: int  # read and not answered yet
    waiting: int  # of those, not emitted yet (held by max.spout.pending or backpressure)
    connections: int
    answered: int  # with a result
    failed: int  # with an error (failed, finished without a result, shut down)
    timed_out: int  # 504 after drpc.request.timeout.secs
    rejected: int  # at once: an unknown function, or the table full
    late: int  # results for no request this host knows
    duplicate: int  # results for a request answered before
    latency_ms: DrpcLatency  # of answered requests, from read to result


class Snapshot(RecentActivity):
    """The whole snapshot: the `--stats-json` file."""

    topology: TopologyStats
    components: dict[str, ComponentSnapshot]  # by component id, in the topology's order
    batches: NotRequired[BatchStats]  # only when the topology is transactional
    drpc: NotRequired[DrpcStats]  # only when the topology has DRPC functions
