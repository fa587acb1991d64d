"""What the Spark tests share: the in-process SparkSession, Spark settings that start fast on a
small machine, and a Supervisor driven step by step that records the spout's emits."""

from __future__ import annotations

import functools
import json
import os
import signal
import time
from collections.abc import Callable
from pathlib import Path

from components.spark_spout.checkpoint import FILE_NAME, Checkpoint
from host.runtime.supervisor import Supervisor

HERE = Path(__file__).parent

# local, quiet and quick to start: the C1 compiler only and the serial GC start a JVM in about
# half the time on two cores, and nothing here runs long enough to need C2
SPARK_TEST_CONF = {
    "spark.master": "local[2]",
    "spark.ui.enabled": "false",
    "spark.sql.shuffle.partitions": "2",
    "spark.driver.extraJavaOptions": "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC",
}


@functools.lru_cache(maxsize=1)
def spark_session():
    """The test process's own SparkSession, started once per test session (it writes the test
    data that the spout reads, and reads what the sink writes)."""
    from components.spark_spout.session import start_session

    return start_session(SPARK_TEST_CONF, "spark-spout-tests")


def read_checkpoint(directory: Path) -> Checkpoint | None:
    path = directory / FILE_NAME
    try:
        return Checkpoint.from_json(json.loads(path.read_text()))
    except (FileNotFoundError, ValueError):
        return None  # not written yet (a rename makes it appear whole)


def ledger(path: Path) -> tuple[dict[int, int], dict[int, int]]:
    """`ok` and `fail` counts per row id from the ledger bolt's file."""
    ok: dict[int, int] = {}
    failed: dict[int, int] = {}
    if path.exists():
        for line in path.read_text().splitlines():
            kind, row_id = line.split()
            target = ok if kind == "ok" else failed
            target[int(row_id)] = target.get(int(row_id), 0) + 1
    return ok, failed


class SteppedRun:
    """A Supervisor run driven turn by turn, so a test can act between turns (kill a task, stop
    the host); the spout's emits are recorded in order as (stream, message id, values)."""

    def __init__(self, topology, spout: str = "spout"):
        self.sup = Supervisor(topology)
        self.spout = spout
        self.emits: list[tuple[str, tuple | None, list]] = []
        self.sup.on_emit = self._on_emit
        self.running = False

    def _on_emit(self, component: str, task: int, m) -> None:
        if component == self.spout:
            self.emits.append((m.stream, tuple(m.id) if m.id is not None else None, list(m.values)))

    def ids(self, since: int = 0) -> list[tuple]:
        return [msg_id for stream, msg_id, _ in self.emits[since:] if msg_id is not None]

    def start(self, limit: float = 300) -> SteppedRun:
        self.sup.start(limit)
        self.running = True
        return self

    def until(self, condition: Callable[[], bool], timeout: float, what: str) -> None:
        """Run turns until `condition()` (checked every 20 ms of turns) or fail the test."""
        deadline = time.monotonic() + timeout
        next_check = 0.0
        while True:
            if not self.sup.step(0.02):
                self.running = False
                raise AssertionError(
                    f"the run ended ({self.sup.failure or 'stopped'}) before: {what}"
                )
            now = time.monotonic()
            if now >= next_check:
                if condition():
                    return
                next_check = now + 0.02
            if now > deadline:
                raise AssertionError(
                    f"not within {timeout}s: {what}; stats {self.sup.snapshot()['topology']}"
                )

    def spout_pid(self) -> int:
        [pid] = [pid for name, pid in self.sup.pids().items() if name.startswith(f"{self.spout}[")]
        return pid

    def kill_spout(self) -> int:
        """SIGKILL the spout process (only it: its JVM notices and goes by itself); returns
        the pid, after the process is gone."""
        pid = self.spout_pid()
        os.kill(pid, signal.SIGKILL)
        self.until(lambda: not _alive(pid) or self.spout_pid() != pid, 10, f"pid {pid} gone")
        return pid

    def stop(self) -> int:
        """The host's graceful stop (drain, close stdin, ...), as at Ctrl-C."""
        if self.running:
            self.sup.request_stop("test stop")
            while self.sup.step():
                pass
            self.running = False
        self.sup.finish()
        return 1 if self.sup.failure else 0


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie (not reaped yet) is gone for our purposes
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False
