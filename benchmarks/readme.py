"""The README's Performance section from the result files of a run:

    python -m benchmarks.readme [--results-dir benchmarks/results]

prints Markdown: when and where the figures were measured, the figures against the project's
performance targets (median, with min-max), the ratios, and the scaling plot.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from .harness import BENCH_DIR, fmt


def _load(results: Path, name: str) -> dict | None:
    path = results / f"{name}.json"
    return json.loads(path.read_text(encoding="utf-8")) if path.exists() else None


def _figure(result: dict | None, variant: str, metric: str) -> str:
    if result is None or result.get("skipped"):
        return "not run"
    s = result["variants"].get(variant, {}).get(metric)
    if not s:
        return "-"
    if s["min"] == s["max"]:
        return fmt(s["median"])
    return f"{fmt(s['median'])} ({fmt(s['min'])}-{fmt(s['max'])})"


def _ratio(result: dict | None, key: str) -> str:
    if result is None or result.get("skipped"):
        return "not run"
    value = result["ratios"].get(key)
    return "-" if value is None else f"{value:.2f}x"


def render(results: Path) -> str:
    r = {
        name: _load(results, name)
        for name in (
            "protocol-ceiling",
            "wordcount",
            "latency-under-load",
            "acker-memory",
            "idle",
            "startup",
            "scaling",
            "rdd-pipe",
        )
    }
    any_result = next((v for v in r.values() if v), None)
    if any_result is None:
        return f"no results in {results}: run `python -m benchmarks` first"
    m = any_result["machine"]
    wc, lat, ack, ceil = (
        r["wordcount"],
        r["latency-under-load"],
        r["acker-memory"],
        r["protocol-ceiling"],
    )
    sizes = sorted(
        v["params"]["pending"]
        for k, v in (ack or {}).get("variants", {}).items()
        if k.startswith("Acker, ") and "ops" not in k
    )
    small, big = (sizes[0], sizes[-1]) if sizes else (None, None)
    rows = [
        ("protocol ceiling, ujson (tuples/s)", _figure(ceil, "ujson", "tuples_per_s"), "reference"),
        (
            "protocol ceiling, orjson (tuples/s)",
            _figure(ceil, "orjson", "tuples_per_s"),
            "reference",
        ),
        (
            "word count, Python, 100/next (acked sentences/s)",
            _figure(wc, "python, 100/next", "sentences_per_s"),
            ">= 25,000",
        ),
        ("... word tuples/s", _figure(wc, "python, 100/next", "words_per_s"), "~100,000"),
        (
            "... host CPU per routed tuple (us)",
            _figure(wc, "python, 100/next", "host_cpu_us_per_tuple"),
            "<= 8",
        ),
        (
            "... sentences/s / ceiling tuples/s (same run)",
            _ratio(wc, "sentences/s (python, 100/next) / ceiling tuples/s"),
            ">= 0.4x",
        ),
        # a ceiling tuple is one tuple-in / emit + ack-out exchange, as is every routed tuple
        (
            "... routed tuples/s (sentences + words) / ceiling tuples/s",
            _ratio(wc, "routed tuples/s (python, 100/next) / ceiling tuples/s"),
            "",
        ),
        (
            "... complete latency p50 / p99 (ms)",
            f"{_figure(wc, 'python, 100/next', 'latency_p50_ms')} / "
            f"{_figure(wc, 'python, 100/next', 'latency_p99_ms')}",
            "",
        ),
        (
            "... the same without the C decoder and orjson (MULTILANG_PURE_PYTHON=1)",
            _figure(wc, "python, 100/next, pure Python", "sentences_per_s"),
            "",
        ),
        (
            "word count, Python, 1/next (acked sentences/s)",
            _figure(wc, "python, 1/next", "sentences_per_s"),
            ">= 15,000",
        ),
        ("word count, bash split (sentences/s)", _figure(wc, "bash split", "sentences_per_s"), ""),
        ("word count, Node split (sentences/s)", _figure(wc, "node split", "sentences_per_s"), ""),
        (
            "word count, parallelism 2 (sentences/s)",
            _figure(wc, "python, parallelism 2", "sentences_per_s"),
            "",
        ),
        (
            "at 50% of max rate: complete latency p99 (ms)",
            _figure(lat, "50% of max rate", "latency_p99_ms"),
            "<= 20",
        ),
        (
            "... p50 / p99.9 (ms)",
            f"{_figure(lat, '50% of max rate', 'latency_p50_ms')} / "
            f"{_figure(lat, '50% of max rate', 'latency_p999_ms')}",
            "",
        ),
    ]
    if small is not None:
        rows.append(
            (
                f"acker bytes per pending root, {small:,} pending (tracemalloc)",
                _figure(ack, f"Acker, {small:,} pending", "tracemalloc_bytes_per_root"),
                "<= 200",
            )
        )
    if big is not None:
        rows.append(
            (
                f"acker bytes per pending root, {big:,} pending (RSS)",
                _figure(ack, f"Acker, {big:,} pending", "rss_bytes_per_root"),
                "<= 200",
            )
        )
        rows.append(
            (
                f"acker: pending roots held (of {big:,})",
                _figure(ack, f"Acker, {big:,} pending", "held"),
                f"{big:,}",
            )
        )
    rows += [
        (
            "acker open+add+ack (roots/s)",
            _figure(ack, "Acker, ops (1,000 pending)", "ops_per_s"),
            "",
        ),
        ("idle topology: host CPU %", _figure(r["idle"], "host", "cpu_pct_whole_run"), "<= 1"),
        (
            "start-up to first acked tuple (s)",
            _figure(r["startup"], "host local: first ack", "secs"),
            "<= 1",
        ),
        (
            "rdd-pipe: ours / rdd.pipe records/s",
            (r["rdd-pipe"] or {}).get("skipped")
            or _ratio(r["rdd-pipe"], "ours / rdd.pipe records per s"),
            ">= 1.0x",
        ),
    ]
    out = [
        "## Performance",
        "",
        f"Measured {any_result['date'][:10]} on {m['cpu_count']} x {m['cpu_model']} "
        f"(Python {m['python']}, ujson {m['ujson']}, orjson {m['orjson'] or '-'}, "
        f"C decoder {'built' if m.get('c_decoder') else 'not built'}, "
        f"Node {m['node'] or '-'}; commit {m['commit'] or '-'}; load average at the start "
        f"{m.get('load_average_at_start') or '-'}) with "
        f"`{any_result['command']}` (mode: {any_result['mode']}). Medians over the runs, "
        "min-max in brackets; every baseline was measured in the same run, alternating with "
        "what it is compared to.",
        "",
        "| figure | measured | target |",
        "|---|---:|---|",
    ]
    out += [f"| {a} | {b} | {c} |" for a, b, c in rows]
    plot = BENCH_DIR / "plots" / "scaling.png"
    if plot.exists():
        out += [
            "",
            f"![throughput against parallelism and tuple size]"
            f"({plot.relative_to(BENCH_DIR.parent)})",
        ]
    return "\n".join(out)


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.readme")
    parser.add_argument("--results-dir", type=Path, default=BENCH_DIR / "results")
    args = parser.parse_args()
    print(render(args.results_dir))
    return 0


if __name__ == "__main__":
    sys.exit(main())
