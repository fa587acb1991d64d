"""drpc: the exclaim DRPC function (docs/drpc.md) served over HTTP by `python -m host local`.

Each round starts the host as a user would (`python -m host local FILE --drpc-bind
127.0.0.1:0`, the port parsed from its `DRPC server listening on http://HOST:PORT` line) for
each form of examples/drpc/exclaim (the linear topology, and the Flux one if the file is there),
waits for a first answer, then drives it from a separate process (`benchmarks.drpc_load`, one
asyncio loop, raw keep-alive HTTP/1.1) with, in this order:

- 1, 16 and 64 concurrent clients, closed loop (each sends when its last answer came): the
  requests/s, and latency p50/p99 from send to answer;
- 64 connections paced at half the 64-client rate just measured (open loop): latency from each
  request's scheduled time, so a stall delays the requests behind it in the figures too
  (no coordinated omission).

Every answer is checked (200, `ARGS!`); `errors` counts wrong or missing ones. CPU per request
is the host process's CPU seconds in the window over the requests answered in it, and apart
from it the bolts' (the host's children). `generator CPU %` is the load generator's own share of
one core.

The baseline, in the same round, is the ceiling: the same generator against a trivial asyncio
server (`drpc_load serve`) that answers at once, at 1, 16 and 64 clients and paced at the
linear topology's rate of the round (so it runs last in the round: its pacing depends on it).
It shows what the generator alone can do on this machine. The plot goes to
benchmarks/plots/drpc.png after a full run, else beside the results.
"""

from __future__ import annotations

import http.client
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .drpc_load import DRAIN_SECS
from .harness import REPO, Context, Result, median_bars

NAME = "drpc"
DESCRIPTION = "exclaim over DRPC HTTP: requests/s and latency at 1/16/64 clients, p99 at 50%"
COLUMNS = [
    ("requests_per_s", "requests/s"),
    ("target_rate", "paced at/s"),
    ("latency_p50_ms", "p50 ms"),
    ("latency_p99_ms", "p99 ms"),
    ("server_cpu_us_per_req", "server CPU us/req"),
    ("bolts_cpu_us_per_req", "bolts CPU us/req"),
    ("server_cpu_pct", "server CPU %"),
    ("generator_cpu_pct", "generator CPU %"),
    ("errors", "errors"),
]
EXAMPLE = REPO / "examples" / "drpc" / "exclaim"
TOPOLOGIES = {  # series -> file; the Flux form is a row only if its file exists
    "linear": EXAMPLE / "topology.yaml",
    "flux": EXAMPLE / "topology.flux.yaml",
}
CEILING = "ceiling (trivial server)"
FUNCTION = "exclaim"
CLIENTS = (1, 16, 64)
PACED_CLIENTS = 64
PACED_SHARE = 0.5
START_SECS = 60.0  # the host's start, to its first answer
STOP_SECS = 30.0
_LISTENING = re.compile(r"(?:DRPC server|ECHO) listening on http://([^\s:/]+):(\d+)")


def variant(series: str, clients: int | None) -> str:
    """A row's name: `linear: 16 clients`, or `linear: paced at 50% of 64` (clients None); the
    ceiling is paced at the linear topology's rate, and its row says so."""
    if clients is None and series == CEILING:
        return f"{series}: paced as linear"
    if clients is None:
        return f"{series}: paced at {PACED_SHARE:.0%} of {PACED_CLIENTS}"
    return f"{series}: {clients} client{'s' if clients != 1 else ''}"


class Server:
    """A server process (the host, or the trivial one) whose output goes to a file, read for
    its `... listening on http://HOST:PORT` line."""

    def __init__(self, argv: list[str], what: str, max_secs: float):
        self.what = what
        self.log = tempfile.TemporaryFile()
        self.proc = subprocess.Popen(argv, cwd=REPO, stdout=self.log, stderr=self.log)
        self.port = self._port(max_secs)

    def _tail(self) -> str:
        self.log.seek(0)
        return self.log.read().decode(errors="replace")[-3000:]

    def _port(self, max_secs: float) -> int:
        deadline = time.monotonic() + max_secs
        while time.monotonic() < deadline:
            self.log.seek(0)
            found = _LISTENING.search(self.log.read().decode(errors="replace"))
            if found:
                return int(found.group(2))
            if self.proc.poll() is not None:
                break
            time.sleep(0.02)  # polling a log file for a start-up line: resolution is plenty
        self.stop()
        raise RuntimeError(f"{self.what}: no 'listening on' line:\n{self._tail()}")

    def wait_answering(self, max_secs: float) -> None:
        """Until one request is answered right: the bolts are up (requests sent before wait in
        the host, docs/drpc.md §2, and would be counted in the first row's figures)."""
        deadline = time.monotonic() + max_secs
        last = ""
        while time.monotonic() < deadline:
            conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=max_secs)
            try:
                conn.request("GET", f"/drpc/{FUNCTION}/ready")
                answer = conn.getresponse()
                body = answer.read()
                if answer.status == 200 and body == b"ready!":
                    return
                last = f"{answer.status} {body[:200]!r}"
            except OSError as exc:
                last = str(exc)
            finally:
                conn.close()
            time.sleep(0.1)
        self.stop()
        raise RuntimeError(f"{self.what}: no right answer to a first request ({last})")

    def stop(self) -> str:
        """SIGTERM (the host drains and stops its bolts), then SIGKILL; returns its output."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=STOP_SECS)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        tail = self._tail()
        self.log.close()
        return tail


def _load(ctx: Context, server: Server, clients: int, rate: float | None = None) -> dict:
    """One run of the load generator in its own process; its figures, renamed for the table."""
    warmup, window = ctx.mode.warmup_secs, ctx.mode.measure_secs
    argv = [
        sys.executable,
        "-m",
        "benchmarks.drpc_load",
        "load",
        "--port",
        str(server.port),
        "--function",
        FUNCTION,
        "--clients",
        str(clients),
        "--warmup",
        str(warmup),
        "--duration",
        str(window),
        "--watch-pid",
        str(server.proc.pid),
    ]
    if rate is not None:
        argv += ["--rate", f"{rate:.3f}"]
    out = subprocess.run(
        argv,
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=warmup + window + DRAIN_SECS + 60,
    )
    if out.returncode != 0:
        raise RuntimeError(f"load generator against {server.what} failed:\n{out.stderr[-2000:]}")
    r = json.loads(out.stdout)
    sample: dict[str, Any] = {
        "requests_per_s": r["requests_per_s"],
        "latency_p50_ms": r["latency_p50_ms"],
        "latency_p99_ms": r["latency_p99_ms"],
        "latency_max_ms": r["latency_max_ms"],
        "server_cpu_us_per_req": r["watched_cpu_us_per_req"],
        "bolts_cpu_us_per_req": r["children_cpu_us_per_req"],
        "server_cpu_pct": r["watched_cpu_pct"],
        "bolts_cpu_pct": r["children_cpu_pct"],
        "generator_cpu_pct": r["generator_cpu_pct"],
        "generator_cpu_us_per_req": r["generator_cpu_us_per_req"],
        "sent": r["sent"],
        # wrong answers, and requests never answered
        "errors": r["sent"] - r["answered"],
        "window_answers": r["window_answers"],
    }
    if rate is not None:
        sample["target_rate"] = rate
    sample["_error_samples"] = r["error_samples"]
    return sample


def _series(
    ctx: Context, name: str, start: Callable[[], Server], paced_rate: float | None
) -> dict[str, dict]:
    """One server's rows of a round: 1/16/64 clients, then paced (at `paced_rate`, or at half
    the 64-client rate just measured)."""
    server = start()
    rows: dict[str, dict] = {}
    try:
        server.wait_answering(START_SECS)
        for clients in CLIENTS:
            ctx.progress(f"{NAME}: {variant(name, clients)}")
            rows[variant(name, clients)] = _load(ctx, server, clients)
            rows[variant(name, clients)]["_params"] = {"clients": clients, "loop": "closed"}
        rate = paced_rate
        if rate is None:
            rate = max(1.0, PACED_SHARE * (rows[variant(name, PACED_CLIENTS)]["requests_per_s"]))
        ctx.progress(f"{NAME}: {variant(name, None)} ({rate:,.0f}/s)")
        rows[variant(name, None)] = _load(ctx, server, PACED_CLIENTS, rate)
        rows[variant(name, None)]["_params"] = {
            "clients": PACED_CLIENTS,
            "loop": "open",
            "rate": f"{PACED_SHARE} x the linear 64-client rate of the round"
            if paced_rate is not None
            else f"{PACED_SHARE} x the 64-client rate just before",
        }
    finally:
        server.stop()
    return rows


def _host(path: Path, ctx: Context, stats: str) -> Callable[[], Server]:
    # a cap on the host's life, should this process die before stopping it
    life = START_SECS + 8 * (ctx.mode.warmup_secs + ctx.mode.measure_secs + DRAIN_SECS)
    argv = [sys.executable, "-m", "host", "local", str(path), "--drpc-bind", "127.0.0.1:0"]
    argv += ["--duration", f"{life:.0f}", "--stats-json", stats]
    return lambda: Server(argv, f"host ({path.relative_to(REPO)})", START_SECS)


def _ceiling() -> Server:
    argv = [sys.executable, "-m", "benchmarks.drpc_load", "serve"]
    return Server(argv, "trivial server", START_SECS)


def run(ctx: Context) -> Result:
    result = Result(NAME, ctx, DESCRIPTION, baseline=variant(CEILING, PACED_CLIENTS))
    if not TOPOLOGIES["linear"].exists():
        raise RuntimeError(f"{TOPOLOGIES['linear']} is missing: nothing to measure")
    series = {name: path for name, path in TOPOLOGIES.items() if path.exists()}
    samples: dict[str, list[dict]] = {}
    host_drpc: dict[str, list[dict]] = {name: [] for name in series}
    with tempfile.TemporaryDirectory(prefix="bench-drpc-") as tmp:
        for r in range(ctx.mode.runs):
            ctx.progress(f"{NAME}: round {r + 1}/{ctx.mode.runs}")
            rounds: dict[str, dict] = {}
            for name, path in series.items():
                stats = os.path.join(tmp, f"{name}-{r}.json")
                rounds.update(_series(ctx, name, _host(path, ctx, stats), None))
                if os.path.exists(stats):  # the host's own view of the whole run (§6)
                    with open(stats, encoding="utf-8") as fh:
                        host_drpc[name].append(json.load(fh).get("drpc"))
            linear_rate = rounds[variant("linear", None)]["target_rate"]
            rounds.update(_series(ctx, CEILING, _ceiling, linear_rate))
            for key, sample in rounds.items():
                samples.setdefault(key, []).append(sample)
    errors: list[str] = []
    for key, runs in samples.items():
        for s in runs:
            errors += [f"{key}: {e}" for e in s.pop("_error_samples")]
        params = runs[0]["_params"]
        for s in runs:
            del s["_params"]
        result.add(key, runs, params)
    _compare(result, list(series))
    result.extra["host_drpc_stats"] = host_drpc
    result.extra["topologies"] = {n: str(p.relative_to(REPO)) for n, p in series.items()}
    if errors:
        result.notes.append(f"WRONG OR MISSING ANSWERS, first ones: {'; '.join(errors[:5])}")
    if "flux" not in series:
        result.notes.append(f"{TOPOLOGIES['flux'].relative_to(REPO)} not found: no flux rows")
    result.notes.append(
        "server CPU: the host process (the trivial server's in the ceiling rows); bolts CPU: "
        "the host's children (bash exclaim bolts); CPU % of one core; the generator runs in "
        "its own process on the same machine"
    )
    plot = _plot(result, ["linear", *(["flux"] if "flux" in series else []), CEILING])
    if plot is not None:
        result.extra["plot"] = str(plot)
    else:
        result.notes.append("matplotlib not installed (pip install -e '.[bench]'): no plot")
    return result


def _compare(result: Result, series: list[str]) -> None:
    ceiling = result.median(variant(CEILING, PACED_CLIENTS), "requests_per_s")
    for name in series:
        result.ratio(
            f"{name} / ceiling requests/s at {PACED_CLIENTS} clients",
            result.median(variant(name, PACED_CLIENTS), "requests_per_s"),
            ceiling,
        )
    result.targets[variant("linear", PACED_CLIENTS)] = ">= 2,000 requests/s (2-core machine)"
    result.targets[variant("linear", None)] = "latency p99 <= 20 ms"
    rate = result.median(variant("linear", PACED_CLIENTS), "requests_per_s")
    p99 = result.median(variant("linear", None), "latency_p99_ms")
    if rate is not None and p99 is not None:
        result.notes.append(
            f"linear: {rate:,.0f} requests/s at {PACED_CLIENTS} clients "
            f"({'meets' if rate >= 2000 else 'misses'} >= 2,000); p99 {p99:.1f} ms at half "
            f"that rate ({'meets' if p99 <= 20 else 'misses'} <= 20 ms)"
        )


def _plot(result: Result, series: list[str]) -> Path | None:
    try:
        import matplotlib
    except ImportError:
        return None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.2))
    xs = list(range(len(CLIENTS)))
    for i, name in enumerate(series):
        med, err = median_bars(result, [variant(name, c) for c in CLIENTS], "requests_per_s")
        left.errorbar(xs, med, yerr=err, marker="o", capsize=4, color=f"C{i}", label=name)
    left.set_xticks(xs, [str(c) for c in CLIENTS])
    left.set_xlabel("concurrent keep-alive clients (closed loop)")
    left.set_ylabel("requests/s")
    left.set_yscale("log")
    left.axhline(2000, color="grey", linestyle=":", label="target 2,000/s")
    left.set_title("exclaim: throughput")
    left.legend(fontsize=8)
    labels = [str(c) for c in CLIENTS] + ["paced"]
    xs = list(range(len(labels)))
    for i, name in enumerate(series):
        color = f"C{i}"  # a series' p99 and p50 in one colour
        rows = [variant(name, c) for c in CLIENTS] + [variant(name, None)]
        med, err = median_bars(result, rows, "latency_p99_ms")
        right.errorbar(xs, med, yerr=err, marker="o", capsize=4, color=color, label=f"{name} p99")
        med, _ = median_bars(result, rows, "latency_p50_ms")
        right.plot(xs, med, linestyle="--", marker="x", color=color, label=f"{name} p50")
    right.set_xticks(xs, labels)
    right.set_xlabel("clients (closed loop); paced: 64 at 50% of linear's 64-client rate")
    right.set_ylabel("latency ms")
    right.set_yscale("log")
    right.axhline(20, color="grey", linestyle=":", label="target p99 20 ms (paced)")
    right.set_title("exclaim: latency")
    right.legend(fontsize=7)
    m = result.ctx.machine
    fig.suptitle(
        f"DRPC exclaim, {result.ctx.mode.name} run {result.as_json()['date'][:10]}, "
        f"{m.get('cpu_count')} x {m.get('cpu_model')}, Python {m.get('python')} "
        f"(median, bars: min-max)",
        fontsize=9,
    )
    fig.tight_layout()
    path = result.ctx.plots_dir / "drpc.png"
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path
