"""The per-component table of the live view: a title with totals, rates and a sparkline over one
row per component, and `Rates`, the per-second history the live view keeps for it. Pure
functions of the snapshot, drawn with host/observe/grid.py's `grid`."""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence

from rich.console import Group
from rich.text import Text

from host.observe.grid import Cell, grid, millis_text
from host.observe.snapshot import ComponentSnapshot, Snapshot

HISTORY_SECS = 60  # the sparkline: one point per second over the last minute
LAST_ERROR_CHARS = 48

BARS = "▁▂▃▄▅▆▇█"


def _bytes(value: int | None) -> str:
    if value is None:
        return "-"
    size = float(value)
    for unit in ("B", "K", "M", "G"):
        if size < 1024 or unit == "G":
            return f"{size:.0f}{unit}" if unit == "B" else f"{size:.1f}{unit}"
        size /= 1024
    return "-"  # pragma: no cover


def sparkline(values: Sequence[float], width: int = HISTORY_SECS) -> str:
    """The last `width` values as block characters scaled to their maximum, oldest first,
    padded with spaces to `width` (it grows to the right, then scrolls). All zeros draw the
    lowest bar, so an idle topology shows a flat line."""
    values = list(values)[-width:] if width > 0 else []
    top = max(values, default=0.0)
    last = len(BARS) - 1
    if top <= 0:
        bars = BARS[0] * len(values)
    else:
        bars = "".join(BARS[min(last, max(0, round(v / top * last)))] for v in values)
    return bars.ljust(width)


class Rates:
    """Acked / failed spout tuples per second (the snapshot's own, measured by the supervisor),
    and a one-point-per-second history of the acked rate for the sparkline. Time is the
    snapshot's own `uptime_s`, so a test drives it with made-up snapshots and no clock."""

    def __init__(self, history: int = HISTORY_SECS) -> None:
        self._bucket: tuple[float, int] | None = None  # start of the current one-second bucket
        self.acked_per_s = 0.0
        self.failed_per_s = 0.0
        self.history: deque[float] = deque(maxlen=history)

    def update(self, snap: Snapshot) -> None:
        top = snap["topology"]
        now, acked = top["uptime_s"], top["spout_tuples_acked"]
        self.acked_per_s = top["acked_per_s"]
        self.failed_per_s = top["failed_per_s"]
        if self._bucket is None or now < self._bucket[0]:
            self._bucket = (now, acked)
        elif now - self._bucket[0] >= 1.0:
            self.history.append(max(0.0, (acked - self._bucket[1]) / (now - self._bucket[0])))
            self._bucket = (now, acked)


def _title(snap: Snapshot, rates: Rates | None) -> Text:
    top = snap["topology"]
    lat = top["complete_latency_ms"]
    text = Text()
    text.append(f"{top['name']}", style="bold")
    text.append(f"  up {top['uptime_s']:.0f}s  acked {top['spout_tuples_acked']:,}")
    failed = top["spout_tuples_failed"]
    text.append(f"  failed {failed:,}", style="bold red" if failed else "")
    timed_out = top["spout_tuples_timed_out"]
    text.append(f"  timed out {timed_out:,}", style="bold red" if timed_out else "")
    text.append(f"  pending {top['spout_tuples_pending']:,}")
    text.append(
        f"  |  complete latency p50 {millis_text(lat['p50'])} ms  p99 {millis_text(lat['p99'])} ms"
    )
    if rates is not None:
        text.append(f"\nacked/s {rates.acked_per_s:>9,.0f}  ")
        text.append(sparkline(rates.history), style="green")
        text.append(f"  last {HISTORY_SECS}s, max {max(rates.history, default=0):,.0f}/s")
        if rates.failed_per_s:
            text.append(f"  failed/s {rates.failed_per_s:,.0f}", style="bold red")
    return text


def _measured(c: ComponentSnapshot) -> bool:
    return c["cpu_percent"] is not None or c["rss_bytes"] is not None


def _capacity(value: float | None) -> Cell:
    if value is None:
        return ("-", "")
    return (f"{value:.2f}", "bold red" if value >= 0.8 else "yellow" if value >= 0.5 else "")


def _count(value: int, style: str = "bold red") -> Cell:
    return (str(value), style if value else "")


def component_table(snap: Snapshot, rates: Rates | None = None) -> Group:
    """The title (totals, rates, sparkline) and one row per component; the optional columns
    (process latency, capacity, never acked, CPU, memory, last error) only when some component
    has them (never acked: when some bolt had tuples forgotten, docs/protocol.md §4.5)."""
    comps = snap["components"]
    latency = any("process_latency_ms" in c for c in comps.values())
    never_acked = any(c.get("never_acked") for c in comps.values())
    capacity = any("capacity" in c for c in comps.values())
    usage = any(_measured(c) for c in comps.values())
    last_error = any("last_error" in c for c in comps.values())
    columns = [
        ("component", "l"),
        ("tasks", "r"),
        ("state", "l"),
        ("emitted", "r"),
        ("executed", "r"),
        ("acked", "r"),
        ("failed", "r"),
        ("in-flight", "r"),
        ("queued", "r"),
    ]
    if never_acked:
        columns.append(("never acked", "r"))
    if latency:
        columns.append(("p50/p99 ms", "r"))
    if capacity:
        columns.append(("capacity", "r"))
    if usage:
        columns += [("cpu %", "r"), ("rss", "r")]
    columns += [("restarts", "r"), ("errors", "r")]
    if last_error:
        columns.append(("last error", "l"))
    rows = []
    for cid, c in comps.items():
        broken = c["restarts"] or c["errors"]
        row: list[Cell] = [
            (cid, "bold red" if broken else "bold"),
            (str(c["tasks"]), ""),
            (",".join(c["states"]), ""),
            (f"{c['emitted']:,}", ""),
            (f"{c['executed']:,}", ""),
            (f"{c['acked']:,}", ""),
            _count(c["failed"], "red"),
            (str(c["in_flight"]), ""),
            (str(c["queued"]), ""),
        ]
        if never_acked:
            n = c.get("never_acked")  # a bolt's figure
            row.append(("-", "") if n is None else (f"{n:,}", "bold yellow" if n else ""))
        if latency:
            lat = c.get("process_latency_ms")
            row.append(
                (f"{millis_text(lat['p50'])}/{millis_text(lat['p99'])}" if lat else "-/-", "")
            )
        if capacity:
            row.append(_capacity(c.get("capacity")))
        if usage:
            cpu = c["cpu_percent"]
            row += [("-" if cpu is None else f"{cpu:.0f}", ""), (_bytes(c["rss_bytes"]), "")]
        row += [_count(c["restarts"]), _count(c["errors"])]
        if last_error:
            text = c.get("last_error") or ""
            row.append((text.splitlines()[0] if text else "", "red"))
        rows.append(row)
    widths = {0: 24, 2: 16}
    if last_error:
        widths[len(columns) - 1] = LAST_ERROR_CHARS
    return Group(_title(snap, rates), grid(columns, rows, widths))
