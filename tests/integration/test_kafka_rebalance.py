"""The Kafka spout's assignment changing while it runs, against the real broker.

Tansu refuses CreatePartitions ("requires broker version >= 1.0.0"), so a topic cannot grow;
partitions are added the other way the spout's refresh sees them: a second topic matching
`topic.pattern`, created mid-run. Which task owns what follows from the round-robin rule
(docs/kafka.md, "Assignment"): of all matching partitions sorted by (topic, partition), the task
at index i of n takes every n-th from i. So a new topic that sorts after the first one only adds
partitions, and one that sorts before it moves the first topic's partitions to the other task.
"""

from __future__ import annotations

import logging
import re
from pathlib import Path

from tests.integration.components.spark.support import SteppedRun
from tests.integration.test_kafka_spout import RUN_SECS, fresh, topology
from tests.support import kafka_broker as broker
from tests.support.kafka_broker import committed, create_topic, produce

kafka_broker = broker.kafka_broker  # the session's broker fixture

Record = tuple[str, int, int]  # topic, partition, offset


def records(topic: str, ends: dict[int, int]) -> set[Record]:
    return {(topic, p, o) for p, end in ends.items() for o in range(end)}


def lines(path: Path, kind: str) -> list[Record]:
    """The ledger's `<kind> <partition> <offset> <topic>` lines (test.ledger.topic), in order."""
    if not path.exists():
        return []
    text = path.read_text()
    out = []
    for line in text[: text.rfind("\n") + 1].splitlines():  # a line being written: next time
        k, partition, offset, topic = line.split()
        if k == kind:
            out.append((topic, int(partition), int(offset)))
    return out


def emits_by_task(run: SteppedRun) -> list[tuple[int, Record]]:
    """Taps the spout's emits with the task that made them, in order."""
    seen: list[tuple[int, Record]] = []
    inner = run.sup.on_emit

    def tap(component: str, task: int, m) -> None:
        if inner is not None:
            inner(component, task, m)
        if component == run.spout and m.id is not None:
            seen.append((task, tuple(m.id)))

    run.sup.on_emit = tap
    return seen


def owners(seen: list[tuple[int, Record]]) -> dict[tuple[str, int], list[int]]:
    """(topic, partition) -> the tasks that emitted from it, in the order they first did."""
    out: dict[tuple[str, int], list[int]] = {}
    for task, (topic, partition, _offset) in seen:
        tasks = out.setdefault((topic, partition), [])
        if task not in tasks:
            tasks.append(task)
    return out


def test_a_topic_created_mid_run_is_shared_out_by_the_periodic_refresh(tmp_path, kafka_broker):
    bs, base, group = kafka_broker.bootstrap, fresh("grow"), fresh("g")
    first, second = f"{base}-a", f"{base}-b"
    create_topic(bs, first, partitions=2)
    ends_first = produce(bs, first, ((str(i), f"v{i}") for i in range(200)))
    topo = topology(
        tmp_path,
        bs,
        None,
        group,
        spout_tasks=2,
        spout={"kafka.spout.topic.pattern": re.escape(base) + "-.*"},
        bolt={"test.ledger.topic": True},
    )
    run = SteppedRun(topo)
    seen = emits_by_task(run)
    ledger = tmp_path / "ledger"
    run.start()
    try:
        run.until(
            lambda: records(first, ends_first) <= set(lines(ledger, "ok")),
            RUN_SECS,
            "the first topic acked",
        )
        assert {r[0] for _, r in seen} == {first}, "the second topic does not exist yet"
        create_topic(bs, second, partitions=2)
        ends_second = produce(bs, second, ((str(i), f"w{i}") for i in range(200)))
        run.until(
            lambda: records(second, ends_second) <= set(lines(ledger, "ok")),
            RUN_SECS,
            "the second topic, found by the refresh, acked",
        )
        run.until(
            lambda: (
                committed(bs, group, first, 2) == ends_first
                and committed(bs, group, second, 2) == ends_second
            ),
            RUN_SECS,
            "both topics committed to their ends",
        )
    finally:
        assert run.stop() == 0
    low, high = sorted({task for task, _ in seen})
    assert owners(seen) == {
        (first, 0): [low],
        (first, 1): [high],
        (second, 0): [low],
        (second, 1): [high],
    }, "round robin over the sorted partitions; nothing moved, the new ones were added"
    emitted = [r for _, r in seen]
    assert len(emitted) == len(set(emitted)) == 400, "each record emitted once"


def test_a_partition_taken_from_a_task_is_forgotten_and_re_read_by_its_new_owner(
    tmp_path, kafka_broker, caplog
):
    """Two spout tasks read topic `b` (one partition each); the bolt holds the first delivery of
    every `b` record, so each task has all its records pending when topic `a` appears. `a`
    sorts first, so the refresh moves b-0 to the other task and b-1 to this one: each task
    forgets what it had pending on the partition it lost (no commit for it: nothing was acked),
    and the new owner reads the partition again from the committed offset (none: the start);
    those second deliveries are acked and commit the partitions to their ends."""
    caplog.set_level(logging.INFO)
    bs, base, group = kafka_broker.bootstrap, fresh("shift"), fresh("g")
    early, late = f"{base}-a", f"{base}-b"
    create_topic(bs, late, partitions=2)
    ends_late = produce(bs, late, ((str(i), f"v{i}") for i in range(100)))
    assert len(ends_late) == 2 and max(ends_late.values()) < 200, "under max.spout.pending"
    topo = topology(
        tmp_path,
        bs,
        None,
        group,
        spout_tasks=2,
        bolt_tasks=1,  # one bolt knows every first delivery
        spout={"kafka.spout.topic.pattern": re.escape(base) + "-[ab]"},
        bolt={"test.hold.first": late, "test.ledger.topic": True},
        config={"host.shutdown.grace.secs": 0.5},  # the held first deliveries never complete
    )
    run = SteppedRun(topo)
    seen = emits_by_task(run)
    ledger = tmp_path / "ledger"
    run.start()
    try:
        run.until(
            lambda: records(late, ends_late) <= set(lines(ledger, "held")),
            RUN_SECS,
            "every record of b emitted and held",
        )
        low, high = sorted({task for task, _ in seen})
        assert owners(seen) == {(late, 0): [low], (late, 1): [high]}
        assert committed(bs, group, late, 2) == {0: -1001, 1: -1001}, "nothing acked yet"
        held = len(seen)

        create_topic(bs, early, partitions=1)
        ends_early = produce(bs, early, ((str(i), f"e{i}") for i in range(50)))
        run.until(
            lambda: (
                records(late, ends_late) | records(early, ends_early) <= set(lines(ledger, "ok"))
            ),
            RUN_SECS,
            "b read again by the new owners, and a, acked",
        )
        run.until(
            lambda: (
                committed(bs, group, late, 2) == ends_late
                and committed(bs, group, early, 1) == ends_early
            ),
            RUN_SECS,
            "both topics committed to their ends",
        )
        emitted = list(seen)  # before the stop: its drain may fail the held tuples
    finally:
        assert run.stop() == 0
    assert owners(emitted) == {
        (late, 0): [low, high],
        (late, 1): [high, low],
        (early, 0): [low],
    }, "sorted [a-0, b-0, b-1]: the low task takes a-0 and b-1, the high one b-0"
    again = [r for _, r in emitted[held:] if r[0] == late]
    assert sorted(again) == sorted(records(late, ends_late)), "each b record re-read once"
    assert committed(bs, group, late, 2) == ends_late, "the old owners never committed back"
    revoked = [r.getMessage() for r in caplog.records if "revoked" in r.getMessage()]
    assert any(f"revoked [('{late}', 0)]" in m for m in revoked), revoked
    assert any(f"revoked [('{late}', 1)]" in m for m in revoked), revoked
