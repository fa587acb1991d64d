"""Conformance: the same scenarios against every client library, ours and third-party ones.

Part 1 drives one component process at a time through ComponentPeer (a scripted host on the real
pipes) and runs each scenario over every client: our Python, Node and bash libraries, and pystorm
from PyPI over JSON and over msgpack. The components (tests/integration/components/conformance/ and
.../pystorm/) all behave alike; their README describes the instructions they follow.

Part 2 goes through the real host (Supervisor, in-process, with real children): the
per-component compatibility switches for old vendored libraries, messages written before the pid
reply, the metrics RPC, and msgpack components in a topology.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from host.runtime.supervisor import Supervisor
from host.testing import ComponentPeer, make_context
from host.topology import TopologyBuilder
from multilang.messages import PIPELINE_EXT, Ack, Emit, Error, Fail, Log, Metrics, Sync

HERE = Path(__file__).resolve().parent
CONFORMANCE = HERE / "components" / "conformance"
PYSTORM = HERE / "components" / "pystorm"
HOST_COMPONENTS = HERE / "components" / "host"


# ---- the clients --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Client:
    name: str
    bolt: tuple[str, ...]
    spout: tuple[str, ...]
    serializer: str = "json"
    eof_status: int = 0  # exit status when the host closes stdin
    # what the library can do; a scenario that needs something a client lacks by design is not
    # generated for it (see `needs`)
    features: frozenset = field(default_factory=frozenset)


def _py(path: Path, *args: str) -> tuple[str, ...]:
    return ("python", str(path), *args)


CLIENTS = [
    Client(
        "python",
        _py(CONFORMANCE / "bolt.py"),
        _py(CONFORMANCE / "spout.py"),
        features=frozenset({"json", "pipeline"}),
    ),
    Client(
        "node",
        ("node", str(CONFORMANCE / "bolt.js")),
        ("node", str(CONFORMANCE / "spout.js")),
        features=frozenset({"json", "pipeline"}),
    ),
    Client(
        "bash",
        ("bash", str(CONFORMANCE / "bolt.sh")),
        ("bash", str(CONFORMANCE / "spout.sh")),
        features=frozenset({"json", "pipeline"}),
    ),
    # pystorm exits with status 2 when Storm goes away (docs/protocol.md §4.10)
    Client(
        "pystorm-json",
        _py(PYSTORM / "conformance_bolt.py", "json"),
        _py(PYSTORM / "conformance_spout.py", "json"),
        eof_status=2,
        features=frozenset({"json"}),
    ),
    Client(
        "pystorm-msgpack",
        _py(PYSTORM / "conformance_bolt.py", "msgpack"),
        _py(PYSTORM / "conformance_spout.py", "msgpack"),
        serializer="msgpack",
        eof_status=2,
        features=frozenset({"msgpack"}),
    ),
]


def needs(*features: str):
    """Generate the decorated scenario only for clients that have all of `features`."""

    def mark(fn):
        fn.needs = frozenset(features)
        return fn

    return mark


def pytest_generate_tests(metafunc):  # pragma: no cover - called by pytest for this module
    if "client" in metafunc.fixturenames:
        wanted = getattr(metafunc.function, "needs", frozenset())
        chosen = [c for c in CLIENTS if wanted <= c.features]
        metafunc.parametrize("client", chosen, ids=[c.name for c in chosen])


# ---- starting components ------------------------------------------------------------------------

# pystorm builds a namedtuple per source stream from these, so every test tuple has three values
SOURCE_FIELDS = {"spout": {"default": ["action", "arg1", "arg2"]}}
BOLT_CONTEXT = make_context(
    taskid=3,
    componentid="bolt",
    outputs={"default": ["word"], "other": ["word"]},
    sources=SOURCE_FIELDS,
)
SPOUT_CONTEXT = make_context(
    taskid=1, componentid="spout", outputs={"default": ["sentence"]}, sources={}
)


def start(client: Client, argv, context: dict, conf: dict | None = None) -> ComponentPeer:
    peer = ComponentPeer(list(argv), serializer=client.serializer)
    try:
        pid = peer.handshake(conf=conf, context=context)
        assert pid == peer.proc.pid
        ready = until_log(peer, "ready ")
        assert ready.msg == f"ready {context['componentid']} {context['taskid']}"
    except BaseException:
        peer.close()
        raise
    return peer


def until_log(peer: ComponentPeer, prefix: str) -> Log:
    """Skip log lines (pystorm logs one of its own after the pid) up to the one wanted."""
    while True:
        msg = peer.read()
        assert isinstance(msg, Log), f"expected a log starting {prefix!r}, got {msg!r}"
        if msg.msg.startswith(prefix):
            return msg


@pytest.fixture
def bolt(client):
    peer = start(client, client.bolt, BOLT_CONTEXT)
    yield peer
    if not peer.proc.stdin.closed:  # not closed by the test itself
        peer.close()


@pytest.fixture
def spout(client):
    peer = start(client, client.spout, SPOUT_CONTEXT, conf={"test.limit": 2})
    yield peer
    if not peer.proc.stdin.closed:
        peer.close()


def send(peer: ComponentPeer, tuple_id: str, action: str, arg1="", arg2="") -> None:
    peer.tuple(tuple_id, [action, arg1, arg2])


def until_ack(peer: ComponentPeer, tuple_id: str) -> list:
    """Everything up to the ack of `tuple_id`, which must come before any other ack or fail."""
    out = peer.read_until((Ack, Fail))
    assert out[-1] == Ack(tuple_id), out
    return out[:-1]


def emits(messages: list) -> list[tuple]:
    """Emits as comparable tuples: (values, stream, anchors, task, need_task_ids, id)."""
    return [
        (m.values, m.stream, tuple(m.anchors), m.task, m.need_task_ids, m.id)
        for m in messages
        if isinstance(m, Emit)
    ]


# ---- bolts --------------------------------------------------------------------------------------


def test_handshake_then_exit_when_stdin_closes(client, bolt):
    # the fixture's `start` checked the handshake: the pid file, the pid reply, and that the
    # component read its context (with msgpack a reduced one: pystorm finds its id through
    # task->component)
    assert bolt.close() == client.eof_status


def test_emits_are_anchored_to_the_input_which_is_then_acked(client, bolt):
    send(bolt, "1001", "split", "the cow jumped über")
    out = until_ack(bolt, "1001")
    assert emits(out) == [
        ([w], "default", ("1001",), None, False, None) for w in ["the", "cow", "jumped", "über"]
    ]
    assert len(out) == 4


def test_emit_to_a_named_stream(client, bolt):
    send(bolt, "1002", "stream", "other", "x")
    assert emits(until_ack(bolt, "1002")) == [(["x"], "other", ("1002",), None, False, None)]


def test_direct_emit_expects_no_reply(client, bolt):
    send(bolt, "1003", "direct", 4, "x")
    [(values, stream, anchors, task, need_task_ids, _)] = emits(until_ack(bolt, "1003"))
    assert (values, stream, anchors, task) == (["x"], "default", ("1003",), 4)
    assert need_task_ids is False  # Storm never answers a direct emit


def test_need_task_ids_false_means_no_reply_is_awaited(client, bolt):
    # two tuples back to back, no task ids sent: both are processed and acked
    send(bolt, "1004", "split", "a b")
    send(bolt, "1005", "split", "c")
    first = until_ack(bolt, "1004")
    second = until_ack(bolt, "1005")
    assert [e[4] for e in emits(first + second)] == [False, False, False]


def test_need_task_ids_true_waits_and_handles_what_came_meanwhile_afterwards(client, bolt):
    send(bolt, "1006", "taskids", "x")
    asked = bolt.read()
    assert emits([asked]) == [(["x"], "default", ("1006",), None, True, None)]
    # while it waits: a heartbeat and another tuple, then the reply
    bolt.heartbeat("77")
    send(bolt, "1007", "split", "later")
    bolt.task_ids([4, 7])
    out = until_ack(bolt, "1006")
    # it could only say "got 4,7" once it had the reply: it waited for it
    assert emits(out) == [(["got", "4,7"], "default", ("1006",), None, False, None)]
    assert len(out) == 1
    # then what arrived meanwhile, in order: the heartbeat, the other tuple
    rest = until_ack(bolt, "1007")
    assert rest[0] == Sync()
    assert emits(rest[1:]) == [(["later"], "default", ("1007",), None, False, None)]
    assert len(rest) == 2


def test_fail_then_keep_running(client, bolt):
    send(bolt, "1008", "fail")
    out = bolt.read_until((Ack, Fail))
    assert out[-1] == Fail("1008")
    assert all(isinstance(m, Error) for m in out[:-1])  # our clients say why; pystorm need not
    send(bolt, "1009", "split", "still here")
    assert len(emits(until_ack(bolt, "1009"))) == 2


def test_ack_follows_every_kind_of_input(client, bolt):
    send(bolt, "1010", "nothing")
    assert until_ack(bolt, "1010") == []


def test_heartbeat_is_answered_with_sync_and_not_processed(client, bolt):
    bolt.heartbeat("-4613382227463211107")
    assert bolt.read() == Sync()
    send(bolt, "1011", "split", "next")
    assert len(emits(until_ack(bolt, "1011"))) == 1  # the heartbeat was neither acked nor data


def test_tick_goes_to_the_tick_hook_and_is_acked(client, bolt):
    bolt.tick("555", freq=5)
    assert until_ack(bolt, "555") == [Log("tick 5", 2)]


def test_log_levels(client, bolt):
    send(bolt, "1012", "log")
    assert until_ack(bolt, "1012") == [Log(f"level {n}", n) for n in range(5)]


def test_error_is_reported_and_the_bolt_keeps_running(client, bolt):
    send(bolt, "1013", "error", "disk full")
    out = until_ack(bolt, "1013")
    errors = [m for m in out if isinstance(m, Error)]
    assert len(errors) == 1 and "disk full" in errors[0].msg
    # pystorm's raise_exception also sends a sync
    assert all(isinstance(m, (Error, Sync)) for m in out)
    send(bolt, "1014", "nothing")
    until_ack(bolt, "1014")


def test_metrics(client, bolt):
    send(bolt, "1015", "metrics")
    assert until_ack(bolt, "1015") == [
        Metrics("calls", None),
        Metrics("calls", 2),
        Metrics("state", {"phase": "x"}),
    ]


# ---- spouts -------------------------------------------------------------------------------------


def test_spout_activate_and_deactivate(client, spout):
    spout.command("activate")
    assert spout.read_until(Sync) == [Log("activated", 2), Sync()]
    spout.command("deactivate")
    assert spout.read_until(Sync) == [Log("deactivated", 2), Sync()]


def test_spout_next_ack_fail_each_answered_with_sync(client, spout):
    spout.command("next")
    out = spout.read_until(Sync)
    assert emits(out) == [(["s1"], "default", (), None, False, "m1")] and len(out) == 2
    spout.command("ack", "m1")
    assert spout.read_until(Sync) == [Log("acked m1", 2), Sync()]
    spout.command("next")
    assert emits(spout.read_until(Sync)) == [(["s2"], "default", (), None, False, "m2")]
    spout.command("next")  # nothing left: it just syncs
    assert spout.read_until(Sync) == [Sync()]


def test_spout_answers_commands_written_ahead_one_by_one_in_order(client, spout):
    # the "asynchronous client" case: a pipelining host writes commands ahead of their syncs, so
    # a library must answer each in the order written, its emits before its sync. Ours announce
    # that (pipeline/1); pystorm does not, but passes, which is what makes its `pipelining: true`
    # switch safe (docs/protocol.md, "Protocol extensions")
    assert (PIPELINE_EXT in spout.extensions) == ("pipeline" in client.features)
    for command, msg_id in [
        ("next", ""),
        ("ack", "m1"),
        ("next", ""),
        ("fail", "m1"),
        ("next", ""),
    ]:
        spout.command(command, msg_id)
    assert emits(spout.read_until(Sync)) == [(["s1"], "default", (), None, False, "m1")]
    assert spout.read_until(Sync) == [Log("acked m1", 2), Sync()]
    assert emits(spout.read_until(Sync)) == [(["s2"], "default", (), None, False, "m2")]
    assert emits(spout.read_until(Sync)) == [(["s1"], "default", (), None, False, "m1")]
    assert spout.read_until(Sync) == [Sync()]


def test_spout_replays_a_failed_tuple(client, spout):
    spout.command("next")
    spout.read_until(Sync)
    spout.command("fail", "m1")
    out = spout.read_until(Sync)
    assert emits(out) == [(["s1"], "default", (), None, False, "m1")] and len(out) == 2
    spout.command("ack", "m1")
    assert spout.read_until(Sync) == [Log("acked m1", 2), Sync()]
    assert spout.close() == client.eof_status


# ---- through the host ---------------------------------------------------------------------------


def run_until(sup: Supervisor, done, limit: float = 20.0) -> int:
    """Run the supervisor until `done(snapshot)` holds (checked five times a second) or `limit`."""
    sup.report_every = 0.2

    def check(snap: dict) -> None:
        if done(snap):
            sup.request_stop("test condition met")

    sup.on_report = check
    return sup.run(limit)


def acked_ids(ledger: Path) -> list[str]:
    if not ledger.exists():
        return []
    return [
        line.split(" ", 1)[1] for line in ledger.read_text().splitlines() if line.startswith("ack ")
    ]


def lines(path: Path) -> list[str]:
    return path.read_text().splitlines() if path.exists() else []


def legacy_spout_topology(tmp_path: Path, activate: bool, n: int, config: dict | None = None):
    b = TopologyBuilder("compat", config={"host.shutdown.grace.secs": 1, **(config or {})})
    b.spout(
        "legacy",
        ["python", "legacy_activate_spout.py", str(tmp_path / "commands")],
        outputs=["sentence"],
        activate=activate,
        config={"test.messages": n, "test.ledger": str(tmp_path / "ledger")},
    )
    b.bolt(
        "sink",
        ["python", str(HOST_COMPONENTS / "sink_bolt.py"), str(tmp_path / "sink")],
        outputs=[],
    ).shuffle("legacy")
    return b.build(base_dir=CONFORMANCE)


def test_activate_off_runs_a_spout_that_never_answers_activate(tmp_path):
    n = 20
    sup = Supervisor(legacy_spout_topology(tmp_path, activate=False, n=n))
    assert run_until(sup, lambda s: len(acked_ids(tmp_path / "ledger")) >= n) == 0
    assert sorted(acked_ids(tmp_path / "ledger"), key=int) == [str(i) for i in range(n)]
    commands = set(lines(tmp_path / "commands"))
    assert "activate" not in commands and "deactivate" not in commands  # not even at the end
    spout = sup.snapshot()["components"]["legacy"]
    assert spout["restarts"] == 0 and spout["errors"] == 0


def test_without_the_switch_that_spout_hangs_on_activate(tmp_path, caplog):
    # what the switch is for: Storm >= 1.1.0 sends activate, and this spout never syncs
    caplog.set_level(logging.ERROR)
    sup = Supervisor(
        legacy_spout_topology(
            tmp_path, activate=True, n=5, config={"topology.subprocess.timeout.secs": 1}
        )
    )
    run_until(sup, lambda s: s["components"]["legacy"]["errors"] >= 1)
    assert acked_ids(tmp_path / "ledger") == []
    assert any(
        r.getMessage().startswith("legacy[") and "hung" in r.getMessage() for r in caplog.records
    )


def legacy_bolt_topology(tmp_path: Path, heartbeats: bool, n: int):
    b = TopologyBuilder(
        "compat", config={"host.shutdown.grace.secs": 1, "host.restart.backoff.initial.secs": 5}
    )
    b.spout("spout", ["python", "spout.py"], outputs=["sentence"], config={"test.limit": n})
    b.bolt(
        "legacy",
        ["python", "legacy_heartbeat_bolt.py", str(tmp_path / "seen")],
        outputs=[],
        heartbeats=heartbeats,
    ).shuffle("spout")
    return b.build(base_dir=CONFORMANCE)


def test_heartbeats_off_spares_a_bolt_that_would_ack_them(tmp_path):
    n = 10
    sup = Supervisor(legacy_bolt_topology(tmp_path, heartbeats=False, n=n))
    # run past a heartbeat period (1 s) so that heartbeats would have been sent
    assert (
        run_until(
            sup,
            lambda s: s["topology"]["spout_tuples_acked"] >= n and s["topology"]["uptime_s"] > 1.5,
        )
        == 0
    )
    assert lines(tmp_path / "seen") == ["default"] * n  # data only, never a heartbeat
    bolt = sup.snapshot()["components"]["legacy"]
    assert bolt["restarts"] == 0 and bolt["errors"] == 0 and bolt["acked"] == n


def test_without_the_switch_that_bolt_acks_a_heartbeat_and_is_faulted(tmp_path, caplog):
    caplog.set_level(logging.ERROR)
    sup = Supervisor(legacy_bolt_topology(tmp_path, heartbeats=True, n=3))
    run_until(sup, lambda s: s["components"]["legacy"]["errors"] >= 1)
    assert "__heartbeat" in lines(tmp_path / "seen")
    assert any(
        r.getMessage().startswith("legacy[") and "which is not pending" in r.getMessage()
        for r in caplog.records
    )


def test_messages_before_the_pid_are_handled_after_the_handshake(tmp_path, caplog):
    n = 5
    caplog.set_level(logging.INFO)
    b = TopologyBuilder("early", config={"host.shutdown.grace.secs": 1})
    b.spout(
        "early",
        ["python", "early_spout.py"],
        outputs=["sentence"],
        config={"test.messages": n, "test.ledger": str(tmp_path / "ledger")},
    )
    b.bolt(
        "sink",
        ["python", str(HOST_COMPONENTS / "sink_bolt.py"), str(tmp_path / "sink")],
        outputs=[],
    ).shuffle("early")
    sup = Supervisor(b.build(base_dir=CONFORMANCE))
    assert run_until(sup, lambda s: len(acked_ids(tmp_path / "ledger")) >= n) == 0
    arrived = [line for line in lines(tmp_path / "sink") if '"early"]' in line]
    assert len(arrived) == 1  # the emit written before the pid was routed
    assert any("initializing before the pid" in r.getMessage() for r in caplog.records)
    spout = sup.snapshot()["components"]["early"]
    assert spout["restarts"] == 0 and spout["errors"] == 0 and spout["emitted"] == n + 1


METRICS_BOLT = """
from multilang import BasicBolt
class Measured(BasicBolt):
    def process(self, tup):
        self.metrics("tuples")                   # null: count 1
        self.metrics("weight", 2.5)              # a number: add it
        self.metrics("last", tup.values[0])      # anything else: assign
        self.metrics("shape", {"k": [1, None]})
Measured().run()
"""


def test_metrics_rpc_updates_the_host_registry_without_registration(tmp_path):
    n = 4
    b = TopologyBuilder("metrics", config={"host.shutdown.grace.secs": 1})
    b.spout("spout", ["python", "spout.py"], outputs=["sentence"], config={"test.limit": n})
    b.bolt("measured", ["python", "-c", METRICS_BOLT], outputs=[]).shuffle("spout")
    sup = Supervisor(b.build(base_dir=CONFORMANCE))
    assert run_until(sup, lambda s: s["topology"]["spout_tuples_acked"] >= n) == 0
    metrics = sup.snapshot()["components"]["measured"]["metrics"]
    assert metrics == {"tuples": n, "weight": 2.5 * n, "last": f"s{n}", "shape": {"k": [1, None]}}


# ---- msgpack through the host -------------------------------------------------------------------
# These need the supervisor to speak each component's serializer
# (multilang.serializers.serializer(component.serializer)).


def test_msgpack_pystorm_spout_and_streamparse_bolt_feed_a_json_bolt(tmp_path):
    n = 30
    b = TopologyBuilder(
        "mixed", config={"host.shutdown.grace.secs": 1, "topology.max.spout.pending": 10}
    )
    b.spout(
        "sentences",
        ["python", "ledger_spout.py", "msgpack"],
        outputs=["sentence"],
        serializer="msgpack",
        config={"test.messages": n, "test.ledger": str(tmp_path / "ledger")},
    )
    # as streamparse submits it: the launcher and ONE argument that it splits itself
    b.bolt(
        "split",
        ["streamparse_run", "-s msgpack split_bolt.SplitBolt"],
        outputs=["word"],
        serializer="msgpack",
        config={"topology.tick.tuple.freq.secs": 1},
    ).shuffle("sentences")
    b.bolt(
        "sink",
        ["python", str(HOST_COMPONENTS / "sink_bolt.py"), str(tmp_path / "sink")],
        outputs=[],
        parallelism=2,
    ).fields("split", "word")
    sup = Supervisor(b.build(base_dir=PYSTORM))
    assert (
        run_until(
            sup,
            lambda s: (
                s["topology"]["spout_tuples_acked"] >= n
                and s["components"]["split"].get("metrics", {}).get("ticks")
            ),
        )
        == 0
    )
    # integer message ids came back as integers, each acked once
    assert sorted(acked_ids(tmp_path / "ledger"), key=int) == [str(i) for i in range(n)]
    words = [line for line in lines(tmp_path / "sink") if '"values"' in line]
    assert len(words) == n * 7  # "message {i} with some words in it"
    comps = sup.snapshot()["components"]
    assert all(c["restarts"] == 0 and c["errors"] == 0 for c in comps.values()), comps
    assert comps["split"]["executed"] >= n and comps["sink"]["executed"] == n * 7
    assert comps["split"]["metrics"]["task_ids_seen"] == n  # msgpack task-id replies: 1 task each
