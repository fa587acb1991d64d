"""The chaos harness: ledger topologies, a fault injector, and the invariant check.

The host runs in the test process (a `Supervisor`); every component is a real subprocess. The
truth about what reached the spouts comes from the ledger spouts' own files ("ack ID" / "fail ID"
lines), never from the host's counters, so a host bug cannot hide itself.

Fault schedules are random and seeded: `CHAOS_SEED=1234` replays one (the seed is printed and
repeated in every assertion message).
"""

from __future__ import annotations

import os
import random
import signal
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import psutil

from host.runtime.supervisor import Supervisor
from host.topology import TopologyBuilder

ROOT = Path(__file__).resolve().parents[2]
COMPONENTS = Path(__file__).parent / "components"
INTEGRATION_COMPONENTS = ROOT / "tests" / "integration" / "components" / "host"
LANGS = ("python", "bash", "node")
WORDS_PER_MESSAGE = 7  # "message {i} with some words in it"

# The Python ledger spout of the integration tests already resumes from its ledger; the bash and
# Node ones there do not (they re-emit everything after a restart), hence our own.
SPOUTS = {
    "python": ["python", str(INTEGRATION_COMPONENTS / "ledger_spout.py")],
    "bash": ["bash", str(COMPONENTS / "ledger_spout.sh")],
    "node": ["node", str(COMPONENTS / "ledger_spout.js")],
}
BOLTS = {
    "python": ["python", str(COMPONENTS / "chaos_bolt.py")],
    "bash": ["bash", str(COMPONENTS / "chaos_bolt.sh")],
    "node": ["node", str(COMPONENTS / "chaos_bolt.js")],
}

# Fast restarts and short grace periods keep the tier quick; the rest are the defaults.
BASE_CONFIG = {
    "topology.max.spout.pending": 50,
    "host.restart.backoff.initial.secs": 0.1,
    "host.restart.backoff.max.secs": 1,
    "host.shutdown.grace.secs": 2,
}


def chaos_seed() -> int:
    """CHAOS_SEED from the environment, else a fresh random one."""
    text = os.environ.get("CHAOS_SEED")
    return int(text) if text else random.SystemRandom().randrange(1 << 32)


# ---- ledgers ------------------------------------------------------------------------------------


def read_ledger(path: Path) -> tuple[Counter, Counter, list[str]]:
    """(acks per id, fails per id, the other lines: activate / deactivate)."""
    acks, fails, other = Counter(), Counter(), []
    if path.exists():
        for line in path.read_text().splitlines():
            kind, _, msg_id = line.partition(" ")
            if kind == "ack":
                acks[int(msg_id)] += 1
            elif kind == "fail":
                fails[int(msg_id)] += 1
            else:
                other.append(line)
    return acks, fails, other


@dataclass
class LedgerSpec:
    """One ledger spout: its file and how many messages (ids 0..n-1) it emits."""

    path: Path
    n: int

    def complete(self) -> bool:
        return len(read_ledger(self.path)[0]) >= self.n


def invariant_problems(ledgers: dict[str, LedgerSpec]) -> list[str]:
    """What breaks "every emitted id is acked to its spout exactly once, and no id is acked that
    was never emitted"; empty when it holds."""
    problems = []
    for name, spec in ledgers.items():
        acks, _, _ = read_ledger(spec.path)
        expected = set(range(spec.n))
        missing = sorted(expected - set(acks))
        unknown = sorted(set(acks) - expected)
        twice = sorted(i for i, c in acks.items() if c > 1)
        if missing:
            problems.append(f"{name}: {len(missing)} id(s) never acked, e.g. {missing[:10]}")
        if unknown:
            problems.append(f"{name}: acked id(s) never emitted: {unknown[:10]}")
        if twice:
            problems.append(f"{name}: {len(twice)} id(s) acked more than once, e.g. {twice[:10]}")
    return problems


def assert_invariant(ledgers: dict[str, LedgerSpec], seed: int, extra: str = "") -> None:
    problems = invariant_problems(ledgers)
    assert not problems, f"CHAOS_SEED={seed}: " + "; ".join(problems) + extra


# ---- topologies ---------------------------------------------------------------------------------


def ledger_spout(
    b: TopologyBuilder,
    name: str,
    lang: str,
    ledger: LedgerSpec,
    per_next: int = 1,
    parallelism: int = 1,
) -> None:
    b.spout(
        name,
        SPOUTS[lang],
        outputs=["sentence"],
        parallelism=parallelism,
        config={
            "test.messages": ledger.n,
            "test.ledger": str(ledger.path),
            "test.per.next": per_next,
        },
    )


def chaos_bolt(
    b: TopologyBuilder,
    name: str,
    lang: str,
    *,
    sink: bool = False,
    parallelism: int = 1,
    env: dict | None = None,
    **chaos,
):
    """A chaos bolt; `chaos` keys are the component config without the `chaos.` prefix and with
    `_` for `.` (fail_share=0.1 -> chaos.fail.share)."""
    config = {"chaos." + k.replace("_", "."): v for k, v in chaos.items()}
    config["chaos.sink"] = sink
    return b.bolt(
        name,
        BOLTS[lang],
        outputs=[] if sink else ["word"],
        parallelism=parallelism,
        config=config,
        env=env,
    )


def linear_topology(
    tmp_path: Path,
    spout_lang: str,
    bolt_lang: str,
    *,
    n: int = 100,
    config: dict | None = None,
    per_next: int = 1,
    sink_lang: str = "python",
    **chaos,
):
    """spout -> split (the chaos bolt under test) -> sink (a well-behaved chaos bolt, 2 tasks).
    Returns (topology, {"spout": LedgerSpec})."""
    ledger = LedgerSpec(tmp_path / "ledger", n)
    b = TopologyBuilder("chaos", config={**BASE_CONFIG, **(config or {})})
    ledger_spout(b, "spout", spout_lang, ledger, per_next=per_next)
    env = chaos.pop("env", None)
    chaos_bolt(b, "split", bolt_lang, env=env, **chaos).shuffle("spout")
    chaos_bolt(b, "sink", sink_lang, sink=True, parallelism=2).fields("split", "word")
    return b.build(base_dir=COMPONENTS), {"spout": ledger}


# ---- running ------------------------------------------------------------------------------------


def run_until(
    sup: Supervisor,
    done: Callable[[dict], bool],
    limit: float = 60.0,
    every: Callable[[dict], None] | None = None,
) -> int:
    """Run the supervisor until `done(snapshot)` holds (checked 5 times a second) or `limit`
    seconds pass; `every(snapshot)` is called at each check."""
    sup.report_every = 0.2

    def check(snap: dict) -> None:
        if every is not None:
            every(snap)
        if done(snap):
            sup.request_stop("test condition met")

    sup.on_report = check
    return sup.run(limit)


def all_running(snap: dict) -> bool:
    """Every task of every component is up (none waiting for its restart)."""
    return all(c["states"] == ["running"] for c in snap["components"].values())


def settled(ledgers: dict[str, LedgerSpec]) -> Callable[[dict], bool]:
    """Every ledger complete, nothing pending in the acker, every task running."""
    return lambda snap: (
        snap["topology"]["spout_tuples_pending"] == 0
        and all_running(snap)
        and all(spec.complete() for spec in ledgers.values())
    )


def live_pids(sup: Supervisor) -> dict[str, int]:
    """task name -> pid of every component process the host has running now."""
    return sup.pids()


def is_our_child(pid: int) -> bool:
    """The pid is still a child of this (the host's) process: not reaped and reused."""
    try:
        return psutil.Process(pid).ppid() == os.getpid()
    except psutil.Error:
        return False


@dataclass
class Injected:
    at: float
    task: str
    pid: int
    fault: str


@dataclass
class FaultInjector:
    """A background thread that, every `every` seconds (uniformly random in the range), picks a
    random running component task of `sup` (matching `components`, if given) and applies a random
    fault of `faults`: "kill" (SIGKILL) or "stop" (SIGSTOP: the host must declare it hung)."""

    sup: Supervisor
    rng: random.Random
    every: tuple[float, float] = (0.5, 1.5)
    faults: tuple[str, ...] = ("kill",)
    components: tuple[str, ...] | None = None
    start_after: float = 1.0
    injected: list[Injected] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="fault-injector", daemon=True)
        self.t0 = time.monotonic()

    def start(self) -> FaultInjector:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)

    @property
    def running(self) -> bool:
        return not self._stop.is_set()

    def counts(self) -> Counter:
        return Counter(f.fault for f in self.injected)

    def _run(self) -> None:
        if self._stop.wait(self.start_after):
            return
        while not self._stop.wait(self.rng.uniform(*self.every)):
            hit = {f.pid for f in self.injected}  # a stopped process is still "running"
            pids = {n: p for n, p in live_pids(self.sup).items() if p not in hit}
            if self.components is not None:
                pids = {n: p for n, p in pids.items() if n.split("[")[0] in self.components}
            if not pids:
                continue
            name = self.rng.choice(sorted(pids))
            fault = self.rng.choice(self.faults)
            pid = pids[name]
            if not is_our_child(pid):
                continue
            try:
                os.kill(pid, signal.SIGKILL if fault == "kill" else signal.SIGSTOP)
            except ProcessLookupError:
                continue
            self.injected.append(Injected(round(time.monotonic() - self.t0, 2), name, pid, fault))

    def describe(self) -> str:
        return ", ".join(f"{f.at}s {f.fault} {f.task}" for f in self.injected)


def restarts(snap: dict) -> dict[str, int]:
    return {cid: c["restarts"] for cid, c in snap["components"].items()}


def assert_no_children_left(sup: Supervisor, seed: int | None = None) -> None:
    for pid in sup.started_pids:
        assert not is_running(pid), f"CHAOS_SEED={seed}: pid {pid} running"
    assert not os.path.exists(sup.pid_dir)


# ---- the host as a subprocess -------------------------------------------------------------------


def spout_yaml(lang: str, ledger: LedgerSpec, per_next: int = 1) -> dict:
    return {
        "command": SPOUTS[lang],
        "outputs": ["sentence"],
        "config": {
            "test.messages": ledger.n,
            "test.ledger": str(ledger.path),
            "test.per.next": per_next,
        },
    }


def bolt_yaml(
    lang: str, inputs: dict, *, sink: bool = False, parallelism: int = 1, **chaos
) -> dict:
    config = {"chaos." + k.replace("_", "."): v for k, v in chaos.items()}
    config["chaos.sink"] = sink
    return {
        "command": BOLTS[lang],
        "outputs": [] if sink else ["word"],
        "inputs": inputs,
        "parallelism": parallelism,
        "config": config,
    }


def write_topology(
    path: Path, name: str, spouts: dict, bolts: dict, config: dict | None = None
) -> Path:
    """A topology file in our YAML format (commands are absolute paths)."""
    import yaml

    doc = {
        "name": name,
        "config": {**BASE_CONFIG, **(config or {})},
        "spouts": spouts,
        "bolts": bolts,
    }
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


class HostProcess:
    """`python -m host local FILE` with its output in files (a pipe could fill and block it)."""

    def __init__(self, topology: Path, tmp: Path, *args: str):
        import subprocess
        import sys

        self.stats = tmp / "stats.json"
        self.out_path, self.err_path = tmp / "host.out", tmp / "host.err"
        self._out, self._err = open(self.out_path, "wb"), open(self.err_path, "wb")
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "host",
                "local",
                str(topology),
                "--quiet",
                "--stats-json",
                str(self.stats),
                *args,
            ],
            cwd=ROOT,
            stdin=subprocess.DEVNULL,
            stdout=self._out,
            stderr=self._err,
        )
        self.ps = psutil.Process(self.proc.pid)

    @property
    def stderr(self) -> str:
        return self.err_path.read_text(errors="replace")

    def descendants(self) -> list[psutil.Process]:
        try:
            return self.ps.children(recursive=True)
        except psutil.Error:
            return []

    def wait_for(self, cond: Callable[[], bool], timeout: float = 30.0, what: str = "") -> None:
        deadline = time.monotonic() + timeout
        while not cond():
            if self.proc.poll() is not None:
                raise AssertionError(
                    f"the host exited ({self.proc.returncode}) while waiting "
                    f"for {what}:\n{self.stderr[-3000:]}"
                )
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out waiting for {what}:\n{self.stderr[-3000:]}")
            time.sleep(0.1)

    def peak_rss(self) -> int:
        """The host's high-water mark of resident memory (VmHWM), in bytes."""
        for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
        raise AssertionError("no VmHWM")

    def finish(self, sig: int = signal.SIGTERM, timeout: float = 60.0) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        try:
            return self.proc.wait(timeout=timeout)
        finally:
            self._out.close()
            self._err.close()

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self._out.close()
        self._err.close()


def still_alive(procs: list[psutil.Process], timeout: float) -> list[psutil.Process]:
    """The processes of `procs` still running after up to `timeout` seconds. A zombie counts as
    gone: it holds nothing but its pid, until whoever adopted it reaps it."""
    deadline = time.monotonic() + timeout
    while True:
        alive = []
        for p in procs:
            try:
                if p.is_running() and p.status() != psutil.STATUS_ZOMBIE:
                    alive.append(p)
            except psutil.Error:
                pass
        if not alive or time.monotonic() >= deadline:
            return alive
        time.sleep(0.05)


def describe(procs: list[psutil.Process]) -> list:
    out = []
    for p in procs:
        try:
            out.append((p.pid, p.cmdline()))
        except psutil.Error:
            out.append((p.pid, "?"))
    return out


def is_running(pid: int) -> bool:
    """A process of the run still runs (a zombie, reaped or not, does not)."""
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False
