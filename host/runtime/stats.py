"""The stats snapshot of a run: the stats file's figures (docs/contracts.md), plus gauges per
component and task (in flight, queued, capacity, process latency, CPU and memory), the rates,
and recent component log lines and failure reports. Read by the CLI, the live view, the web UI and
the tests; built here from the runtime's state, never by reaching into it from outside."""

from __future__ import annotations

from typing import TYPE_CHECKING

from host.observe.metrics import ComponentStats
from host.observe.snapshot import ComponentSnapshot, Snapshot, TaskSnapshot
from host.runtime.bolt_link import BoltLink
from host.runtime.spout_link import SpoutLink

if TYPE_CHECKING:
    from host.runtime.supervisor import Supervisor
    from host.runtime.task import Task

CAPACITY_WINDOW_SECS = 0.2  # shorter windows than this keep the previous capacity figure


def snapshot(sup: Supervisor) -> Snapshot:
    now = sup.loop.now
    path = sup.path
    sup.observe.rates(now, path.spout_acked, path.spout_failed, path.spout_timed_out)
    components: dict[str, ComponentSnapshot] = {}
    for cid, tasks in sup.by_component.items():
        details = [_task_detail(sup, t, now) for t in tasks]
        cpu = [d["cpu_percent"] for d in details if d["cpu_percent"] is not None]
        rss = [d["rss_bytes"] for d in details if d["rss_bytes"] is not None]
        data: ComponentSnapshot = {
            **ComponentStats.combined([t.link.stats for t in tasks]).as_json(),
            "in_flight": sum(d["in_flight"] for d in details),
            "queued": sum(d["queued"] for d in details),
            "states": sorted({d["state"] for d in details}),
            "cpu_percent": round(sum(cpu), 1) if cpu else None,
            "rss_bytes": sum(rss) if rss else None,
            "tasks_detail": details,
            # as in Storm's UI: the busiest task's share of time with work in flight
            "capacity": round(max(d["capacity"] for d in details), 3),
        }
        if tasks[0].link.is_spout:
            del data["capacity"], data["never_acked"]  # a bolt's figures
        components[cid] = data
    latency = path.complete_latency
    activity = sup.observe.as_json()
    snap: Snapshot = {
        "topology": {
            "name": sup.topology.name,
            "uptime_s": round(now - sup.started_at, 3) if sup.started_at else 0.0,
            "spout_tuples_acked": path.spout_acked,
            "spout_tuples_failed": path.spout_failed,
            "spout_tuples_timed_out": path.spout_timed_out,
            "spout_tuples_pending": len(sup.acker),
            "acked_per_s": round(sup.observe.acked_per_s, 1),
            "failed_per_s": round(sup.observe.failed_per_s, 1),
            "timed_out_per_s": round(sup.observe.timed_out_per_s, 1),
            "complete_latency_ms": {
                "p50": latency.percentile(50),
                "p99": latency.percentile(99),
                "mean": latency.mean_ms(),
            },
        },
        "components": components,
        "recent_logs": activity["recent_logs"],
        "failures": activity["failures"],
    }
    batches = path.batches.snapshot() if path.batches is not None else None
    if batches is not None:
        snap["batches"] = batches
    if sup.drpc is not None:
        snap["drpc"] = sup.drpc.snapshot()
    return snap


class Gauges:
    """What a task's snapshot keeps between snapshots: its capacity (a bolt's share of time
    with tuples in flight, over the window since the last snapshot) and its last CPU and RSS."""

    __slots__ = ("busy", "at", "capacity", "usage")

    def __init__(self) -> None:
        self.busy = self.at = self.capacity = 0.0
        self.usage: tuple[float | None, int | None] = (None, None)


def _task_detail(sup: Supervisor, task: Task, now: float) -> TaskSnapshot:
    link, gauges = task.link, task.gauges
    if isinstance(link, BoltLink):
        busy = link.busy_seconds(now)
        if now - gauges.at >= CAPACITY_WINDOW_SECS:
            if gauges.at:
                gauges.capacity = min(1.0, (busy - gauges.busy) / (now - gauges.at))
            gauges.busy, gauges.at = busy, now
        in_flight, queued = len(link.in_flight), len(link.backlog)
    else:
        assert isinstance(link, SpoutLink)
        in_flight, queued = 0, 0
    alive = task.child is not None and task.lifecycle.alive
    if alive:  # after the run, the last values measured stay in the stats file
        gauges.usage = sup.observe.usage(link.log.pid)
    cpu, rss = gauges.usage
    stats = link.stats
    detail: TaskSnapshot = {
        "task": link.task,
        "pid": link.log.pid if alive else None,
        "state": task.state.value,
        "emitted": stats.emitted,
        "executed": stats.executed,
        "acked": stats.acked,
        "failed": stats.failed,
        "in_flight": in_flight,
        "queued": queued,
        "restarts": stats.restarts,
        "errors": stats.errors,
        "last_error": stats.last_error,
        "last_error_at": stats.last_error_at,
        "capacity": round(gauges.capacity, 3),
        "cpu_percent": cpu,
        "rss_bytes": rss,
    }
    if not link.is_spout:
        detail["never_acked"] = stats.never_acked
    return detail
