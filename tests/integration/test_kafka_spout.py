"""The Kafka spout against a real broker (Tansu, tests/support/kafka_broker.py).

Every topology is `spout (python -m components.kafka_spout) -> ledger bolt`, run by the
Supervisor in this process and driven turn by turn (the Spark tests' SteppedRun), so a test can
kill the spout between turns. Evidence: the ledger bolt's file (what arrived, acked or failed),
the spout's emits as the host saw them, and the consumer group's committed offsets read from the
broker. Each test uses its own topic and group.
"""

from __future__ import annotations

import ast
import itertools
import logging
import sys
import time
from pathlib import Path

from components.kafka_spout.config import DEFAULT_FIELDS
from host.topology import TopologyBuilder
from tests.integration.components.spark.support import SteppedRun
from tests.support import kafka_broker as broker
from tests.support.kafka_broker import committed, create_topic, produce, read_topic

kafka_broker = broker.kafka_broker  # the session's broker fixture

SUPPORT = Path(__file__).resolve().parent.parent / "support"
SPOUT = [sys.executable, "-m", "components.kafka_spout"]
LEDGER_BOLT = [sys.executable, str(SUPPORT / "kafka_ledger_bolt.py")]
RUN_SECS = 120  # generous: a loaded 2-core machine; the runs take a few seconds
_names = itertools.count()


def fresh(prefix: str) -> str:
    return f"{prefix}-{next(_names)}"


def topology(
    tmp_path: Path,
    bootstrap: str,
    topic: str | None,
    group: str,
    *,
    spout=None,
    bolt=None,
    spout_tasks: int = 1,
    bolt_tasks: int = 2,
    config: dict | None = None,
):
    """spout -> ledger bolt; `topic` None: `spout` gives `kafka.spout.topic.pattern`."""
    b = TopologyBuilder(
        "kafka-test",
        config={
            "topology.max.spout.pending": 200,
            "topology.message.timeout.secs": 60,
            "host.restart.backoff.initial.secs": 0.1,
            "host.shutdown.grace.secs": 10,
            **(config or {}),
        },
    )
    b.spout(
        "spout",
        SPOUT,
        outputs=list(DEFAULT_FIELDS),
        parallelism=spout_tasks,
        config={
            "kafka.spout.bootstrap.servers": bootstrap,
            **({} if topic is None else {"kafka.spout.topics": [topic]}),
            "kafka.spout.group.id": group,
            "kafka.spout.offset.commit.period.ms": 50,
            "kafka.spout.partition.refresh.period.ms": 500,
            "kafka.spout.retry.delay.period.ms": 10,
            **(spout or {}),
        },
    )
    b.bolt(
        "bolt",
        LEDGER_BOLT,
        outputs=[],
        parallelism=bolt_tasks,
        config={"test.ledger": str(tmp_path / "ledger"), **(bolt or {})},
    ).shuffle("spout")
    return b.build(tmp_path)


def ledger(path: Path) -> tuple[dict[tuple[int, int], int], dict[tuple[int, int], int]]:
    """(partition, offset) -> count, for `ok` and `fail` lines (`held` lines are left out)."""
    ok: dict[tuple[int, int], int] = {}
    failed: dict[tuple[int, int], int] = {}
    if path.exists():
        text = path.read_text()
        # a line being written by a bolt is read next time
        for line in text[: text.rfind("\n") + 1].splitlines():
            kind, partition, offset = line.split()[:3]
            if kind == "held":
                continue
            target = ok if kind == "ok" else failed
            key = (int(partition), int(offset))
            target[key] = target.get(key, 0) + 1
    return ok, failed


def every_record(ends: dict[int, int]) -> set[tuple[int, int]]:
    return {(p, o) for p, end in ends.items() for o in range(end)}


def commits_reach(bootstrap: str, group: str, topic: str, ends: dict[int, int]):
    def check() -> bool:
        return committed(bootstrap, group, topic, len(ends)) == ends

    return check


def acked_all(tmp_path: Path, ends: dict[int, int], but: frozenset = frozenset()):
    want = every_record(ends) - but

    def check() -> bool:
        return want <= set(ledger(tmp_path / "ledger")[0])

    return check


# ---- at least once --------------------------------------------------------------------------------


def test_every_record_is_acked_and_the_group_commits_to_the_end(tmp_path, kafka_broker):
    bs, topic, group = kafka_broker.bootstrap, fresh("all"), fresh("g")
    create_topic(bs, topic, partitions=3)
    ends = produce(bs, topic, ((str(i), f"v{i}") for i in range(600)))
    assert sum(ends.values()) == 600 and len(ends) == 3
    run = SteppedRun(topology(tmp_path, bs, topic, group, spout_tasks=2)).start()
    try:
        run.until(acked_all(tmp_path, ends), RUN_SECS, "every record acked")
        run.until(commits_reach(bs, group, topic, ends), RUN_SECS, "commits at the end offsets")
    finally:
        assert run.stop() == 0
    ok, failed = ledger(tmp_path / "ledger")
    assert set(ok) == every_record(ends) and set(ok.values()) == {1} and not failed
    emitted = run.ids()
    assert len(emitted) == 600 == len(set(emitted)), "each record emitted once, id = its place"
    values = {msg_id: v for _, msg_id, v in run.emits}
    for (t, p, o), v in values.items():
        assert v[:3] == [t, p, o] and v[3] == v[4][1:], "[topic, partition, offset, key, value]"
    # the two tasks split the partitions between them: each partition came from one task only
    assert {tuple(i[:2]) for i in emitted} == {(topic, p) for p in range(3)}


def test_failed_tuples_are_replayed_and_a_poison_record_is_dead_lettered(tmp_path, kafka_broker):
    bs, topic, group, dead = kafka_broker.bootstrap, fresh("fail"), fresh("g"), fresh("dead")
    create_topic(bs, topic, partitions=2)
    create_topic(bs, dead)
    records = [(str(i), "poison" if i == 77 else f"v{i}") for i in range(300)]
    ends = produce(bs, topic, records, partition=None)
    poison = next(
        (m.partition(), m.offset()) for m in read_topic(bs, topic, ends) if m.value() == b"poison"
    )
    topo = topology(
        tmp_path,
        bs,
        topic,
        group,
        spout={"kafka.spout.retry.max.retries": 2, "kafka.spout.dead.letter.topic": dead},
        bolt={"test.fail.every": 7, "test.fail.poison": True},
    )
    run = SteppedRun(topo).start()
    try:
        run.until(acked_all(tmp_path, ends, frozenset({poison})), RUN_SECS, "all but poison acked")
        run.until(commits_reach(bs, group, topic, ends), RUN_SECS, "commit past the poison record")
    finally:
        assert run.stop() == 0
    ok, failed = ledger(tmp_path / "ledger")
    assert poison not in ok and failed[poison] == 3, "1 try + 2 retries, then given up"
    assert len(failed) > 300 // 10, "every 7th tuple failed once"
    assert all(ok[r] == 1 for r in ok), "a replayed record is acked once"
    # each failure but the poison record's last is answered by an emit of the same id again
    assert len(run.ids()) == 300 + sum(failed.values()) - 1
    [dl] = read_topic(bs, dead, {0: 1})
    assert dl.value() == b"poison" and dl.key() == b"77"
    headers = dict(dl.headers())
    assert headers["storm.kafka.topic"] == topic.encode()
    assert (int(headers["storm.kafka.partition"]), int(headers["storm.kafka.offset"])) == poison
    assert headers["storm.kafka.failures"] == b"3"


def test_a_killed_spout_loses_nothing_and_never_committed_past_an_unacked_record(
    tmp_path, kafka_broker
):
    """SIGKILL the spout mid-run (the host restarts it): every record is acked at least once in
    the end, and every record below the offsets committed at the kill had been acked before.
    Until the kill the bolt holds the record at offset 1000 of each partition, so no commit
    passes it and the kill comes mid-run however fast the machine is."""
    bs, topic, group = kafka_broker.bootstrap, fresh("kill"), fresh("g")
    create_topic(bs, topic, partitions=2)
    ends = produce(bs, topic, ((str(i), f"v{i}") for i in range(3000)))
    assert min(ends.values()) > 1000, "each partition has records past the held offset"
    hold = tmp_path / "hold"
    hold.touch()
    topo = topology(
        tmp_path,
        bs,
        topic,
        group,
        spout={"kafka.spout.records.per.next": 20},
        bolt={"test.fail.every": 11, "test.hold.while": str(hold), "test.hold.offset": 1000},
    )
    run = SteppedRun(topo).start()
    try:
        run.until(
            lambda: sum(max(o, 0) for o in committed(bs, group, topic, 2).values()) >= 600,
            RUN_SECS,
            "a fifth of the records committed",
        )
        run.kill_spout()
        at_kill = committed(bs, group, topic, 2)
        ok_at_kill = set(ledger(tmp_path / "ledger")[0])
        assert sum(at_kill.values()) < 3000, "killed mid-run"
        hold.unlink()
        below = {(p, o) for p, c in at_kill.items() for o in range(max(c, 0))}
        assert below <= ok_at_kill, (
            f"committed past unacked records: {sorted(below - ok_at_kill)[:5]}"
        )
        mark = len(run.emits)
        run.until(acked_all(tmp_path, ends), RUN_SECS, "every record acked after the restart")
        run.until(commits_reach(bs, group, topic, ends), RUN_SECS, "commits at the end offsets")
    finally:
        assert run.stop() == 0
    after = run.ids(mark)
    assert after, "the restarted spout emitted"
    first = {}
    for _t, p, o in after:
        first.setdefault(p, o)
    assert all(first[p] == max(at_kill[p], 0) for p in first), (
        f"the restarted spout resumes at the committed offsets {at_kill}, got {first}"
    )


# ---- first-poll strategies and guarantees -------------------------------------------------------


def _first_offset_emitted(tmp_path, bs, topic, group, strategy, feed=None) -> int:
    tmp_path.mkdir()
    run = SteppedRun(
        topology(
            tmp_path, bs, topic, group, spout={"kafka.spout.first.poll.offset.strategy": strategy}
        )
    ).start()
    try:

        def emitted() -> bool:
            if feed is not None and not run.ids():
                feed()
            return bool(run.ids())

        run.until(emitted, RUN_SECS, f"a first emit with {strategy}")
    finally:
        assert run.stop() == 0
    return run.ids()[0][2]


def test_first_poll_strategies(tmp_path, kafka_broker):
    """A group with offset 5 committed by someone else (Tansu keeps no commit metadata, so to the
    spout every earlier commit is someone else's): EARLIEST starts at 0, UNCOMMITTED_* at the
    committed offset, LATEST at the end; with nothing committed UNCOMMITTED_LATEST starts at
    the end. Records are written one batch each (see kafka_broker's docstring)."""
    from confluent_kafka import Consumer, TopicPartition

    bs = kafka_broker.bootstrap
    topic = fresh("first")
    create_topic(bs, topic)
    produce(bs, topic, ((None, f"v{i}") for i in range(10)), one_batch_each=True)

    def with_commit(offset: int) -> str:
        group = fresh("g")
        c = Consumer({"bootstrap.servers": bs, "group.id": group})
        c.commit(offsets=[TopicPartition(topic, 0, offset)], asynchronous=False)
        c.close()
        return group

    def feed() -> None:
        produce(bs, topic, [(None, "late")], one_batch_each=True)

    assert _first_offset_emitted(tmp_path / "e", bs, topic, with_commit(5), "EARLIEST") == 0
    assert (
        _first_offset_emitted(tmp_path / "ue", bs, topic, with_commit(5), "UNCOMMITTED_EARLIEST")
        == 5
    )
    assert (
        _first_offset_emitted(tmp_path / "ul", bs, topic, with_commit(5), "UNCOMMITTED_LATEST") == 5
    )
    assert _first_offset_emitted(tmp_path / "l", bs, topic, with_commit(5), "LATEST", feed) >= 10
    assert (
        _first_offset_emitted(tmp_path / "n", bs, topic, fresh("g"), "UNCOMMITTED_LATEST", feed)
        >= 10
    )


def test_at_most_once_never_replays(tmp_path, kafka_broker):
    bs, topic, group = kafka_broker.bootstrap, fresh("amo"), fresh("g")
    create_topic(bs, topic)
    ends = produce(bs, topic, ((None, f"v{i}") for i in range(200)))
    topo = topology(
        tmp_path,
        bs,
        topic,
        group,
        spout={"kafka.spout.processing.guarantee": "AT_MOST_ONCE"},
        bolt={"test.fail.all": True},
    )
    run = SteppedRun(topo).start()
    try:
        run.until(lambda: len(ledger(tmp_path / "ledger")[1]) >= 200, RUN_SECS, "every tuple seen")
        run.until(commits_reach(bs, group, topic, ends), RUN_SECS, "commits at the end")
    finally:
        assert run.stop() == 0
    _ok, failed = ledger(tmp_path / "ledger")
    assert set(failed.values()) == {1}, "failed tuples are not replayed"
    assert run.ids() == [], "no message ids: the host does not track the tuples"


def test_no_guarantee_commits_on_the_period_acked_or_not(tmp_path, kafka_broker):
    """storm-kafka-client's NO_GUARANTEE: tuples carry no message id (the host tracks nothing,
    nothing is replayed), and the read position is committed asynchronously every
    offset.commit.period.ms whatever the acks: here the bolt never acks or fails a tuple, and
    the group still commits to the end."""
    bs, topic, group = kafka_broker.bootstrap, fresh("nog"), fresh("g")
    create_topic(bs, topic, partitions=2)
    ends = produce(bs, topic, ((None, f"v{i}") for i in range(300)))
    assert ends == {0: 150, 1: 150}, "records in both partitions"
    topo = topology(
        tmp_path,
        bs,
        topic,
        group,
        spout={"kafka.spout.processing.guarantee": "NO_GUARANTEE"},
        bolt={"test.hold": True},
        config={"host.shutdown.grace.secs": 0.5},
    )
    run = SteppedRun(topo).start()
    try:
        run.until(lambda: held(tmp_path / "ledger") >= every_record(ends), RUN_SECS, "all seen")
        run.until(commits_reach(bs, group, topic, ends), RUN_SECS, "commits at the end")
    finally:
        assert run.stop() == 0
    assert run.ids() == [], "no message ids: the host does not track the tuples"
    places = [(v[1], v[2]) for _, _, v in run.emits]
    assert sorted(places) == sorted(every_record(ends)), "each record emitted once"


def test_no_guarantee_with_tracking_enforced_gives_ids_but_never_replays(tmp_path, kafka_broker):
    """`tuple.tracking.enforced`: the tuples carry message ids, so the host tracks them and
    reports their fails, but under NO_GUARANTEE a fail changes nothing: no replay, and the
    commits still reach the end."""
    bs, topic, group = kafka_broker.bootstrap, fresh("nogt"), fresh("g")
    create_topic(bs, topic)
    ends = produce(bs, topic, ((None, f"v{i}") for i in range(200)))
    topo = topology(
        tmp_path,
        bs,
        topic,
        group,
        spout={
            "kafka.spout.processing.guarantee": "NO_GUARANTEE",
            "kafka.spout.tuple.tracking.enforced": True,
        },
        bolt={"test.fail.all": True},
    )
    run = SteppedRun(topo).start()
    try:
        run.until(lambda: len(ledger(tmp_path / "ledger")[1]) >= 200, RUN_SECS, "every tuple seen")
        run.until(commits_reach(bs, group, topic, ends), RUN_SECS, "commits at the end")
        run.until(
            lambda: run.sup.path.spout_failed >= 200, RUN_SECS, "the host reported every fail"
        )
    finally:
        assert run.stop() == 0
    _ok, failed = ledger(tmp_path / "ledger")
    assert set(failed.values()) == {1}, "failed tuples are not replayed"
    assert sorted(run.ids()) == sorted((topic, p, o) for p, o in every_record(ends))


def held(path: Path) -> set[tuple[int, int]]:
    """The (partition, offset) of the ledger's `held` lines."""
    if not path.exists():
        return set()
    text = path.read_text()
    return {
        (int(p), int(o))
        for kind, p, o in (line.split()[:3] for line in text[: text.rfind("\n") + 1].splitlines())
        if kind == "held"
    }


# ---- the bound on uncommitted offsets ------------------------------------------------------------


def test_a_stuck_bolt_holds_the_spout_at_max_uncommitted_offsets_per_partition(
    tmp_path, kafka_broker, caplog
):
    """A bolt that never acks: the spout emits max.uncommitted.offsets records per partition
    and then nothing more, its memory flat, until the window ends; the records are the first
    ones of each partition. Each partition was paused (the consumer stops fetching it, which is
    why nothing is read, dropped or held in memory) and never resumed."""
    import psutil

    caplog.set_level(logging.INFO)

    bs, topic, group = kafka_broker.bootstrap, fresh("bound"), fresh("g")
    create_topic(bs, topic, partitions=2)
    ends = produce(bs, topic, ((str(i), f"v{i}" * 20) for i in range(6000)))
    assert min(ends.values()) > 1000, "both partitions hold far more than the bound"
    topo = topology(
        tmp_path,
        bs,
        topic,
        group,
        spout={"kafka.spout.max.uncommitted.offsets": 50, "kafka.spout.records.per.next": 20},
        bolt={"test.hold": True},
        config={"host.shutdown.grace.secs": 0.5},  # the held tuples never complete
    )
    run = SteppedRun(topo).start()
    try:
        run.until(lambda: len(run.ids()) >= 100, RUN_SECS, "100 records emitted")
        spout = psutil.Process(run.spout_pid())
        rss_at_bound = spout.memory_info().rss
        window_end = time.monotonic() + 2.0  # the negative (no more emits) needs a window
        run.until(lambda: time.monotonic() >= window_end, RUN_SECS, "the window")
        rss_after = spout.memory_info().rss
    finally:
        assert run.stop() == 0
    ids = run.ids()
    assert sorted(ids) == sorted((topic, p, o) for p in (0, 1) for o in range(50)), (
        f"{len(ids)} emitted; the bound is 50 per partition"
    )
    assert rss_after - rss_at_bound < 4 << 20, f"spout RSS grew by {rss_after - rss_at_bound}"
    assert committed(bs, group, topic, 2) == {0: -1001, 1: -1001}, "nothing acked: no commit"
    spout_lines = [r.getMessage() for r in caplog.records if "kafka spout task" in r.getMessage()]
    paused = [
        tp
        for m in spout_lines
        if ": paused [" in m
        for tp in ast.literal_eval(m[m.index(": paused [") + 9 : m.index("]:") + 1])
    ]
    assert sorted(paused) == [(topic, 0), (topic, 1)], f"each paused once: {spout_lines}"
    assert not [m for m in spout_lines if "resumed" in m], spout_lines
