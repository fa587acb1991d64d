"""Runs one benchmark topology in this process, as the host would, and measures it from inside:

    python -m benchmarks.runner SPEC.json OUT.json

Why not `python -m host local --stats-json`: the stats file covers the whole run (start-up and
drain included) and has no p99.9. Here the Supervisor runs exactly as under the CLI (minus the
live view), and its report callback opens measured windows once every task is up and a warm-up
has passed: per window, the counters' deltas, this process's CPU (the host's), its children's CPU
(the components', jq co-processes included), the host's syscalls and context switches, its RSS at
the end, and the complete latency of the roots acked in it (the latency histogram is replaced at
each window boundary). The host's own figures leave out the runner's sampling at the window
boundaries; the snapshots the runner asks for between them (one per `report_every`, which read
/proc for every task) are in, and are also given on their own as `report` (see ReportMeter), so
that a benchmark with hundreds of tasks can tell them from the data path.

SPEC: {"builder", "params" (see benchmarks.topologies), "warmup", "windows", "window",
"max_secs", "stop_when_acked" (optional), "companion" (optional argv of a process whose CPU is
measured over the same windows), "profile" (optional path: pyinstrument's text report)}.
"""

from __future__ import annotations

import gc
import json
import os
import subprocess
import sys
import time

import psutil

from host.observe.metrics import LatencyHistogram
from host.observe.snapshot import Snapshot
from host.runtime.supervisor import Supervisor

from .topologies import build

COUNTERS = ("emitted", "transferred", "executed", "acked", "failed")


class CpuMeter:
    """Cumulative CPU seconds of a set of processes, counting ones that exited at their last
    reading."""

    def __init__(self, root: psutil.Process, children: bool):
        self.root = root
        self.children = children
        self.last: dict[int, float] = {}

    def total(self) -> float:
        procs = self.root.children(recursive=True) if self.children else [self.root]
        for p in procs:
            try:
                t = p.cpu_times()
                self.last[p.pid] = t.user + t.system
            except psutil.Error:
                pass
        return sum(self.last.values())


class GcClock:
    """Time spent in the cyclic garbage collector (gc.callbacks): the host allocates a record
    per tuple, and full collections walk every live one."""

    def __init__(self) -> None:
        self.secs = 0.0
        self.collections = 0
        self._start = 0.0
        gc.callbacks.append(self._callback)

    def _callback(self, phase: str, info: dict) -> None:
        if phase == "start":
            self._start = time.perf_counter()
        else:
            self.secs += time.perf_counter() - self._start
            self.collections += 1


GC = GcClock()


_ME = psutil.Process()  # this process: the host


def _host_counters() -> dict:
    """The host process's cumulative CPU seconds, syscalls and context switches. CPU from
    process_time (nanoseconds): /proc's figure is in 10 ms ticks, coarser than a snapshot."""
    me = _ME
    out: dict = {"cpu": time.process_time()}
    try:
        io = me.io_counters()
        out.update(
            reads=io.read_count,
            writes=io.write_count,
            read_bytes=io.read_chars,
            write_bytes=io.write_chars,
        )
    except (AttributeError, psutil.Error):  # not on every platform
        pass
    switches = me.num_ctx_switches()
    out["voluntary_switches"] = switches.voluntary
    out["involuntary_switches"] = switches.involuntary
    try:  # Linux: seconds runnable but waiting for a core (the run queue), from schedstat
        with open("/proc/self/schedstat", encoding="ascii") as fh:
            out["run_delay_s"] = int(fh.read().split()[1]) / 1e9
    except (OSError, IndexError, ValueError):
        pass
    return out


class ReportMeter:
    """What the stats snapshots the runner asks for cost the host (CPU seconds and syscalls):
    each reads /proc twice per task, so with hundreds of tasks they are a visible share of the
    host's CPU and of its reads. Wraps `Supervisor.snapshot`."""

    def __init__(self, sup: Supervisor) -> None:
        self.totals: dict[str, float] = {}
        self.count = 0
        self._snapshot = sup.snapshot
        sup.snapshot = self.snapshot  # type: ignore[method-assign]

    def snapshot(self) -> Snapshot:
        before = _host_counters()
        snap = self._snapshot()
        after = _host_counters()
        for k, v in after.items():
            self.totals[k] = self.totals.get(k, 0) + v - before[k]
        self.count += 1
        return snap


class Windows:
    """The report callback: waits for every task to run, then the warm-up, then measures."""

    def __init__(
        self,
        sup: Supervisor,
        spec: dict,
        companion: psutil.Process | None,
        reports: ReportMeter | None = None,
    ):
        self.sup = sup
        self.reports = reports
        self.warmup = float(spec.get("warmup", 1.0))
        self.count = int(spec.get("windows", 1))
        self.length = float(spec.get("window", 3.0))
        self.stop_when_acked = spec.get("stop_when_acked")
        me = psutil.Process()
        self.child_cpu = CpuMeter(me, children=True)
        self.companion_cpu = CpuMeter(companion, children=False) if companion else None
        self.started = time.monotonic()
        self.ready_at: float | None = None
        self.open: dict | None = None
        self.results: list[dict] = []

    def _sample(self, snap: dict) -> dict:
        """The host's own CPU and I/O are read first and last: a window runs from the last
        reading at its opening to the first at its closing, without the sampling in between
        (which walks every task's process)."""
        first = self._host()
        sample = {
            "t": time.monotonic(),
            "host_first": first,
            "acked": snap["topology"]["spout_tuples_acked"],
            "failed": snap["topology"]["spout_tuples_failed"],
            "components": {
                cid: {k: c[k] for k in COUNTERS} for cid, c in snap["components"].items()
            },
            "children_cpu": self.child_cpu.total(),
            "companion_cpu": self.companion_cpu.total() if self.companion_cpu else None,
            "component_cpu": self._component_cpu(),
            "batches": {k: snap["batches"][k] for k in ("committed", "committed_tuples", "replays")}
            if "batches" in snap
            else None,
            "reports": dict(self.reports.totals, count=self.reports.count)
            if self.reports
            else None,
        }
        sample["host_last"] = self._host()
        return sample

    def _host(self) -> dict:
        out = _host_counters()
        out["gc_secs"] = GC.secs
        out["gc_collections"] = GC.collections
        return out

    def _component_cpu(self) -> dict:
        """CPU seconds per component (its tasks' processes, which a restart would reset)."""
        out: dict[str, float] = {}
        for name, pid in self.sup.pids().items():
            try:
                c = psutil.Process(pid).cpu_times()
            except psutil.Error:
                continue
            cid = name.rpartition("[")[0]
            out[cid] = out.get(cid, 0.0) + c.user + c.system
        return out

    def _close(self, snap: dict) -> None:
        a, b = self.open, self._sample(snap)
        hist = self.sup.complete_latency
        self.results.append(
            {
                "secs": b["t"] - a["t"],
                "acked": b["acked"] - a["acked"],
                "failed": b["failed"] - a["failed"],
                "components": {
                    cid: {k: b["components"][cid][k] - a["components"][cid][k] for k in COUNTERS}
                    for cid in b["components"]
                },
                "host_cpu_s": b["host_first"]["cpu"] - a["host_last"]["cpu"],
                "children_cpu_s": b["children_cpu"] - a["children_cpu"],
                "component_cpu_s": {
                    cid: cpu - a["component_cpu"].get(cid, 0.0)
                    for cid, cpu in b["component_cpu"].items()
                },
                "companion_cpu_s": (
                    b["companion_cpu"] - a["companion_cpu"]
                    if b["companion_cpu"] is not None
                    else None
                ),
                "host_io": {
                    k: b["host_first"][k] - a["host_last"].get(k, 0)
                    for k in b["host_first"]
                    if k != "cpu"
                },
                "host_rss_bytes": _ME.memory_info().rss,
                "report": {k: v - a["reports"].get(k, 0) for k, v in b["reports"].items()}
                if b["reports"] is not None
                else None,
                "batches": _batches(a, b, self.sup),
                "latency_ms": {
                    "p50": hist.percentile(50),
                    "p99": hist.percentile(99),
                    "p999": hist.percentile(99.9),
                    "mean": hist.mean_ms(),
                    "count": hist.count,
                },
            }
        )
        self.open = b
        self.sup.complete_latency = LatencyHistogram()  # the next window's own

    def __call__(self, snap: dict) -> None:
        now = time.monotonic()
        if self.ready_at is None:
            if all(c["states"] == ["running"] for c in snap["components"].values()):
                self.ready_at = now
            return
        if self.open is None:
            if now - self.ready_at >= self.warmup:
                self.open = self._sample(snap)
                self.sup.complete_latency = LatencyHistogram()
                if self.sup.path.batches is not None:
                    self.sup.path.batches.figures.commit_latency = LatencyHistogram()
            return
        done = (
            self.stop_when_acked is not None
            and snap["topology"]["spout_tuples_acked"] >= self.stop_when_acked
        )
        if done or now - self.open["t"] >= self.length:
            self._close(snap)
            if done or len(self.results) >= self.count:
                self.sup.request_stop("benchmark windows done")


def _batches(a: dict, b: dict, sup: Supervisor) -> dict | None:
    """A transactional run's window: batches and their spout tuples committed, replays, and the
    commit latency of the batches committed in it (the histogram is replaced, as above)."""
    layer = sup.path.batches
    if layer is None or a["batches"] is None:
        return None
    hist = layer.figures.commit_latency
    out = {k: b["batches"][k] - a["batches"][k] for k in a["batches"]}
    out["commit_latency_ms"] = {"p50": hist.percentile(50), "p99": hist.percentile(99)}
    layer.figures.commit_latency = LatencyHistogram()
    return out


def main(spec_path: str, out_path: str) -> int:
    with open(spec_path, encoding="utf-8") as fh:
        spec = json.load(fh)
    topology = build(spec["builder"], spec.get("params", {}))
    companion = None
    if spec.get("companion"):
        companion = subprocess.Popen(spec["companion"], stdin=subprocess.DEVNULL)
    try:
        sup = Supervisor(topology)
        sup.report_every = 0.2  # the CLI's is 0.5; each report costs the host a snapshot
        reports = ReportMeter(sup)
        windows = Windows(sup, spec, psutil.Process(companion.pid) if companion else None, reports)
        sup.on_report = windows
        profiler = None
        if spec.get("profile"):
            from pyinstrument import Profiler

            profiler = Profiler(interval=0.0005)
            profiler.start()
        code = sup.run(float(spec.get("max_secs", 120)))
        if profiler is not None:
            profiler.stop()
            with open(spec["profile"], "w", encoding="utf-8") as fh:
                fh.write(profiler.output_text(unicode=False, color=False, show_all=False))
    finally:
        if companion is not None:
            companion.kill()
            companion.wait()
    out = {
        "exit_code": code,
        "failure": sup.failure,
        "windows": windows.results,
        "startup_s": (windows.ready_at - windows.started) if windows.ready_at else None,
        "stats": sup.snapshot(),
    }
    tmp = f"{out_path}.tmp"
    with open(tmp, "w", encoding="utf-8") as fh:
        json.dump(out, fh)
    os.replace(tmp, out_path)
    return 0 if code == 0 and windows.results else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
