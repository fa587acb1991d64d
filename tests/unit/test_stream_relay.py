"""How a streaming Spark input's relayed micro-batches are shared out over the txids
(host/spark/stream_relay.py `relay_share`, docs/spark.md §4.9), and which checkpoints a run
resumes. No Spark."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from host.errors import TopologyError
from host.spark.plan import Plan, plan
from host.spark.stream_relay import batch_number, check_checkpoint, relay_share
from host.topology.model import BOLT, SPOUT, Component, Grouping, Input, Topology


def test_consecutive_micro_batches_from_the_first_not_handed_out_within_the_bound():
    batches = [(0, 40), (1, 30), (2, 50), (3, 10)]
    assert relay_share(batches, 0, 100) == [0, 1]
    assert relay_share(batches, 2, 100) == [2, 3]
    assert relay_share(batches, 1, 10) == [1]  # at least one, whatever its size
    assert relay_share(batches, 4, 100) == []  # nothing staged past the last


def test_a_share_waits_for_the_next_micro_batch_and_never_skips_one():
    # B 1 is still being staged: B 2 is not handed out before it
    assert relay_share([(0, 5), (2, 5)], 1, 100) == []
    assert relay_share([(0, 5), (2, 5)], 0, 100) == [0]


def test_only_batch_directories_are_counted():
    assert batch_number("batch-12") == 12
    assert batch_number("_tmp-0a1b2c") is None
    assert batch_number("batch-") is None
    assert batch_number("query") is None


@given(
    st.lists(st.integers(min_value=0, max_value=300), min_size=1, max_size=30),
    st.integers(min_value=1, max_value=500),
)
def test_shares_hand_out_every_micro_batch_once_in_order(rows, max_rows):
    batches = list(enumerate(rows))
    end, shares = 0, []
    while True:
        share = relay_share(batches, end, max_rows)
        if not share:
            break
        assert share == list(range(end, end + len(share)))
        assert len(share) == 1 or sum(rows[b] for b in share) <= max_rows
        shares.append(share)
        end = share[-1] + 1
    assert [b for share in shares for b in share] == list(range(len(rows)))


def _streaming_plan(ticks: bool) -> Plan:
    """A streaming Spark input alone into a sink that ticks or not."""
    spout = Component(
        "s",
        SPOUT,
        ("python", "-m", "components.spark_spout"),
        outputs={"default": ("id", "text")},
        config={"spark.spout.source": "streaming"},
    )
    sink = Component(
        "sink",
        BOLT,
        ("python", "b.py"),
        outputs={},
        inputs=(Input("s", "default", Grouping("shuffle")),),
        config={"topology.tick.tuple.freq.secs": 2} if ticks else {},
    )
    return plan(Topology("t", (spout, sink), source="t.yaml"))


def test_a_checkpoint_is_resumed_only_the_way_its_query_read_the_streaming_input(tmp_path):
    """A bolt that starts ticking (or spouts added beside the input) changes how the streaming
    input is read; a checkpoint whose query has run is refused the other way, before anything
    starts (docs/spark.md §2.4)."""

    checkpoint = tmp_path / "cp"
    query = checkpoint / "query"
    relayed, own = _streaming_plan(ticks=True), _streaming_plan(ticks=False)
    for p in (relayed, own):  # a query that never ran a micro-batch: either way
        check_checkpoint(p, str(checkpoint), str(query))
    (query / "offsets").mkdir(parents=True)
    (query / "offsets" / "0").write_text("v1\n{}\n{}\n")
    check_checkpoint(own, str(checkpoint), str(query))  # written without a relay, run without
    with pytest.raises(TopologyError) as caught:
        check_checkpoint(relayed, str(checkpoint), str(query))
    text = str(caught.value)
    assert text.startswith("t.yaml: component 's': the checkpoint ")
    assert "read as the query's own source, and this run would read it through a relay" in text
    assert "give a new --checkpoint" in text
    (checkpoint / "input" / "relay-s").mkdir(parents=True)
    check_checkpoint(relayed, str(checkpoint), str(query))  # written with the relay, run with
    with pytest.raises(TopologyError, match="read through a relay, and this run would read it "):
        check_checkpoint(own, str(checkpoint), str(query))
