"""A hand-made `drpc` section (host.observe.snapshot.DrpcStats, docs/drpc.md §6) for the tests of
what draws it. Every figure is distinct, so a test that finds it on the page knows where it came
from; `troubled=False` gives the calm section (nothing failed, timed out or rejected)."""

from __future__ import annotations

from typing import Any

from host.observe.snapshot import DrpcStats
from tests.support.typed_dict_check import typed_dict_problems

URL = "http://127.0.0.1:3774"


def drpc(*, troubled: bool = True, answered: int = 12345) -> Any:
    """The DRPC server of a run serving `exclaim`: `answered` requests, and unless `troubled` is
    off, 7 failed, 3 timed out and 2 rejected."""
    section = {
        "url": URL,
        "functions": ["exclaim"],
        "pending": 9,
        "waiting": 4,
        "connections": 6,
        "answered": answered,
        "failed": 7 if troubled else 0,
        "timed_out": 3 if troubled else 0,
        "rejected": 2 if troubled else 0,
        "late": 5,
        "duplicate": 1,
        "latency_ms": {"p50": 4.5, "p99": 37.5, "max": 120.0},
    }
    assert typed_dict_problems(section, DrpcStats, extra_keys=False) == []
    return section
