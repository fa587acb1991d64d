"""Benchmarks of the multilang host: throughput, latency, memory, idle cost and start-up time,
each against a baseline measured in the same run.

    python -m benchmarks [NAME ...] [--quick | --smoke] [--results-dir DIR] [--list]
    python -m benchmarks.readme       # the README's Performance section from the results
    python -m benchmarks.profile      # where the host's time goes (py-spy) during the word count

Every benchmark runs its variants round-robin (baseline, subject, baseline, subject, ...), so a
machine that slows down part-way slows every variant alike, and reports the median over the runs
with the min and max. Each prints a table and writes `benchmarks/results/<name>.json` (name,
date, mode, command, machine, per-variant median/min/max, ratios, targets); the scaling plot goes
to `benchmarks/plots/scaling.png`.

Topologies run in `benchmarks.runner`, a fresh process per run that hosts the Supervisor exactly
as `python -m host local` does and measures steady-state windows from inside (see its docstring);
the start-up benchmark runs the real CLI. Components are in `benchmarks/components/`.

Benchmarks are measurements, not tests: nothing here asserts on speed.
"""
