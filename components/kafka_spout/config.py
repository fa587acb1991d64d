"""The Kafka spout's settings, read once from the handshake `conf` and checked before anything
starts. Keys and defaults: docs/kafka.md ("Spout settings"); the defaults are
storm-kafka-client's (`KafkaSpoutConfig`, `CommonKafkaSpoutConfig`) where it has the setting.
Every problem is a ConfigError that names the key."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from .retry import Backoff

PREFIX = "kafka.spout."
CONSUMER_PREFIX = PREFIX + "consumer."  # passed to librdkafka as they are (less the prefix)

EARLIEST, LATEST = "EARLIEST", "LATEST"
UNCOMMITTED_EARLIEST, UNCOMMITTED_LATEST = "UNCOMMITTED_EARLIEST", "UNCOMMITTED_LATEST"
FIRST_POLL_STRATEGIES = (EARLIEST, LATEST, UNCOMMITTED_EARLIEST, UNCOMMITTED_LATEST)
AT_LEAST_ONCE, AT_MOST_ONCE, NO_GUARANTEE = "AT_LEAST_ONCE", "AT_MOST_ONCE", "NO_GUARANTEE"
GUARANTEES = (AT_LEAST_ONCE, AT_MOST_ONCE, NO_GUARANTEE)
TRANSLATORS = ("default", "value", "json")
ENCODINGS = ("string", "bytes")
DEFAULT_FIELDS = ("topic", "partition", "offset", "key", "value")  # DefaultRecordTranslator's

KNOWN_KEYS = frozenset(
    PREFIX + k
    for k in (
        "bootstrap.servers",
        "topics",
        "topic.pattern",
        "group.id",
        "first.poll.offset.strategy",
        "processing.guarantee",
        "offset.commit.period.ms",
        "max.uncommitted.offsets",
        "partition.refresh.period.ms",
        "retry.initial.delay.ms",
        "retry.delay.period.ms",
        "retry.max.retries",
        "retry.max.delay.ms",
        "dead.letter.topic",
        "translator",
        "json.fields",
        "encoding",
        "records.per.next",
        "tuple.tracking.enforced",
    )
)


class ConfigError(ValueError):
    """A bad or missing `kafka.spout.*` setting."""


@dataclass(frozen=True)
class SpoutConfig:
    bootstrap_servers: str
    group_id: str
    topics: tuple[str, ...] = ()
    topic_pattern: str | None = None
    first_poll: str = UNCOMMITTED_EARLIEST
    guarantee: str = AT_LEAST_ONCE
    commit_period: float = 30.0
    max_uncommitted: int = 10_000_000
    refresh_period: float = 2.0
    backoff: Backoff = field(default_factory=Backoff)
    dead_letter_topic: str | None = None
    translator: str = "default"
    json_fields: tuple[str, ...] = ()
    encoding: str = "string"
    records_per_next: int = 1000
    tracking_enforced: bool = False
    consumer: Mapping[str, Any] = field(default_factory=dict)

    @property
    def fields(self) -> tuple[str, ...]:
        """The output fields the translator produces (the default stream must declare them)."""
        if self.translator == "value":
            return ("value",)
        if self.translator == "json":
            return self.json_fields
        return DEFAULT_FIELDS

    @property
    def tracked(self) -> bool:
        """Emit with message ids (only at-least-once acts on acks and fails)."""
        return self.guarantee == AT_LEAST_ONCE or self.tracking_enforced

    def matches(self, topic: str) -> bool:
        if self.topic_pattern is not None:
            return re.fullmatch(self.topic_pattern, topic) is not None
        return topic in self.topics


def _int(conf: Mapping, key: str, default: int, minimum: int = 0) -> int:
    value = conf.get(PREFIX + key, default)
    if isinstance(value, bool):
        raise ConfigError(f"{PREFIX}{key} must be an integer >= {minimum}, got {value!r}")
    try:
        number = int(value)
    except (TypeError, ValueError):
        raise ConfigError(f"{PREFIX}{key} must be an integer >= {minimum}, got {value!r}") from None
    if number < minimum:
        raise ConfigError(f"{PREFIX}{key} must be >= {minimum}, got {number}")
    return number


def _ms(conf: Mapping, key: str, default_ms: int) -> float:
    return _int(conf, key, default_ms) / 1000.0


def _choice(conf: Mapping, key: str, default: str, choices: tuple[str, ...]) -> str:
    value = conf.get(PREFIX + key, default)
    text = str(value)
    for choice in choices:  # Storm's enum names; the translators and encodings are lower case
        if text.upper() == choice.upper():
            return choice
    raise ConfigError(f"{PREFIX}{key} must be one of {', '.join(choices)}, got {value!r}")


def _names(conf: Mapping, key: str) -> tuple[str, ...]:
    value = conf.get(PREFIX + key)
    if value is None:
        return ()
    if isinstance(value, str):
        value = [v.strip() for v in value.split(",") if v.strip()]
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise ConfigError(f"{PREFIX}{key} must be a list of names, got {conf.get(PREFIX + key)!r}")
    return tuple(value)


def from_conf(conf: Mapping[str, Any], context: Mapping[str, Any]) -> SpoutConfig:
    unknown = sorted(
        k
        for k in conf
        if k.startswith(PREFIX) and k not in KNOWN_KEYS and not k.startswith(CONSUMER_PREFIX)
    )
    if unknown:
        raise ConfigError(
            f"unknown setting {unknown[0]}; the spout's settings are "
            f"{', '.join(sorted(KNOWN_KEYS))} and {CONSUMER_PREFIX}* (librdkafka properties)"
        )
    servers = conf.get(PREFIX + "bootstrap.servers")
    if not servers or not isinstance(servers, (str, list)):
        raise ConfigError(f"{PREFIX}bootstrap.servers is required (host:port[,host:port...])")
    if isinstance(servers, list):
        servers = ",".join(str(s) for s in servers)
    topics = _names(conf, "topics")
    pattern = conf.get(PREFIX + "topic.pattern")
    if bool(topics) == (pattern is not None):
        raise ConfigError(f"set exactly one of {PREFIX}topics and {PREFIX}topic.pattern")
    if pattern is not None:
        try:
            re.compile(str(pattern))
        except re.error as exc:
            raise ConfigError(f"{PREFIX}topic.pattern {pattern!r} is not a regex: {exc}") from None
        pattern = str(pattern)
    # msgpack's reduced context has no componentid, only task->component (docs/protocol.md §11)
    component = (
        context.get("componentid")
        or context.get("task->component", {}).get(str(context.get("taskid")))
        or "kafka-spout"
    )
    group_id = str(
        conf.get(PREFIX + "group.id") or f"{conf.get('topology.name', 'topology')}-{component}"
    )
    translator = _choice(conf, "translator", "default", TRANSLATORS)
    json_fields = _names(conf, "json.fields")
    if translator == "json" and not json_fields:
        raise ConfigError(f"{PREFIX}translator json needs {PREFIX}json.fields (the keys to emit)")
    enforced = conf.get(PREFIX + "tuple.tracking.enforced", False)
    if not isinstance(enforced, bool):
        raise ConfigError(
            f"{PREFIX}tuple.tracking.enforced must be true or false, got {enforced!r}"
        )
    dead = conf.get(PREFIX + "dead.letter.topic")
    consumer = {
        k[len(CONSUMER_PREFIX) :]: v for k, v in conf.items() if k.startswith(CONSUMER_PREFIX)
    }
    if "enable.auto.commit" in consumer:
        raise ConfigError(
            f"{CONSUMER_PREFIX}enable.auto.commit is not supported: the spout commits itself; "
            f"choose {PREFIX}processing.guarantee instead"
        )
    return SpoutConfig(
        bootstrap_servers=str(servers),
        group_id=group_id,
        topics=topics,
        topic_pattern=pattern,
        first_poll=_choice(
            conf, "first.poll.offset.strategy", UNCOMMITTED_EARLIEST, FIRST_POLL_STRATEGIES
        ),
        guarantee=_choice(conf, "processing.guarantee", AT_LEAST_ONCE, GUARANTEES),
        commit_period=_ms(conf, "offset.commit.period.ms", 30_000),
        max_uncommitted=_int(conf, "max.uncommitted.offsets", 10_000_000, minimum=1),
        refresh_period=_ms(conf, "partition.refresh.period.ms", 2_000),
        backoff=Backoff(
            initial_delay=_ms(conf, "retry.initial.delay.ms", 0),
            delay_period=_ms(conf, "retry.delay.period.ms", 2),
            max_retries=_int(conf, "retry.max.retries", -1, minimum=-1),
            max_delay=_ms(conf, "retry.max.delay.ms", 10_000),
        ),
        dead_letter_topic=str(dead) if dead else None,
        translator=translator,
        json_fields=json_fields,
        encoding=_choice(conf, "encoding", "string", ENCODINGS),
        records_per_next=_int(conf, "records.per.next", 1000, minimum=1),
        tracking_enforced=enforced,
        consumer=consumer,
    )


def check_outputs(cfg: SpoutConfig, context: Mapping[str, Any], who: str) -> None:
    """The default stream must declare as many fields as the translator emits (names are free)."""
    declared = context.get("stream->outputfields", {}).get("default")
    if declared is not None and len(declared) != len(cfg.fields):
        raise ConfigError(
            f"{who}: the translator {cfg.translator!r} emits {len(cfg.fields)} fields "
            f"{list(cfg.fields)}, the default stream declares {list(declared)}"
        )
