"""DRPC under bolt kills: 10,000 requests over the two forms of examples/drpc/exclaim (linear and
Flux; 5,000 each, one test per form), the bash bolt (2 tasks) SIGKILLed every 100-500 ms by a seeded killer while the requests
stream in, then left alone for a final batch.

What must hold (docs/drpc.md §1, §2, §6):
- every request gets exactly one HTTP answer, and no connection carries an answer nobody asked
  for; none hangs (no answer within drpc.request.timeout.secs plus a margin is a hang);
- each answer is `200 ARGS!` or `400 FAILED_REQUEST` (what a killed bolt holding the request
  causes); anything else (504 SERVER_TIMEOUT, a wrong result, a lost connection) is listed with
  its count;
- the kills hit requests (some FAILED_REQUEST), yet most requests succeed;
- once the killing stops, the host recovers: every task runs again and a final batch all succeeds;
- the host's stats agree: answered + failed + timed_out = the requests it took, none pending or
  waiting, and its counts equal the clients' own; it exits 0 on SIGTERM.

CHAOS_SEED=<n> replays a kill schedule (the seed is printed, and repeated in every assertion
message). DRPC_CHAOS_REQUESTS sets the total (default 10,000, split evenly over the forms);
DRPC_CHAOS_KILL_EVERY="0.02,0.1" makes the killer harsher.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import re
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import psutil
import pytest

from .drpc_clients import FAILED_REQUEST, OK, Outcome, drive, tally
from .drpc_host import BoltKiller, DrpcHost
from .harness import ROOT, describe, still_alive

pytestmark = pytest.mark.chaos

EXAMPLE = ROOT / "examples" / "drpc" / "exclaim"
FORMS = {"linear": EXAMPLE / "topology.yaml", "flux": EXAMPLE / "topology.flux.yaml"}
BOLT, SCRIPT, TASKS = "exclaim", "exclaim.sh", 2

REQUEST_TIMEOUT = 20  # drpc.request.timeout.secs
MESSAGE_TIMEOUT = 10  # topology.message.timeout.secs: a lost tuple fails its request first
ANSWER_TIMEOUT = REQUEST_TIMEOUT + 15  # the clients' patience: past it, the host hung
CONFIG: dict[str, object] = {
    "drpc.request.timeout.secs": REQUEST_TIMEOUT,
    "topology.message.timeout.secs": MESSAGE_TIMEOUT,
    # each task is killed every 0.6 s or so: it must be restarted every time (the default gives
    # up after 10 restarts in 60 s), and quickly
    "host.restart.max": 100_000,
    "host.restart.backoff.initial.secs": 0.05,
    "host.restart.backoff.max.secs": 0.5,
    "host.shutdown.grace.secs": 2,
}

TOTAL = int(os.environ.get("DRPC_CHAOS_REQUESTS", "10000"))
FINAL_SHARE = 0.1  # of each form's requests: the batch after the killing stopped
CLIENTS = 16
RATE = 400.0  # requests/s while the killer runs: ~11 s of kills per form at 5,000 requests
_low, _, _high = os.environ.get("DRPC_CHAOS_KILL_EVERY", "0.1,0.5").partition(",")
KILL_EVERY = (float(_low), float(_high))  # seconds between kills, uniformly random
MIN_SUCCESS = 0.5  # "most requests succeeded"
MIN_KILLS = 10


@dataclass
class FormRun:
    chaos: list[Outcome]
    final: list[Outcome]
    connection_problems: list[str]
    kills: int
    chaos_secs: float


async def chaos_then_calm(
    host: DrpcHost, form: str, n: int, rng: random.Random
) -> tuple[list[Outcome], list[str], int, float]:
    """The chaos phase: `n` requests at RATE with the killer running until the last is sent;
    returns once every one of them is answered (or given up on as hung)."""
    killer = BoltKiller(host, SCRIPT, rng, BOLT, every=KILL_EVERY)
    stop = asyncio.Event()
    kill_task = asyncio.create_task(killer.run(stop))
    start = time.monotonic()
    args = [f"{form}-c{k:05d}" for k in range(n)]
    load = asyncio.create_task(
        drive(
            host.drpc_host,
            host.drpc_port,
            "exclaim",
            args,
            clients=CLIENTS,
            answer_timeout=ANSWER_TIMEOUT,
            rate=RATE,
        )
    )
    # the killer stops when the last request is sent (n / RATE s in), not when it is answered
    await asyncio.wait({load}, timeout=n / RATE)
    stop.set()
    await kill_task
    outcomes, problems = await load
    return outcomes, problems, len(killer.kills), time.monotonic() - start


def run_form(form: str, tmp: Path, n: int, rng: random.Random, seed: int) -> tuple[FormRun, dict]:
    host = DrpcHost(FORMS[form], tmp, CONFIG)
    try:
        host.wait_listening()
        snap = host.wait_all_running(BOLT, TASKS)
        assert snap["drpc"]["functions"] == ["exclaim"], snap["drpc"]
        assert len(host.bolt_pids(SCRIPT)) == TASKS, "the precondition: 2 bolt processes"
        n_final = max(1, int(n * FINAL_SHARE))
        chaos, problems, kills, secs = asyncio.run(chaos_then_calm(host, form, n - n_final, rng))
        # recovered: every task runs again (restarted after its last kill) before the final batch
        host.wait_all_running(BOLT, TASKS, restarts=kills, timeout=60)
        final, more = asyncio.run(
            drive(
                host.drpc_host,
                host.drpc_port,
                "exclaim",
                [f"{form}-f{k:05d}" for k in range(n_final)],
                clients=CLIENTS,
                answer_timeout=ANSWER_TIMEOUT,
            )
        )
        leftovers = host.process.descendants()
        code = host.stop()
    except BaseException:
        for p in host.process.descendants():
            try:
                p.kill()
            except psutil.Error:
                pass
        host.process.kill()
        raise
    tail = host.process.stderr[-3000:]
    assert code == 0, f"CHAOS_SEED={seed}: {form}: the host exited {code} on SIGTERM:\n{tail}"
    alive = still_alive(leftovers, timeout=5)
    assert not alive, f"CHAOS_SEED={seed}: {form}: outlived the host: {describe(alive)}"
    return FormRun(chaos, final, problems + more, kills, secs), host.stats()


def slowest(outcomes: list[Outcome]) -> float:
    return max((o.answered_at - o.sent_at for o in outcomes), default=0.0)


def reasons(failed: list[Outcome]) -> dict[str, int]:
    """The errorMessages of FAILED_REQUEST answers, numbers blanked out, with their counts."""
    texts = (json.loads(o.body)["errorMessage"] for o in failed)
    return dict(Counter(re.sub(r"\d+", "N", t) for t in texts).most_common(5))


def check_form(form: str, run: FormRun, stats: dict, seed: int) -> None:
    """The assertions of the module docstring for one form."""
    everything = run.chaos + run.final
    counts = tally(everything)
    chaos_counts = tally(run.chaos)
    failed = [o for o in run.chaos if o.kind == FAILED_REQUEST]
    summary = (
        f"{form}: {len(everything)} requests, {run.kills} kills in {run.chaos_secs:.1f}s "
        f"({len(run.chaos) / run.chaos_secs:.0f} req/s); chaos phase {dict(chaos_counts)}, "
        f"final batch {dict(tally(run.final))}; slowest answer {slowest(everything):.2f}s, "
        f"slowest FAILED_REQUEST {slowest(failed):.2f}s; why they failed: {reasons(failed)}"
    )
    print(summary)
    where = f"CHAOS_SEED={seed}: {form}: "
    wrong = [o for o in everything if o.kind not in (OK, FAILED_REQUEST)]
    assert not wrong and not run.connection_problems, (
        where
        + "answers other than 200 ARGS! or 400 FAILED_REQUEST: "
        + f"{dict(Counter(o.kind for o in wrong))}; e.g.\n  "
        + "\n  ".join(o.describe() for o in wrong[:10])
        + "".join(f"\n  {p}" for p in run.connection_problems[:10])
    )
    assert run.kills >= MIN_KILLS, where + f"only {run.kills} kills: {summary}"
    assert chaos_counts[FAILED_REQUEST] > 0, where + f"no kill hit a request: {summary}"
    assert counts[OK] >= MIN_SUCCESS * len(everything), where + f"most failed: {summary}"
    assert tally(run.final) == Counter({OK: len(run.final)}), (
        where + f"after the kills stopped, not every request succeeded: {summary}"
    )
    drpc = stats["drpc"]
    taken = len(everything)  # the test sends no other request
    accounted = drpc["answered"] + drpc["failed"] + drpc["timed_out"]
    assert (
        accounted == taken
        and drpc["answered"] == counts[OK]
        and drpc["failed"] == counts[FAILED_REQUEST]
        and drpc["timed_out"] == drpc["rejected"] == 0
        and drpc["pending"] == drpc["waiting"] == 0
        and drpc["duplicate"] == drpc["late"] == 0
    ), where + f"the host's stats disagree with the clients ({taken} requests): {drpc}"
    # each kill was noticed and repaired by one restart, and nothing else broke
    restarts = stats["components"][BOLT]["restarts"]
    assert restarts == run.kills, where + f"{restarts} restarts for {run.kills} kills"


@pytest.mark.timeout(300)
@pytest.mark.parametrize("form", list(FORMS))
def test_drpc_answers_every_request_exactly_once_while_bolts_are_killed(tmp_path, seed, rng, form):
    run, stats = run_form(form, tmp_path, TOTAL // len(FORMS), rng, seed)
    check_form(form, run, stats, seed)
