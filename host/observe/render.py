"""A snapshot (`host.observe.snapshot.Snapshot`) as text for a terminal: the live view put together
(the component table of host/observe/component_table.py, the batches of
host/observe/batch_panel.py, the DRPC line, custom metrics, recent log lines), failure reports,
the one-line form for a non-terminal and the summary. Pure functions of the snapshot (and of
`Rates`, the per-second history the live view keeps), cheap enough to run twice a second on the
event loop's thread."""

from __future__ import annotations

from rich.console import Group, RenderableType
from rich.panel import Panel
from rich.text import Text

from host.observe.batch_panel import batch_line, batch_section
from host.observe.component_table import Rates, component_table
from host.observe.grid import clip_cell, millis_text, time_of_day
from host.observe.snapshot import DrpcStats, FailureReport, Snapshot

LOG_LINES = 6  # component log lines under the table
_LEVEL_STYLES = {
    "ERROR": "bold red",
    "CRITICAL": "bold red",
    "WARNING": "yellow",
    "DEBUG": "dim",
    "TRACE": "dim",
}


def drpc_line(drpc: DrpcStats) -> str:
    """The DRPC server in one line of plain text (docs/drpc.md §6)."""
    lat = drpc["latency_ms"]
    return (
        f"drpc {drpc['url']} ({', '.join(drpc['functions'])}): answered={drpc['answered']}"
        f" failed={drpc['failed']} timed_out={drpc['timed_out']} rejected={drpc['rejected']}"
        f" pending={drpc['pending']} latency_ms p50={millis_text(lat['p50'])}"
        f" p99={millis_text(lat['p99'])}"
    )


def log_lines(snap: Snapshot, count: int = LOG_LINES) -> Text | None:
    """The last `count` component log lines of the snapshot, one line each, or None."""
    logs = snap["recent_logs"]
    if not logs:
        return None
    text = Text()
    for entry in logs[-count:]:
        level = entry["level"].upper()
        message = entry["message"].replace("\n", " ")
        text.append(f"{time_of_day(entry['time'])} ", style="dim")
        text.append(f"{entry['component']}[{entry['task']}] ", style="cyan")
        text.append(f"{level:<7} ", style=_LEVEL_STYLES.get(level, ""))
        text.append(message + "\n", style="red" if level in ("ERROR", "CRITICAL") else "")
    text.rstrip()
    text.no_wrap = True
    text.overflow = "ellipsis"
    return text


def failure_lines(f: FailureReport) -> list[str]:
    """A failure report (snapshot `failures` entry) as lines of plain text."""
    lines = [
        f"{f['component']} task {f['task']} pid {f['pid']} failed at {time_of_day(f['time'])}: "
        f"{f['reason']}"
    ]
    if f["exit"]:
        lines.append(f"exit: {f['exit']}")
    if f["stderr"]:
        lines.append("last stderr lines:")
        lines += [f"  {line}" for line in f["stderr"]]
    for written, label in (
        (f["last_sent"], "last message sent to it"),
        (f["last_received"], "last it wrote"),
    ):
        messages = [
            line for line in (written or "").splitlines() if line.strip() and line.strip() != "end"
        ]  # the frame ends say nothing
        if len(messages) > 1 and not messages[0].lstrip().startswith(("{", "[")):
            del messages[0]  # a tail of the output, cut in the middle of a message
        if messages:
            lines.append(f"{label}:")
            lines += [f"  {line}" for line in messages]
    return lines


def failure_block(f: FailureReport) -> Panel:
    lines = failure_lines(f)
    body = Text("\n".join(lines[1:])) if len(lines) > 1 else Text("")
    return Panel(
        body,
        title=Text(lines[0], style="bold red"),
        title_align="left",
        border_style="red",
        expand=False,
    )


def metric_lines(snap: Snapshot, per_component: int = 6) -> list[str]:
    """The custom metrics (the `metrics` RPC) of each component that has some, one line each:
    `component: name=value ...`, at most `per_component` names shown."""
    lines = []
    for cid, c in snap["components"].items():
        metrics = c.get("metrics", {})
        if not metrics:
            continue
        shown = [
            f"{name}={clip_cell(str(value), 24)}"
            for name, value in list(metrics.items())[:per_component]
        ]
        more = len(metrics) - len(shown)
        lines.append(f"{cid}: " + " ".join(shown) + (f" (+{more} more)" if more > 0 else ""))
    return lines


def live_renderable(
    snap: Snapshot, rates: Rates | None, banner: str | None = None
) -> RenderableType:
    parts: list[RenderableType] = [component_table(snap, rates)]
    if banner:
        parts.insert(0, Text(banner, style="dim"))
    batches = batch_section(snap)
    if batches is not None:
        parts.append(batches)
    if "drpc" in snap:
        parts.append(Text(drpc_line(snap["drpc"]), no_wrap=True, overflow="ellipsis"))
    metrics = metric_lines(snap)
    if metrics:
        parts.append(Text("custom metrics", style="bold dim"))
        parts.append(Text("\n".join(metrics), no_wrap=True, overflow="ellipsis"))
    logs = log_lines(snap)
    if logs is not None:
        parts.append(Text("recent component log lines", style="bold dim"))
        parts.append(logs)
    return Group(*parts)


def plain_line(snap: Snapshot, rates: Rates) -> str:
    top = snap["topology"]
    lat = top["complete_latency_ms"]
    parts = [
        (
            f"[{top['uptime_s']:.0f}s] acked={top['spout_tuples_acked']}"
            f" ({rates.acked_per_s:,.0f}/s) failed={top['spout_tuples_failed']}"
            f" timed_out={top['spout_tuples_timed_out']}"
            f" pending={top['spout_tuples_pending']}"
            f" latency_ms p50={millis_text(lat['p50'])} p99={millis_text(lat['p99'])}"
        )
    ]
    for cid, c in snap["components"].items():
        part = (
            f"{cid}: emitted={c['emitted']} acked={c['acked']} failed={c['failed']}"
            f" in_flight={c['in_flight']}"
        )
        if "capacity" in c:
            part += f" capacity={c['capacity']:.2f}"
        if c.get("never_acked"):
            part += f" never_acked={c.get('never_acked')}"
        part += f" restarts={c['restarts']}"
        if c["errors"]:
            part += f" errors={c['errors']}"
        parts.append(part)
    if "batches" in snap:
        parts.append(batch_line(snap["batches"]))
    return " | ".join(parts)


def summary_lines(snap: Snapshot) -> list[str]:
    """The final state as plain lines: the totals, one line per component, the batches of a
    transactional topology, custom metrics."""
    top = snap["topology"]
    lat = top["complete_latency_ms"]
    lines = [
        f"topology {top['name']}: ran {top['uptime_s']:.1f}s, "
        f"spout tuples acked={top['spout_tuples_acked']} "
        f"failed={top['spout_tuples_failed']} timed_out={top['spout_tuples_timed_out']}, "
        f"complete latency p50={millis_text(lat['p50'])} ms p99={millis_text(lat['p99'])} ms"
    ]
    for cid, c in snap["components"].items():
        never_acked = c.get("never_acked")
        lines.append(
            f"  {cid}: tasks={c['tasks']} emitted={c['emitted']} "
            f"executed={c['executed']} acked={c['acked']} failed={c['failed']} "
            + (f"never_acked={never_acked} " if never_acked else "")
            + f"restarts={c['restarts']} errors={c['errors']}"
        )
    if "batches" in snap:
        lines.append(f"  {batch_line(snap['batches'])}")
    if "drpc" in snap:
        lines.append(f"  {drpc_line(snap['drpc'])}")
    lines += [f"  metrics of {line}" for line in metric_lines(snap)]
    return lines
