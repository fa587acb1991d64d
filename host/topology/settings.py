"""Storm configuration keys the host uses: defaults, type checks, typed accessors, and the merge
that gives each component its effective configuration (spec §3.3, §12).

Keys keep Storm's names; the host's own settings live under `host.` in the same style. A config is a
plain dict (it is sent to components in the handshake, so every value must be a JSON value). `None`
for a known key means "unset": the default applies, or the feature is off (no spout-pending cap, no
ticks).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace

import yaml

from host.errors import TopologyError
from host.topology.model import Component, Topology

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
SPOUT_ACK_BATCH = "host.spout.ack.batch"
SPOUT_NEXT_DEPTH = "host.spout.next.depth"
BOLT_MAX_IN_FLIGHT = "host.bolt.max.in.flight"
ACKER_LATENCY_SAMPLE = "host.acker.latency.sample"
MAX_FRAME_BYTES = "host.max.frame.bytes"

HOST_PREFIX = "host."


# ---- value checks: each returns what is wrong, or None ------------------------------------------

Check = Callable[[object], "str | None"]


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)  # YAML `true` is not 1


def _is_number(value: object) -> bool:
    return (_is_int(value) or isinstance(value, float)) and math.isfinite(value)


def _positive_int(value: object) -> str | None:
    return None if _is_int(value) and value > 0 else "must be a positive integer"


def _non_negative_int(value: object) -> str | None:
    return None if _is_int(value) and value >= 0 else "must be an integer >= 0"


def _positive_number(value: object) -> str | None:
    return None if _is_number(value) and value > 0 else "must be a number > 0"


def _non_negative_number(value: object) -> str | None:
    return None if _is_number(value) and value >= 0 else "must be a number >= 0"


def _boolean(value: object) -> str | None:
    return None if isinstance(value, bool) else "must be true or false"


@dataclass(frozen=True)
class Key:
    """A configuration key the host reads. `default` None = unset unless configured.
    `component_level`: whether a component's own config may override it (Storm's whitelist)."""

    name: str
    default: object
    check: Check
    component_level: bool = False
    # Storm's type checks allow null for keys that are unset by default
    nullable: bool = False


KEYS: dict[str, Key] = {
    k.name: k
    for k in (
        Key(MESSAGE_TIMEOUT_SECS, 30, _positive_int),
        Key(MAX_SPOUT_PENDING, None, _positive_int, component_level=True, nullable=True),
        # 0 turns acking off; unset = one acker (Storm: one per worker, and we are one worker)
        Key(ACKER_EXECUTORS, None, _non_negative_int, nullable=True),
        Key(SHELLBOLT_MAX_PENDING, 100, _positive_int),
        Key(SUBPROCESS_TIMEOUT_SECS, None, _positive_int, nullable=True),
        Key(WORKER_TIMEOUT_SECS, 30, _positive_int),
        Key(TICK_TUPLE_FREQ_SECS, None, _positive_int, component_level=True, nullable=True),
        Key(DEBUG, False, _boolean, component_level=True),
        Key(ENABLE_MESSAGE_TIMEOUTS, True, _boolean),
        Key(HANDSHAKE_TIMEOUT_SECS, 30, _positive_number),
        Key(RESTART_BACKOFF_INITIAL_SECS, 0.5, _positive_number),
        Key(RESTART_BACKOFF_MAX_SECS, 30, _positive_number),
        # more than this many restarts within the window and the component is declared fatal
        Key(RESTART_MAX, 10, _non_negative_int),
        Key(RESTART_WINDOW_SECS, 60, _positive_number),
        Key(SHUTDOWN_GRACE_SECS, 5, _non_negative_number),
        Key(SPOUT_IDLE_MAX_SLEEP_MS, 100, _non_negative_number),
        # ack / fail commands written to a spout before waiting for their syncs; 1 = Storm's strict
        # one-command-at-a-time exchange
        Key(SPOUT_ACK_BATCH, 100, _positive_int),
        # exchanges (a `next`, or one batch of ack / fail) written to a spout before the oldest is
        # answered by `sync`, so that the spout works while the host handles what it emitted (fewer
        # when max.spout.pending would not leave room for what they emit); 1 with
        # host.spout.ack.batch 1 = Storm's strict one-command-at-a-time exchange
        Key(SPOUT_NEXT_DEPTH, 32, _positive_int),
        # tuples written to a bolt task and not yet acked or failed. Storm bounds only the tuples
        # not yet written (topology.shellbolt.max.pending); written ones are bounded by the pipe and
        # the component. We bound them too, so that host memory stays bounded whatever a component
        # does; a window well beyond one read's worth keeps the bolt busy while the host handles
        # what it wrote. A bolt that holds tuples unacked (a batching sink) holds at most this many.
        Key(BOLT_MAX_IN_FLIGHT, 1000, _positive_int),
        # complete latency is timed for one spout tuple in this many (1 = all: 24 more bytes each)
        Key(ACKER_LATENCY_SAMPLE, 16, _positive_int),
        Key(MAX_FRAME_BYTES, 16 * 1024 * 1024, _positive_int),
    )
}

DEFAULTS: dict[str, object] = {k.name: k.default for k in KEYS.values() if k.default is not None}

# Storm's whitelist of keys a component's own configuration may set (spec §3.3). Everything else
# that Storm knows is topology-wide and silently dropped from component config.
COMPONENT_WHITELIST = frozenset(
    {
        DEBUG,
        MAX_SPOUT_PENDING,
        "topology.max.task.parallelism",
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
        "topology.multilang.serializer",
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


# ---- checking a config dict ---------------------------------------------------------------------


def _json_problem(value: object) -> str | None:
    """Config is sent to every component as JSON: YAML dates, sets and the like cannot go."""
    if value is None or isinstance(value, (str, bool, int)):
        return None
    if isinstance(value, float):
        return None if math.isfinite(value) else "must be a finite number (JSON has no NaN/inf)"
    if isinstance(value, (list, tuple)):
        return next((p for p in map(_json_problem, value) if p), None)
    if isinstance(value, dict):
        if not all(isinstance(k, str) for k in value):
            return "mapping keys must be strings (the value is sent to components as JSON)"
        return next((p for p in map(_json_problem, value.values()) if p), None)
    return (
        f"must be a JSON value (string, number, boolean, null, list or mapping), "
        f"not {type(value).__name__}; quote it if you meant a string"
    )


def check_config(
    conf: object, *, file: str | None = None, component: str | None = None, strict: bool = True
) -> None:
    """Raise TopologyError for the first bad entry of a topology config (`component` None) or of
    a component's config. With `strict`, component config may not set topology-wide known keys
    (Storm would silently ignore them; we say so instead). Flux loaders pass strict=False."""
    if not isinstance(conf, dict):
        raise TopologyError(
            f"config must be a mapping of keys to values, not {type(conf).__name__}",
            file=file,
            component=component,
            key="config",
        )
    for key, value in conf.items():
        if not isinstance(key, str) or not key:
            raise TopologyError(
                f"config keys must be non-empty strings, got {key!r}",
                file=file,
                component=component,
                key="config",
            )
        problem = _entry_problem(key, value, component is not None and strict)
        if problem:
            raise TopologyError(problem, file=file, component=component, key=key)
    if component is None:
        _check_backoff(conf, file)


def _entry_problem(key: str, value: object, component_scope: bool) -> str | None:
    if key.startswith(HOST_PREFIX) and key not in KEYS:
        known = ", ".join(sorted(k for k in KEYS if k.startswith(HOST_PREFIX)))
        return f"unknown host setting; the host's settings are: {known}"
    if component_scope and not is_component_level(key):
        return (
            "is topology-wide: a component's config cannot set it (Storm ignores it there); "
            "move it to the topology's config"
        )
    spec = KEYS.get(key)
    if spec is not None and not (value is None and spec.nullable):
        problem = spec.check(value)
        if problem:
            return f"{problem}, got {value!r}"
    problem = _json_problem(value)
    return f"value {problem}" if problem else None


def _check_backoff(conf: Mapping, file: str | None) -> None:
    if restart_backoff_max_secs(conf) < restart_backoff_initial_secs(conf):
        raise TopologyError(
            f"must be >= {RESTART_BACKOFF_INITIAL_SECS} ({restart_backoff_initial_secs(conf)})",
            file=file,
            key=RESTART_BACKOFF_MAX_SECS,
        )


# ---- effective configuration --------------------------------------------------------------------


def _component_of(topology: Topology, component: Component | str) -> Component:
    return topology.component(component) if isinstance(component, str) else component


def component_overrides(component: Component) -> dict:
    """The part of a component's config that Storm honours: whitelisted known keys and custom
    keys; other known keys (e.g. `topology.subprocess.timeout.secs`, `host.*`) are dropped."""
    return {k: v for k, v in component.config.items() if is_component_level(k)}


def effective_config(topology: Topology, component: Component | str) -> dict:
    """Defaults + topology config + the component's honoured config (spec §3.3). For spouts,
    `topology.tick.tuple.freq.secs` is set to the message timeout as Storm does (spouts never get
    ticks: use `tick_freq` to decide who does). Known keys set to null fall back to their default
    or are left out."""
    comp = _component_of(topology, component)
    conf = {**DEFAULTS, **topology.config, **component_overrides(comp)}
    for key, spec in KEYS.items():
        if key in conf and conf[key] is None:
            if spec.default is None:
                del conf[key]
            else:
                conf[key] = spec.default
    if comp.is_spout:
        conf[TICK_TUPLE_FREQ_SECS] = conf[MESSAGE_TIMEOUT_SECS]
    return conf


def tick_freq(topology: Topology, component: Component | str) -> int | None:
    """Seconds between tick tuples for this component, or None for no ticks. Only bolts whose
    topology or own config sets `topology.tick.tuple.freq.secs` get ticks (spec §4.2, §6): Storm's
    own example bolts crash on a tick they did not ask for."""
    comp = _component_of(topology, component)
    if comp.is_spout:
        return None
    return effective_config(topology, comp).get(TICK_TUPLE_FREQ_SECS)


# ---- typed accessors (take an effective or topology config) -------------------------------------


def _get(conf: Mapping, key: str):
    value = conf.get(key)
    return KEYS[key].default if value is None else value


def message_timeout_secs(conf: Mapping) -> int:
    return _get(conf, MESSAGE_TIMEOUT_SECS)


def max_spout_pending(conf: Mapping) -> int | None:
    """None = unlimited."""
    return _get(conf, MAX_SPOUT_PENDING)


def acker_executors(conf: Mapping) -> int | None:
    """None = unset (one acker); 0 = acking off."""
    return _get(conf, ACKER_EXECUTORS)


def acking_enabled(conf: Mapping) -> bool:
    return acker_executors(conf) != 0


def acker_tasks(conf: Mapping) -> int:
    """How many `__acker` tasks appear in the task numbering: 0 when acking is off."""
    executors = acker_executors(conf)
    return 1 if executors is None else executors


def shellbolt_max_pending(conf: Mapping) -> int:
    return _get(conf, SHELLBOLT_MAX_PENDING)


def subprocess_timeout_secs(conf: Mapping) -> int:
    """Liveness timeout; unset falls back to `supervisor.worker.timeout.secs` (spec §4.7)."""
    value = conf.get(SUBPROCESS_TIMEOUT_SECS)
    return _get(conf, WORKER_TIMEOUT_SECS) if value is None else value


def tick_tuple_freq_secs(conf: Mapping) -> int | None:
    return _get(conf, TICK_TUPLE_FREQ_SECS)


def debug(conf: Mapping) -> bool:
    return _get(conf, DEBUG)


def message_timeouts_enabled(conf: Mapping) -> bool:
    return _get(conf, ENABLE_MESSAGE_TIMEOUTS)


def handshake_timeout_secs(conf: Mapping) -> float:
    return _get(conf, HANDSHAKE_TIMEOUT_SECS)


def restart_backoff_initial_secs(conf: Mapping) -> float:
    return _get(conf, RESTART_BACKOFF_INITIAL_SECS)


def restart_backoff_max_secs(conf: Mapping) -> float:
    return _get(conf, RESTART_BACKOFF_MAX_SECS)


def restart_max(conf: Mapping) -> int:
    return _get(conf, RESTART_MAX)


def restart_window_secs(conf: Mapping) -> float:
    return _get(conf, RESTART_WINDOW_SECS)


def shutdown_grace_secs(conf: Mapping) -> float:
    return _get(conf, SHUTDOWN_GRACE_SECS)


def spout_idle_max_sleep_ms(conf: Mapping) -> float:
    return _get(conf, SPOUT_IDLE_MAX_SLEEP_MS)


def spout_ack_batch(conf: Mapping) -> int:
    return _get(conf, SPOUT_ACK_BATCH)


def bolt_max_in_flight(conf: Mapping) -> int:
    return _get(conf, BOLT_MAX_IN_FLIGHT)


def spout_next_depth(conf: Mapping) -> int:
    return _get(conf, SPOUT_NEXT_DEPTH)


def acker_latency_sample(conf: Mapping) -> int:
    return _get(conf, ACKER_LATENCY_SAMPLE)


def max_frame_bytes(conf: Mapping) -> int:
    return _get(conf, MAX_FRAME_BYTES)


# ---- command-line overrides (-c KEY=VALUE) ------------------------------------------------------

_SCALARS = (str, int, float, bool, type(None))


def parse_override(text: str) -> tuple[str, object]:
    """`KEY=VALUE` -> (key, value). VALUE is read as a YAML scalar, as Storm's `-c` does: `10` is
    an int, `0.5` a float, `true`/`false` booleans, `null` (or nothing) unset, anything else a
    string. A value that YAML would read as something other than a scalar (a list, a mapping, a
    date) is kept as the literal string."""
    key, sep, raw = text.partition("=")
    key = key.strip()
    if not sep or not key:
        raise TopologyError(f"expected KEY=VALUE, got {text!r}", key="-c")
    try:
        value = yaml.safe_load(raw)
    except yaml.YAMLError:
        return key, raw
    if not isinstance(value, _SCALARS) or (isinstance(value, float) and not math.isfinite(value)):
        return key, raw
    return key, value


def parse_overrides(items: Iterable[str]) -> dict[str, object]:
    """Several `-c` options; a later one wins over an earlier one with the same key."""
    return dict(parse_override(item) for item in items)


def with_overrides(topology: Topology, overrides: Mapping[str, object]) -> Topology:
    """The topology with `overrides` merged over its config, checked like the config itself."""
    if not overrides:
        return topology
    for key, value in overrides.items():
        problem = _entry_problem(key, value, component_scope=False)
        if problem:
            raise TopologyError(f"{problem} (from -c)", file=topology.source, key=key)
    merged = {**topology.config, **overrides}
    _check_backoff(merged, topology.source)
    return replace(topology, config=merged)
