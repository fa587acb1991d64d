"""Running one transactional chaos schedule (tx_schedule.py) through `python -m host local FILE
--state-dir DIR` as a real subprocess: SIGKILL of the whole host at its drawn points and a restart
on the same state directory, then a graceful stop once the sink holds every record. What the run
left behind is checked by tx_checks.py."""

from __future__ import annotations

import signal
import sqlite3
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil

from .harness import HostProcess, describe, still_alive
from .tx_checks import Restart, read_log
from .tx_schedule import Schedule, write_inputs, write_topology

POLL = 0.05  # seconds between looks at the run's files
DONE_WITHIN = 90.0  # a schedule's whole run; far above what one takes (a few seconds)
RESUME_WITHIN = 30.0  # a restarted host's first commit-phase finish: a liveness bound only


@dataclass
class Run:
    """What a schedule's run produced, for the checks and the report."""

    schedule: Schedule
    tmp: Path
    reference: dict[str, tuple[int, int]]
    restarts: list[Restart] = field(default_factory=list)
    resume_s: list[float] = field(default_factory=list)  # restart -> first commit-phase finish
    leftovers: list[str] = field(default_factory=list)  # processes that outlived a killed host
    exit_code: int | None = None
    seconds: float = 0.0

    @property
    def db(self) -> Path:
        return self.tmp / "sink.db"

    @property
    def log(self) -> Path:
        return self.tmp / "attempts.log"

    @property
    def fault_dir(self) -> Path:
        return self.tmp / "faults"

    def timeouts(self) -> list[str]:
        """The host's reports of attempts that outlived topology.message.timeout.secs."""
        return [
            line
            for err in sorted(self.tmp.glob("run*/host.err"))
            for line in err.read_text(errors="replace").splitlines()
            if "timed out in its" in line
        ]

    def fired(self) -> set[tuple[str, int]]:
        out = set()
        for marker in self.fault_dir.iterdir():
            point, _, txid = marker.name.rpartition("-")
            out.add((point, int(txid)))
        return out


def query(db: Path, sql: str) -> list[tuple]:
    """A read-only look at the committer's database while it runs; [] while it cannot be read
    (not created yet, or a hot journal left by a killed committer, rolled back by the next)."""
    if not db.exists():
        return []
    try:
        con = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=1)
        try:
            return con.execute(sql).fetchall()
        finally:
            con.close()
    except sqlite3.Error:
        return []


def count(db: Path, sql: str) -> int:
    rows = query(db, sql)
    return int(rows[0][0] or 0) if rows else 0


def wait_until(
    host: HostProcess, cond: Callable[[], bool], timeout: float, what: str, run: Run
) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        if host.proc.poll() is not None:
            raise AssertionError(
                f"{run.schedule.describe()}\nthe host exited ({host.proc.returncode}) while "
                f"waiting for {what}:\n{host.stderr[-4000:]}"
            )
        if time.monotonic() > deadline:
            raise AssertionError(
                f"{run.schedule.describe()}\nnot within {timeout:g}s: {what}\n{host.stderr[-4000:]}"
            )
        time.sleep(POLL)


def kill_host(host: HostProcess, run: Run) -> None:
    """SIGKILL the host; wait (bounded) for its components to die with it, so the next host's
    components never share the database with a previous one's."""
    procs = host.descendants()
    host.kill()
    alive = still_alive(procs, timeout=10)
    if alive:
        run.leftovers.append(repr(describe(alive)))
        for p in alive:
            try:
                p.kill()
            except psutil.Error:
                pass


def read_currtx(state: Path) -> int:
    path = state / "transactional" / "tx-chaos" / "coordinator" / "currtx"
    return int(path.read_text()) if path.exists() else 1


def run_schedule(
    s: Schedule,
    tmp: Path,
    started: list[HostProcess],
    *,
    config: dict[str, Any] | None = None,
    done_within: float = DONE_WITHIN,
) -> Run:
    """Run `s` to completion in `tmp` (`config` over the topology's config); every host started
    is appended to `started` (the caller kills what a failed run leaves)."""
    t0 = time.monotonic()
    inputs, reference = write_inputs(s, tmp)
    run = Run(s, tmp, reference)
    run.fault_dir.mkdir()
    topology = write_topology(s, tmp, inputs, run.fault_dir, config)
    state = tmp / "state"
    n_records = len(reference)

    def start(n: int) -> HostProcess:
        out = tmp / f"run{n}"
        out.mkdir()
        host = HostProcess(topology, out, "--state-dir", str(state))
        started.append(host)
        return host

    host = start(1)
    audit_rows = "SELECT COUNT(*) FROM audit"
    for n, kill in enumerate(s.host_kills, 2):
        wait_until(
            host,
            lambda k=kill.after_commits: count(run.db, audit_rows) >= k,
            done_within,
            f"{kill.after_commits} commits in the audit table",
            run,
        )
        time.sleep(kill.delay)  # the fault's timing (drawn), not a synchronisation
        kill_host(host, run)
        lines = len(read_log(run.log))
        run.restarts.append(Restart(read_currtx(state), lines))
        restarted = time.monotonic()
        host = start(n)
        wait_until(
            host,
            lambda n=lines: len(read_log(run.log)) > n,
            RESUME_WITHIN,
            "the restarted host's first commit-phase finish",
            run,
        )
        run.resume_s.append(time.monotonic() - restarted)
    wait_until(
        host,
        lambda: count(run.db, "SELECT COUNT(*) FROM sink") >= n_records,
        done_within,
        f"all {n_records} records in the sink",
        run,
    )
    run.exit_code = host.finish(signal.SIGTERM, timeout=30)
    run.seconds = time.monotonic() - t0
    return run
