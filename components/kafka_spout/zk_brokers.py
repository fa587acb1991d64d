"""Kafka brokers and partitions found through ZooKeeper, as storm-kafka's `DynamicBrokersReader`
finds them (docs/kafka.md, "The older storm-kafka spout").

Under the `ZkHosts` connect string (a chroot such as `zk1:2181/kafka` included) and its
`brokerZkPath` (default `/brokers`), the way Kafka registers itself:
- `<path>/topics/<topic>/partitions` has one child per partition; storm-kafka takes their count
  and reads partitions 0 .. count-1;
- `<path>/topics/<topic>/partitions/<n>/state` is JSON whose `leader` is the leading broker's id
  (-1: none);
- `<path>/ids/<id>` is JSON with the broker's `host` and `port`.

The JSON parsing is pure (tests/unit/test_storm_kafka_zk.py); `read_leaders` takes a started
kazoo client.
"""

from __future__ import annotations

import json
from typing import Any

Address = tuple[str, int]


class BrokerLookupError(RuntimeError):
    """ZooKeeper does not say where a topic's partitions are."""


def _json(data: bytes | None, what: str) -> dict[str, Any]:
    try:
        value = json.loads((data or b"").decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise BrokerLookupError(f"{what} is not JSON: {exc}") from None
    if not isinstance(value, dict):
        raise BrokerLookupError(f"{what} is not a JSON object: {value!r}")
    return value


def leader_of(state: bytes | None, what: str = "partition state") -> int | None:
    """The leader's broker id from a partition's `state` node; None when it has none (-1)."""
    leader = _json(state, what).get("leader")
    if not isinstance(leader, int) or isinstance(leader, bool):
        raise BrokerLookupError(f"{what} has no integer 'leader': {state!r}")
    return None if leader < 0 else leader


def broker_address(data: bytes | None, what: str = "broker registration") -> Address:
    """(host, port) from a broker's `ids/<id>` node. storm-kafka reads `host` and `port`; a
    broker registered with only non-default listeners has `host` null, and then the first of its
    `endpoints` (`PLAINTEXT://host:port`) is used instead (storm-kafka fails there)."""
    value = _json(data, what)
    host, port = value.get("host"), value.get("port")
    if isinstance(host, str) and host and isinstance(port, int) and port > 0:
        return host, port
    for endpoint in value.get("endpoints") or ():
        if isinstance(endpoint, str) and "://" in endpoint:
            address = endpoint.split("://", 1)[1]
            name, _, number = address.rpartition(":")
            if name and number.isdigit():
                return name.strip("[]"), int(number)
    raise BrokerLookupError(f"{what} has neither host/port nor endpoints: {data!r}")


def read_leaders(client: Any, broker_path: str, topic: str) -> tuple[dict[int, Address], list[str]]:
    """(partition -> its leader's (host, port), why partitions were left out). A partition with
    no leader, or whose leader is not registered, is left out (as DynamicBrokersReader leaves
    out the latter; a later refresh picks it up); a topic ZooKeeper does not know is a
    BrokerLookupError."""
    from kazoo.exceptions import NoNodeError

    partitions_path = f"{broker_path}/topics/{topic}/partitions"
    try:
        count = len(client.get_children(partitions_path))
    except NoNodeError:
        raise BrokerLookupError(
            f"topic {topic!r} is not registered in ZooKeeper ({partitions_path} does not exist)"
        ) from None
    leaders: dict[int, Address] = {}
    left_out: list[str] = []
    for partition in range(count):
        state_path = f"{partitions_path}/{partition}/state"
        try:
            leader = leader_of(client.get(state_path)[0], state_path)
        except NoNodeError:
            left_out.append(f"{state_path} does not exist")
            continue
        if leader is None:
            left_out.append(f"partition {partition} has no leader")
            continue
        ids_path = f"{broker_path}/ids/{leader}"
        try:
            leaders[partition] = broker_address(client.get(ids_path)[0], ids_path)
        except NoNodeError:
            left_out.append(f"partition {partition}'s leader {leader} is not in {ids_path}")
    return leaders, left_out
