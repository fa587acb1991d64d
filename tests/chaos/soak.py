"""The soak run (`make soak`): a word-count-shaped ledger topology in all three client languages,
run by `python -m host local` for SOAK_SECONDS (default 600) while random component processes are
SIGKILLed or SIGSTOPped every few seconds; then the faults stop, the spouts finish, the host is
stopped with SIGTERM, and the spouts' own ledgers are checked: every message id acked exactly
once, none lost. Prints the faults injected, restarts, messages, lost, and the host's RSS and open
file descriptors at start and end (a leak shows as growth).

    make soak                        # 10 minutes
    SOAK_SECONDS=120 make soak       # shorter
    SOAK_SEED=42 python -m tests.chaos.soak   # replay a fault schedule (CHAOS_SEED works too)

Exit status 0 when the invariant held and the host stayed up, 1 otherwise.
"""

from __future__ import annotations

import json
import os
import random
import signal
import sys
import tempfile
import time
from pathlib import Path

import psutil

if __package__ in (None, ""):  # run by path: python tests/chaos/soak.py
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    from tests.chaos.harness import (
        HostProcess,
        LedgerSpec,
        bolt_yaml,
        invariant_problems,
        read_ledger,
        spout_yaml,
        write_topology,
    )
else:
    from .harness import (
        HostProcess,
        LedgerSpec,
        bolt_yaml,
        invariant_problems,
        read_ledger,
        spout_yaml,
        write_topology,
    )

RATE_PER_SPOUT = 30  # messages a second each spout needs to keep up to last the whole window
FAULT_EVERY = (2.0, 5.0)  # seconds between faults
SUBPROCESS_TIMEOUT = 3  # a SIGSTOPped task is declared hung after this


def soak_topology(work: Path, seconds: float, seed: int):
    """Ledger spouts (Python, bash, Node) -> splitters (Python x2, Node) that fail 1% and take
    20 ms a tuple (which paces the spouts) -> a bash word counter (x2, by word) and a Node sink."""
    n = max(300, int(seconds * RATE_PER_SPOUT * 0.8))
    ledgers = {lang: LedgerSpec(work / f"ledger-{lang}", n) for lang in ("python", "bash", "node")}
    path = write_topology(
        work / "soak.yaml",
        "soak",
        spouts={f"{lang}_spout": spout_yaml(lang, spec) for lang, spec in ledgers.items()},
        bolts={
            "split_py": bolt_yaml(
                "python",
                {"python_spout": "shuffle", "node_spout": "shuffle"},
                parallelism=2,
                fail_share=0.01,
                slow_ms=20,
                seed=seed,
            ),
            "split_js": bolt_yaml("node", {"bash_spout": "shuffle"}, fail_share=0.01, slow_ms=20),
            "count_sh": bolt_yaml(
                "bash",
                {"split_py": {"fields": ["word"]}, "split_js": {"fields": ["word"]}},
                sink=True,
                parallelism=2,
            ),
            "sink_js": bolt_yaml("node", {"split_py": "shuffle"}, sink=True),
        },
        config={
            "topology.max.spout.pending": 10,
            "topology.subprocess.timeout.secs": SUBPROCESS_TIMEOUT,
        },
    )
    return path, ledgers


def components(h: HostProcess) -> list[psutil.Process]:
    """The host's component processes (its children, but not its watchdog)."""
    out = []
    for p in h.ps.children():
        try:
            if "host.runtime.watchdog" not in " ".join(p.cmdline()) and p.status() != "zombie":
                out.append(p)
        except psutil.Error:
            pass
    return out


def measure(h: HostProcess) -> tuple[int, int]:
    return h.ps.memory_info().rss, h.ps.num_fds()


def soak(seconds: float, seed: int, work: Path, out=sys.stdout) -> bool:
    def say(text):
        print(text, file=out, flush=True)

    rng = random.Random(seed)
    topology, ledgers = soak_topology(work, seconds, seed)
    total = sum(spec.n for spec in ledgers.values())
    say(f"soak: {seconds:g}s of faults, SOAK_SEED={seed}, {total} messages, work dir {work}")
    h = HostProcess(topology, work)
    faults: list[tuple[float, str, str]] = []
    stopped: set[int] = set()
    host_alive = True
    try:
        h.wait_for(
            lambda: all(len(read_ledger(s.path)[0]) >= 5 for s in ledgers.values()),
            timeout=60,
            what="every spout acked",
        )
        rss0, fds0 = measure(h)
        peak = rss0
        t0 = time.monotonic()
        next_fault = t0 + rng.uniform(*FAULT_EVERY)
        next_status = t0 + 30
        while time.monotonic() - t0 < seconds:
            time.sleep(0.2)
            if h.proc.poll() is not None:
                host_alive = False
                break
            peak = max(peak, h.ps.memory_info().rss)
            now = time.monotonic()
            if now >= next_fault:
                next_fault = now + rng.uniform(*FAULT_EVERY)
                victims = [p for p in components(h) if p.pid not in stopped]
                if victims:
                    victim = rng.choice(victims)
                    kind = rng.choice(("SIGKILL", "SIGKILL", "SIGKILL", "SIGSTOP"))
                    try:
                        name = " ".join(Path(a).name for a in victim.cmdline()[:2])
                        victim.send_signal(getattr(signal, kind))
                    except psutil.Error:
                        continue
                    if kind == "SIGSTOP":
                        stopped.add(victim.pid)
                    faults.append((round(now - t0, 1), kind, name))
            if now >= next_status:
                next_status = now + 30
                done = sum(len(read_ledger(s.path)[0]) for s in ledgers.values())
                say(
                    f"  {now - t0:5.0f}s: {len(faults)} faults, {done}/{total} acked, "
                    f"host RSS {h.ps.memory_info().rss / 2**20:.1f} MB, {h.ps.num_fds()} fds"
                )
        # faults over: let the topology finish (SIGSTOPped tasks are found hung meanwhile)
        if host_alive:
            deadline = time.monotonic() + max(120.0, seconds / 2)
            while (
                time.monotonic() < deadline
                and h.proc.poll() is None
                and invariant_problems(ledgers)
            ):
                time.sleep(0.5)
            time.sleep(SUBPROCESS_TIMEOUT + 2)  # the last SIGSTOP is noticed and repaired
            host_alive = h.proc.poll() is None
        rss1, fds1 = measure(h) if host_alive else (0, 0)
        peak = max(peak, rss1)
        code = h.finish(signal.SIGTERM)
    finally:
        h.kill()
    stats = json.loads(h.stats.read_text()) if h.stats.exists() else {"components": {}}
    restarts = {cid: c["restarts"] for cid, c in stats["components"].items()}
    problems = invariant_problems(ledgers)
    acks = {lang: read_ledger(spec.path) for lang, spec in ledgers.items()}
    lost = sum(len(set(range(ledgers[lang].n)) - set(a)) for lang, (a, _, _) in acks.items())
    twice = sum(sum(1 for c in a.values() if c > 1) for a, _, _ in acks.values())
    replays = sum(sum(f.values()) for _, f, _ in acks.values())
    kinds = {k: sum(1 for _, kind, _ in faults if kind == k) for k in ("SIGKILL", "SIGSTOP")}
    say(f"faults injected: {len(faults)} ({kinds['SIGKILL']} SIGKILL, {kinds['SIGSTOP']} SIGSTOP)")
    say(f"restarts: {sum(restarts.values())} {restarts}")
    say(
        f"messages: {total}, acked once: {total - lost}, lost: {lost}, acked twice: {twice}, "
        f"replayed after a fail: {replays}"
    )
    top = stats.get("topology", {})
    say(
        f"host: exit {code}, alive throughout: {host_alive}; spout tuples acked "
        f"{top.get('spout_tuples_acked')}, failed {top.get('spout_tuples_failed')}, "
        f"timed out {top.get('spout_tuples_timed_out')}"
    )
    if host_alive:
        say(
            f"host RSS: {rss0 / 2**20:.1f} MB at start, {rss1 / 2**20:.1f} MB at end "
            f"(peak {peak / 2**20:.1f} MB); open fds: {fds0} at start, {fds1} at end"
        )
    ok = host_alive and code == 0 and not problems
    say(
        "invariant: every message id acked exactly once, none lost: "
        + ("HOLDS" if not problems else "BROKEN: " + "; ".join(problems))
    )
    if not ok:
        say(f"faults: {faults}\nhost log: {h.err_path}")
    return ok


def main() -> int:
    seconds = float(os.environ.get("SOAK_SECONDS", "600"))
    text = os.environ.get("SOAK_SEED") or os.environ.get("CHAOS_SEED")
    seed = int(text) if text else random.SystemRandom().randrange(1 << 32)
    work = Path(tempfile.mkdtemp(prefix="multilang-soak-"))
    return 0 if soak(seconds, seed, work) else 1


if __name__ == "__main__":
    sys.exit(main())
