"""How many consecutive tuples a shuffle grouping gives one task before it moves to the next (a
run), per bolt component. Pure logic: the bolt links report their busy periods, the supervisor
calls `update` once a second, the router's shuffle choosers read `k`.

Why runs (docs/architecture.md, "Many tasks"): waking a component process costs far more than
handling one tuple in it (with hundreds of processes on a few cores, each wake-up finds the
process's memory out of the caches: ~100 us against ~10 us per word-count tuple). Storm's
round-robin gives each of N tasks one tuple in N, so with many tasks every write and wake-up
carries one tuple. Runs of k give every task k tuples per write, and each task still gets its
equal share: over any k*N consecutive tuples, k each.

A run serialises work that round robin would spread: the last tuple of a run waits for the k-1
before it. So k is sized to the component's time per tuple: k * time per tuple stays within
`budget` (host.shuffle.run.budget.ms), and a slow or I/O-bound bolt (milliseconds per tuple) gets
runs of 1, Storm's round robin.

The time per tuple is measured where waiting for a core cannot inflate it: between two reads of
a task's acks, over the tuples it had already been written before the first of them (it was awake
and working, so only its own work separates the two). A busy period's length cannot serve: with
hundreds of processes on two cores a task waits milliseconds for a core before it starts, which
says nothing of its cost. A task that answers a whole run in one read shows no such pair; that is
a fast task (our Python client writes before it would wait for input, or every 50 ms; Storm's
libraries after every message), and k doubles at each update (the supervisor updates four times
a second) up to `max_k`. When a measured time says k is too long, k shrinks to fit at once and
then waits before growing again, twice as many updates after each shrink (up to a minute's), so
that a slow bolt is not probed with long runs every few seconds.
"""

from __future__ import annotations

import math

# Before any measurement a component gets runs of this length: a fast component's busy periods
# then show it, and a slow one serialises little before it is measured
INITIAL_K = 2
MAX_HOLD = 240  # the most updates (a minute's) k waits before it grows again after a shrink


class RunLength:
    __slots__ = (
        "k",
        "max_k",
        "budget",
        "_fastest",
        "_measured",
        "_answered",
        "_hold",
        "_next_hold",
    )

    def __init__(self, max_k: int, budget_secs: float) -> None:
        self.max_k = max(1, max_k)
        self.budget = budget_secs
        self.k = min(INITIAL_K, self.max_k)
        self._fastest = math.inf  # the least seconds per tuple measured since the last update
        self._measured = 0  # measurements since the last update
        self._answered = 0  # reads of acks since the last update
        self._hold = 0  # updates to wait before k may grow
        self._next_hold = 1

    def answered(self) -> None:
        """A task of the component acked tuples (one read)."""
        self._answered += 1

    def measured(self, secs: float, tuples: int) -> None:
        """A task took `secs` between two reads of its acks to work through `tuples` tuples it
        had been written before the first of them."""
        per_tuple = secs / tuples
        if per_tuple < self._fastest:
            self._fastest = per_tuple
        self._measured += 1

    def update(self) -> int:
        """At each update: the run length from the reads since the last one."""
        fits = self.max_k
        if self._measured and self._fastest * self.max_k > self.budget:
            fits = max(1, int(self.budget / self._fastest))
        if fits < self.k:
            self.k = fits
            self._hold = self._next_hold
            self._next_hold = min(2 * self._next_hold, MAX_HOLD)
        elif self._answered or self._measured:
            if self._hold > 0:
                self._hold -= 1
            else:
                self.k = min(fits, 2 * self.k)
                if self.k == self.max_k:
                    self._next_hold = 1
        self._fastest = math.inf
        self._measured = self._answered = 0
        return self.k
