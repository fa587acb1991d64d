"""One fault at a time, in each client language: the faulty task is reported (name, pid, what it
wrote), killed and restarted, its in-flight tuples are replayed, the other components carry on,
and every message id is still acked to the spout exactly once.

The Python versions of crash / garbage / hang / exit / flood and of protocol misuse live in
tests/integration/test_supervisor.py; here are the bash and Node ones, plus what is new for all
three: invalid UTF-8, lone surrogates, SIGSTOP, a mute handshake, grandchildren of a crashed task,
and a SIGKILLed spout resuming from its own ledger.
"""

from __future__ import annotations

import logging
import os
import signal
import time

import psutil
import pytest

from host.runtime.supervisor import Supervisor

from .harness import (
    LANGS,
    assert_invariant,
    assert_no_children_left,
    linear_topology,
    live_pids,
    read_ledger,
    run_until,
    settled,
)

pytestmark = pytest.mark.chaos


def run_linear(
    tmp_path,
    caplog,
    *,
    spout="python",
    bolt="python",
    n=60,
    config=None,
    every=None,
    until=None,
    limit=30.0,
    **chaos,
):
    """spout -> split (the bolt under test) -> sink, until every message is acked (and
    `until(sup, snapshot)` holds); `every(sup, snapshot)` is called 5 times a second. Returns
    (supervisor, exit code, ledgers, error log lines)."""
    topology, ledgers = linear_topology(tmp_path, spout, bolt, n=n, config=config, **chaos)
    sup = Supervisor(topology)
    caplog.set_level(logging.INFO)
    done = settled(ledgers)
    code = run_until(
        sup,
        lambda snap: done(snap) and (until is None or until(sup, snap)),
        limit=limit,
        every=None if every is None else lambda snap: every(sup, snap),
    )
    errors = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    return sup, code, ledgers, errors


def component_restarts(sup: Supervisor) -> dict[str, int]:
    return {cid: c["restarts"] for cid, c in sup.snapshot()["components"].items()}


def task_name(sup: Supervisor, cid: str) -> str:
    """The name (as in logs and live_pids) of the first task of component `cid`."""
    return f"{cid}[{sup.task_map.tasks_of(cid)[0]}]"


# ---- one-shot misbehaviour ----------------------------------------------------------------------

FAULTS = {  # mode -> what the error report must contain
    "crash": "killed by SIGKILL",
    "garbage": "this is not json",
    "hang": "hung: silent",
    "exit": "exit status 0",
    "badutf8": """invalid JSON; it wrote {"command":"log","msg":"bad \\xff\\xfe\\xc3(""",
    "surrogate_emit": "emitted values that cannot be written to sink",
}
CASES = [
    (lang, mode) for lang in ("bash", "node") for mode in ("crash", "garbage", "hang", "exit")
] + [(lang, mode) for lang in LANGS for mode in ("badutf8", "surrogate_emit")]


@pytest.mark.parametrize("lang,mode", CASES, ids=[f"{lang}-{mode}" for lang, mode in CASES])
def test_misbehaving_bolt_is_reported_restarted_and_replayed(tmp_path, caplog, lang, mode):
    sup, code, ledgers, errors = run_linear(
        tmp_path,
        caplog,
        bolt=lang,
        mode=mode,
        after=20,
        marker=str(tmp_path / "marker"),
        config={"topology.subprocess.timeout.secs": 1},
    )
    assert code == 0 and sup.failure is None
    assert_invariant(ledgers, 0)
    assert component_restarts(sup) == {"spout": 0, "split": 1, "sink": 0}
    report = next((e for e in errors if e.startswith("split[")), None)
    assert report is not None, errors
    assert "pid=" in report and FAULTS[mode] in report, report
    assert "failed for replay" in report, report
    assert_no_children_left(sup)


@pytest.mark.parametrize("lang", LANGS)
def test_lone_surrogate_in_a_log_message_is_logged_not_fatal(tmp_path, caplog, lang):
    # valid JSON ("\udcff" escaped) that is not valid Unicode text: the host must neither crash
    # nor choke while writing it to its own log
    sup, code, ledgers, _ = run_linear(
        tmp_path, caplog, bolt=lang, mode="surrogate_log", after=5, marker=str(tmp_path / "marker")
    )
    assert code == 0
    assert_invariant(ledgers, 0)
    assert component_restarts(sup) == {"spout": 0, "split": 0, "sink": 0}
    assert any(
        "lone" in r.getMessage() and "surrogate" in r.getMessage()
        for r in caplog.records
        if r.getMessage().startswith("split[")
    )


@pytest.mark.parametrize("lang", ("bash", "node"))
def test_stderr_flood_is_drained_and_rate_limited(tmp_path, caplog, lang):
    sup, code, ledgers, _ = run_linear(
        tmp_path, caplog, bolt=lang, mode="flood", after=10, marker=str(tmp_path / "marker")
    )
    assert code == 0
    assert_invariant(ledgers, 0)
    assert component_restarts(sup)["split"] == 0
    messages = [r.getMessage() for r in caplog.records]
    assert any("stderr lines not shown" in m for m in messages)
    assert sum(1 for m in messages if m.startswith("split[") and "0000000" in m) <= 1000


# ---- protocol misuse in bash and Node -----------------------------------------------------------

MISUSE = {
    "ack_unknown": "ack of tuple '12345', which is not pending",
    "ack_twice": "which is not pending",
    "anchor_acked": "emit anchored to tuple",
    "unknown_stream": "stream 'nope', which 'split' does not declare",
    "wrong_fields": "emit of 2 values to stream 'default', which declares 1 fields",
}
MISUSE_CASES = [(lang, mode) for lang in ("bash", "node") for mode in MISUSE]


@pytest.mark.parametrize(
    "lang,mode", MISUSE_CASES, ids=[f"{lang}-{mode}" for lang, mode in MISUSE_CASES]
)
def test_protocol_misuse_is_a_fault_of_that_component_only(tmp_path, caplog, lang, mode):
    sup, code, ledgers, errors = run_linear(
        tmp_path, caplog, bolt=lang, mode=mode, after=3, marker=str(tmp_path / "marker")
    )
    assert code == 0
    assert_invariant(ledgers, 0)
    assert component_restarts(sup) == {"spout": 0, "split": 1, "sink": 0}
    report = next((e for e in errors if e.startswith("split[") and MISUSE[mode] in e), None)
    assert report is not None, errors
    assert "it wrote" in report, report  # the offending message itself


# ---- SIGSTOP: hung, killed, restarted -----------------------------------------------------------


@pytest.mark.parametrize("lang", ("bash", "node"))  # Python: in the random-fault tests
def test_sigstopped_bolt_is_declared_hung_killed_and_restarted(tmp_path, caplog, lang):
    stopped: list[int] = []

    def stop_split_once(sup, snap):
        if not stopped and snap["components"]["split"]["executed"] >= 10:
            pid = live_pids(sup)[task_name(sup, "split")]
            os.kill(pid, signal.SIGSTOP)
            stopped.append(pid)

    sup, code, ledgers, errors = run_linear(
        tmp_path,
        caplog,
        bolt=lang,
        n=100,
        every=stop_split_once,
        slow_ms=5,
        config={"topology.subprocess.timeout.secs": 1},
    )
    assert stopped and code == 0
    assert_invariant(ledgers, 0)
    assert component_restarts(sup) == {"spout": 0, "split": 1, "sink": 0}
    report = next(e for e in errors if e.startswith(f"{task_name(sup, 'split')} pid={stopped[0]}"))
    assert "hung: silent for" in report and "killed by SIGKILL" in report, report
    assert not psutil.pid_exists(stopped[0]) or psutil.Process(stopped[0]).status() == "zombie"


# ---- a handshake that is never answered ---------------------------------------------------------


@pytest.mark.parametrize("lang", LANGS)
def test_mute_handshake_times_out_and_the_next_incarnation_works(tmp_path, caplog, lang):
    # the first process never answers the handshake; the second one does
    sup, code, ledgers, errors = run_linear(
        tmp_path,
        caplog,
        bolt=lang,
        env={"CHAOS_MUTE_MARKER": str(tmp_path / "mute")},
        config={"host.handshake.timeout.secs": 0.5},
    )
    assert code == 0
    assert_invariant(ledgers, 0)
    assert component_restarts(sup) == {"spout": 0, "split": 1, "sink": 0}
    assert any(e.startswith("split[") and "no pid reply within 0.5s" in e for e in errors), errors


# ---- a crashed task's own children --------------------------------------------------------------


@pytest.mark.parametrize("lang", ("bash",))  # the host's side is the same for every language
def test_grandchildren_of_a_killed_task_are_killed_with_it(tmp_path, caplog, lang):
    """A bolt starts a `sleep` that does not hold the protocol pipes and is then SIGKILLed: the
    host must end its whole process group, not leave the sleep running until the host exits."""
    seen: dict = {}

    def kill_split_once(sup, snap):
        if "pid" in seen or snap["components"]["split"]["executed"] < 5:
            return
        pid = live_pids(sup)[task_name(sup, "split")]
        kids = psutil.Process(pid).children(recursive=True)
        sleeps = []
        for k in kids:
            try:
                if k.name() == "sleep":
                    sleeps.append(k)
            except psutil.NoSuchProcess:
                pass  # a child that ended since it was listed (a jq, an earlier sleep)
        if not sleeps:
            return  # not started yet
        seen["pid"], seen["sleeps"] = pid, sleeps
        os.kill(pid, signal.SIGKILL)

    def check_gone(sup, snap):
        kill_split_once(sup, snap)
        if "sleeps" in seen and "gone_at" not in seen and snap["components"]["split"]["restarts"]:
            _, alive = psutil.wait_procs(seen["sleeps"], timeout=2)
            seen["gone_at"] = snap["topology"]["uptime_s"]
            seen["alive"] = alive

    _, code, ledgers, _ = run_linear(
        tmp_path, caplog, bolt=lang, n=80, every=check_gone, grandchild=True, slow_ms=10
    )
    assert code == 0 and "pid" in seen and "gone_at" in seen
    for p in seen.get("alive", []):
        p.kill()
    assert not seen["alive"], "a killed task's grandchild outlived it during the run"
    assert_invariant(ledgers, 0)


# ---- spouts resume from their own ledger --------------------------------------------------------


@pytest.mark.parametrize("lang", LANGS)
def test_sigkilled_spout_resumes_from_its_ledger(tmp_path, caplog, lang):
    """Kill the spout three times mid-run: its roots are dropped by the host (the new process
    never emitted them), and the new process re-emits exactly what its ledger does not record as
    acked. A spout that restarted from scratch would get ids acked twice."""
    kills: list[float] = []

    def kill_spout(sup, snap):
        acked = len(read_ledger(tmp_path / "ledger")[0])
        if len(kills) < 3 and acked >= 40 * (len(kills) + 1):
            pid = live_pids(sup).get(task_name(sup, "spout"))
            if pid is not None:
                os.kill(pid, signal.SIGKILL)
                kills.append(time.monotonic())

    sup, code, ledgers, errors = run_linear(
        tmp_path,
        caplog,
        spout=lang,
        n=300,
        per_next=2,
        every=kill_spout,
        slow_ms=1,
        until=lambda sup, snap: snap["components"]["spout"]["restarts"] == 3,
    )
    assert code == 0 and len(kills) == 3
    assert_invariant(ledgers, 0)
    assert component_restarts(sup) == {"spout": 3, "split": 0, "sink": 0}
    assert sum(1 for e in errors if e.startswith("spout[")) == 3


# ---- random protocol messages -------------------------------------------------------------------


def test_random_protocol_messages_fault_only_their_component(tmp_path, caplog, seed):
    """For 25 incarnations the bolt mixes random messages into its output (emits with junk
    values, anchors, streams and tasks; acks and fails of junk ids; logs, errors and metrics with
    junk fields; stray pids and syncs; NaN, huge ints, lone surrogates; bad framing). The host
    must treat each as that bolt's fault (or accept it) and never fail itself; in the end every
    message is acked exactly once."""
    sup, code, ledgers, _ = run_linear(
        tmp_path,
        caplog,
        n=300,
        mode="fuzz",
        marker=str(tmp_path / "incarnations"),
        fuzz_incarnations=int(os.environ.get("CHAOS_FUZZ_INCARNATIONS", "25")),
        seed=seed,
        limit=90,
        config={
            "host.restart.max": 1000,
            "host.restart.backoff.initial.secs": 0.01,
            "host.restart.backoff.max.secs": 0.05,
        },
    )
    restarts = component_restarts(sup)
    assert code == 0 and sup.failure is None, f"CHAOS_SEED={seed}: {sup.failure}"
    assert_invariant(ledgers, seed)
    assert restarts["spout"] == 0 and restarts["sink"] == 0, f"CHAOS_SEED={seed}: {restarts}"
    assert restarts["split"] >= 10, f"CHAOS_SEED={seed}: {restarts}"
    assert not [r for r in caplog.records if r.exc_info], f"CHAOS_SEED={seed}: a host traceback"


# ---- a task that dies or starts while backpressure pauses it ------------------------------------


def test_task_that_dies_while_paused_by_backpressure_is_restarted_once(tmp_path, caplog):
    """Both sink tasks are SIGSTOPped before the spout emits its first tuple, so their queues
    fill and the host stops reading the splitter, whose own queue then fills and stops the spout
    (backpressure); the test waits until the snapshot shows that pause and asserts it. Then the
    paused splitter is SIGKILLed: its death must be noticed although its stdout is not being read
    (once only the subprocess timeout of the stopped sinks noticed it), and its replacement must
    get through the handshake although its downstream is still full (once its pid reply went
    unread and it was killed for a mute handshake, again and again). Then the sinks continue and
    every message is acked once. Everything is read from the public snapshot."""
    bound = 20  # topology.shellbolt.max.pending, and host.bolt.max.in.flight
    gate = tmp_path / "start"  # the spout emits nothing until this file exists
    steps: dict = {}

    def tasks(snap: dict, cid: str) -> list[dict]:
        return snap["components"][cid]["tasks_detail"]

    def script(sup, snap):
        up = snap["topology"]["uptime_s"]
        split = snap["components"]["split"]
        sinks = tasks(snap, "sink")
        pending = snap["topology"]["spout_tuples_pending"]
        steps["last"] = {  # for the assertion messages
            "uptime_s": up,
            "split": {k: split[k] for k in ("emitted", "queued", "in_flight", "restarts")},
            "sink_queued": [t["queued"] for t in sinks],
            "spout_tuples_pending": pending,
        }
        if "stopped" not in steps:
            if all(t["state"] == "running" and t["pid"] for t in sinks):
                steps["sinks"] = [t["pid"] for t in sinks]
                for pid in steps["sinks"]:
                    os.kill(pid, signal.SIGSTOP)
                gate.touch()
                steps["stopped"] = up
        elif "paused" not in steps:
            # a full sink queue stops the host reading the splitter; the splitter's full queue
            # stops it reading (and asking) the spout
            if max(t["queued"] for t in sinks) >= bound and split["queued"] >= bound:
                steps["paused"] = (up, split["emitted"], pending)
        elif "killed" not in steps:
            at, emitted, pending_then = steps["paused"]
            if split["emitted"] != emitted or pending != pending_then or split["queued"] < bound:
                steps["not_paused"] = dict(steps["last"])
                sup.request_stop("the pause did not hold")
            elif up >= at + 1.0:  # the pause held for a second: kill the paused splitter
                steps["victim"] = tasks(snap, "split")[0]["pid"]
                os.kill(steps["victim"], signal.SIGKILL)
                steps["killed"] = up
        elif "running_again" not in steps:
            task = tasks(snap, "split")[0]
            if task["state"] == "running" and task["pid"] not in (None, steps["victim"]):
                steps["running_again"] = up  # restarted and through its handshake, still paused
        elif "resumed" not in steps and up > steps["running_again"] + 2:
            # past the 1 s handshake timeout with its downstream still full
            steps["restarts_before_resume"] = split["restarts"]
            for pid in steps["sinks"]:
                os.kill(pid, signal.SIGCONT)
            steps["resumed"] = up

    sup, code, ledgers, errors = run_linear(
        tmp_path,
        caplog,
        n=400,
        per_next=10,
        every=script,
        limit=40,
        until=lambda sup, snap: "resumed" in steps,
        config={
            "test.start.file": str(gate),
            "topology.max.spout.pending": None,  # only backpressure may stop the spout
            "topology.shellbolt.max.pending": bound,
            "host.bolt.max.in.flight": bound,
            "topology.subprocess.timeout.secs": 60,  # the stopped sinks are not taken for hung
            "host.handshake.timeout.secs": 1,
        },
    )
    for pid in steps.get("sinks", []):  # never leave a stopped process behind a failed test
        try:
            os.kill(pid, signal.SIGCONT)
        except ProcessLookupError:
            pass
    assert "paused" in steps, f"the backpressure never showed in the snapshot: {steps}"
    assert "not_paused" not in steps, f"the host read a paused task: {steps}"
    assert code == 0 and "resumed" in steps, steps
    assert steps["running_again"] - steps["killed"] < 3, steps  # noticed at once
    assert steps["restarts_before_resume"] == 1, steps  # not killed again for its handshake
    assert_invariant(ledgers, 0)
    assert component_restarts(sup) == {"spout": 0, "split": 1, "sink": 0}, errors
    assert not [e for e in errors if "no pid reply" in e], errors


def test_endless_messages_before_the_pid_reply_are_bounded(tmp_path, caplog):
    """The host keeps what a starting task writes before its pid reply (to handle it after the
    handshake); a task that writes endlessly instead of answering once made that grow by about
    100 MB a second until the handshake timeout. Now it is a fault of that task."""
    sup, code, ledgers, errors = run_linear(
        tmp_path, caplog, env={"CHAOS_CHATTY_MARKER": str(tmp_path / "chatty")}
    )
    assert code == 0
    assert_invariant(ledgers, 0)
    assert component_restarts(sup) == {"spout": 0, "split": 1, "sink": 0}
    assert any("messages before its pid reply" in e for e in errors), errors
