"""The Storm configuration keys the host reads, and what a config says about them.

The `Key` table is the one place where a key's name, default and range are written (the checks of
a range are `host.topology.setting_checks`). `Settings` is the typed view of a config, read once
through that table. What one component's config is (Storm's merge of defaults, topology config
and the component's own) is `host.topology.component_config`.

Keys keep Storm's names; the host's own settings live under `host.` in the same style. A config is a
plain dict (it is sent to components in the handshake, so every value must be a JSON value). `None`
for a known key means "unset": the default applies, or the feature is off (no spout-pending cap, no
ticks). Checking a whole config dict is `host.topology.config_check`; `-c KEY=VALUE` is
`host.topology.overrides`.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass

from host.errors import TopologyError
from host.topology import setting_checks as checks
from host.topology.model import Topology

# ---- key names ----------------------------------------------------------------------------------

MESSAGE_TIMEOUT_SECS = "topology.message.timeout.secs"
MAX_SPOUT_PENDING = "topology.max.spout.pending"
ACKER_EXECUTORS = "topology.acker.executors"
SHELLBOLT_MAX_PENDING = "topology.shellbolt.max.pending"
SUBPROCESS_TIMEOUT_SECS = "topology.subprocess.timeout.secs"
WORKER_TIMEOUT_SECS = "supervisor.worker.timeout.secs"
TICK_TUPLE_FREQ_SECS = "topology.tick.tuple.freq.secs"
DEBUG = "topology.debug"
ENABLE_MESSAGE_TIMEOUTS = "topology.enable.message.timeouts"

HANDSHAKE_TIMEOUT_SECS = "host.handshake.timeout.secs"
RESTART_BACKOFF_INITIAL_SECS = "host.restart.backoff.initial.secs"
RESTART_BACKOFF_MAX_SECS = "host.restart.backoff.max.secs"
RESTART_MAX = "host.restart.max"
RESTART_WINDOW_SECS = "host.restart.window.secs"
SHUTDOWN_GRACE_SECS = "host.shutdown.grace.secs"
SPOUT_IDLE_MAX_SLEEP_MS = "host.spout.idle.max.sleep.ms"
BATCH_IDLE_MAX_SLEEP_MS = "host.batch.idle.max.sleep.ms"
SPOUT_ACK_BATCH = "host.spout.ack.batch"
SPOUT_NEXT_DEPTH = "host.spout.next.depth"
SPOUT_PIPELINING = "host.spout.pipelining"
BOLT_MAX_IN_FLIGHT = "host.bolt.max.in.flight"
SHUFFLE_RUN_MAX = "host.shuffle.run.max"
SHUFFLE_RUN_BUDGET_MS = "host.shuffle.run.budget.ms"
CPU_ISOLATE = "host.cpu.isolate"
TASK_NICE = "host.task.nice"
ACKER_LATENCY_SAMPLE = "host.acker.latency.sample"
MAX_FRAME_BYTES = "host.max.frame.bytes"
STATE_DIR = "host.state.dir"

# DRPC (docs/drpc.md §5): Storm's names for the port, the deadline and the body size; the host's
# own for where it listens and its bounds
DRPC_HTTP_PORT = "drpc.http.port"
DRPC_REQUEST_TIMEOUT_SECS = "drpc.request.timeout.secs"
DRPC_MAX_BUFFER_SIZE = "drpc.max_buffer_size"
DRPC_BIND = "host.drpc.bind"
DRPC_MAX_PENDING = "host.drpc.max.pending"
DRPC_MAX_CONNECTIONS = "host.drpc.max.connections"
# `host spark` (docs/spark.md §4.6): the most tuples one staged micro-batch of a plain spout holds
SPARK_BATCH_MAX_TUPLES = "host.spark.batch.max.tuples"
# `host spark` (docs/spark.md §4.7): the most records one micro-batch of a Kafka source reads from
# each Kafka partition
SPARK_KAFKA_BATCH_MAX_RECORDS = "host.spark.kafka.batch.max.records"
# `host spark` (docs/spark.md §2.4): seconds without a micro-batch after which the plain spouts'
# source runs an idle (empty) one, so that ticking bolts get their ticks; unset = the shortest
# tick period of the topology's bolts, 0 = never
SPARK_IDLE_BATCH_SECS = "host.spark.idle.batch.secs"
# `host spark` (docs/spark.md §6.1): whether the directories components run in are shipped to the
# executors as archives ("auto": when the master is not local), and the most their files may weigh
SPARK_SHIP = "host.spark.ship"
SPARK_SHIP_MAX_MB = "host.spark.ship.max.mb"

HOST_PREFIX = "host."

# Storm keys that the Flux loader reads (and the export writes), not the runtime
MAX_TASK_PARALLELISM = "topology.max.task.parallelism"
MULTILANG_SERIALIZER = "topology.multilang.serializer"


@dataclass(frozen=True)
class Key:
    """A configuration key the host reads. `default` None = unset unless configured."""

    name: str
    default: object
    check: checks.Check
    # Storm's type checks allow null for keys that are unset by default
    nullable: bool = False


KEYS: dict[str, Key] = {
    k.name: k
    for k in (
        Key(MESSAGE_TIMEOUT_SECS, 30, checks.positive_int),
        Key(MAX_SPOUT_PENDING, None, checks.positive_int, nullable=True),
        # 0 turns acking off; unset = one acker (Storm: one per worker, and we are one worker)
        Key(ACKER_EXECUTORS, None, checks.non_negative_int, nullable=True),
        Key(SHELLBOLT_MAX_PENDING, 100, checks.positive_int),
        Key(SUBPROCESS_TIMEOUT_SECS, None, checks.positive_int, nullable=True),
        Key(WORKER_TIMEOUT_SECS, 30, checks.positive_int),
        Key(TICK_TUPLE_FREQ_SECS, None, checks.positive_int, nullable=True),
        Key(DEBUG, False, checks.boolean),
        Key(ENABLE_MESSAGE_TIMEOUTS, True, checks.boolean),
        Key(HANDSHAKE_TIMEOUT_SECS, 30, checks.positive_number),
        Key(RESTART_BACKOFF_INITIAL_SECS, 0.5, checks.positive_number),
        Key(RESTART_BACKOFF_MAX_SECS, 30, checks.positive_number),
        # more than this many restarts within the window and the component is declared fatal
        Key(RESTART_MAX, 10, checks.non_negative_int),
        Key(RESTART_WINDOW_SECS, 60, checks.positive_number),
        Key(SHUTDOWN_GRACE_SECS, 5, checks.non_negative_number),
        Key(SPOUT_IDLE_MAX_SLEEP_MS, 100, checks.non_negative_number),
        # transactional topologies: after a batch that had no tuples (or a batch spout not ready),
        # the next batch waits, twice as long each time up to this, so that an idle transactional
        # topology does not commit empty batches back to back (docs/transactional.md §2)
        Key(BATCH_IDLE_MAX_SLEEP_MS, 1000, checks.non_negative_number),
        # whether spout commands may be written ahead of their syncs, for spouts whose component
        # has no `pipelining` switch: unset = where the library announces `pipeline/1` in its pid
        # reply; false = Storm's one command at a time for all (docs/protocol.md, "Protocol
        # extensions")
        Key(SPOUT_PIPELINING, None, checks.boolean, nullable=True),
        # for a pipelining spout: ack / fail commands written before waiting for their syncs
        Key(SPOUT_ACK_BATCH, 100, checks.positive_int),
        # for a pipelining spout: exchanges (a `next`, or one batch of ack / fail) written before
        # the oldest is answered by `sync`, so that the spout works while the host handles what it
        # emitted (fewer when max.spout.pending would not leave room for what they emit)
        Key(SPOUT_NEXT_DEPTH, 32, checks.positive_int),
        # tuples written to a bolt task and not yet acked or failed. Storm bounds only the tuples
        # not yet written (topology.shellbolt.max.pending); written ones are bounded by the pipe and
        # the component. We bound them too, so that host memory stays bounded whatever a component
        # does; a window well beyond one read's worth keeps the bolt busy while the host handles
        # what it wrote. A bolt that holds tuples unacked (a batching sink) holds at most this many.
        Key(BOLT_MAX_IN_FLIGHT, 1000, checks.positive_int),
        # shuffle groupings (and none, local-or-shuffle) give a bolt task runs of consecutive
        # tuples, so that with many tasks a write and a wake-up carry more than one: at most this
        # many (1 = Storm's round robin), and no more than the bolt's measured time per tuple
        # lets it work through within the budget (host/runtime/run_length.py; docs/protocol.md)
        Key(SHUFFLE_RUN_MAX, 128, checks.positive_int),
        Key(SHUFFLE_RUN_BUDGET_MS, 4, checks.positive_number),
        # keep the task processes off one CPU, the host's, while the host is busy and they do
        # not need it: "auto", true (two CPUs or more) or false (host/runtime/cpu_isolation.py)
        Key(CPU_ISOLATE, "auto", checks.auto_or_boolean),
        # how far the task processes yield a busy CPU to the host: "auto" (19 once there are more
        # than 4 task processes per CPU, else 0) or a niceness 0-19 (host/runtime/task_priority.py)
        Key(TASK_NICE, "auto", checks.auto_or_niceness),
        # complete latency is timed for one spout tuple in this many (1 = all: 24 more bytes each)
        Key(ACKER_LATENCY_SAMPLE, 16, checks.positive_int),
        Key(MAX_FRAME_BYTES, 16 * 1024 * 1024, checks.positive_int),
        # where transactional topologies keep their batches' state (docs/transactional.md §3);
        # unset = $XDG_STATE_HOME/multilang-host or ~/.local/state/multilang-host (`state_dir`)
        Key(STATE_DIR, None, checks.path, nullable=True),
        # DRPC's HTTP server (docs/drpc.md §1, §5), started only for a topology with DRPC parts:
        # Storm's port, request deadline and largest request; the host's address and bounds
        Key(DRPC_HTTP_PORT, 3774, checks.port),
        Key(DRPC_REQUEST_TIMEOUT_SECS, 600, checks.positive_number),
        Key(DRPC_MAX_BUFFER_SIZE, 1048576, checks.positive_int),
        # HOST or HOST:PORT; a port here wins over drpc.http.port (`Settings.drpc_port`)
        Key(DRPC_BIND, "127.0.0.1", checks.bind),
        Key(DRPC_MAX_PENDING, 1024, checks.positive_int),
        Key(DRPC_MAX_CONNECTIONS, 1024, checks.positive_int),
        Key(SPARK_BATCH_MAX_TUPLES, 10_000, checks.positive_int),
        Key(SPARK_KAFKA_BATCH_MAX_RECORDS, 1000, checks.positive_int),
        Key(SPARK_IDLE_BATCH_SECS, None, checks.non_negative_number, nullable=True),
        Key(SPARK_SHIP, "auto", checks.auto_or_boolean),
        Key(SPARK_SHIP_MAX_MB, 512, checks.positive_number),
    )
}

DEFAULTS: dict[str, object] = {k.name: k.default for k in KEYS.values() if k.default is not None}

# Storm's whitelist of keys a component's own configuration may set (`Executor.java`,
# normalizedComponentConf). Everything else that Storm knows is topology-wide and silently dropped
# from component config.
COMPONENT_WHITELIST = frozenset(
    {
        DEBUG,
        MAX_SPOUT_PENDING,
        MAX_TASK_PARALLELISM,
        "topology.transactional.id",
        TICK_TUPLE_FREQ_SECS,
        "topology.sleep.spout.wait.strategy.time.ms",
        "topology.spout.wait.strategy",
        "topology.bolts.tuple.timestamp.max.lag.ms",
        "topology.bolts.message.id.field.name",
        "topology.bolts.late.tuple.stream",
        "topology.state.provider",
        "topology.state.provider.config",
    }
)
_WHITELIST_PREFIXES = ("topology.bolts.window.", "topology.bolts.sliding.interval.")

# Storm keys outside our table, so that "known Storm key" means what it means to Storm: these are
# dropped from component config, whereas a custom `topology.myapp.x` passes through.
_OTHER_STORM_TOPOLOGY_KEYS = frozenset(
    {
        "topology.name",
        "topology.workers",
        "topology.tasks",
        "topology.eventlogger.executors",
        MULTILANG_SERIALIZER,
        "topology.multilang.log.handler",
        "topology.skip.missing.kryo.registrations",
        "topology.kryo.register",
        "topology.kryo.decorators",
        "topology.kryo.factory",
        "topology.tuple.serializer",
        "topology.fall.back.on.java.serialization",
        "topology.stats.sample.rate",
        "topology.builtin.metrics.bucket.size.secs",
        "topology.metrics.consumer.register",
        "topology.worker.childopts",
        "topology.worker.logwriter.childopts",
        "topology.classpath",
        "topology.environment",
        "topology.max.error.report.per.interval",
        "topology.error.throttle.interval.secs",
        "topology.trident.batch.emit.interval.millis",
        "topology.testing.always.try.serialize",
        "topology.state.synchronization.timeout.secs",
        "topology.state.checkpoint.interval.ms",
        "topology.backpressure.enable",
        "topology.executor.receive.buffer.size",
        "topology.transfer.buffer.size",
        "topology.transfer.batch.size",
        "topology.producer.batch.size",
        "topology.batch.flush.interval.millis",
        "topology.disable.loadaware.messaging",
        "topology.worker.shared.thread.pool.size",
        "topology.auto-credentials",
        "topology.scheduler.strategy",
        "topology.priority",
        "topology.worker.max.heap.size.mb",
        "topology.component.resources.onheap.memory.mb",
        "topology.component.resources.offheap.memory.mb",
        "topology.component.cpu.pcore.percent",
        "topology.users",
        "topology.groups",
        "topology.submitter.principal",
        "topology.submitter.user",
        "topology.version",
    }
)
# Cluster-level namespaces: every key in them is Storm's own.
_STORM_PREFIXES = (
    "storm.",
    "nimbus.",
    "supervisor.",
    "worker.",
    "drpc.",
    "ui.",
    "logviewer.",
    "pacemaker.",
    "transactional.",
    "dev.zookeeper.",
)


def is_component_level(key: str) -> bool:
    """Whether a component's own config may set `key` (Storm's whitelist; custom keys always)."""
    if key in COMPONENT_WHITELIST or key.startswith(_WHITELIST_PREFIXES):
        return True
    return not is_known_key(key)


def is_known_key(key: str) -> bool:
    """A key Storm (or the host, under `host.`) defines, as opposed to a user's custom key."""
    return (
        key in KEYS
        or key in COMPONENT_WHITELIST
        or key in _OTHER_STORM_TOPOLOGY_KEYS
        or key.startswith(_WHITELIST_PREFIXES)
        or key.startswith(_STORM_PREFIXES)
        or key.startswith(HOST_PREFIX)
    )


# ---- reading one key ----------------------------------------------------------------------------


class KeyReader:
    """Reads known keys from a config: the default when unset or null, and a TopologyError (not a
    value of the wrong type) when the value fails the key's check. Loaders check configs with
    `check_config` first; this keeps a config that skipped that from becoming garbage."""

    def __init__(
        self, conf: Mapping[str, object], file: str | None = None, component: str | None = None
    ) -> None:
        self.conf = conf
        self.file = file
        self.component = component

    def value(self, key: str) -> object:
        spec = KEYS[key]
        value = self.conf.get(key)
        if value is None:
            value = spec.default
        if value is not None:
            problem = spec.check(value)
            if problem:
                raise self._error(key, f"{problem}, got {value!r}")
        return value

    def integer(self, key: str) -> int:
        value = self.value(key)
        if checks.is_int(value):
            return value
        raise self._error(key, f"must be an integer, got {value!r}")

    def optional_integer(self, key: str) -> int | None:
        value = self.value(key)
        if value is None or checks.is_int(value):
            return value
        raise self._error(key, f"must be an integer or null, got {value!r}")

    def number(self, key: str) -> float:
        value = self.value(key)
        if checks.is_number(value):
            return value
        raise self._error(key, f"must be a number, got {value!r}")

    def optional_number(self, key: str) -> float | None:
        value = self.value(key)
        if value is None or checks.is_number(value):
            return value
        raise self._error(key, f"must be a number or null, got {value!r}")

    def optional_boolean(self, key: str) -> bool | None:
        value = self.value(key)
        if value is None or isinstance(value, bool):
            return value
        raise self._error(key, f"must be true, false or null, got {value!r}")

    def boolean(self, key: str) -> bool:
        value = self.value(key)
        if isinstance(value, bool):
            return value
        raise self._error(key, f"must be true or false, got {value!r}")

    def optional_path(self, key: str) -> str | None:
        value = self.value(key)
        if value is None or isinstance(value, str):
            return value
        raise self._error(key, f"must be a path or null, got {value!r}")

    def bind(self, key: str) -> tuple[str, int | None]:
        value = self.value(key)
        if isinstance(value, str):
            return checks.parse_bind(value)  # the key's check has parsed it already
        raise self._error(key, f"must be HOST or HOST:PORT, got {value!r}")

    def _error(self, key: str, problem: str) -> TopologyError:
        return TopologyError(problem, file=self.file, component=self.component, key=key)


# ---- Settings -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Settings:
    """What a config says about every key the host reads, typed and with defaults applied. Built
    from a topology's config (`settings_for`) or a component's effective config (`component_settings`
    in `host.topology.component_config`); the names, defaults and ranges are those of the `Key`
    table."""

    message_timeout_secs: int
    message_timeouts_enabled: bool
    max_spout_pending: int | None  # None = unlimited
    acking: bool  # topology.acker.executors is not 0
    acker_tasks: int  # `__acker` tasks in the task numbering: 0 when acking is off
    shellbolt_max_pending: int
    bolt_max_in_flight: int
    shuffle_run_max: int
    shuffle_run_budget_secs: float  # host.shuffle.run.budget.ms, in seconds
    cpu_isolate: str | bool  # "auto", True or False
    task_nice: str | int  # "auto" or 0-19
    # liveness timeout; unset falls back to supervisor.worker.timeout.secs as in Storm's
    # ShellBolt.java / ShellSpout.java (see docs/protocol.md on heartbeats)
    subprocess_timeout_secs: float
    handshake_timeout_secs: float
    shutdown_grace_secs: float
    restart_backoff_initial_secs: float
    restart_backoff_max_secs: float
    restart_max: int
    restart_window_secs: float
    spout_idle_max_sleep_secs: float  # host.spout.idle.max.sleep.ms, in seconds
    batch_idle_max_sleep_secs: float  # host.batch.idle.max.sleep.ms, in seconds
    spout_pipelining: bool | None
    spout_ack_batch: int
    spout_next_depth: int
    acker_latency_sample: int
    max_frame_bytes: int
    debug: bool
    # as the component sees it: for a spout, the message timeout (as Storm sets it); whether a
    # component gets tick tuples at all is `tick_freq`'s answer
    tick_tuple_freq_secs: int | None
    # host.state.dir as configured; None = the default. `state_dir()` gives the absolute path
    state_dir: str | None = None
    # DRPC's HTTP server (docs/drpc.md §5): where it listens (the host of host.drpc.bind; the
    # port is its port when it gives one, else drpc.http.port; 0 = any free port), the request
    # deadline, the largest POST body (drpc.max_buffer_size), and its bounds
    drpc_bind: str = "127.0.0.1"
    drpc_port: int = 3774
    drpc_request_timeout_secs: float = 600.0
    drpc_max_body: int = 1048576
    drpc_max_pending: int = 1024
    drpc_max_connections: int = 1024
    # `host spark`: the most tuples one staged micro-batch of a plain spout holds
    spark_batch_max_tuples: int = 10_000
    # `host spark`: the most records one micro-batch of a Kafka source reads per Kafka partition
    spark_kafka_batch_max_records: int = 1000
    # `host spark`: idle micro-batches (None: as the bolts' ticks need; 0: never)
    spark_idle_batch_secs: float | None = None
    # `host spark`: component directories shipped to the executors ("auto", True or False), and
    # the bound on their files (host.spark.ship.max.mb, in bytes)
    spark_ship: str | bool = "auto"
    spark_ship_max_bytes: int = 512 * 1024 * 1024

    @classmethod
    def from_config(
        cls, conf: Mapping[str, object], *, file: str | None = None, component: str | None = None
    ) -> Settings:
        """Settings from a topology or effective config; defaults fill what is missing. A value
        of the wrong type or out of range raises TopologyError naming `file`, `component` and the
        key."""
        read = KeyReader(conf, file, component)
        acker_executors = read.optional_integer(ACKER_EXECUTORS)
        subprocess_timeout = read.optional_integer(SUBPROCESS_TIMEOUT_SECS)
        worker_timeout = read.integer(WORKER_TIMEOUT_SECS)
        drpc_host, drpc_port = read.bind(DRPC_BIND)
        return cls(
            message_timeout_secs=read.integer(MESSAGE_TIMEOUT_SECS),
            message_timeouts_enabled=read.boolean(ENABLE_MESSAGE_TIMEOUTS),
            max_spout_pending=read.optional_integer(MAX_SPOUT_PENDING),
            acking=acker_executors != 0,
            acker_tasks=1 if acker_executors is None else acker_executors,
            shellbolt_max_pending=read.integer(SHELLBOLT_MAX_PENDING),
            bolt_max_in_flight=read.integer(BOLT_MAX_IN_FLIGHT),
            shuffle_run_max=read.integer(SHUFFLE_RUN_MAX),
            shuffle_run_budget_secs=read.number(SHUFFLE_RUN_BUDGET_MS) / 1000,
            cpu_isolate=read.value(CPU_ISOLATE),  # type: ignore[arg-type]  # checked: Key
            task_nice=read.value(TASK_NICE),  # type: ignore[arg-type]  # checked: Key
            subprocess_timeout_secs=float(
                worker_timeout if subprocess_timeout is None else subprocess_timeout
            ),
            handshake_timeout_secs=float(read.number(HANDSHAKE_TIMEOUT_SECS)),
            shutdown_grace_secs=float(read.number(SHUTDOWN_GRACE_SECS)),
            restart_backoff_initial_secs=float(read.number(RESTART_BACKOFF_INITIAL_SECS)),
            restart_backoff_max_secs=float(read.number(RESTART_BACKOFF_MAX_SECS)),
            restart_max=read.integer(RESTART_MAX),
            restart_window_secs=float(read.number(RESTART_WINDOW_SECS)),
            spout_idle_max_sleep_secs=read.number(SPOUT_IDLE_MAX_SLEEP_MS) / 1000,
            batch_idle_max_sleep_secs=read.number(BATCH_IDLE_MAX_SLEEP_MS) / 1000,
            spout_pipelining=read.optional_boolean(SPOUT_PIPELINING),
            spout_ack_batch=read.integer(SPOUT_ACK_BATCH),
            spout_next_depth=read.integer(SPOUT_NEXT_DEPTH),
            acker_latency_sample=read.integer(ACKER_LATENCY_SAMPLE),
            max_frame_bytes=read.integer(MAX_FRAME_BYTES),
            debug=read.boolean(DEBUG),
            tick_tuple_freq_secs=read.optional_integer(TICK_TUPLE_FREQ_SECS),
            state_dir=read.optional_path(STATE_DIR),
            drpc_bind=drpc_host,
            drpc_port=read.integer(DRPC_HTTP_PORT) if drpc_port is None else drpc_port,
            drpc_request_timeout_secs=float(read.number(DRPC_REQUEST_TIMEOUT_SECS)),
            drpc_max_body=read.integer(DRPC_MAX_BUFFER_SIZE),
            drpc_max_pending=read.integer(DRPC_MAX_PENDING),
            drpc_max_connections=read.integer(DRPC_MAX_CONNECTIONS),
            spark_batch_max_tuples=read.integer(SPARK_BATCH_MAX_TUPLES),
            spark_kafka_batch_max_records=read.integer(SPARK_KAFKA_BATCH_MAX_RECORDS),
            spark_idle_batch_secs=read.optional_number(SPARK_IDLE_BATCH_SECS),
            spark_ship=read.value(SPARK_SHIP),  # type: ignore[arg-type]  # checked: Key
            spark_ship_max_bytes=int(read.number(SPARK_SHIP_MAX_MB) * 1024 * 1024),
        )


def settings_for(topology: Topology) -> Settings:
    """The topology-wide settings (the topology's config over the defaults)."""
    return Settings.from_config(topology.config, file=topology.source)


def state_dir(source: Settings | Topology) -> str:
    """The absolute state directory: `host.state.dir` (a relative one is taken from the current
    directory), else $XDG_STATE_HOME/multilang-host (when absolute, as the XDG spec asks), else
    ~/.local/state/multilang-host (docs/transactional.md §3)."""
    settings = settings_for(source) if isinstance(source, Topology) else source
    if settings.state_dir is not None:
        return os.path.abspath(os.path.expanduser(checks.without_file_scheme(settings.state_dir)))
    xdg = os.environ.get("XDG_STATE_HOME", "")
    base = xdg if os.path.isabs(xdg) else os.path.join(os.path.expanduser("~"), ".local", "state")
    return os.path.abspath(os.path.join(base, "multilang-host"))
