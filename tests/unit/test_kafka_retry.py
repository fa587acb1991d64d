"""The Kafka spout's retry schedule (components/kafka_spout/retry.py): storm-kafka-client's
exponential back-off, the retry limit, and the schedule on a fake clock."""

from __future__ import annotations

from components.kafka_spout.retry import Backoff, RetrySchedule


def test_delays_are_storms_exponential_backoff_capped_at_the_max_delay():
    b = Backoff(initial_delay=0.5, delay_period=0.01, max_retries=-1, max_delay=0.1)
    assert [b.delay(n) for n in (1, 2, 3, 4, 5)] == [0.1, 0.02, 0.04, 0.08, 0.1]
    assert b.delay(10_000) == 0.1, "a huge failure count does not overflow"
    assert not b.gives_up(10_000), "-1 retries forever"
    assert Backoff(max_retries=2).gives_up(3) and not Backoff(max_retries=2).gives_up(2)


def test_a_failed_id_is_ready_when_its_delay_has_passed_and_given_up_past_the_limit():
    now = [100.0]
    schedule = RetrySchedule(Backoff(0.0, 1.0, 2, 10.0), lambda: now[0])
    msg = ("t", 0, 7)
    assert schedule.failed(msg) and schedule.ready(10) == [msg], "first retry: no delay"
    assert schedule.failed(msg) and schedule.ready(10) == [], "second: 2 s later"
    now[0] += 2.0
    assert schedule.ready(10) == [msg]
    assert not schedule.failed(msg), "a third failure is past max_retries 2"
    assert msg not in schedule and msg not in schedule.failures


def test_forget_and_retain_partitions_drop_scheduled_ids():
    now = [0.0]
    schedule = RetrySchedule(Backoff(5.0, 1.0, -1, 10.0), lambda: now[0])
    for msg in [("t", 0, 1), ("t", 1, 1), ("t", 1, 2)]:
        schedule.failed(msg)
    schedule.forget(("t", 0, 1))
    schedule.retain_partitions([("t", 0)])
    now[0] = 10.0
    assert len(schedule) == 0 and schedule.ready(10) == [] and schedule.next_due() is None
