"""storm-kafka-client's classes in a Flux file, emulated: `KafkaSpout` built from a
`KafkaSpoutConfig` (from a `KafkaSpoutConfig$Builder` bean or the `KafkaSpoutConfig.builder`
factory) and `KafkaBolt`, run as the ready components `components/kafka_spout` and
`components/kafka_bolt` (docs/kafka.md, "Flux"; docs/flux.md §1.1 for how beans are built).

Each Java call becomes a `kafka.spout.*` / `kafka.bolt.*` setting; Kafka client properties
(`setProp`, `withProducerProperties`) become the same settings or librdkafka properties
(`consumer.*`, `producer.*`). Names and defaults are storm-kafka-client 2.x's
(`KafkaSpoutConfig`, `CommonKafkaSpoutConfig`, `KafkaSpoutRetryExponentialBackoff`; the bolt's
are in flux_kafka_bolt.py).
What cannot be emulated is an ArgumentError naming it; a bean of a class not listed here (a
custom record translator, a tuple listener) is a placeholder that the spout refuses, naming it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass

from host.topology.flux_beans import Args, ArgumentError, EmulatedComponent, JavaClass
from host.topology.flux_kafka_bolt import (
    BOLT_BEAN_CLASSES,
    BOLT_COMPONENT_CLASSES,
    SERIALIZATION,
    class_name,
    flag_arg,
    prefixed,
    text_arg,
)
from host.topology.kafka_components import COMMANDS, spout_fields
from host.topology.model import SPOUT
from host.topology.setting_checks import is_int
from multilang.messages import DEFAULT_STREAM

log = logging.getLogger("host.topology.flux")

ComponentParts = tuple[tuple[str, ...], dict[str, tuple[str, ...]], dict[str, object]]
SettingsMethod = Callable[[dict[str, object], Args], None]

PACKAGE = "org.apache.storm.kafka"
KAFKA_SPOUT = f"{PACKAGE}.spout.KafkaSpout"
SPOUT_CONFIG = f"{PACKAGE}.spout.KafkaSpoutConfig"
SPOUT_CONFIG_BUILDER = f"{SPOUT_CONFIG}$Builder"
RETRY_BACKOFF = f"{PACKAGE}.spout.KafkaSpoutRetryExponentialBackoff"
TIME_INTERVAL = f"{RETRY_BACKOFF}$TimeInterval"
DEFAULT_TRANSLATOR = f"{PACKAGE}.spout.DefaultRecordTranslator"
PATTERN = "java.util.regex.Pattern"

# record translators by class name -> the spout's `translator`: the default one, and the
# value-only one of Storm's Flux examples (flux-examples and flux-core's tests)
TRANSLATORS = {
    DEFAULT_TRANSLATOR: "default",
    "org.apache.storm.flux.examples.OnlyValueRecordTranslator": "value",
    "org.apache.storm.flux.test.OnlyValueRecordTranslator": "value",
}
FIRST_POLL = ("EARLIEST", "LATEST", "UNCOMMITTED_EARLIEST", "UNCOMMITTED_LATEST")
GUARANTEES = ("AT_LEAST_ONCE", "AT_MOST_ONCE", "NO_GUARANTEE")
TIME_UNITS_MS = {
    "NANOSECONDS": 1e-6,
    "MICROSECONDS": 1e-3,
    "MILLISECONDS": 1.0,
    "SECONDS": 1e3,
    "MINUTES": 6e4,
    "HOURS": 3.6e6,
    "DAYS": 8.64e7,
}
JAVA_INT_MAX = 2**31 - 1  # DEFAULT_MAX_RETRIES: retry forever (the spout's -1)
TEXT, RAW = "StringDeserializer", "ByteArrayDeserializer"


# ---- stand-ins ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class TopicPattern:
    regex: str


@dataclass(frozen=True)
class Interval:
    ms: float


@dataclass(frozen=True)
class Backoff:
    settings: dict[str, object]


@dataclass(frozen=True)
class Translator:
    kind: str


@dataclass
class SpoutSettings:
    """A KafkaSpoutConfig$Builder (`built` false) or the KafkaSpoutConfig built from it: the
    spout's settings so far (keys of a native `kafka:` block)."""

    settings: dict[str, object]
    built: bool = False


@dataclass
class KafkaSpout(EmulatedComponent):
    settings: dict[str, object]

    def as_component(self, kind: str) -> ComponentParts:
        if kind != SPOUT:
            raise ArgumentError("KafkaSpout is a spout, listed under bolts")
        outputs = {DEFAULT_STREAM: spout_fields(self.settings)}
        return COMMANDS[SPOUT], outputs, prefixed(SPOUT, self.settings)


# ---- argument checks ----------------------------------------------------------------------------


def _long(value: object, what: str, minimum: int = 0) -> int:
    if not is_int(value) or value < minimum:
        raise ArgumentError(f"{what} must be an integer >= {minimum}, got {value!r}")
    return value


def _enum(value: object, names: tuple[str, ...], what: str) -> str:
    if not isinstance(value, str) or value not in names:
        raise ArgumentError(f"{what} must be one of {', '.join(names)}, got {value!r}")
    return value


# ---- the spout config ---------------------------------------------------------------------------


def _topics(servers: object, topics: object) -> dict[str, object]:
    settings: dict[str, object] = {"bootstrap.servers": text_arg(servers, "bootstrapServers")}
    if isinstance(topics, TopicPattern):
        settings["topic.pattern"] = topics.regex
    elif isinstance(topics, str) and topics:
        settings["topics"] = [topics]
    elif isinstance(topics, list) and topics and all(isinstance(t, str) and t for t in topics):
        settings["topics"] = list(topics)
    else:
        raise ArgumentError(
            f"topics must be a topic name, a list of names or a java.util.regex.Pattern bean, "
            f"got {topics!r}"
        )
    return settings


def _new_builder(args: Args) -> SpoutSettings:
    """Builder(String bootstrapServers, String... / Set<String> / Pattern topics)."""
    servers, topics = args
    return SpoutSettings(_topics(servers, topics))


def _new_config(args: Args) -> SpoutSettings:
    """KafkaSpoutConfig(Builder): the builder's settings, frozen."""
    (builder,) = args
    if not isinstance(builder, SpoutSettings) or builder.built:
        raise ArgumentError(f"KafkaSpoutConfig(Builder) takes a Builder bean, got {builder!r}")
    return SpoutSettings(dict(builder.settings), built=True)


def _builder(
    method: Callable[[dict[str, object], Args], None],
) -> Callable[[SpoutSettings, Args], None]:
    """A Builder method: refused on a built KafkaSpoutConfig, as Java has it on Builder only."""

    def call(obj: SpoutSettings, args: Args) -> None:
        if obj.built:
            raise ArgumentError(
                "that is a Builder method; call it on the KafkaSpoutConfig$Builder bean"
            )
        method(obj.settings, args)

    return call


def _set_prop(settings: dict[str, object], args: Args) -> None:
    """setProp(String key, Object value), setProp(Map / Properties): Kafka consumer properties."""
    if len(args) == 2:
        props = {args[0]: args[1]}
    elif isinstance(args[0], dict):
        props = args[0]
    else:
        raise ArgumentError(f"setProp takes a map or a key and a value, got {args!r}")
    for key, value in props.items():
        _consumer_prop(settings, text_arg(key, "a consumer property name"), value)


def _consumer_prop(settings: dict[str, object], key: str, value: object) -> None:
    if key in ("bootstrap.servers", "group.id"):
        settings[key] = text_arg(value, key)
    elif key in ("key.deserializer", "value.deserializer"):
        name = class_name(value)
        short = name.rsplit(".", 1)[-1]
        if short not in (TEXT, RAW):
            raise ArgumentError(
                f"{key} {name} is not emulated: the spout reads keys and values as text "
                f"({SERIALIZATION}{TEXT}) or bytes ({SERIALIZATION}{RAW})"
            )
        if key == "value.deserializer":
            settings["encoding"] = "string" if short == TEXT else "bytes"
    elif key == "enable.auto.commit":
        raise ArgumentError(
            "enable.auto.commit is not supported (nor by storm-kafka-client): choose "
            "setProcessingGuarantee instead"
        )
    elif key == "max.poll.records":
        settings["records.per.next"] = value  # the most records one nextTuple emits
    else:
        settings[f"consumer.{key}"] = value  # librdkafka knows most Java consumer properties


def _setter(key: str, check: Callable[[object], object]) -> SettingsMethod:
    def call(settings: dict[str, object], args: Args) -> None:
        settings[key] = check(args[0])

    return call


def _ignored(check: Callable[[object], object]) -> SettingsMethod:
    """A setting with no effect here (the spout never blocks in poll; it keeps no metrics
    buckets; its translators never return null tuples): checked, then dropped."""

    def call(settings: dict[str, object], args: Args) -> None:
        check(args[0])

    return call


def _set_translator(settings: dict[str, object], args: Args) -> None:
    if len(args) != 1 or not isinstance(args[0], Translator):
        raise ArgumentError(
            f"setRecordTranslator takes a RecordTranslator bean of an emulated class "
            f"({', '.join(TRANSLATORS)}), got {args!r}"
        )
    settings["translator"] = args[0].kind


def _set_retry(settings: dict[str, object], args: Args) -> None:
    (retry,) = args
    if not isinstance(retry, Backoff):
        raise ArgumentError(f"setRetry takes a {RETRY_BACKOFF} bean, got {retry!r}")
    settings.update(retry.settings)


def _no_timestamp(settings: dict[str, object], args: Args) -> None:
    raise ArgumentError("setStartTimeStamp: the TIMESTAMP first-poll strategies are not emulated")


_SPOUT_METHODS: dict[str, Callable[[dict[str, object], Args], None]] = {
    "setFirstPollOffsetStrategy": _setter(
        "first.poll.offset.strategy", lambda v: _enum(v, FIRST_POLL, "firstPollOffsetStrategy")
    ),
    "setProcessingGuarantee": _setter(
        "processing.guarantee", lambda v: _enum(v, GUARANTEES, "processingGuarantee")
    ),
    "setOffsetCommitPeriodMs": _setter(
        "offset.commit.period.ms", lambda v: _long(v, "offsetCommitPeriodMs")
    ),
    "setMaxUncommittedOffsets": _setter(
        "max.uncommitted.offsets", lambda v: _long(v, "maxUncommittedOffsets", 1)
    ),
    "setPartitionRefreshPeriodMs": _setter(
        "partition.refresh.period.ms", lambda v: _long(v, "partitionRefreshPeriodMs")
    ),
    "setGroupId": _setter("group.id", lambda v: text_arg(v, "groupId")),
    "setTupleTrackingEnforced": _setter(
        "tuple.tracking.enforced", lambda v: flag_arg(v, "tupleTrackingEnforced")
    ),
    "setRecordTranslator": _set_translator,
    "setRetry": _set_retry,
    "setStartTimeStamp": _no_timestamp,
    "setEmitNullTuples": _ignored(lambda v: flag_arg(v, "emitNullTuples")),
    "setPollTimeoutMs": _ignored(lambda v: _long(v, "pollTimeoutMs")),
    "setMetricsTimeBucketSizeInSecs": _ignored(lambda v: _long(v, "metricsTimeBucketSizeInSecs")),
}


def _as_setter(
    method: Callable[[SpoutSettings, Args], None],
) -> Callable[[SpoutSettings, object], None]:
    return lambda obj, value: method(obj, [value])


def _spout_config_class(name: str, constructors: dict) -> JavaClass:
    methods = {(n, 1): _builder(fn) for n, fn in _SPOUT_METHODS.items()}
    methods[("setProp", 2)] = _builder(_set_prop)
    methods[("setProp", 1)] = _builder(_set_prop)
    # a Flux property `x` calls setX
    setters = {
        n[3].lower() + n[4:]: _as_setter(fn) for (n, _), fn in methods.items() if n != "setProp"
    }
    return JavaClass(
        name,
        constructors=constructors,
        methods=methods,
        setters=setters,
        factories={("builder", 2): _new_builder},
        constructor_usage=(
            "KafkaSpoutConfig$Builder(bootstrapServers, topics) or KafkaSpoutConfig(builder)"
        ),
        methods_usage=", ".join(sorted({n for n, _ in methods})),
    )


# ---- retry --------------------------------------------------------------------------------------


def _new_interval(args: Args) -> Interval:
    """TimeInterval(long length, TimeUnit unit)."""
    length, unit = args
    return Interval(
        _long(length, "length") * TIME_UNITS_MS[_enum(unit, tuple(TIME_UNITS_MS), "unit")]
    )


def _interval_factory(unit: str) -> Callable[[Args], Interval]:
    def make(args: Args) -> Interval:
        return Interval(_long(args[0], "length") * TIME_UNITS_MS[unit])

    return make


def _new_backoff(args: Args) -> Backoff:
    """KafkaSpoutRetryExponentialBackoff(TimeInterval initialDelay, TimeInterval delayPeriod,
    int maxRetries, TimeInterval maxDelay)."""
    initial, period, retries, most = args
    for name, value in (("initialDelay", initial), ("delayPeriod", period), ("maxDelay", most)):
        if not isinstance(value, Interval):
            raise ArgumentError(f"{name} must be a {TIME_INTERVAL} bean, got {value!r}")
    assert isinstance(initial, Interval) and isinstance(period, Interval)
    assert isinstance(most, Interval)
    retries = _long(retries, "maxRetries")
    return Backoff(
        {
            "retry.initial.delay.ms": round(initial.ms),
            "retry.delay.period.ms": round(period.ms),
            "retry.max.retries": -1 if retries >= JAVA_INT_MAX else retries,
            "retry.max.delay.ms": round(most.ms),
        }
    )


# ---- the classes --------------------------------------------------------------------------------


def _spout(args: Args) -> KafkaSpout:
    (config,) = args
    if not isinstance(config, SpoutSettings) or not config.built:
        raise ArgumentError(
            f"KafkaSpout takes a {SPOUT_CONFIG} bean (built from a Builder bean: "
            f"constructorArgs [ref: builder]), got {config!r}"
        )
    return KafkaSpout(dict(config.settings))


def _translator(kind: str) -> Callable[[Args], Translator]:
    return lambda args: Translator(kind)


# spouts and bolts: flux.py runs them as the ready components
KAFKA_COMPONENT_CLASSES: dict[str, JavaClass] = {
    KAFKA_SPOUT: JavaClass(
        KAFKA_SPOUT, {1: _spout}, constructor_usage="it has KafkaSpout(KafkaSpoutConfig)"
    ),
    **BOLT_COMPONENT_CLASSES,
}

# beans they are built from
KAFKA_BEAN_CLASSES: dict[str, JavaClass] = {
    SPOUT_CONFIG_BUILDER: _spout_config_class(SPOUT_CONFIG_BUILDER, {2: _new_builder}),
    SPOUT_CONFIG: _spout_config_class(SPOUT_CONFIG, {1: _new_config}),
    RETRY_BACKOFF: JavaClass(
        RETRY_BACKOFF,
        {4: _new_backoff},
        constructor_usage="(TimeInterval initialDelay, TimeInterval delayPeriod, int maxRetries, "
        "TimeInterval maxDelay)",
    ),
    TIME_INTERVAL: JavaClass(
        TIME_INTERVAL,
        {2: _new_interval},
        factories={
            ("seconds", 1): _interval_factory("SECONDS"),
            ("milliSeconds", 1): _interval_factory("MILLISECONDS"),
            ("microSeconds", 1): _interval_factory("MICROSECONDS"),
        },
        constructor_usage="(long length, TimeUnit unit), or the factories seconds, milliSeconds, "
        "microSeconds",
    ),
    PATTERN: JavaClass(
        PATTERN,
        {},
        factories={("compile", 1): lambda args: TopicPattern(text_arg(args[0], "regex"))},
    ),
    **BOLT_BEAN_CLASSES,
    **{
        name: JavaClass(name, {0: _translator(kind)}, constructor_usage="no arguments")
        for name, kind in TRANSLATORS.items()
    },
}
