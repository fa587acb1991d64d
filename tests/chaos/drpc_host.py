"""A DRPC topology's host as a real subprocess (`python -m host local`), seen from outside: its
DRPC URL and web-UI URL from its stdout, its live snapshot from the web UI's `/api/snapshot`, and
a seeded killer of its bolt processes."""

from __future__ import annotations

import asyncio
import json
import os
import random
import re
import signal
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil

from .harness import HostProcess

DRPC_LINE = re.compile(r"DRPC server listening on http://([\d.]+):(\d+) ")
UI_LINE = re.compile(r"web UI: (http://[\d.]+:\d+)/?")
HIT_WAIT_SECS = 10.0  # the certain hit's wait for tuples in flight at the stopped bolt


class DrpcHost:
    """`python -m host local TOPOLOGY --drpc-bind 127.0.0.1:0 --ui 0 -c KEY=VALUE...`."""

    def __init__(self, topology: Path, tmp: Path, config: dict[str, object]):
        tmp.mkdir(parents=True, exist_ok=True)
        options = [f"-c{k}={v}" for k, v in config.items()]
        self.process = HostProcess(
            topology, tmp, "--drpc-bind", "127.0.0.1:0", "--ui", "0", *options
        )
        self.drpc_host = ""
        self.drpc_port = 0
        self.ui_url = ""

    @property
    def pid(self) -> int:
        return self.process.proc.pid

    def stdout(self) -> str:
        return self.process.out_path.read_text(errors="replace")

    def wait_listening(self, timeout: float = 60.0) -> None:
        """Until the host has said where it serves DRPC and the web UI."""

        def said() -> bool:
            out = self.stdout()
            return DRPC_LINE.search(out) is not None and UI_LINE.search(out) is not None

        self.process.wait_for(said, timeout, "the DRPC and web UI lines on stdout")
        out = self.stdout()
        drpc, ui = DRPC_LINE.search(out), UI_LINE.search(out)
        assert drpc is not None and ui is not None
        self.drpc_host, self.drpc_port = drpc.group(1), int(drpc.group(2))
        self.ui_url = ui.group(1)

    def snapshot(self) -> dict[str, Any] | None:
        """The host's live snapshot (None until it has published one)."""
        try:
            with urllib.request.urlopen(f"{self.ui_url}/api/snapshot", timeout=10) as answer:
                doc: dict[str, Any] = json.load(answer)
                return doc
        except OSError:  # 503 "not started yet" is an HTTPError, an OSError too
            return None

    def wait_all_running(
        self, bolt: str, tasks: int, restarts: int = 0, timeout: float = 60.0
    ) -> dict[str, Any]:
        """Until the snapshot shows every task of every component running, `bolt` with `tasks`
        tasks and at least `restarts` restarts of them (so that the snapshot is not one from
        before the last kill); returns that snapshot."""
        found: dict[str, Any] = {}

        def running() -> bool:
            snap = self.snapshot()
            if snap is None:
                return False
            found.clear()
            found.update(snap)
            components = snap["components"]
            mine = components.get(bolt, {})
            return (
                mine.get("tasks") == tasks
                and mine.get("restarts", -1) >= restarts
                and all(set(c["states"]) == {"running"} for c in components.values())
            )

        what = f"every task running ({bolt}: {tasks} tasks, {restarts} restarts)"
        self.process.wait_for(running, timeout, what)
        return found

    def bolt_pids(self, script: str) -> list[int]:
        """The pids of the host's children running `script` (the bolt's command), zombies not
        counted."""
        pids = []
        try:
            children = self.process.ps.children()
        except psutil.Error:
            return []
        for child in children:
            try:
                if script in child.cmdline() and child.status() != psutil.STATUS_ZOMBIE:
                    pids.append(child.pid)
            except psutil.Error:
                pass  # gone meanwhile
        return sorted(pids)

    def stop(self, timeout: float = 60.0) -> int:
        """SIGTERM (a graceful stop); the host's exit code."""
        return self.process.finish(signal.SIGTERM, timeout)

    def stats(self) -> dict[str, Any]:
        """The `--stats-json` file the host wrote when it stopped."""
        doc: dict[str, Any] = json.loads(self.process.stats.read_text())
        return doc


@dataclass
class Kill:
    at: float  # seconds since the killer started
    pid: int


@dataclass
class BoltKiller:
    """SIGKILLs one running process of the bolt every `every` seconds (uniformly random in the
    range, from the seeded `rng`, as is the choice of process) until stopped; the host restarts
    them. A process is killed once: a pid it killed is not chosen again.

    The first kill is certain to hit requests (`_certain_hit`): whether a random kill lands while
    a bash bolt holds a request depends on the machine's speed and load (33 random kills once hit
    none), and the test must see that path taken."""

    host: DrpcHost
    script: str
    rng: random.Random
    component: str  # the bolt's component id, for its tuples in flight in the snapshot
    every: tuple[float, float] = (0.1, 0.5)
    kills: list[Kill] = field(default_factory=list)

    async def run(self, stop: asyncio.Event) -> None:
        start = time.monotonic()
        killed: set[int] = set()
        await self._certain_hit(start, killed)
        while True:
            try:
                await asyncio.wait_for(stop.wait(), self.rng.uniform(*self.every))
                return
            except TimeoutError:
                pass
            pids = [p for p in self.host.bolt_pids(self.script) if p not in killed]
            if not pids:
                continue  # every task is being restarted
            pid = self.rng.choice(pids)
            try:
                os.kill(pid, signal.SIGKILL)  # a live child of the host a moment ago
            except ProcessLookupError:
                continue
            killed.add(pid)
            self.kills.append(Kill(round(time.monotonic() - start, 2), pid))

    async def _certain_hit(self, start: float, killed: set[int]) -> None:
        """Stop every process of the bolt (SIGSTOP), so that what the host writes to them stays
        in flight; once a snapshot taken after the stop shows tuples in flight at the bolt,
        SIGKILL them all (a stopped process dies at once): the requests they held must fail.
        Gives up (and lets them go on) after HIT_WAIT_SECS without seeing any."""
        pids = self.host.bolt_pids(self.script)
        for pid in pids:
            os.kill(pid, signal.SIGSTOP)
        first = await asyncio.to_thread(self.host.snapshot)
        after = first["topology"]["uptime_s"] if first else -1.0
        deadline = time.monotonic() + HIT_WAIT_SECS
        while time.monotonic() < deadline:
            snap = await asyncio.to_thread(self.host.snapshot)
            if (
                snap is not None
                and snap["topology"]["uptime_s"] > after
                and snap["components"][self.component]["in_flight"] > 0
            ):
                for pid in pids:
                    os.kill(pid, signal.SIGKILL)
                    killed.add(pid)
                    self.kills.append(Kill(round(time.monotonic() - start, 2), pid))
                return
            await asyncio.sleep(0.05)
        for pid in pids:
            os.kill(pid, signal.SIGCONT)
