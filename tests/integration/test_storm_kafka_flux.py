"""A Flux file written for the older storm-kafka spout (ZkHosts, SpoutConfig, StringScheme,
OffsetRequest.EarliestTime through a factory) runs unmodified against a real ZooKeeper
(tests/support/zookeeper.py) and a real Kafka-compatible broker (Tansu,
tests/support/kafka_broker.py), registered in ZooKeeper the way Kafka registers itself.

Each test has its own topic, its own ZooKeeper chroot for the broker registration (the ZkHosts
connect string carries it) and its own zkRoot for the offsets. Evidence: what the sink bolt
received (a file), the offsets storm-kafka's JSON holds in ZooKeeper, the spout's log lines.
"""

from __future__ import annotations

import itertools
import json
import logging
import shutil
from pathlib import Path

import pytest

from host.topology import load
from tests.integration.components.spark.support import SteppedRun
from tests.support import kafka_broker as broker
from tests.support import zookeeper as zk
from tests.support.kafka_broker import create_topic, produce
from tests.support.zookeeper import register_broker, register_topic

kafka_broker = broker.kafka_broker  # the session's fixtures
zookeeper = zk.zookeeper

SINK = Path(__file__).resolve().parent.parent / "support" / "storm_kafka_sink.py"
RUN_SECS = 120  # generous: a loaded 2-core machine; each run takes a few seconds
_names = itertools.count()

# Shaped like the public storm-kafka Flux files; the ensemble, topic and zkRoot come from the
# environment through Flux's `${ENV-NAME}` (`-e`), as a deployment would pass them.
FLUX = """\
name: "storm-kafka-reader"

components:
  - id: "stringScheme"
    className: "org.apache.storm.kafka.StringScheme"

  - id: "stringMultiScheme"
    className: "org.apache.storm.spout.SchemeAsMultiScheme"
    constructorArgs:
      - ref: "stringScheme"

  - id: "zkHosts"
    className: "org.apache.storm.kafka.ZkHosts"
    constructorArgs:
      - "${ENV-SK_ZK_HOSTS}"

  - id: "startFrom"
    className: "kafka.api.OffsetRequest"
    factory: "EarliestTime"

  - id: "spoutConfig"
    className: "org.apache.storm.kafka.SpoutConfig"
    constructorArgs:
      - ref: "zkHosts"
      - "${ENV-SK_TOPIC}"
      - "${ENV-SK_ZK_ROOT}"
      - "reader"
    properties:
      - name: "scheme"
        ref: "stringMultiScheme"
      - name: "startOffsetTime"
        ref: "startFrom"
      - name: "ignoreZkOffsets"
        value: ${ENV-SK_IGNORE}
      - name: "stateUpdateIntervalMs"
        value: 100

config:
  topology.max.spout.pending: 100
  topology.message.timeout.secs: 60
  host.restart.backoff.initial.secs: 0.1
  host.shutdown.grace.secs: 10

spouts:
  - id: "kafka-spout"
    className: "org.apache.storm.kafka.KafkaSpout"
    parallelism: 1
    constructorArgs:
      - ref: "spoutConfig"

bolts:
  - id: "sink"
    className: "org.apache.storm.flux.wrappers.bolts.FluxShellBolt"
    constructorArgs:
      - ["python", "storm_kafka_sink.py"]
      - ["line"]
    parallelism: 2

streams:
  - name: "kafka --> sink"
    from: "kafka-spout"
    to: "sink"
    grouping:
      type: SHUFFLE
"""


class Case:
    """One test's topic, chroot, zkRoot, topology directory and ZooKeeper client."""

    def __init__(self, tmp_path: Path, bootstrap: str, zookeeper: zk.ZooKeeper, partitions: int):
        n = next(_names)
        self.dir = tmp_path
        self.bootstrap = bootstrap
        self.topic = f"sk-{n}"
        self.chroot = f"/kafka-{n}"
        self.zk_root = f"/storm-kafka-{n}"
        self.zookeeper = zookeeper
        self.client = zookeeper.client()
        create_topic(bootstrap, self.topic, partitions=partitions)
        host, port = bootstrap.rsplit(":", 1)
        register_broker(self.client, 0, host, int(port), chroot=self.chroot)
        register_topic(self.client, self.topic, partitions, chroot=self.chroot)
        (tmp_path / "topology.yaml").write_text(FLUX)
        shutil.copy(SINK, tmp_path / "storm_kafka_sink.py")
        self.partitions = partitions

    def env(self, monkeypatch: pytest.MonkeyPatch, ignore_zk_offsets: bool) -> None:
        monkeypatch.setenv("SK_ZK_HOSTS", f"{self.zookeeper.connect}{self.chroot}")
        monkeypatch.setenv("SK_TOPIC", self.topic)
        monkeypatch.setenv("SK_ZK_ROOT", self.zk_root)
        monkeypatch.setenv("SK_IGNORE", "true" if ignore_zk_offsets else "false")

    def produce(self, values: list[str]) -> dict[int, int]:
        """Round robin over the partitions; partition -> end offset."""
        ends: dict[int, int] = {}
        for p in range(self.partitions):
            ends.update(
                produce(self.bootstrap, self.topic, ((None, v) for v in values[p :: self.partitions]),
                        partition=p)
            )  # fmt: skip
        return ends

    def received(self) -> list[str]:
        path = self.dir / "received"
        return path.read_text().splitlines() if path.exists() else []

    def stored(self, partition: int) -> bytes | None:
        path = f"{self.zk_root}/reader/partition_{partition}"
        return self.client.get(path)[0] if self.client.exists(path) else None

    def offsets(self) -> dict[int, int | None]:
        return {
            p: (json.loads(data)["offset"] if (data := self.stored(p)) else None)
            for p in range(self.partitions)
        }

    def run(self, want: set[str], ends: dict[int, int]) -> tuple[SteppedRun, list[str]]:
        """One run of the unmodified file until the sink has every value of `want` and ZooKeeper
        holds `ends`; returns the run (stopped) and what the sink received in it."""
        before = len(self.received())
        run = SteppedRun(load(self.dir / "topology.yaml", env_filter=True), spout="kafka-spout")
        run.start()
        try:
            run.until(lambda: want <= set(self.received()[before:]), RUN_SECS, "every value")
            run.until(lambda: self.offsets() == ends, RUN_SECS, f"offsets {ends} in ZooKeeper")
        finally:
            assert run.stop() == 0
        return run, self.received()[before:]

    def close(self) -> None:
        self.client.stop()
        self.client.close()


@pytest.fixture
def case_factory(tmp_path, kafka_broker, zookeeper):
    cases: list[Case] = []

    def make(partitions: int = 2) -> Case:
        cases.append(Case(tmp_path, kafka_broker.bootstrap, zookeeper, partitions))
        return cases[-1]

    yield make
    for c in cases:
        c.close()


def test_the_flux_file_runs_stores_offsets_as_storm_kafka_and_resumes(
    case_factory, monkeypatch, caplog
):
    caplog.set_level(logging.INFO, logger="host.component")
    case = case_factory(partitions=2)
    case.env(monkeypatch, ignore_zk_offsets=False)
    first = [f"first-{i}" for i in range(200)]
    ends = case.produce(first)
    assert ends == {0: 100, 1: 100}
    assert case.offsets() == {0: None, 1: None}, "nothing stored before the first run"

    run, received = case.run(set(first), ends)
    assert sorted(received) == sorted(first), "every record once, as StringScheme's one field"
    # storm-kafka's node and JSON: compact, its keys in its order, the run's storm id and the
    # partition leader as ZooKeeper registers it
    host, port = case.bootstrap.rsplit(":", 1)
    for p in range(2):
        assert case.stored(p) == json.dumps(
            {
                "topology": {"id": f"storm-kafka-reader-{run.sup.run_id}", "name": "storm-kafka-reader"},
                "offset": 100,
                "partition": p,
                "broker": {"host": host, "port": int(port)},
                "topic": case.topic,
            },
            separators=(",", ":"),
        ).encode()  # fmt: skip
    # the one start-up line saying where the offsets are: no SpoutConfig.zkServers and no
    # storm.zookeeper.servers, so the ZkHosts ensemble without its chroot
    starts = [r.getMessage() for r in caplog.records if "offsets in ZooKeeper" in r.getMessage()]
    assert len(starts) == 1 and f"offsets in ZooKeeper {case.zookeeper.connect} at " in starts[0]
    assert "(the ZkHosts ensemble, as neither SpoutConfig.zkServers nor" in starts[0]

    # a second run (another topology instance) resumes from the stored offsets
    second = [f"second-{i}" for i in range(50)]
    ends = {p: end + 25 for p, end in ends.items()}
    assert case.produce(second) == ends
    _, received = case.run(set(second), ends)
    assert sorted(received) == sorted(second), "only the records after the stored offsets"


def test_ignore_zk_offsets_restarts_a_new_run_from_start_offset_time(case_factory, monkeypatch):
    case = case_factory(partitions=1)
    case.env(monkeypatch, ignore_zk_offsets=True)
    values = [f"v{i}" for i in range(60)]
    ends = case.produce(values)
    _, received = case.run(set(values), ends)
    assert sorted(received) == sorted(values)
    assert case.offsets() == {0: 60}

    # stored by the previous run, so ignored: EarliestTime again, every record a second time
    _, received = case.run(set(values), ends)
    assert sorted(received) == sorted(values)


def test_a_restarted_task_of_the_same_run_keeps_its_offsets_despite_ignore_zk_offsets(
    case_factory, monkeypatch
):
    """ignoreZkOffsets ignores offsets of *another* topology instance only: a task the host
    restarts (same storm.id) resumes from what it stored."""
    case = case_factory(partitions=1)
    case.env(monkeypatch, ignore_zk_offsets=True)
    before = [f"before-{i}" for i in range(40)]
    ends = case.produce(before)
    run = SteppedRun(load(case.dir / "topology.yaml", env_filter=True), spout="kafka-spout")
    run.start()
    try:
        run.until(lambda: set(before) <= set(case.received()), RUN_SECS, "the first records")
        run.until(lambda: case.offsets() == ends, RUN_SECS, "their offsets stored")
        killed = run.kill_spout()

        def restarted() -> bool:
            pids = [pid for name, pid in run.sup.pids().items() if name.startswith("kafka-spout[")]
            return bool(pids) and killed not in pids

        run.until(restarted, RUN_SECS, "the spout restarted")
        after = [f"after-{i}" for i in range(20)]
        ends = {0: ends[0] + 20}
        assert case.produce(after) == ends
        run.until(lambda: set(after) <= set(case.received()), RUN_SECS, "the new records")
        run.until(lambda: case.offsets() == ends, RUN_SECS, "their offsets stored")
    finally:
        assert run.stop() == 0
    assert sorted(case.received()) == sorted(before + after), "nothing read twice"


def test_offsets_go_to_storm_zookeeper_servers_when_the_topology_sets_them(
    case_factory, monkeypatch, caplog
):
    caplog.set_level(logging.INFO, logger="host.component")
    case = case_factory(partitions=1)
    case.env(monkeypatch, ignore_zk_offsets=False)
    path = case.dir / "topology.yaml"
    path.write_text(
        path.read_text().replace(
            "config:\n",
            'config:\n  storm.zookeeper.servers: ["127.0.0.1"]\n'
            f"  storm.zookeeper.port: {case.zookeeper.port}\n",
        )
    )
    values = [f"v{i}" for i in range(10)]
    ends = case.produce(values)
    case.run(set(values), ends)
    starts = [r.getMessage() for r in caplog.records if "offsets in ZooKeeper" in r.getMessage()]
    assert len(starts) == 1
    where = f"offsets in ZooKeeper 127.0.0.1:{case.zookeeper.port} at {case.zk_root}/reader/"
    assert where in starts[0]
    assert "(storm.zookeeper.servers, storm.zookeeper.port)" in starts[0]


def test_partitions_without_a_leader_or_a_registered_broker_are_left_out(zookeeper):
    from components.kafka_spout.zk_brokers import BrokerLookupError, read_leaders

    client = zookeeper.client()
    try:
        chroot = f"/kafka-leaders-{next(_names)}"
        register_broker(client, 0, "127.0.0.1", 9092, chroot=chroot)
        register_topic(client, "t", 3, chroot=chroot)
        state = f"{chroot}/brokers/topics/t/partitions"
        client.set(f"{state}/1/state", b'{"leader":-1,"isr":[],"version":1}')
        client.set(f"{state}/2/state", b'{"leader":7,"isr":[7],"version":1}')
        leaders, left_out = read_leaders(client, f"{chroot}/brokers", "t")
        assert leaders == {0: ("127.0.0.1", 9092)}
        assert left_out == [
            "partition 1 has no leader",
            f"partition 2's leader 7 is not in {chroot}/brokers/ids/7",
        ]
        with pytest.raises(BrokerLookupError, match="'nope' is not registered in ZooKeeper"):
            read_leaders(client, f"{chroot}/brokers", "nope")
    finally:
        client.stop()
        client.close()
