"""Benchmarks of the multilang host: throughput, latency, memory, idle cost and start-up time,
each against a baseline measured in the same run.

    python -m benchmarks [NAME ...] [--quick | --smoke] [--results-dir DIR]

Every benchmark runs its variants round-robin (baseline, subject, baseline, subject, ...), so a
machine that slows down part-way slows every variant alike, and reports the median over the runs
with the min and max. Each prints a table and writes `benchmarks/results/<name>.json`.

Benchmarks are measurements, not tests: nothing here asserts on speed. `benchmarks.targets` holds
issue 5's targets so the tables can show them next to the figures.
"""
