"""How a streaming Spark input's relayed micro-batches are shared out over the txids
(host/spark/stream_relay.py `relay_share`, docs/spark.md §4.9). Pure: no Spark."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from host.spark.stream_relay import batch_number, relay_share


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
