"""The older storm-kafka spout's classes as Flux beans (storm-kafka 1.x, before storm-kafka-client):
`ZkHosts`, `SpoutConfig`, `StringScheme`, `SchemeAsMultiScheme`, `kafka.api.OffsetRequest`'s
`EarliestTime()` / `LatestTime()`, and `org.apache.storm.kafka.KafkaSpout` itself, whose
constructor turns the SpoutConfig into the `kafka.spoutconfig.*` component config that
`components/kafka_spout/storm_kafka.py` reads (docs/kafka.md, "The older storm-kafka spout").

Field names and defaults are storm-kafka's (`KafkaConfig.java`, `SpoutConfig.java`,
`ZkHosts.java`): Flux sets a public field when a class has no setter, so every property here is
one of those public fields. Settings that tune Storm's own Kafka fetch loop are accepted and have
no effect (librdkafka fetches here); settings the spout cannot honour are errors.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from host.topology.flux_beans import Args, ArgumentError, JavaClass
from host.topology.setting_checks import is_int, is_number
from multilang.messages import DEFAULT_STREAM

STORM_KAFKA_SPOUT = "org.apache.storm.kafka.KafkaSpout"
ZK_HOSTS = "org.apache.storm.kafka.ZkHosts"
SPOUT_CONFIG = "org.apache.storm.kafka.SpoutConfig"
STRING_SCHEME = "org.apache.storm.kafka.StringScheme"
SCHEME_AS_MULTI_SCHEME = "org.apache.storm.spout.SchemeAsMultiScheme"
OFFSET_REQUEST = "kafka.api.OffsetRequest"

# the built-in that runs it (components/storm_builtins/storm_kafka_spout.py) and what it declares:
# StringScheme's one field
STORM_KAFKA_MODULE = "storm_kafka_spout"
STORM_KAFKA_OUTPUTS = {DEFAULT_STREAM: ("str",)}

EARLIEST_TIME, LATEST_TIME = -2, -1  # kafka.api.OffsetRequest's
LONG_MAX = 2**63 - 1
RETRY_MANAGER = "org.apache.storm.kafka.ExponentialBackoffMsgRetryManager"

# the component config keys; components/kafka_spout/storm_kafka.py reads the same names
PREFIX = "kafka.spoutconfig."


# ---- the stand-ins ------------------------------------------------------------------------------


@dataclass
class ZkHostsBean:
    broker_zk_str: str
    broker_zk_path: str = "/brokers"
    refresh_freq_secs: int = 60


@dataclass(frozen=True)
class StringSchemeBean:
    """StringScheme: a record's value as UTF-8 text, on the one field `str`."""


@dataclass(frozen=True)
class MultiSchemeBean:
    scheme: StringSchemeBean


@dataclass
class SpoutConfigBean:
    hosts: ZkHostsBean
    topic: str
    zk_root: str
    spout_id: str
    client_id: str | None = None
    scheme: MultiSchemeBean | None = None  # None: KafkaConfig's RawMultiScheme
    values: dict[str, object] = field(default_factory=dict)  # the fields set, by Java name


# ---- ZkHosts ------------------------------------------------------------------------------------


def _text(what: str, value: object) -> str:
    if not isinstance(value, str):
        raise ArgumentError(f"{what} must be a string, got {value!r}")
    return value


def _new_zk_hosts(args: Args) -> ZkHostsBean:
    """ZkHosts(String brokerZkStr) and ZkHosts(String brokerZkStr, String brokerZkPath)."""
    connect = _text("brokerZkStr (the ZooKeeper connect string)", args[0])
    if not connect.strip():
        raise ArgumentError("brokerZkStr must name ZooKeeper servers, e.g. 'zk1:2181,zk2:2181'")
    hosts = ZkHostsBean(connect)
    if len(args) == 2:
        hosts.broker_zk_path = _zk_path("brokerZkPath", args[1])
    return hosts


def _zk_path(what: str, value: object) -> str:
    path = _text(what, value)
    if not path.startswith("/") or "//" in path or (len(path) > 1 and path.endswith("/")):
        raise ArgumentError(f"{what} must be a ZooKeeper path such as '/brokers', got {path!r}")
    return path


def _set_broker_zk_str(hosts: ZkHostsBean, value: object) -> None:
    hosts.broker_zk_str = _new_zk_hosts([value]).broker_zk_str


def _set_broker_zk_path(hosts: ZkHostsBean, value: object) -> None:
    hosts.broker_zk_path = _zk_path("brokerZkPath", value)


def _set_refresh_freq(hosts: ZkHostsBean, value: object) -> None:
    if not is_int(value) or value < 0:
        raise ArgumentError(f"refreshFreqSecs must be an integer >= 0, got {value!r}")
    hosts.refresh_freq_secs = value


ZK_HOSTS_JAVA = JavaClass(
    ZK_HOSTS,
    constructors={1: _new_zk_hosts, 2: _new_zk_hosts},
    setters={
        "brokerZkStr": _set_broker_zk_str,
        "brokerZkPath": _set_broker_zk_path,
        "refreshFreqSecs": _set_refresh_freq,
    },
    constructor_usage="ZkHosts(brokerZkStr) or ZkHosts(brokerZkStr, brokerZkPath)",
)


# ---- schemes and OffsetRequest ------------------------------------------------------------------


def _new_multi_scheme(args: Args) -> MultiSchemeBean:
    (scheme,) = args
    if not isinstance(scheme, StringSchemeBean):
        raise ArgumentError(
            f"SchemeAsMultiScheme(Scheme) takes a scheme bean; of storm-kafka's schemes this "
            f"host emulates StringScheme, got {scheme!r}"
        )
    return MultiSchemeBean(scheme)


SCHEME_CLASSES = {
    STRING_SCHEME: JavaClass(
        STRING_SCHEME, {0: lambda args: StringSchemeBean()}, constructor_usage="StringScheme()"
    ),
    SCHEME_AS_MULTI_SCHEME: JavaClass(
        SCHEME_AS_MULTI_SCHEME,
        {1: _new_multi_scheme},
        constructor_usage="SchemeAsMultiScheme(scheme bean), e.g. [{ref: stringScheme}]",
    ),
}

OFFSET_REQUEST_JAVA = JavaClass(
    OFFSET_REQUEST,
    constructors={},
    factories={
        ("EarliestTime", 0): lambda args: EARLIEST_TIME,
        ("LatestTime", 0): lambda args: LATEST_TIME,
    },
    constructor_usage="use factory: EarliestTime or LatestTime",
)


# ---- SpoutConfig --------------------------------------------------------------------------------


def _new_spout_config(args: Args) -> SpoutConfigBean:
    """SpoutConfig(BrokerHosts hosts, String topic, String zkRoot, String id) and
    SpoutConfig(hosts, topic, String clientId, zkRoot, id)."""
    hosts, topic, *rest = args
    if not isinstance(hosts, ZkHostsBean):
        raise ArgumentError(
            f"the first argument must be a ZkHosts bean (brokers found through ZooKeeper; "
            f"StaticHosts is not emulated), got {hosts!r}"
        )
    topic = _text("topic", topic)
    if not topic:
        raise ArgumentError("topic must not be empty")
    client_id = _text("clientId", rest.pop(0)) if len(rest) == 3 else None
    zk_root, spout_id = rest
    config = SpoutConfigBean(hosts, topic, _text("zkRoot", zk_root), _text("id", spout_id))
    config.client_id = client_id
    return config


def _integer(minimum: int) -> Callable[[str, object], object]:
    def check(name: str, value: object) -> object:
        if not is_int(value) or value < minimum:
            raise ArgumentError(f"{name} must be an integer >= {minimum}, got {value!r}")
        return value

    return check


def _boolean(name: str, value: object) -> object:
    if not isinstance(value, bool):
        raise ArgumentError(f"{name} must be true or false, got {value!r}")
    return value


def _multiplier(name: str, value: object) -> object:
    if not is_number(value) or value < 1:
        raise ArgumentError(f"{name} must be a number >= 1, got {value!r}")
    return value


def _start_offset_time(name: str, value: object) -> object:
    if value not in (EARLIEST_TIME, LATEST_TIME) or not is_int(value):
        raise ArgumentError(
            f"{name} must be kafka.api.OffsetRequest.EarliestTime() (-2) or LatestTime() (-1); "
            f"a timestamp is not emulated, got {value!r}"
        )
    return value


def _zk_servers(name: str, value: object) -> object:
    if not isinstance(value, list) or not value or not all(isinstance(s, str) and s for s in value):
        raise ArgumentError(f"{name} must be a list of host names, got {value!r}")
    return list(value)


def _stream(name: str, value: object) -> object:
    if value not in (None, "", DEFAULT_STREAM):
        raise ArgumentError(
            f"{name}: this host's storm-kafka spout emits on the default stream only, got {value!r}"
        )
    return value


def _retry_manager(name: str, value: object) -> object:
    if value != RETRY_MANAGER:
        raise ArgumentError(f"{name}: only {RETRY_MANAGER} is emulated, got {value!r}")
    return value


# SpoutConfig's and KafkaConfig's public fields that Flux may set, with their check. The ones the
# spout uses become component config (`_spout_config`); the fetch tuning ones have no effect.
_FIELDS: dict[str, Callable[[str, object], object]] = {
    "zkServers": _zk_servers,
    "zkPort": _integer(1),
    "stateUpdateIntervalMs": _integer(0),
    "startOffsetTime": _start_offset_time,
    "ignoreZkOffsets": _boolean,
    "maxOffsetBehind": _integer(0),
    "useStartOffsetTimeIfOffsetOutOfRange": _boolean,
    "retryInitialDelayMs": _integer(0),
    "retryDelayMultiplier": _multiplier,
    "retryDelayMaxMs": _integer(0),
    "retryLimit": _integer(-1),
    "failedMsgRetryManagerClass": _retry_manager,
    "outputStreamId": _stream,
    "fetchSizeBytes": _integer(1),
    "socketTimeoutMs": _integer(0),
    "fetchMaxWait": _integer(0),
    "bufferSizeBytes": _integer(1),
    "minFetchByte": _integer(0),
    "metricsTimeBucketSizeInSecs": _integer(1),
}
# passed on to the spout; the rest are accepted for the file's sake
_USED = (
    "zkServers",
    "zkPort",
    "stateUpdateIntervalMs",
    "startOffsetTime",
    "ignoreZkOffsets",
    "maxOffsetBehind",
    "retryInitialDelayMs",
    "retryDelayMultiplier",
    "retryDelayMaxMs",
    "retryLimit",
)


def _field_setter(name: str) -> Callable[[SpoutConfigBean, object], None]:
    check = _FIELDS[name]

    def set_field(config: SpoutConfigBean, value: object) -> None:
        config.values[name] = check(name, value)

    return set_field


def _set_scheme(config: SpoutConfigBean, value: object) -> None:
    if not isinstance(value, MultiSchemeBean):
        raise ArgumentError(
            f"scheme must be a SchemeAsMultiScheme bean wrapping StringScheme, got {value!r}"
        )
    config.scheme = value


def _set_zk_root(config: SpoutConfigBean, value: object) -> None:
    config.zk_root = _text("zkRoot", value)


def _set_id(config: SpoutConfigBean, value: object) -> None:
    config.spout_id = _text("id", value)


SPOUT_CONFIG_JAVA = JavaClass(
    SPOUT_CONFIG,
    constructors={4: _new_spout_config, 5: _new_spout_config},
    setters={
        **{name: _field_setter(name) for name in _FIELDS},
        "scheme": _set_scheme,
        "zkRoot": _set_zk_root,
        "id": _set_id,
    },
    constructor_usage=(
        "SpoutConfig(hosts, topic, zkRoot, id) or SpoutConfig(hosts, topic, clientId, zkRoot, id)"
    ),
)


# ---- KafkaSpout ---------------------------------------------------------------------------------


def offsets_path(zk_root: str, spout_id: str) -> str:
    """Where storm-kafka keeps the offsets (`PartitionManager.committedPath`, less the
    `/partition_N`): zkRoot + "/" + id, which must be a valid ZooKeeper path."""
    path = f"{zk_root}/{spout_id}"
    if not path.startswith("/") or "//" in path or path.endswith("/"):
        raise ArgumentError(
            f"zkRoot {zk_root!r} and id {spout_id!r} make the ZooKeeper path {path!r}, "
            f"which ZooKeeper refuses: zkRoot must start with '/' and neither may be empty "
            f"or end with '/'"
        )
    return path


def _spout_config(args: Args) -> dict[str, object]:
    """KafkaSpout(SpoutConfig) -> the component config the built-in reads."""
    (config,) = args
    if not isinstance(config, SpoutConfigBean):
        raise ArgumentError(f"KafkaSpout(SpoutConfig) takes a SpoutConfig bean, got {config!r}")
    if config.scheme is None:
        raise ArgumentError(
            "the SpoutConfig has no scheme: storm-kafka's default (RawMultiScheme) emits raw "
            "bytes, which a multilang topology cannot carry; set the property scheme to a "
            "SchemeAsMultiScheme(StringScheme) bean"
        )
    offsets_path(config.zk_root, config.spout_id)
    out: dict[str, object] = {
        PREFIX + "hosts.brokerZkStr": config.hosts.broker_zk_str,
        PREFIX + "hosts.brokerZkPath": config.hosts.broker_zk_path,
        PREFIX + "hosts.refreshFreqSecs": config.hosts.refresh_freq_secs,
        PREFIX + "topic": config.topic,
        PREFIX + "zkRoot": config.zk_root,
        PREFIX + "id": config.spout_id,
        PREFIX + "scheme": "StringScheme",
    }
    if config.client_id:
        out[PREFIX + "clientId"] = config.client_id
    for name in _USED:
        if name in config.values:
            out[PREFIX + name] = config.values[name]
    return out


STORM_KAFKA_SPOUT_JAVA = JavaClass(
    STORM_KAFKA_SPOUT,
    {1: _spout_config},
    constructor_usage="constructorArgs must be [{ref: <SpoutConfig bean>}]",
)

STORM_KAFKA_BEANS: dict[str, JavaClass] = {
    ZK_HOSTS: ZK_HOSTS_JAVA,
    SPOUT_CONFIG: SPOUT_CONFIG_JAVA,
    OFFSET_REQUEST: OFFSET_REQUEST_JAVA,
    **SCHEME_CLASSES,
}
