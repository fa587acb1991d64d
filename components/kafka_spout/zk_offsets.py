"""Offsets kept in ZooKeeper where and as storm-kafka keeps them, so a topology moved between
Storm and this host resumes where it was (docs/kafka.md, "The older storm-kafka spout").

- The node of a partition: `<zkRoot>/<id>/partition_<n>` (`PartitionManager.committedPath`).
- Its content: compact JSON with the keys in storm-kafka's order,
  `{"topology":{"id":<storm.id>,"name":<topology.name>},"offset":<n>,"partition":<n>,
  "broker":{"host":<leader host>,"port":<leader port>},"topic":<topic>}`, where `offset` is the
  first offset not yet done (`PartitionManager.lastCompletedOffset`).
- The ensemble (`KafkaSpout.open`): the servers of `SpoutConfig.zkServers`, else the topology's
  `storm.zookeeper.servers`; the port `SpoutConfig.zkPort`, else `storm.zookeeper.port`, else
  2181. Storm always has `storm.zookeeper.servers` (its own cluster's); this host has no such
  cluster, so without either the offsets go to the `ZkHosts` ensemble (its servers and ports,
  without its chroot: `zkRoot` is a path from the ensemble's root, as on Storm's).

Where to start a partition (`PartitionManager`'s constructor) is `start_offset`. Everything here
but `ZkOffsetStore` is pure (tests/unit/test_storm_kafka_zk.py).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

DEFAULT_ZK_PORT = 2181  # Storm's defaults.yaml storm.zookeeper.port
STORM_ZK_SERVERS, STORM_ZK_PORT = "storm.zookeeper.servers", "storm.zookeeper.port"


# ---- the ensemble -------------------------------------------------------------------------------


def without_chroot(connect: str) -> str:
    """`zk1:2181,zk2:2181/kafka` -> `zk1:2181,zk2:2181`."""
    return connect.split("/", 1)[0]


@dataclass(frozen=True)
class Ensemble:
    connect: str  # host:port[,host:port...]
    source: str  # which setting it came from, for the start-up log line


def offsets_ensemble(
    zk_servers: Sequence[str] | None,
    zk_port: int | None,
    conf: Mapping[str, Any],
    broker_zk: str,
) -> Ensemble:
    """Where the offsets are kept, chosen as storm-kafka's `KafkaSpout.open` chooses it (servers
    and port separately), with the ZkHosts ensemble as this host's last resort."""
    servers: Sequence[str] | None = zk_servers
    source = "SpoutConfig.zkServers"
    if not servers:
        storm_servers = conf.get(STORM_ZK_SERVERS)
        if isinstance(storm_servers, str):
            storm_servers = [storm_servers]
        servers, source = storm_servers or None, STORM_ZK_SERVERS
    if not servers:
        return Ensemble(
            without_chroot(broker_zk),
            "the ZkHosts ensemble, as neither SpoutConfig.zkServers nor storm.zookeeper.servers "
            "is set",
        )
    port, port_source = zk_port, "SpoutConfig.zkPort"
    if port is None:
        port, port_source = conf.get(STORM_ZK_PORT), STORM_ZK_PORT
    if port is None:
        port, port_source = DEFAULT_ZK_PORT, f"Storm's default port {DEFAULT_ZK_PORT}"
    return Ensemble(",".join(f"{s}:{port}" for s in servers), f"{source}, {port_source}")


# ---- the node and its JSON ----------------------------------------------------------------------


def partition_path(base: str, partition: int) -> str:
    """`base` is zkRoot + "/" + id."""
    return f"{base}/partition_{partition}"


def offset_record(
    *,
    offset: int,
    partition: int,
    topic: str,
    broker: tuple[str, int],
    storm_id: str,
    topology_name: str | None,
) -> bytes:
    """The node's content as storm-kafka writes it (json-simple: compact, keys in this order)."""
    record = {
        "topology": {"id": storm_id, "name": topology_name},
        "offset": offset,
        "partition": partition,
        "broker": {"host": broker[0], "port": broker[1]},
        "topic": topic,
    }
    return json.dumps(record, separators=(",", ":")).encode("utf-8")


@dataclass(frozen=True)
class Stored:
    """What a partition's node says: the topology instance that wrote it and the offset."""

    topology_id: str
    offset: int


def parse_record(data: bytes | None) -> Stored | None:
    """The node's topology id and offset; None when either is missing or the node is not
    storm-kafka's JSON (storm-kafka then starts from startOffsetTime, as here)."""
    try:
        value = json.loads((data or b"").decode("utf-8"))
        topology_id = value["topology"]["id"]
        offset = value["offset"]
    except (UnicodeDecodeError, ValueError, TypeError, KeyError):
        return None
    if not isinstance(topology_id, str) or not isinstance(offset, int) or isinstance(offset, bool):
        return None
    return Stored(topology_id, offset)


# ---- where a partition starts -------------------------------------------------------------------


@dataclass(frozen=True)
class Start:
    """`offset` None: at startOffsetTime (the earliest or latest offset, as the broker says)."""

    offset: int | None
    why: str


def start_offset(
    stored: Stored | None,
    *,
    storm_id: str,
    ignore_zk_offsets: bool,
    current: int | None = None,
    max_offset_behind: int | None = None,
) -> Start:
    """storm-kafka's rule (`PartitionManager`'s constructor): the stored offset, unless there is
    none, or it was written by another topology instance (another run) and `ignoreZkOffsets` is
    set, or it is <= 0, or it is more than `maxOffsetBehind` behind `current` (the offset at
    startOffsetTime; None when not asked for)."""
    if stored is None:
        return Start(None, "no offset stored")
    if stored.topology_id != storm_id and ignore_zk_offsets:
        return Start(None, f"ignoreZkOffsets, and the offset was stored by {stored.topology_id}")
    if stored.offset <= 0:
        return Start(None, f"the stored offset is {stored.offset}")
    if (
        current is not None
        and max_offset_behind is not None
        and current - stored.offset > max_offset_behind
    ):
        return Start(
            None, f"the stored offset {stored.offset} is more than {max_offset_behind} behind"
        )
    return Start(stored.offset, f"stored by {stored.topology_id}")


# ---- the store ----------------------------------------------------------------------------------


class ZkOffsetStore:
    """Read and write partitions' nodes under `base` (zkRoot/id) with a started kazoo client.
    Writes create the node and its parents when missing, as storm-kafka's `ZkState` does."""

    def __init__(self, client: Any, base: str):
        self.client = client
        self.base = base

    def read(self, partition: int) -> tuple[str, bytes | None]:
        """(path, content); content None when the node does not exist."""
        path = partition_path(self.base, partition)
        if self.client.exists(path) is None:
            return path, None
        return path, self.client.get(path)[0]

    def write(self, partition: int, data: bytes) -> None:
        path = partition_path(self.base, partition)
        if self.client.exists(path) is None:
            self.client.create(path, data, makepath=True)
        else:
            self.client.set(path, data)
