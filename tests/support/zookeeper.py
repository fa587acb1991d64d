"""A real ZooKeeper server for the storm-kafka tests: Debian's `zookeeper` package (the Makefile's
`tools` target installs it), run as a plain Java process on 127.0.0.1, on a free port, with a
temporary data directory; not the system service.

`zookeeper` is a session-scoped fixture, stopped (SIGTERM, then SIGKILL of its process group)
when the session ends. `register_broker` and `register_topic` write what a Kafka broker writes
there, so that storm-kafka's way of finding brokers (components/kafka_spout/zk_brokers.py) finds
the test's Tansu broker. Nothing is skipped when ZooKeeper is missing: that is an error saying
how to install it.
"""

from __future__ import annotations

import json
import os
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.local_server import LocalServer, start_server

ZOOKEEPER_JAR = "/usr/share/java/zookeeper.jar"  # Debian's; its manifest names its dependencies
ENV_JAR = "ZOOKEEPER_JAR"  # another jar (with its dependencies on the class path)
MAIN_CLASS = "org.apache.zookeeper.server.ZooKeeperServerMain"
START_TIMEOUT_SECS = 30.0


class ZooKeeperError(RuntimeError):
    """ZooKeeper could not be found or started."""


def zookeeper_jar() -> str:
    jar = os.environ.get(ENV_JAR) or ZOOKEEPER_JAR
    if not os.path.isfile(jar):
        raise ZooKeeperError(
            f"the storm-kafka tests need ZooKeeper ({jar} is missing): "
            f"apt-get install zookeeper (make tools installs it), or set ${ENV_JAR}"
        )
    return jar


class ZooKeeper(LocalServer):
    @property
    def connect(self) -> str:
        return f"127.0.0.1:{self.port}"

    def client(self) -> Any:
        """A started kazoo client; the caller stops it."""
        from kazoo.client import KazooClient

        client = KazooClient(hosts=self.connect, timeout=10)
        client.start(timeout=START_TIMEOUT_SECS)
        return client


def start_zookeeper(workdir: Path) -> ZooKeeper:
    """ZooKeeper standalone on a free loopback port; returns once it accepts connections."""
    jar = zookeeper_jar()

    def argv(port: int) -> list[str]:
        data = workdir / f"data-{port}"
        data.mkdir()
        config = workdir / f"zoo-{port}.cfg"
        config.write_text(
            f"tickTime=2000\ndataDir={data}\nclientPort={port}\nclientPortAddress=127.0.0.1\n"
            # no admin web server (it would take port 8080) and no JMX
            "admin.enableServer=false\n"
        )
        return ["java", "-Xmx256m", "-cp", jar, MAIN_CLASS, str(config)]

    try:
        server = start_server("zookeeper", argv, workdir, timeout=START_TIMEOUT_SECS)
    except RuntimeError as exc:
        raise ZooKeeperError(str(exc)) from None
    return ZooKeeper(server.process, server.port, server.log_path)


@pytest.fixture(scope="session")
def zookeeper() -> Iterator[ZooKeeper]:
    with tempfile.TemporaryDirectory(prefix="zookeeper-") as workdir:
        server = start_zookeeper(Path(workdir))
        try:
            yield server
        finally:
            server.stop()


# ---- what a Kafka broker writes (Kafka's KafkaZkClient; storm-kafka reads it) -------------------


def register_broker(client: Any, broker_id: int, host: str, port: int, chroot: str = "") -> None:
    """`<chroot>/brokers/ids/<id>`, ephemeral as Kafka makes it (gone with `client`'s session)."""
    record = {
        "listener_security_protocol_map": {"PLAINTEXT": "PLAINTEXT"},
        "endpoints": [f"PLAINTEXT://{host}:{port}"],
        "jmx_port": -1,
        "host": host,
        "port": port,
        "timestamp": str(int(time.time() * 1000)),
        "version": 4,
    }
    client.create(
        f"{chroot}/brokers/ids/{broker_id}",
        json.dumps(record).encode(),
        ephemeral=True,
        makepath=True,
    )


def register_topic(
    client: Any, topic: str, partitions: int, leader: int = 0, chroot: str = ""
) -> None:
    """`<chroot>/brokers/topics/<topic>` (the replica assignment) and each partition's `state`."""
    base = f"{chroot}/brokers/topics/{topic}"
    assignment = {"version": 1, "partitions": {str(p): [leader] for p in range(partitions)}}
    client.create(base, json.dumps(assignment).encode(), makepath=True)
    for p in range(partitions):
        state = {"controller_epoch": 1, "leader": leader, "version": 1, "leader_epoch": 0,
                 "isr": [leader]}  # fmt: skip
        client.create(f"{base}/partitions/{p}/state", json.dumps(state).encode(), makepath=True)
