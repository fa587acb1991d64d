"""Counters and latency histograms measured at the host boundary. Bounded memory, no I/O."""

from __future__ import annotations

import math
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from host.observe.snapshot import ComponentCounters


class LatencyHistogram:
    """Log-linear buckets: 16 linear sub-buckets per power of two of microseconds, so percentiles
    are within about 6% whatever the range, in a fixed few KiB."""

    SUB = 16

    __slots__ = ("_counts", "count", "total")

    def __init__(self) -> None:
        self._counts: dict[int, int] = {}
        self.count = 0
        self.total = 0.0

    def record(self, seconds: float) -> None:
        us = int(seconds * 1e6)
        if us < self.SUB:
            index = max(us, 0)
        else:
            exp = us.bit_length() - 5  # keep the top 5 bits: 16 sub-buckets per octave
            index = (exp + 1) * self.SUB + ((us >> exp) - self.SUB)
        self._counts[index] = self._counts.get(index, 0) + 1
        self.count += 1
        self.total += seconds

    @classmethod
    def _upper_us(cls, index: int) -> float:
        if index < cls.SUB:
            return index + 1
        exp = index // cls.SUB - 1
        return ((index % cls.SUB) + cls.SUB + 1) << exp

    def percentile(self, p: float) -> float | None:
        """The p-th percentile (0..100) in milliseconds, or None when empty."""
        if not self.count:
            return None
        rank = max(1, math.ceil(self.count * p / 100))
        seen = 0
        for index in sorted(self._counts):
            seen += self._counts[index]
            if seen >= rank:
                return self._upper_us(index) / 1000.0
        return None  # pragma: no cover

    def mean_ms(self) -> float | None:
        return self.total / self.count * 1000 if self.count else None

    @classmethod
    def merged(cls, histograms: Iterable[LatencyHistogram]) -> LatencyHistogram:
        """One histogram holding every sample of `histograms` (a component's tasks)."""
        out = cls()
        for h in histograms:
            for index, n in h._counts.items():
                out._counts[index] = out._counts.get(index, 0) + n
            out.count += h.count
            out.total += h.total
        return out


@dataclass
class ComponentStats:
    """A task's counters (the host keeps one per task), or a component's (`combined`)."""

    tasks: int = 0
    emitted: int = 0  # emit calls that were routed
    transferred: int = 0  # tuple copies delivered to bolt tasks
    executed: int = 0  # input tuples the bolt acked or failed
    acked: int = 0  # bolts: acks sent; spouts: spout tuples fully acked
    failed: int = 0  # bolts: fails sent; spouts: spout tuples failed or timed out
    # bolts: tuples written and never acked or failed, forgotten to make room (BoltLink._forget)
    never_acked: int = 0
    restarts: int = 0
    errors: int = 0
    last_error: str | None = None
    last_error_at: float | None = None  # wall-clock time
    metrics: dict[str, Any] = field(default_factory=dict)
    # bolts: tuple written -> acked or failed by this bolt, sampled (1 tuple in 8)
    process_latency: LatencyHistogram = field(default_factory=LatencyHistogram)

    def error(self, text: str) -> None:
        self.errors += 1
        self.last_error = text
        self.last_error_at = time.time()

    @classmethod
    def combined(cls, tasks: list[ComponentStats]) -> ComponentStats:
        """A component's figures from its tasks' (custom metrics are shared by the tasks)."""
        out = cls(tasks=len(tasks), metrics=tasks[0].metrics if tasks else {})
        for t in tasks:
            out.emitted += t.emitted
            out.transferred += t.transferred
            out.executed += t.executed
            out.acked += t.acked
            out.failed += t.failed
            out.never_acked += t.never_acked
            out.restarts += t.restarts
            out.errors += t.errors
            if t.last_error_at is not None and (
                out.last_error_at is None or t.last_error_at >= out.last_error_at
            ):
                out.last_error, out.last_error_at = t.last_error, t.last_error_at
        out.process_latency = LatencyHistogram.merged(t.process_latency for t in tasks)
        return out

    def as_json(self) -> ComponentCounters:
        """The component's part of the stats snapshot (`host.observe.snapshot`)."""
        out: ComponentCounters = {
            "tasks": self.tasks,
            "emitted": self.emitted,
            "transferred": self.transferred,
            "executed": self.executed,
            "acked": self.acked,
            "failed": self.failed,
            "restarts": self.restarts,
            "errors": self.errors,
            "never_acked": self.never_acked,  # a bolt's figure: the snapshot drops it for spouts
        }
        if self.process_latency.count:
            out["process_latency_ms"] = {
                "p50": self.process_latency.percentile(50),
                "p99": self.process_latency.percentile(99),
            }
        if self.last_error is not None and self.last_error_at is not None:  # set together
            out["last_error"] = self.last_error
            out["last_error_at"] = self.last_error_at
        if self.metrics:
            out["metrics"] = self.metrics
        return out


MAX_METRIC_NAMES = 1000  # per component: a component inventing a name per tuple stays bounded


def update_metric(registry: dict[str, Any], name: str, params: Any) -> bool:
    """The `metrics` RPC with no registration in advance: a number (or null, counted as 1) adds
    to a count; anything else replaces the value (Storm's Count and Assignable shell metrics).
    False (and nothing kept) for a new name past MAX_METRIC_NAMES."""
    if name not in registry and len(registry) >= MAX_METRIC_NAMES:
        return False
    if params is None or (type(params) in (int, float)):
        increment = 1 if params is None else params
        current = registry.get(name, 0)
        registry[name] = (current if type(current) in (int, float) else 0) + increment
    else:
        registry[name] = params
    return True
