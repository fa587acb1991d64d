"""Random fault schedules over a topology in all three client languages: SIGKILL and SIGSTOP of
random component processes (spouts too) every second or so, bolts failing a share of their tuples.
The invariant: every message id is acked to its spout exactly once in the end, no id is acked that
was never emitted, and the host keeps running (no component declared fatal)."""

from __future__ import annotations

import os

import pytest

from host.runtime.supervisor import Supervisor
from host.topology import TopologyBuilder

from .harness import (
    BASE_CONFIG,
    COMPONENTS,
    FaultInjector,
    LedgerSpec,
    assert_invariant,
    assert_no_children_left,
    chaos_bolt,
    ledger_spout,
    restarts,
    run_until,
    settled,
)

pytestmark = pytest.mark.chaos

# CHAOS_FAULT_SECONDS / CHAOS_FAULT_EVERY ("0.1,0.3") / CHAOS_RESTART_MAX make a run harsher
FAULT_SECONDS = float(os.environ.get("CHAOS_FAULT_SECONDS", "12"))
FAULT_EVERY = tuple(float(x) for x in os.environ.get("CHAOS_FAULT_EVERY", "0.3,1.2").split(","))
RESTART_MAX = int(os.environ.get("CHAOS_RESTART_MAX", "10"))  # the default


def mixed_topology(tmp_path, n: int, seed: int):
    """Three ledger spouts (Python, bash, Node) -> splitters (Python x2, Node) -> sinks (bash x2
    by word, Node), every bolt failing 2% of its tuples."""
    ledgers = {
        lang: LedgerSpec(tmp_path / f"ledger-{lang}", n) for lang in ("python", "bash", "node")
    }
    b = TopologyBuilder(
        "chaos-mixed",
        config={
            **BASE_CONFIG,
            "host.restart.max": RESTART_MAX,
            "topology.subprocess.timeout.secs": 2,
        },
    )
    for lang, spec in ledgers.items():
        ledger_spout(b, f"{lang}_spout", lang, spec, per_next=5)
    (
        chaos_bolt(b, "split_py", "python", parallelism=2, fail_share=0.02, seed=seed)
        .shuffle("python_spout")
        .shuffle("node_spout")
    )
    chaos_bolt(b, "split_js", "node", fail_share=0.02).shuffle("bash_spout")
    (
        chaos_bolt(b, "count_sh", "bash", sink=True, parallelism=2, fail_share=0.02)
        .fields("split_py", "word")
        .fields("split_js", "word")
    )
    chaos_bolt(b, "sink_js", "node", sink=True, fail_share=0.02).shuffle("split_py")
    return b.build(base_dir=COMPONENTS), ledgers


@pytest.mark.parametrize(
    "faults", [("kill",), ("kill", "stop")], ids=["sigkill", "sigkill+sigstop"]
)
def test_random_faults_lose_nothing(tmp_path, seed, rng, faults):
    topology, ledgers = mixed_topology(
        tmp_path, n=int(os.environ.get("CHAOS_MESSAGES", "400")), seed=seed
    )
    sup = Supervisor(topology)
    injector = FaultInjector(sup, rng, every=FAULT_EVERY, faults=faults)
    done = settled(ledgers)

    def watch(snap):
        if injector.running and snap["topology"]["uptime_s"] >= FAULT_SECONDS:
            injector.stop()

    injector.start()
    try:
        # stop once the faults are over, every one of them was repaired by a restart (a SIGSTOPped
        # process is only noticed after the subprocess timeout) and every ledger is complete
        code = run_until(
            sup,
            lambda s: (
                not injector.running
                and done(s)
                and sum(restarts(s).values()) >= len(injector.injected)
            ),
            limit=FAULT_SECONDS + 80,
            every=watch,
        )
    finally:
        injector.stop()
    snap = sup.snapshot()
    what = (
        f"\n  faults: {injector.describe()}\n  restarts: {restarts(snap)}"
        f"\n  topology: {snap['topology']}"
    )
    print(what)
    assert code == 0 and sup.failure is None, f"CHAOS_SEED={seed}: {sup.failure}{what}"
    assert_invariant(ledgers, seed, what)
    assert len(injector.injected) >= 5, f"CHAOS_SEED={seed}: too few faults injected{what}"
    # every fault was noticed and repaired by a restart; nothing needed the message timeout
    assert sum(restarts(snap).values()) >= len(injector.injected), f"CHAOS_SEED={seed}{what}"
    assert snap["topology"]["spout_tuples_timed_out"] == 0, f"CHAOS_SEED={seed}{what}"
    assert_no_children_left(sup, seed)
