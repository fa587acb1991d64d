"""The ready Kafka components (`components/kafka_spout`, `components/kafka_bolt`) as the topology
formats declare them: a short `kafka:` block in our YAML, `TopologyBuilder.kafka_spout` /
`kafka_bolt` in Python, storm-kafka-client's classes in Flux (host/topology/flux_kafka.py). Each
becomes the component's command, its default outputs and `kafka.spout.*` / `kafka.bolt.*` config
keys (docs/kafka.md, "Declaring them").

Known by name only (host/ never imports components/): the key lists below are the components'
own (`components/kafka_spout/config.py`, `components/kafka_bolt/bolt.py`);
tests/unit/test_kafka_components.py checks that they agree. Values are checked by the
components when they start; here only what decides the topology's shape (the keys, the
translator's fields, which of topics / pattern, topic / topic field) is checked at load time.
"""

from __future__ import annotations

from collections.abc import Mapping

from host.errors import TopologyError
from host.topology.model import BOLT, SPOUT
from multilang.messages import DEFAULT_STREAM

SPOUT_MODULE = "components.kafka_spout"
BOLT_MODULE = "components.kafka_bolt"
# `python` is the host's interpreter (first on every child's PATH) and the project is installed,
# so `-m` finds the package from any topology's directory, as for components/storm_builtins.
COMMANDS = {SPOUT: ("python", "-m", SPOUT_MODULE), BOLT: ("python", "-m", BOLT_MODULE)}
PREFIXES = {SPOUT: "kafka.spout.", BOLT: "kafka.bolt."}
# librdkafka properties, passed through: `consumer.<property>` / `producer.<property>`
CLIENT_SECTIONS = {SPOUT: "consumer", BOLT: "producer"}

SPOUT_KEYS = (
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
BOLT_KEYS = (
    "bootstrap.servers",
    "topic",
    "topic.field",
    "key.field",
    "message.field",
    "encoding",
)
KEYS = {SPOUT: SPOUT_KEYS, BOLT: BOLT_KEYS}

TRANSLATORS = ("default", "value", "json")
DEFAULT_FIELDS = ("topic", "partition", "offset", "key", "value")  # DefaultRecordTranslator's


def spout_fields(settings: Mapping[str, object]) -> tuple[str, ...]:
    """The fields the spout's translator emits, from its settings (block keys, no prefix)."""
    translator = str(settings.get("translator", "default")).lower()
    if translator == "value":
        return ("value",)
    if translator == "json":
        fields = settings.get("json.fields")
        if isinstance(fields, str):
            return tuple(f.strip() for f in fields.split(",") if f.strip())
        return tuple(str(f) for f in fields) if isinstance(fields, list) else ()
    return DEFAULT_FIELDS


def expand(
    kind: str,
    block: object,
    config: object,
    outputs: object,
    *,
    file: str | None,
    component: str,
) -> tuple[tuple[str, ...], object, object]:
    """A `kafka:` block (and the component's own `config` and `outputs`, as given) -> (command,
    outputs, config). Errors name the file, the component and the key (`kafka.<key>`)."""
    where = {"file": file, "component": component}
    if not isinstance(block, dict):
        raise TopologyError(
            f"must be a mapping of {'spout' if kind == SPOUT else 'bolt'} settings, e.g. "
            + (
                "{bootstrap.servers: 127.0.0.1:9092, topics: [sentences]}"
                if kind == SPOUT
                else "{bootstrap.servers: 127.0.0.1:9092, topic: counts}"
            )
            + f", got {block!r}",
            key="kafka",
            **where,
        )
    settings = _flatten(kind, block, where)
    _check_shape(kind, settings, where)
    prefix = PREFIXES[kind]
    expanded = {prefix + k: v for k, v in settings.items()}
    if config is not None and not isinstance(config, dict):
        return COMMANDS[kind], outputs, config  # the builder names the bad config
    own = dict(config or {})
    for key in expanded:
        if key in own:
            raise TopologyError(
                f"{key} is set both here and in the kafka block ({key[len(prefix) :]}); keep one",
                key=f"config.{key}",
                **where,
            )
    if outputs is None:
        outputs = list(spout_fields(settings)) if kind == SPOUT else []
    elif kind == SPOUT:
        _check_outputs(outputs, spout_fields(settings), where)
    return COMMANDS[kind], outputs, {**expanded, **own}


def _flatten(kind: str, block: dict, where: dict) -> dict[str, object]:
    """Block keys as the component reads them: a nested `consumer:` / `producer:` mapping
    becomes `consumer.<property>` keys; any other key must be one of the component's."""
    section = CLIENT_SECTIONS[kind]
    known = KEYS[kind]
    out: dict[str, object] = {}
    for key, value in block.items():
        if key == section:
            if not isinstance(value, dict):
                raise TopologyError(
                    f"must be a mapping of librdkafka properties, got {value!r}",
                    key=f"kafka.{key}",
                    **where,
                )
            out.update({f"{section}.{k}": v for k, v in value.items()})
        elif isinstance(key, str) and (key in known or key.startswith(section + ".")):
            out[key] = value
        else:
            raise TopologyError(
                f"unknown Kafka {'spout' if kind == SPOUT else 'bolt'} setting; the settings "
                f"are {', '.join(known)} and {section}.<librdkafka property> (docs/kafka.md)",
                key=f"kafka.{key}",
                **where,
            )
    return out


def _check_shape(kind: str, settings: Mapping[str, object], where: dict) -> None:
    if not settings.get("bootstrap.servers"):
        raise TopologyError(
            "bootstrap.servers is required (host:port[,host:port...])",
            key="kafka.bootstrap.servers",
            **where,
        )
    one_of = ("topics", "topic.pattern") if kind == SPOUT else ("topic", "topic.field")
    if sum(settings.get(k) is not None for k in one_of) != 1:
        raise TopologyError(
            f"set exactly one of {one_of[0]} and {one_of[1]}", key=f"kafka.{one_of[0]}", **where
        )
    if kind != SPOUT:
        return
    translator = settings.get("translator", "default")
    if not isinstance(translator, str) or translator.lower() not in TRANSLATORS:
        raise TopologyError(
            f"must be one of {', '.join(TRANSLATORS)}, got {translator!r}",
            key="kafka.translator",
            **where,
        )
    if translator.lower() == "json" and not spout_fields(settings):
        raise TopologyError(
            "translator json needs json.fields: the keys of the JSON object to emit, in order",
            key="kafka.json.fields",
            **where,
        )


def _check_outputs(outputs: object, fields: tuple[str, ...], where: dict) -> None:
    """Declared outputs may rename the translator's fields, not change how many there are."""
    default = outputs.get(DEFAULT_STREAM) if isinstance(outputs, dict) else outputs
    if isinstance(default, (list, tuple)) and len(default) != len(fields):
        raise TopologyError(
            f"the kafka spout's translator emits {len(fields)} field(s) {list(fields)}; "
            f"leave outputs out or give {len(fields)} names",
            key="outputs",
            **where,
        )
