"""The older storm-kafka spout (`org.apache.storm.kafka.KafkaSpout` with `ZkHosts` and a
`SpoutConfig`) on top of our Kafka spout: brokers and partitions found through ZooKeeper
(zk_brokers.py), offsets kept in ZooKeeper where storm-kafka keeps them (zk_offsets.py), tuples
as `StringScheme` makes them (one field `str`). The rest (polling, acks, fails, retries, the
commit rule: the first offset not done, `PartitionManager.lastCompletedOffset`) is spout.py's.

A Flux file's SpoutConfig bean becomes `kafka.spoutconfig.*` component config
(host/topology/flux_storm_kafka.py); those keys, with SpoutConfig's field names, are read here.
Run it as `python -m components.storm_builtins.storm_kafka_spout`. docs/kafka.md, "The older
storm-kafka spout".
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import partial
from typing import Any

from confluent_kafka import OFFSET_BEGINNING, OFFSET_END, KafkaException, TopicPartition

from multilang import WARN

from .config import AT_LEAST_ONCE, ConfigError
from .config import PREFIX as SPOUT_PREFIX
from .spout import KAFKA_TIMEOUT_SECS, KafkaSpout, Partition, share
from .translate import TranslateError
from .zk_brokers import Address, BrokerLookupError, read_leaders
from .zk_offsets import (
    Start,
    ZkOffsetStore,
    offset_record,
    offsets_ensemble,
    parse_record,
    start_offset,
)

PREFIX = "kafka.spoutconfig."
EARLIEST_TIME, LATEST_TIME = -2, -1  # kafka.api.OffsetRequest's
LONG_MAX = 2**63 - 1
ZK_TIMEOUT_SECS = 15.0  # connecting to an ensemble; storm's default session timeout is 20 s


@dataclass(frozen=True)
class StormKafkaSettings:
    """SpoutConfig's fields that matter here; defaults are storm-kafka's (`KafkaConfig`,
    `SpoutConfig`, `ZkHosts`)."""

    broker_zk: str  # ZkHosts.brokerZkStr
    topic: str
    zk_root: str
    spout_id: str
    broker_zk_path: str = "/brokers"
    refresh_freq_secs: int = 60
    zk_servers: tuple[str, ...] | None = None
    zk_port: int | None = None
    start_offset_time: int = EARLIEST_TIME
    ignore_zk_offsets: bool = False
    state_update_interval_ms: int = 2000
    max_offset_behind: int = LONG_MAX
    retry_initial_delay_ms: int = 0
    retry_delay_multiplier: float = 1.0
    retry_delay_max_ms: int = 60_000
    retry_limit: int = -1
    client_id: str | None = None

    @property
    def base_path(self) -> str:
        return f"{self.zk_root}/{self.spout_id}"

    def spout_conf(self, bootstrap: str) -> dict[str, Any]:
        """The `kafka.spout.*` settings of spout.py that give storm-kafka's behaviour."""
        initial = self.retry_initial_delay_ms
        # storm-kafka's delay is initial * multiplier^(n-1), capped; spout.py's doubles from the
        # second failure: exact for a multiplier of 2, and a multiplier of 1 is a constant delay
        max_delay = self.retry_delay_max_ms
        if self.retry_delay_multiplier == 1:
            max_delay = min(max_delay, initial)
        conf: dict[str, Any] = {
            "bootstrap.servers": bootstrap,
            "topics": [self.topic],
            "group.id": self.base_path,  # never joined nor committed to: offsets are in ZooKeeper
            "processing.guarantee": AT_LEAST_ONCE,
            "offset.commit.period.ms": self.state_update_interval_ms,
            "partition.refresh.period.ms": self.refresh_freq_secs * 1000,
            "retry.initial.delay.ms": initial,
            "retry.delay.period.ms": initial,
            "retry.max.delay.ms": max_delay,
            # retryLimit <= 0 retries for ever; n > 0 gives up at failure n + 1
            "retry.max.retries": self.retry_limit if self.retry_limit > 0 else -1,
            "translator": "value",
            "encoding": "string",
        }
        if self.client_id:
            conf["consumer.client.id"] = self.client_id
        return {SPOUT_PREFIX + k: v for k, v in conf.items()}


def _get(conf: Mapping[str, Any], name: str, kind: type | tuple[type, ...], default: Any) -> Any:
    value = conf.get(PREFIX + name, default)
    if value is default:
        return value
    if not isinstance(value, kind) or (isinstance(value, bool) and bool not in _kinds(kind)):
        raise ConfigError(f"{PREFIX}{name} has the wrong type: {value!r}")
    return value


def _kinds(kind: type | tuple[type, ...]) -> tuple[type, ...]:
    return kind if isinstance(kind, tuple) else (kind,)


def _required(conf: Mapping[str, Any], name: str) -> str:
    value = conf.get(PREFIX + name)
    if not isinstance(value, str):
        raise ConfigError(f"{PREFIX}{name} is required (a string), got {value!r}")
    return value


def settings_from_conf(conf: Mapping[str, Any]) -> StormKafkaSettings:
    scheme = conf.get(PREFIX + "scheme", "StringScheme")
    if scheme != "StringScheme":
        raise ConfigError(f"{PREFIX}scheme: only StringScheme is emulated, got {scheme!r}")
    servers = _get(conf, "zkServers", list, None)
    if servers is not None and not all(isinstance(s, str) and s for s in servers):
        raise ConfigError(f"{PREFIX}zkServers must be a list of host names, got {servers!r}")
    start = _get(conf, "startOffsetTime", int, EARLIEST_TIME)
    if start not in (EARLIEST_TIME, LATEST_TIME):
        raise ConfigError(
            f"{PREFIX}startOffsetTime must be -2 (EarliestTime) or -1 (LatestTime), got {start!r}"
        )
    settings = StormKafkaSettings(
        broker_zk=_required(conf, "hosts.brokerZkStr"),
        broker_zk_path=_get(conf, "hosts.brokerZkPath", str, "/brokers"),
        refresh_freq_secs=_get(conf, "hosts.refreshFreqSecs", int, 60),
        topic=_required(conf, "topic"),
        zk_root=_required(conf, "zkRoot"),
        spout_id=_required(conf, "id"),
        zk_servers=tuple(servers) if servers else None,
        zk_port=_get(conf, "zkPort", int, None),
        start_offset_time=start,
        ignore_zk_offsets=_get(conf, "ignoreZkOffsets", bool, False),
        state_update_interval_ms=_get(conf, "stateUpdateIntervalMs", int, 2000),
        max_offset_behind=_get(conf, "maxOffsetBehind", int, LONG_MAX),
        retry_initial_delay_ms=_get(conf, "retryInitialDelayMs", int, 0),
        retry_delay_multiplier=float(_get(conf, "retryDelayMultiplier", (int, float), 1.0)),
        retry_delay_max_ms=_get(conf, "retryDelayMaxMs", int, 60_000),
        retry_limit=_get(conf, "retryLimit", int, -1),
        client_id=_get(conf, "clientId", str, None),
    )
    base = settings.base_path
    if not base.startswith("/") or "//" in base or base.endswith("/"):
        raise ConfigError(f"{PREFIX}zkRoot and {PREFIX}id make no ZooKeeper path: {base!r}")
    return settings


def string_scheme(topic: str, partition: int, offset: int, key: Any, value: Any) -> list:
    """StringScheme: the value as UTF-8 text. A record without a value is not emitted (storm-kafka
    acks it without emitting: `KafkaUtils.generateTuples` gives no tuple for a null payload)."""
    if value is None:
        raise TranslateError("no value (a tombstone); storm-kafka skips it too")
    return [value.decode("utf-8", "replace")]


class ZooKeeperUnreachable(RuntimeError):
    """The spout cannot start without its ZooKeeper ensembles (the host restarts it)."""


def _zk_client(connect: str, what: str) -> Any:
    from kazoo.client import KazooClient
    from kazoo.handlers.threading import KazooTimeoutError

    client = KazooClient(hosts=connect, timeout=ZK_TIMEOUT_SECS)
    try:
        client.start(timeout=ZK_TIMEOUT_SECS)
    except KazooTimeoutError:
        client.close()
        raise ZooKeeperUnreachable(
            f"no ZooKeeper server of {connect} ({what}) answered within {ZK_TIMEOUT_SECS:g} s"
        ) from None
    return client


class StormKafkaZooKeeper:
    """The storm-kafka spout's two ZooKeeper sides, shared by the spout under `host local`
    (StormKafkaSpout), its transactional form (storm_kafka_tx.py) and the Spark engine's driver
    (host/spark/kafka_commits.py): the `ZkHosts` ensemble, where the brokers and partitions are,
    and the offsets' ensemble (often the same), where each partition's node is."""

    def __init__(self, sk: StormKafkaSettings, conf: Mapping[str, Any]) -> None:
        self.sk = sk
        self.brokers = _zk_client(sk.broker_zk, "ZkHosts, where the brokers are")
        self.ensemble = offsets_ensemble(sk.zk_servers, sk.zk_port, conf, sk.broker_zk)
        try:
            self.offsets = (
                self.brokers
                if self.ensemble.connect == sk.broker_zk
                else _zk_client(
                    self.ensemble.connect, f"the offsets' ensemble: {self.ensemble.source}"
                )
            )
        except BaseException:
            self._stop(self.brokers)
            raise
        self.store = ZkOffsetStore(self.offsets, sk.base_path)
        self.leaders: dict[int, Address] = {}  # as last read

    def read_leaders(self) -> tuple[dict[int, Address], list[str]]:
        """(partition -> its leader, why partitions were left out), as ZkHosts says now."""
        leaders, left_out = read_leaders(self.brokers, self.sk.broker_zk_path, self.sk.topic)
        self.leaders = leaders
        return leaders, left_out

    def bootstrap(self) -> str:
        """The leaders as librdkafka's bootstrap servers."""
        return ",".join(sorted({f"{h}:{p}" for h, p in self.leaders.values()}))

    def where(self) -> str:
        """Where the offsets and brokers are, for the start-up log line."""
        sk = self.sk
        return (
            f"offsets in ZooKeeper {self.ensemble.connect} at {sk.base_path}/partition_N "
            f"({self.ensemble.source}); brokers of topic {sk.topic!r} from {sk.broker_zk} "
            f"{sk.broker_zk_path}: {self.bootstrap()}"
        )

    def start(
        self, partition: int, storm_id: str, current: Callable[[], int | None]
    ) -> tuple[Start, str | None]:
        """Where `partition` starts (`start_offset`, storm-kafka's rule), and a warning when its
        node holds something other than storm-kafka's JSON. `current`, the offset at
        startOffsetTime, is asked only when maxOffsetBehind is set and an offset is stored."""
        sk = self.sk
        path, data = self.store.read(partition)
        stored = parse_record(data)
        warning = (
            f"{path} is not storm-kafka's JSON: {data!r}"
            if data is not None and stored is None
            else None
        )
        limited = sk.max_offset_behind < LONG_MAX
        start = start_offset(
            stored,
            storm_id=storm_id,
            ignore_zk_offsets=sk.ignore_zk_offsets,
            current=current() if stored and limited else None,
            max_offset_behind=sk.max_offset_behind if limited else None,
        )
        return start, warning

    def stored_offset(self, partition: int) -> int | None:
        """The offset in `partition`'s node, whoever wrote it; None without one."""
        stored = parse_record(self.store.read(partition)[1])
        return None if stored is None else stored.offset

    def write(
        self, offsets: Mapping[tuple[str, int], int], storm_id: str, topology_name: Any
    ) -> None:
        """Each partition's node, as storm-kafka's PartitionManager.commit writes it, the leader
        as last read. Raises kazoo's errors (the caller logs them and tries again later)."""
        for (topic, partition), offset in offsets.items():
            self.store.write(
                partition,
                offset_record(
                    offset=offset,
                    partition=partition,
                    topic=topic,
                    broker=self.leaders.get(partition, ("", 0)),
                    storm_id=storm_id,
                    topology_name=topology_name,
                ),
            )

    def close(self) -> None:
        for client in {id(c): c for c in (self.brokers, self.offsets)}.values():
            self._stop(client)

    @staticmethod
    def _stop(client: Any) -> None:
        client.stop()
        client.close()


class StormKafkaSpout(KafkaSpout):
    """KafkaSpout with partitions from ZooKeeper and offsets in ZooKeeper. It replaces three
    steps of spout.py: `_refresh` (which partitions exist), `_start_offsets` (where each starts)
    and `_commit_offsets` (where the commit goes)."""

    def initialize(self, conf: dict, context: dict) -> None:
        try:
            self.sk = settings_from_conf(conf)
        except ConfigError as exc:
            raise ConfigError(f"storm-kafka spout {self.component_id}: {exc}") from None
        sk = self.sk
        self.zk = StormKafkaZooKeeper(sk, conf)
        leaders = self._leaders()
        if not leaders:
            raise BrokerLookupError(
                f"no partition of topic {sk.topic!r} has a registered leader under "
                f"{sk.broker_zk}{sk.broker_zk_path}"
            )
        self.topology_name = conf.get("topology.name")
        self.log(f"storm-kafka spout {self.component_id}: {self.zk.where()}")
        spout_conf = {k: v for k, v in conf.items() if not k.startswith(SPOUT_PREFIX)}
        super().initialize({**spout_conf, **sk.spout_conf(self.zk.bootstrap())}, context)
        self.translate = string_scheme

    def close(self) -> None:
        try:
            super().close()
        finally:
            self.zk.close()

    # ---- partitions -----------------------------------------------------------------------------
    def _leaders(self) -> dict[int, Address]:
        leaders, left_out = self.zk.read_leaders()
        for reason in left_out:
            self.log(f"storm-kafka spout: {self.sk.topic}: {reason}; left out for now", WARN)
        return leaders

    def _refresh(self) -> None:
        """As spout.py's, with the partitions ZooKeeper lists (storm-kafka's ZkCoordinator, every
        `refreshFreqSecs`); the share of each task is the same round robin."""
        self.next_refresh = time.monotonic() + self.cfg.refresh_period
        try:
            leaders = self._leaders()
        except Exception as exc:  # kazoo's errors and ours: keep what is assigned
            self.log(f"storm-kafka spout: reading partitions failed, keeping them: {exc}", WARN)
            return
        found = [(self.sk.topic, p) for p in leaders]
        mine = set(share(found, self.index, self.count))
        if mine != self.assigned:
            self._reassign(mine)

    # ---- offsets in ZooKeeper -------------------------------------------------------------------
    def _start_offsets(self, added: list[Partition]) -> dict[Partition, int]:
        logical = OFFSET_BEGINNING if self.sk.start_offset_time == EARLIEST_TIME else OFFSET_END
        starts: dict[Partition, int] = {}
        for topic, partition in added:
            start, warning = self.zk.start(
                partition, self.storm_id, partial(self._current_offset, topic, partition)
            )
            if warning:
                self.log(f"storm-kafka spout: {warning}", WARN)
            starts[(topic, partition)] = logical if start.offset is None else start.offset
            where = (
                f"offset {start.offset}"
                if start.offset is not None
                else ("EarliestTime" if logical == OFFSET_BEGINNING else "LatestTime")
            )
            self.log(f"storm-kafka spout: {topic}-{partition} starts at {where}: {start.why}")
        return starts

    def _current_offset(self, topic: str, partition: int) -> int | None:
        """The offset at startOffsetTime, for maxOffsetBehind (asked only when it is set)."""
        try:
            low, high = self.consumer.get_watermark_offsets(
                TopicPartition(topic, partition), timeout=KAFKA_TIMEOUT_SECS
            )
        except KafkaException as exc:
            self.log(f"storm-kafka spout: {topic}-{partition}: no offsets from the broker: {exc}")
            return None
        return int(low if self.sk.start_offset_time == EARLIEST_TIME else high)

    def _commit_offsets(self, offsets: dict[Partition, int], asynchronous: bool = False) -> bool:
        """Write each partition's offset to ZooKeeper as storm-kafka's PartitionManager.commit
        does; False (and a warning) if any write failed, to be tried again."""
        try:
            self.zk.write(offsets, self.storm_id, self.topology_name)
        except Exception as exc:  # kazoo's errors: the ensemble is down or the session lost
            self.log(
                f"storm-kafka spout: writing offsets to ZooKeeper failed, will retry: {exc}", WARN
            )
            return False
        return True


def main() -> None:
    StormKafkaSpout().run()
