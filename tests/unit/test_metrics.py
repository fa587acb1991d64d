"""Latency histograms and the metrics RPC registry."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from host.observe.metrics import MAX_METRIC_NAMES, LatencyHistogram, update_metric


def test_empty_histogram_has_no_percentiles():
    h = LatencyHistogram()
    assert h.percentile(50) is None and h.mean_ms() is None


@given(st.lists(st.floats(min_value=0, max_value=100), min_size=1, max_size=300))
def test_percentiles_are_within_the_bucket_resolution(samples):
    h = LatencyHistogram()
    for s in samples:
        h.record(s)
    ordered = sorted(samples)
    for p in (50, 99):
        exact_ms = ordered[max(0, -(-len(ordered) * p // 100) - 1)] * 1000
        got = h.percentile(p)
        # an upper bucket bound: never below the exact value, at most 1/16 (+1 us) above it
        assert exact_ms - 1e-6 <= got <= exact_ms * (1 + 1 / 16) + 0.002


def test_counts_add_numbers_and_null_and_other_values_replace():
    registry: dict = {}
    update_metric(registry, "count", None)
    update_metric(registry, "count", 4)
    update_metric(registry, "state", {"phase": "a"})
    update_metric(registry, "state", "b")
    assert registry == {"count": 5, "state": "b"}


def test_new_metric_names_are_capped_but_known_ones_update():
    registry: dict = {}
    for i in range(MAX_METRIC_NAMES + 10):
        update_metric(registry, f"m{i}", 1)
    assert len(registry) == MAX_METRIC_NAMES
    assert update_metric(registry, "m0", 1) and registry["m0"] == 2
    assert not update_metric(registry, "new", 1) and "new" not in registry
