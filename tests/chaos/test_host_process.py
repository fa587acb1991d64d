"""The host as a real subprocess (`python -m host local`): killed with SIGKILL, stopped with
SIGINT / SIGTERM, fed a 100 MB line, and held back by a slow bolt, with its memory and its process
tree measured from outside with psutil."""

from __future__ import annotations

import json
import signal
import tempfile
import time
from pathlib import Path

import psutil
import pytest

from .harness import (
    HostProcess,
    LedgerSpec,
    bolt_yaml,
    describe,
    read_ledger,
    spout_yaml,
    still_alive,
    write_topology,
)

pytestmark = pytest.mark.chaos

MB = 1 << 20


@pytest.fixture
def hosts():
    """Start hosts with `hosts(topology, tmp, *args)`; whatever a failed test leaves running
    (the host, its components, their children) is killed afterwards."""
    started: list[HostProcess] = []
    tracked: list[psutil.Process] = []

    def start(topology, tmp, *args) -> HostProcess:
        h = HostProcess(topology, tmp, *args)
        started.append(h)
        return h

    start.track = tracked.extend
    yield start
    for h in started:
        tracked.extend(h.descendants())
        h.kill()
    for p in tracked:
        try:
            p.kill()
        except psutil.Error:
            pass


def three_language_topology(tmp_path, name: str, n: int = 20_000, slow_ms: int = 0):
    """Ledger spouts in bash and Node -> a Python splitter -> bash and Node sinks; every bolt
    starts a grandchild (`sleep 600`, not holding any pipe of the host)."""
    ledgers = {
        "bash": LedgerSpec(tmp_path / "ledger-bash", n),
        "node": LedgerSpec(tmp_path / "ledger-node", n),
    }
    path = write_topology(
        tmp_path / "topology.yaml",
        name,
        spouts={
            f"{lang}_spout": spout_yaml(lang, spec, per_next=5) for lang, spec in ledgers.items()
        },
        bolts={
            "split": bolt_yaml(
                "python",
                {"bash_spout": "shuffle", "node_spout": "shuffle"},
                grandchild=True,
                slow_ms=slow_ms,
            ),
            "count_sh": bolt_yaml(
                "bash", {"split": {"fields": ["word"]}}, sink=True, grandchild=True
            ),
            "sink_js": bolt_yaml("node", {"split": "shuffle"}, sink=True, grandchild=True),
        },
    )
    return path, ledgers


def names(procs) -> list[str]:
    out = []
    for p in procs:
        try:
            out.append(p.name())
        except psutil.Error:  # gone meanwhile
            pass
    return out


def acked(ledgers) -> int:
    return sum(sum(read_ledger(spec.path)[0].values()) for spec in ledgers.values())


def running_with_grandchildren(h: HostProcess, ledgers, sleeps: int = 3):
    def ready() -> bool:
        return names(h.descendants()).count("sleep") >= sleeps and all(
            len(read_ledger(spec.path)[0]) >= 10 for spec in ledgers.values()
        )

    return ready


def test_host_sigkill_leaves_no_process_behind(tmp_path, hosts):
    """Direct children die with the host (PR_SET_PDEATHSIG); their own children (the `sleep`s
    the bolts started; the bash bolts' jq ends after their handshake: shell-frames/1) are ended
    by the host's watchdog."""
    name = f"sigkill-{tmp_path.name}"[:60]
    topology, ledgers = three_language_topology(tmp_path, name)
    h = hosts(topology, tmp_path)
    h.wait_for(running_with_grandchildren(h, ledgers), what="components and their sleeps")
    everything = h.descendants()
    hosts.track(everything)
    assert {"sleep", "node", "bash"} <= set(names(everything))
    h.kill()
    alive = still_alive(everything, timeout=5)
    assert not alive, f"alive 5s after the host was SIGKILLed: {describe(alive)}"
    # the watchdog removed the pid directory too
    assert not list(Path(tempfile.gettempdir()).glob(f"multilang-{name}-*"))


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_sigterm_and_sigint_drain_and_stop_everything(tmp_path, hosts, sig):
    """Graceful: spouts are deactivated, the tuples in flight finish within the grace period
    (nothing failed, nothing pending), every process (grandchildren too) is gone when the host
    exits, and the stats file agrees exactly with the spouts' own ledgers."""
    topology, ledgers = three_language_topology(tmp_path, "graceful", slow_ms=5)
    h = hosts(topology, tmp_path)
    h.wait_for(running_with_grandchildren(h, ledgers), what="components and their sleeps")
    everything = h.descendants()
    hosts.track(everything)
    code = h.finish(sig)
    assert code == 0, h.stderr[-3000:]
    alive = still_alive(everything, timeout=1)
    assert not alive, f"outlived a graceful stop: {describe(alive)}"
    stats = json.loads(h.stats.read_text())["topology"]
    assert stats["spout_tuples_failed"] == 0 and stats.get("spout_tuples_pending", 0) == 0
    assert stats["spout_tuples_acked"] == acked(ledgers) > 0
    for lang, spec in ledgers.items():
        acks, fails, other = read_ledger(spec.path)
        assert max(acks.values()) == 1 and not fails
        assert other == ["activate", "deactivate"], f"{lang} spout: {other}"


def test_100mb_line_without_end_is_a_protocol_error_in_bounded_memory(tmp_path, hosts):
    """A bolt writes 100 MB with no `end` line: past host.max.frame.bytes (16 MB by default) it
    is a protocol error of that bolt, and the host's peak memory grows by far less than 100 MB."""
    ledger = LedgerSpec(tmp_path / "ledger", 100_000)
    trigger = tmp_path / "trigger"
    topology = write_topology(
        tmp_path / "topology.yaml",
        "bigline",
        spouts={"spout": spout_yaml("python", ledger)},
        bolts={
            "split": bolt_yaml(
                "python", {"spout": "shuffle"}, mode="bigline", trigger=str(trigger), big_mb=100
            ),
            "sink": bolt_yaml("python", {"split": "shuffle"}, sink=True),
        },
    )
    h = hosts(topology, tmp_path)
    h.wait_for(lambda: len(read_ledger(ledger.path)[0]) >= 50, what="tuples flowing")
    before = h.peak_rss()
    trigger.touch()
    h.wait_for(lambda: "frame limit" in h.stderr, timeout=60, what="the frame-limit error")
    grew = h.peak_rss() - before
    h.wait_for(lambda: "restarting split" in h.stderr, what="the restart")
    assert h.finish() == 0, h.stderr[-3000:]
    report = next(line for line in h.stderr.splitlines() if "frame limit" in line)
    assert "split[" in report and "16777216-byte frame limit" in report and "xxxx" in report
    print(f"host peak RSS grew by {grew / MB:.1f} MB")
    assert grew < 64 * MB, f"host peak RSS grew by {grew / MB:.1f} MB"
    stats = json.loads(h.stats.read_text())
    assert stats["components"]["split"]["restarts"] == 1
    assert stats["components"]["spout"]["restarts"] == 0


SLOW_SECONDS = 30


def test_slow_bolt_under_a_fast_spout_keeps_host_memory_flat(tmp_path, hosts):
    """30 s of a spout emitting as fast as it is asked into a bolt that takes 5 ms a tuple, with
    no topology.max.spout.pending: only the bounded bolt queues hold the spout back. The host's
    RSS after the first 10 s stays flat (a queue growing with the spout's speed would add
    megabytes a second)."""
    ledger = LedgerSpec(tmp_path / "ledger", 10_000_000)
    topology = write_topology(
        tmp_path / "topology.yaml",
        "slow",
        spouts={"spout": spout_yaml("python", ledger, per_next=100)},
        bolts={
            "split": bolt_yaml("python", {"spout": "shuffle"}),
            "slow": bolt_yaml("python", {"split": "shuffle"}, sink=True, slow_ms=5),
        },
        config={"topology.max.spout.pending": None},
    )
    h = hosts(topology, tmp_path)
    samples = []
    t0 = time.monotonic()
    while time.monotonic() - t0 < SLOW_SECONDS:
        time.sleep(1)
        assert h.proc.poll() is None, h.stderr[-3000:]
        samples.append((time.monotonic() - t0, h.ps.memory_info().rss))
    assert h.finish() == 0, h.stderr[-3000:]
    settled = [rss for at, rss in samples if at >= 10]
    growth = max(settled) - min(settled)
    print("host RSS (MB) per second:", [round(rss / MB, 1) for _, rss in samples])
    assert growth < 8 * MB, f"host RSS grew by {growth / MB:.1f} MB after the first 10 s"
    stats = json.loads(h.stats.read_text())
    assert stats["components"]["slow"]["executed"] > 1000  # it was busy all along


BURST_SPOUT = """
from multilang import Spout
class Burst(Spout):
    def initialize(self, conf, context):
        self.sent = False
    def next_tuple(self):
        if not self.sent:  # one `next`, 60000 tuples of 1 KB: a spout that reads a batch at once
            self.sent = True
            for i in range(60000):
                self.emit(["x" * 1000], id=i)
Burst().run()
"""


def test_a_burst_from_one_next_is_held_in_bounded_memory(tmp_path, hosts):
    topology = write_topology(
        tmp_path / "topology.yaml",
        "burst",
        spouts={"spout": {"command": ["python", "-c", BURST_SPOUT], "outputs": ["x"]}},
        bolts={"slow": bolt_yaml("python", {"spout": "shuffle"}, sink=True, slow_ms=10)},
        config={"topology.max.spout.pending": None},
    )
    h = hosts(topology, tmp_path)
    h.wait_for(lambda: h.stats.parent.exists(), what="start")
    time.sleep(1)
    start = h.ps.memory_info().rss
    time.sleep(3)
    grew = h.peak_rss() - start
    assert h.finish() == 0
    assert grew < 30 * MB, f"host RSS grew by {grew / MB:.0f} MB"
