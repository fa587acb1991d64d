"""The Kafka bolt: tuples in, records out, acks only for records the broker has.

Delivery reports arrive through librdkafka's callbacks, which run inside `producer.poll` and
`producer.flush` on this thread. They are served after every tuple (without waiting), and before
the client blocks for more input (the client's `before_wait` hook) the bolt waits until every
record produced so far is settled (delivered, or failed after `message.timeout.ms`): a batch of
tuples costs one round trip, and no ack is held back while the host has nothing more to send.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from confluent_kafka import KafkaError, Producer

from multilang import Bolt, Tuple

PREFIX = "kafka.bolt."
PRODUCER_PREFIX = PREFIX + "producer."
KNOWN_KEYS = frozenset(
    PREFIX + k
    for k in (
        "bootstrap.servers",
        "topic",
        "topic.field",
        "key.field",
        "message.field",
        "encoding",
    )
)
ENCODINGS = ("string", "bytes")
# FieldNameBasedTupleToKafkaMapper's default field names
DEFAULT_KEY_FIELD, DEFAULT_MESSAGE_FIELD = "key", "message"


class ConfigError(ValueError):
    """A bad or missing `kafka.bolt.*` setting."""


@dataclass(frozen=True)
class BoltConfig:
    bootstrap_servers: str
    topic: str | None
    topic_field: str | None
    key_field: str
    message_field: str
    producer: Mapping[str, Any] = field(default_factory=dict)
    encoding: str = "string"


def from_conf(conf: Mapping[str, Any]) -> BoltConfig:
    unknown = sorted(
        k
        for k in conf
        if k.startswith(PREFIX) and k not in KNOWN_KEYS and not k.startswith(PRODUCER_PREFIX)
    )
    if unknown:
        raise ConfigError(
            f"unknown setting {unknown[0]}; the bolt's settings are "
            f"{', '.join(sorted(KNOWN_KEYS))} and {PRODUCER_PREFIX}* (librdkafka properties)"
        )
    servers = conf.get(PREFIX + "bootstrap.servers")
    if not servers:
        raise ConfigError(f"{PREFIX}bootstrap.servers is required (host:port[,host:port...])")
    topic, topic_field = conf.get(PREFIX + "topic"), conf.get(PREFIX + "topic.field")
    if (topic is None) == (topic_field is None):
        raise ConfigError(f"set exactly one of {PREFIX}topic and {PREFIX}topic.field")
    encoding = str(conf.get(PREFIX + "encoding", "string"))
    if encoding not in ENCODINGS:
        raise ConfigError(f"{PREFIX}encoding is {encoding!r}: string or bytes")
    producer = {
        k[len(PRODUCER_PREFIX) :]: v for k, v in conf.items() if k.startswith(PRODUCER_PREFIX)
    }
    if str(producer.get("acks", "all")) not in ("all", "-1"):
        raise ConfigError(
            f"{PRODUCER_PREFIX}acks must be all: the bolt acks a tuple only once every in-sync "
            "replica has its record"
        )
    return BoltConfig(
        bootstrap_servers=",".join(servers) if isinstance(servers, list) else str(servers),
        topic=None if topic is None else str(topic),
        topic_field=None if topic_field is None else str(topic_field),
        key_field=str(conf.get(PREFIX + "key.field", DEFAULT_KEY_FIELD)),
        message_field=str(conf.get(PREFIX + "message.field", DEFAULT_MESSAGE_FIELD)),
        producer=producer,
        encoding=encoding,
    )


def to_bytes(value: Any) -> bytes | None:
    """A field's value as record bytes: text as UTF-8, None as null, anything else as JSON."""
    if value is None:
        return None
    if isinstance(value, str):
        return value.encode("utf-8")
    if isinstance(value, bytes):
        return value
    return json.dumps(value, separators=(",", ":")).encode("utf-8")


def from_base64(value: Any) -> bytes | None:
    """A field's value as record bytes with encoding `bytes`: text is base64 (how bytes reach a
    JSON component, and how the Kafka spout emits them under JSON), decoded; bytes (under msgpack)
    as they are; anything else as `to_bytes` writes it. Text that is not base64 raises
    ValueError, which fails the tuple."""
    if isinstance(value, str):
        try:
            return base64.b64decode(value, validate=True)
        except binascii.Error as exc:
            raise ValueError(
                f"kafka bolt: {PREFIX}encoding is bytes, but a field is not base64 "
                f"({exc}): {value[:80]!r}"
            ) from None
    return to_bytes(value)


class KafkaBolt(Bolt):
    unsettled = 0  # records produced whose delivery report has not come yet

    def initialize(self, conf: dict, context: dict) -> None:
        self.cfg = from_conf(conf)
        props: dict[str, Any] = {
            "bootstrap.servers": self.cfg.bootstrap_servers,
            "acks": "all",
            "linger.ms": 5,
        }
        props.update(self.cfg.producer)
        self.producer = Producer(props)
        self.encode = from_base64 if self.cfg.encoding == "bytes" else to_bytes
        if self.serializer == "msgpack" and "source->stream->fields" not in context:
            # msgpack's handshake has no field names (docs/protocol.md §11), which the key and
            # message fields are found by: the bolt runs under JSON (docs/kafka.md, "The bolt")
            raise ConfigError(
                f"kafka bolt {self.component_id}: the handshake's context has no "
                "source->stream->fields (serializer: msgpack sends none); run the bolt with the "
                f"default serializer json and {PREFIX}encoding: bytes to write bytes"
            )
        # (source, stream) -> indexes of the key, message and topic fields in its tuples
        self.layout: dict[tuple[str, str], tuple[int | None, int, int | None]] = {}
        for source, streams in context.get("source->stream->fields", {}).items():
            for stream, fields in streams.items():
                self.layout[(source, stream)] = self._indexes(source, stream, list(fields))

    def _indexes(
        self, source: str, stream: str, fields: list[str]
    ) -> tuple[int | None, int, int | None]:
        cfg = self.cfg
        if cfg.message_field not in fields:
            raise ConfigError(
                f"kafka bolt {self.component_id}: input {source}:{stream} has fields {fields}, "
                f"none named {cfg.message_field!r} ({PREFIX}message.field)"
            )
        topic_index = None
        if cfg.topic_field is not None:
            if cfg.topic_field not in fields:
                raise ConfigError(
                    f"kafka bolt {self.component_id}: input {source}:{stream} has fields "
                    f"{fields}, none named {cfg.topic_field!r} ({PREFIX}topic.field)"
                )
            topic_index = fields.index(cfg.topic_field)
        key_index = fields.index(cfg.key_field) if cfg.key_field in fields else None
        return key_index, fields.index(cfg.message_field), topic_index

    def process(self, tup: Tuple) -> None:
        layout = self.layout.get((tup.component or "", tup.stream))
        if layout is None:
            raise ConfigError(
                f"kafka bolt: a tuple from an undeclared input {tup.component}:{tup.stream}"
            )
        key_index, message_index, topic_index = layout
        values = tup.values
        topic = self.cfg.topic if topic_index is None else str(values[topic_index])
        assert topic is not None  # from_conf requires a topic or a topic field
        encode = self.encode
        key = None if key_index is None else encode(values[key_index])
        message = encode(values[message_index])
        tid = tup.id

        def delivered(err: KafkaError | None, _msg: Any) -> None:
            self.unsettled -= 1
            if err is None:
                self.ack(tid)
            else:
                self.log(f"kafka bolt: delivery to {topic} failed, failing the tuple: {err}")
                self.fail(tid)

        while True:
            try:
                self.producer.produce(topic, value=message, key=key, on_delivery=delivered)
                break
            except BufferError:  # librdkafka's queue is full: let deliveries drain it
                self.producer.poll(0.1)
        self.unsettled += 1
        self.producer.poll(0)

    def before_wait(self) -> None:
        # Before blocking for input: settle every record produced so far (see the module doc).
        if self.unsettled:
            self.producer.flush()

    def cleanup(self) -> None:
        self.producer.flush()


def main() -> None:
    KafkaBolt().run()
