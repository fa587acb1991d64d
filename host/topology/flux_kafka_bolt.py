"""storm-kafka-client's `KafkaBolt` in a Flux file, emulated (flux_kafka.py has the spout and
the module's conventions): `withProducerProperties`, `withTopicSelector` (a topic name or a
`DefaultTopicSelector` bean) and `withTupleToKafkaMapper` (a `FieldNameBasedTupleToKafkaMapper`
bean) become `kafka.bolt.*` settings of components/kafka_bolt (docs/kafka.md, "Flux")."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field

from host.topology.flux_beans import Args, ArgumentError, EmulatedComponent, JavaClass
from host.topology.kafka_components import COMMANDS, PREFIXES
from host.topology.model import BOLT

log = logging.getLogger("host.topology.flux")

ComponentParts = tuple[tuple[str, ...], dict[str, tuple[str, ...]], dict[str, object]]

PACKAGE = "org.apache.storm.kafka.bolt"
KAFKA_BOLT = f"{PACKAGE}.KafkaBolt"
DEFAULT_TOPIC_SELECTOR = f"{PACKAGE}.selector.DefaultTopicSelector"
FIELD_NAME_MAPPER = f"{PACKAGE}.mapper.FieldNameBasedTupleToKafkaMapper"
SERIALIZATION = "org.apache.kafka.common.serialization."
SERIALIZERS = (SERIALIZATION + "StringSerializer", SERIALIZATION + "ByteArraySerializer")


def text_arg(value: object, what: str) -> str:
    if not isinstance(value, str) or not value:
        raise ArgumentError(f"{what} must be a non-empty string, got {value!r}")
    return value


def flag_arg(value: object, what: str) -> bool:
    if not isinstance(value, bool):
        raise ArgumentError(f"{what} takes true or false, got {value!r}")
    return value


def class_name(value: object) -> str:
    """A serializer given by class name (Flux passes a string where Java takes a Class)."""
    return value if isinstance(value, str) else repr(value)


def prefixed(kind: str, settings: dict[str, object]) -> dict[str, object]:
    return {PREFIXES[kind] + k: v for k, v in settings.items()}


# ---- stand-ins ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class TopicSelector:
    topic: str


@dataclass(frozen=True)
class Mapper:
    key_field: str
    message_field: str


@dataclass
class KafkaBolt(EmulatedComponent):
    settings: dict[str, object] = field(default_factory=dict)

    def as_component(self, kind: str) -> ComponentParts:
        if kind != BOLT:
            raise ArgumentError("KafkaBolt is a bolt, listed under spouts")
        if "bootstrap.servers" not in self.settings:
            raise ArgumentError(
                "KafkaBolt needs withProducerProperties with bootstrap.servers (its producer "
                "cannot connect without it)"
            )
        if "topic" not in self.settings:
            raise ArgumentError(
                "KafkaBolt needs withTopicSelector (a topic name or a DefaultTopicSelector "
                "bean): Storm refuses to prepare it without a topic"
            )
        return COMMANDS[BOLT], {}, prefixed(BOLT, self.settings)


# ---- the bolt -----------------------------------------------------------------------------------


def _with_producer_properties(bolt: KafkaBolt, args: Args) -> None:
    (props,) = args
    if not isinstance(props, dict):
        raise ArgumentError(f"withProducerProperties takes a Properties bean, got {props!r}")
    for key, value in props.items():
        key = text_arg(key, "a producer property name")
        if key == "bootstrap.servers":
            bolt.settings[key] = text_arg(value, key)
        elif key in ("key.serializer", "value.serializer"):
            if class_name(value) not in SERIALIZERS:
                raise ArgumentError(
                    f"{key} {value} is not emulated: the bolt writes text as UTF-8 "
                    f"(StringSerializer) and other values as JSON"
                )
        elif key == "acks":
            if str(value) not in ("all", "-1"):
                log.warning(
                    "KafkaBolt: acks=%s replaced by acks=all: the bolt acks a tuple only once "
                    "every in-sync replica has its record (docs/kafka.md)",
                    value,
                )
        else:
            bolt.settings[f"producer.{key}"] = value


def _with_topic_selector(bolt: KafkaBolt, args: Args) -> None:
    (selector,) = args
    if isinstance(selector, str) and selector:
        bolt.settings["topic"] = selector
    elif isinstance(selector, TopicSelector):
        bolt.settings["topic"] = selector.topic
    else:
        raise ArgumentError(
            f"withTopicSelector takes a topic name or a {DEFAULT_TOPIC_SELECTOR} bean, "
            f"got {selector!r}"
        )


def _with_mapper(bolt: KafkaBolt, args: Args) -> None:
    (mapper,) = args
    if not isinstance(mapper, Mapper):
        raise ArgumentError(f"withTupleToKafkaMapper takes a {FIELD_NAME_MAPPER} bean")
    bolt.settings["key.field"] = mapper.key_field
    bolt.settings["message.field"] = mapper.message_field


def _fire_and_forget(bolt: KafkaBolt, args: Args) -> None:
    if flag_arg(args[0], "fireAndForget"):
        raise ArgumentError(
            "setFireAndForget(true) is not emulated: the bolt acks a tuple only once the broker "
            "has its record"
        )


def _set_async(bolt: KafkaBolt, args: Args) -> None:
    flag_arg(args[0], "async")  # either way a tuple is acked when its delivery report comes


def _new_mapper(args: Args) -> Mapper:
    """FieldNameBasedTupleToKafkaMapper() ("key", "message") or (keyField, messageField)."""
    if not args:
        return Mapper("key", "message")
    key, message = args
    return Mapper(text_arg(key, "boltKeyField"), text_arg(message, "boltMessageField"))


_BOLT_METHODS: dict[tuple[str, int], Callable[[KafkaBolt, Args], None]] = {
    ("withProducerProperties", 1): _with_producer_properties,
    ("withTopicSelector", 1): _with_topic_selector,
    ("withTupleToKafkaMapper", 1): _with_mapper,
    ("setFireAndForget", 1): _fire_and_forget,
    ("setAsync", 1): _set_async,
}


# ---- the classes --------------------------------------------------------------------------------

BOLT_COMPONENT_CLASSES: dict[str, JavaClass] = {
    KAFKA_BOLT: JavaClass(
        KAFKA_BOLT,
        {0: lambda args: KafkaBolt()},
        methods=_BOLT_METHODS,
        setters={
            "fireAndForget": lambda bolt, v: _fire_and_forget(bolt, [v]),
            "async": lambda bolt, v: _set_async(bolt, [v]),
        },
        constructor_usage="it has only KafkaBolt()",
    ),
}

BOLT_BEAN_CLASSES: dict[str, JavaClass] = {
    DEFAULT_TOPIC_SELECTOR: JavaClass(
        DEFAULT_TOPIC_SELECTOR,
        {1: lambda args: TopicSelector(text_arg(args[0], "topicName"))},
        constructor_usage="DefaultTopicSelector(String topicName)",
    ),
    FIELD_NAME_MAPPER: JavaClass(
        FIELD_NAME_MAPPER,
        {0: _new_mapper, 2: _new_mapper},
        constructor_usage="() or (String keyField, String messageField)",
    ),
}
