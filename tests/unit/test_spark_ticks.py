"""host/spark/ticks.py: when a bolt inside a Spark partition gets its tick tuples, with the time
given by the test. Through real bolts: tests/integration/test_spark_component_process.py (the
tick tests) and tests/integration/test_spark_ticks.py (`python -m host spark`)."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from host.spark.ticks import TickSchedule


def test_nothing_is_due_before_a_run_starts():
    s = TickSchedule(2)
    assert not s.periodic_due(1e9)
    assert s.secs_to_next(0.0) == math.inf
    assert not s.end_due()


def test_the_first_periodic_tick_is_one_period_after_the_run_starts():
    s = TickSchedule(2)
    s.start(100.0)
    assert s.secs_to_next(100.0) == 2.0
    assert not s.periodic_due(101.999)
    assert s.periodic_due(102.0)
    assert not s.periodic_due(102.0)  # once
    assert s.secs_to_next(102.5) == 1.5


def test_a_late_tick_is_not_followed_by_catch_up_ticks():
    """As host local: the next tick is scheduled a period after the one that fired."""
    s = TickSchedule(1)
    s.start(0.0)
    assert s.periodic_due(5.3)  # the loop was busy: one tick, not five
    assert not s.periodic_due(6.2)
    assert s.periodic_due(6.3)


def test_the_end_tick_is_owed_once_per_run_and_stops_the_periodic_ones():
    s = TickSchedule(1)
    s.start(0.0)
    assert s.end_due()
    assert not s.end_due()
    assert not s.periodic_due(50.0)  # the input is written: no periodic tick after the end one
    assert s.secs_to_next(50.0) == math.inf
    s.start(60.0)  # the next run
    assert s.periodic_due(61.0)
    assert s.end_due()


def test_a_run_started_again_restarts_the_period():
    s = TickSchedule(10)
    s.start(0.0)
    s.start(7.0)  # an abandoned run's schedule does not carry over
    assert not s.periodic_due(10.0)
    assert s.periodic_due(17.0)


@pytest.mark.parametrize("freq", [0, -1])
def test_a_frequency_must_be_positive(freq):
    with pytest.raises(ValueError, match="positive"):
        TickSchedule(freq)


@given(
    freq=st.integers(1, 30),
    steps=st.lists(st.floats(0.0, 5.0, allow_nan=False), min_size=1, max_size=200),
)
def test_ticks_are_never_closer_than_a_period_and_never_late_while_polled(freq, steps):
    """Polled at any times, ticks come at least a period apart (the first a period after the
    start), and a tick is due whenever a period has passed since the last one."""
    s = TickSchedule(freq)
    s.start(0.0)
    now, last = 0.0, 0.0
    for step in steps:
        now += step
        # compared as the schedule computes its due time (last + freq), not as now - last: in
        # floating point the two can differ by an ulp (3.8075538685923793 + 1 is reached, and
        # the difference back is 0.9999999999999996)
        if s.periodic_due(now):
            assert now >= last + freq
            last = now
        else:
            assert now < last + freq


# ---- idle micro-batches: ticks while no spout emits (host/spark/staged_spouts.py) -------------


def _topology(conf: dict, *tick_freqs: int | None):
    from host.topology.model import BOLT, SPOUT, Component, Grouping, Input, Topology

    bolts = tuple(
        Component(
            f"b{i}",
            BOLT,
            ("x",),
            inputs=(Input("s", "default", Grouping("shuffle")),),
            config={} if f is None else {"topology.tick.tuple.freq.secs": f},
        )
        for i, f in enumerate(tick_freqs)
    )
    spout = Component("s", SPOUT, ("x",), outputs={"default": ("v",)})
    return Topology("t", (spout, *bolts), conf)


def test_idle_batches_follow_the_shortest_tick_period_unless_set():
    from host.spark.idle_batches import idle_batch_secs

    assert idle_batch_secs(_topology({}, None, None)) is None  # nobody ticks: never
    assert idle_batch_secs(_topology({}, 10, None, 3)) == 3.0
    assert idle_batch_secs(_topology({"topology.tick.tuple.freq.secs": 7}, None)) == 7.0
    assert idle_batch_secs(_topology({"host.spark.idle.batch.secs": 0}, 3)) is None  # off
    assert idle_batch_secs(_topology({"host.spark.idle.batch.secs": 0.5}, None)) == 0.5


def test_a_transactional_source_idle_offset_keeps_the_txid_and_counts_up():
    """A transactional source's idle micro-batch holds no txid (host/spark/source.py): its
    offset keeps the last txid, so the next txid still follows it, and differs from the offset
    before, so that Spark runs a micro-batch for it."""
    from host.spark.idle_batches import idle_offset, is_idle_offset

    first = idle_offset({"txid": 4})
    assert first == {"txid": 4, "idle": 1} and is_idle_offset(first)
    second = idle_offset(first)
    assert second == {"txid": 4, "idle": 2} and second != first
    assert not is_idle_offset({"txid": 5})  # the next txid's offset is a plain one
    assert idle_offset({"txid": 0}) == {"txid": 0, "idle": 1}  # before the first txid too


def test_a_bad_idle_period_is_refused_naming_the_key():
    from host.errors import TopologyError
    from host.spark.idle_batches import idle_batch_secs

    for bad in (-1, "soon", True):
        with pytest.raises(TopologyError, match="host.spark.idle.batch.secs"):
            idle_batch_secs(_topology({"host.spark.idle.batch.secs": bad}, 3))


@given(
    st.floats(0, 100),
    st.floats(0, 100),
    st.floats(0, 50),
    st.none() | st.floats(0.1, 50),
    st.integers(0, 3),
    st.integers(0, 2),
)
def test_an_idle_batch_waits_for_its_period_and_never_overtakes_tuples(
    now, last, later, idle_secs, buffered, in_flight
):
    from host.spark.idle_batches import idle_batch_due

    due = idle_batch_due(now, last, idle_secs, buffered, in_flight)
    if buffered or in_flight or idle_secs is None:
        assert not due  # tuples waiting or a batch running: it would only delay them
    if due:
        assert now - last >= idle_secs  # type: ignore[operator]
        assert idle_batch_due(now + later, last, idle_secs, 0, 0)  # stays due until staged
    elif not buffered and not in_flight and idle_secs is not None:
        # it comes once a period has passed (a microsecond more: `last + period - last` rounds)
        assert idle_batch_due(last + idle_secs + 1e-6, last, idle_secs, 0, 0)


@pytest.mark.parametrize("source", ["directory", "dataframe", "streaming"])
def test_explain_says_when_the_spark_spouts_input_has_idle_micro_batches(source):
    """A DataFrame or directory input is the engine's own data source, which hands Spark idle
    micro-batches (host/spark/spark_input_source.py); a streaming query's are Spark's, so while
    a bolt ticks it runs through a relay query and the stager cuts the txids, idle ones too
    (host/spark/stream_relay.py)."""
    import dataclasses

    from host.spark.explain import explain
    from host.spark.plan import plan

    base = _topology({}, 3)
    spout = dataclasses.replace(
        base.component("s"),
        command=("python", "-m", "components.spark_spout"),
        config={"spark.spout.source": source},
    )
    topology = dataclasses.replace(base, components=(spout, *base.components[1:]))
    text = explain(plan(topology))
    assert "idle micro-batches: one after 3 s with none" in text
    assert "an idle one after 3 s brings the end one" in text
    relay = "  source: the streaming input of 's' runs through a relay query, for the idle"
    assert (relay in text) == (source == "streaming")
    if source == "streaming":  # no bolt ticks: Spark's own micro-batches, no relay
        quiet = dataclasses.replace(
            topology, config={**topology.config, "host.spark.idle.batch.secs": 0}
        )
        text = explain(plan(quiet))
        assert "relay query" not in text and "(streaming, relayed)" not in text
        assert "  idle micro-batches: " not in text


def test_an_idle_request_is_seen_for_its_txid_only_and_cleared_with_the_others(tmp_path):
    """The stager's request for an idle micro-batch beside batch spouts (host/spark/staging.py):
    the staged source sees it for the txid it was made after, never for the next one (a txid
    opened since), and clearing it leaves the staged batches alone."""
    from host.spark.staging import (
        clear_idle_requests,
        idle_requested,
        read_manifest,
        request_idle,
        staged_txids,
        write_staged,
    )

    root = str(tmp_path / "staged")
    clear_idle_requests(root)  # no directory yet: nothing to clear
    assert not idle_requested(root, 3)
    write_staged(root, 4, (7,), [[]])
    request_idle(root, 3)
    assert idle_requested(root, 3)
    assert not idle_requested(root, 4)  # txid 4 was opened: the request after 3 is stale
    assert staged_txids(root) == [4]  # a request is not a staged batch
    clear_idle_requests(root)
    assert not idle_requested(root, 3)
    assert staged_txids(root) == [4] and read_manifest(root, 4) is not None


def test_the_offset_log_gives_the_txid_or_names_the_file_it_cannot_read(tmp_path):
    """host/spark/offset_log.py: Spark's offset file (two header lines, then the source's offset)
    gives the micro-batch's txid, None for txid 0 (a first micro-batch with nothing), the idle
    offset whole; a file that is missing or holds no txid is one error naming it."""
    from host.errors import TopologyError
    from host.spark.idle_batches import is_idle_offset
    from host.spark.offset_log import end_offset, txid_of

    offsets = tmp_path / "offsets"
    offsets.mkdir()
    for batch, offset in {0: '{"txid":0}', 1: '{"txid":1}', 2: '{"txid":1,"idle":1}'}.items():
        (offsets / str(batch)).write_text(f'v1\n{{"batchWatermarkMs":0}}\n{offset}\n')
    assert txid_of(end_offset(str(tmp_path), 0)) is None
    assert txid_of(end_offset(str(tmp_path), 1)) == 1
    assert is_idle_offset(end_offset(str(tmp_path), 2))
    (offsets / "3").write_text('v1\n{}\n{"other":1}\n')
    for missing_or_bad in (3, 4):
        with pytest.raises(TopologyError, match=f"micro-batch {missing_or_bad} from .*offsets"):
            end_offset(str(tmp_path), missing_or_bad)
