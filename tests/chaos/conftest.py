"""Fixtures of the chaos tier: the seed of each test's random fault schedule."""

from __future__ import annotations

import random

import pytest

from .harness import chaos_seed


@pytest.fixture
def seed(record_property) -> int:
    """The seed of this test's fault schedule: CHAOS_SEED=<it> replays it. Printed (pytest shows
    it with the output of a failing test) and recorded as a junit property."""
    value = chaos_seed()
    print(f"CHAOS_SEED={value}")
    record_property("chaos_seed", value)
    return value


@pytest.fixture
def rng(seed) -> random.Random:
    return random.Random(seed)
