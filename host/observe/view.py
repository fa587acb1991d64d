"""What the user sees while a topology runs: a live table on a terminal, periodic plain lines
otherwise, and a summary at the end. Reads snapshots (`Supervisor.snapshot()`); owns no state of
the run.

The live view is redrawn from the event loop's own thread (`update`, every report), never by a
background refresh thread: one render every half second, a few milliseconds, and no thread
competing with the loop for the GIL. Keys that older snapshots lack (process latency, capacity,
CPU, memory, recent logs, failures) are optional: their columns and sections appear when present.
"""

from __future__ import annotations

import logging
import sys
import time
from collections import deque
from collections.abc import Iterable, Sequence
from typing import TextIO

from rich.console import Console, Group, RenderableType
from rich.live import Live
from rich.logging import RichHandler
from rich.panel import Panel
from rich.text import Text

PLAIN_EVERY_SECS = 5.0
HISTORY_SECS = 60  # the sparkline: one point per second over the last minute
LOG_LINES = 6  # component log lines under the table
LAST_ERROR_CHARS = 48

BARS = "▁▂▃▄▅▆▇█"
_LEVEL_STYLES = {
    "ERROR": "bold red",
    "CRITICAL": "bold red",
    "WARNING": "yellow",
    "DEBUG": "dim",
    "TRACE": "dim",
}


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}"


def _bytes(value: int | None) -> str:
    if value is None:
        return "-"
    size = float(value)
    for unit in ("B", "K", "M", "G"):
        if size < 1024 or unit == "G":
            return f"{size:.0f}{unit}" if unit == "B" else f"{size:.1f}{unit}"
        size /= 1024
    return "-"  # pragma: no cover


def _clock(stamp) -> str:
    """A log or failure time (epoch seconds, or already text) as HH:MM:SS."""
    if isinstance(stamp, (int, float)):
        return time.strftime("%H:%M:%S", time.localtime(stamp))
    return str(stamp) if stamp is not None else ""


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
    """Acked / failed spout tuples per second, and a one-point-per-second history of the acked
    rate for the sparkline. Time is the snapshot's own `uptime_s`, so a test drives it with
    made-up snapshots and no clock."""

    def __init__(self, history: int = HISTORY_SECS) -> None:
        self._last: tuple[float, int, int] | None = None
        self._bucket: tuple[float, int] | None = None  # start of the current one-second bucket
        self.acked_per_s = 0.0
        self.failed_per_s = 0.0
        self.history: deque[float] = deque(maxlen=history)

    def update(self, snap: dict) -> None:
        top = snap["topology"]
        now = top["uptime_s"]
        acked, failed = top["spout_tuples_acked"], top["spout_tuples_failed"]
        if self._last is not None and now > self._last[0]:
            dt = now - self._last[0]
            self.acked_per_s = (acked - self._last[1]) / dt
            self.failed_per_s = (failed - self._last[2]) / dt
        self._last = (now, acked, failed)
        # the supervisor measures its rates itself in newer snapshots: show the same numbers
        self.acked_per_s = top.get("acked_per_s", self.acked_per_s)
        self.failed_per_s = top.get("failed_per_s", self.failed_per_s)
        if self._bucket is None or now < self._bucket[0]:
            self._bucket = (now, acked)
        elif now - self._bucket[0] >= 1.0:
            self.history.append(max(0.0, (acked - self._bucket[1]) / (now - self._bucket[0])))
            self._bucket = (now, acked)


def _title(snap: dict, rates: Rates | None) -> Text:
    top = snap["topology"]
    lat = top["complete_latency_ms"]
    text = Text()
    text.append(f"{top['name']}", style="bold")
    text.append(f"  up {top['uptime_s']:.0f}s  acked {top['spout_tuples_acked']:,}")
    failed = top["spout_tuples_failed"]
    text.append(f"  failed {failed:,}", style="bold red" if failed else "")
    timed_out = top["spout_tuples_timed_out"]
    text.append(f"  timed out {timed_out:,}", style="bold red" if timed_out else "")
    text.append(f"  pending {top.get('spout_tuples_pending', 0):,}")
    text.append(f"  |  complete latency p50 {_ms(lat.get('p50'))} ms  p99 {_ms(lat.get('p99'))} ms")
    if rates is not None:
        text.append(f"\nacked/s {rates.acked_per_s:>9,.0f}  ")
        text.append(sparkline(rates.history), style="green")
        text.append(f"  last {HISTORY_SECS}s, max {max(rates.history, default=0):,.0f}/s")
        if rates.failed_per_s:
            text.append(f"  failed/s {rates.failed_per_s:,.0f}", style="bold red")
    return text


def _any(components: Iterable[dict], key: str) -> bool:
    return any(c.get(key) is not None for c in components)


Cell = tuple[str, str]  # (text, rich style)


def _capacity(value: float | None) -> Cell:
    if value is None:
        return ("-", "")
    return (f"{value:.2f}", "bold red" if value >= 0.8 else "yellow" if value >= 0.5 else "")


def _count(value: int, style: str = "bold red") -> Cell:
    return (str(value), style if value else "")


def _clip_cell(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def grid(
    columns: Sequence[tuple[str, str]],
    rows: Sequence[Sequence[Cell]],
    max_widths: dict[int, int] | None = None,
) -> Text:
    """A table as one Text: a bold header, a rule, one line per row, columns two spaces apart.
    `columns` are (header, "l" or "r"). Far cheaper to draw than a rich Table (about a tenth of
    the time), which matters at two redraws a second on the loop's thread."""
    max_widths = max_widths or {}
    widths = [len(header) for header, _ in columns]
    rows = [
        [
            (_clip_cell(text, max_widths[i]) if i in max_widths else text, style)
            for i, (text, style) in enumerate(row)
        ]
        for row in rows
    ]
    for row in rows:
        for i, (text, _) in enumerate(row):
            widths[i] = max(widths[i], len(text))
    out = Text(no_wrap=True, overflow="ellipsis")

    def line(cells: Sequence[Cell]) -> None:
        for i, ((text, style), (_, align), width) in enumerate(zip(cells, columns, widths)):
            if i:
                out.append("  ")
            last = i == len(columns) - 1
            padded = text.rjust(width) if align == "r" else (text if last else text.ljust(width))
            out.append(padded, style=style)
        out.append("\n")

    line([(header, "bold") for header, _ in columns])
    out.append("  ".join("─" * w for w in widths) + "\n", style="dim")
    for row in rows:
        line(row)
    out.rstrip()
    return out


def component_table(snap: dict, rates: Rates | None = None) -> Group:
    """The title (totals, rates, sparkline) and one row per component; the optional columns
    (process latency, capacity, CPU, memory, last error) only when some component has them."""
    comps = snap["components"]
    latency = _any(comps.values(), "process_latency_ms")
    capacity = _any(comps.values(), "capacity")
    usage = _any(comps.values(), "cpu_percent") or _any(comps.values(), "rss_bytes")
    last_error = _any(comps.values(), "last_error")
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
            (",".join(c.get("states", [])), ""),
            (f"{c['emitted']:,}", ""),
            (f"{c['executed']:,}", ""),
            (f"{c['acked']:,}", ""),
            _count(c["failed"], "red"),
            (str(c.get("in_flight", 0)), ""),
            (str(c.get("queued", 0)), ""),
        ]
        if latency:
            lat = c.get("process_latency_ms") or {}
            row.append((f"{_ms(lat.get('p50'))}/{_ms(lat.get('p99'))}", ""))
        if capacity:
            row.append(_capacity(c.get("capacity")))
        if usage:
            cpu = c.get("cpu_percent")
            row += [("-" if cpu is None else f"{cpu:.0f}", ""), (_bytes(c.get("rss_bytes")), "")]
        row += [_count(c["restarts"]), _count(c["errors"])]
        if last_error:
            text = c.get("last_error") or ""
            row.append((text.splitlines()[0] if text else "", "red"))
        rows.append(row)
    widths = {0: 24, 2: 16}
    if last_error:
        widths[len(columns) - 1] = LAST_ERROR_CHARS
    return Group(_title(snap, rates), grid(columns, rows, widths))


def log_lines(snap: dict, count: int = LOG_LINES) -> Text | None:
    """The last `count` component log lines of the snapshot, one line each, or None."""
    logs = snap.get("recent_logs") or []
    if not logs:
        return None
    text = Text()
    for entry in logs[-count:]:
        level = str(entry.get("level", "INFO")).upper()
        message = str(entry.get("message", "")).replace("\n", " ")
        text.append(f"{_clock(entry.get('time'))} ", style="dim")
        text.append(f"{entry.get('component', '?')}[{entry.get('task', '?')}] ", style="cyan")
        text.append(f"{level:<7} ", style=_LEVEL_STYLES.get(level, ""))
        text.append(message + "\n", style="red" if level in ("ERROR", "CRITICAL") else "")
    text.rstrip()
    text.no_wrap = True
    text.overflow = "ellipsis"
    return text


def failure_lines(f: dict) -> list[str]:
    """A failure report (snapshot `failures` entry) as lines of plain text."""
    lines = [
        (
            f"{f.get('component', '?')} task {f.get('task', '?')} pid {f.get('pid', '?')} "
            f"failed at {_clock(f.get('time'))}: {f.get('reason', 'unknown reason')}"
        )
    ]
    if f.get("exit"):
        lines.append(f"exit: {f['exit']}")
    stderr = f.get("stderr") or []
    if stderr:
        lines.append("last stderr lines:")
        lines += [f"  {line}" for line in stderr]
    for key, label in (
        ("last_sent", "last message sent to it"),
        ("last_received", "last it wrote"),
    ):
        messages = [
            line
            for line in str(f.get(key) or "").splitlines()
            if line.strip() and line.strip() != "end"
        ]  # the frame ends say nothing
        if len(messages) > 1 and not messages[0].lstrip().startswith(("{", "[")):
            del messages[0]  # a tail of the output, cut in the middle of a message
        if messages:
            lines.append(f"{label}:")
            lines += [f"  {line}" for line in messages]
    return lines


def failure_block(f: dict) -> Panel:
    lines = failure_lines(f)
    body = Text("\n".join(lines[1:])) if len(lines) > 1 else Text("")
    return Panel(
        body,
        title=Text(lines[0], style="bold red"),
        title_align="left",
        border_style="red",
        expand=False,
    )


def _failure_key(f: dict) -> tuple:
    return (f.get("time"), f.get("component"), f.get("task"), f.get("pid"))


def metric_lines(snap: dict, per_component: int = 6) -> list[str]:
    """The custom metrics (the `metrics` RPC) of each component that has some, one line each:
    `component: name=value ...`, at most `per_component` names shown."""
    lines = []
    for cid, c in snap["components"].items():
        metrics = c.get("metrics") or {}
        if not metrics:
            continue
        shown = [
            f"{name}={_clip_cell(str(value), 24)}"
            for name, value in list(metrics.items())[:per_component]
        ]
        more = len(metrics) - len(shown)
        lines.append(f"{cid}: " + " ".join(shown) + (f" (+{more} more)" if more > 0 else ""))
    return lines


def live_renderable(snap: dict, rates: Rates | None, banner: str | None = None) -> RenderableType:
    parts: list[RenderableType] = [component_table(snap, rates)]
    if banner:
        parts.insert(0, Text(banner, style="dim"))
    metrics = metric_lines(snap)
    if metrics:
        parts.append(Text("custom metrics", style="bold dim"))
        parts.append(Text("\n".join(metrics), no_wrap=True, overflow="ellipsis"))
    logs = log_lines(snap)
    if logs is not None:
        parts.append(Text("recent component log lines", style="bold dim"))
        parts.append(logs)
    return Group(*parts)


def plain_line(snap: dict, rates: Rates) -> str:
    top = snap["topology"]
    lat = top["complete_latency_ms"]
    parts = [
        (
            f"[{top['uptime_s']:.0f}s] acked={top['spout_tuples_acked']}"
            f" ({rates.acked_per_s:,.0f}/s) failed={top['spout_tuples_failed']}"
            f" timed_out={top['spout_tuples_timed_out']}"
            f" pending={top.get('spout_tuples_pending', 0)}"
            f" latency_ms p50={_ms(lat['p50'])} p99={_ms(lat['p99'])}"
        )
    ]
    for cid, c in snap["components"].items():
        part = (
            f"{cid}: emitted={c['emitted']} acked={c['acked']} failed={c['failed']}"
            f" in_flight={c.get('in_flight', 0)}"
        )
        if c.get("capacity") is not None:
            part += f" capacity={c['capacity']:.2f}"
        part += f" restarts={c['restarts']}"
        if c.get("errors"):
            part += f" errors={c['errors']}"
        parts.append(part)
    return " | ".join(parts)


class LiveView:
    """Renders snapshots: a refreshing rich table on a terminal, a plain line every few seconds
    when stdout is not one, nothing with `quiet`. Each new failure report is shown once, as a
    block above the table (or as plain lines on stderr)."""

    def __init__(
        self,
        quiet: bool = False,
        console: Console | None = None,
        plain_out: TextIO | None = None,
        plain_err: TextIO | None = None,
    ):
        self.console = console or Console()
        self.quiet = quiet
        self.interactive = self.console.is_terminal and not quiet
        self.rates = Rates()
        self._live: Live | None = None
        self._next_plain = time.monotonic() + PLAIN_EVERY_SECS
        self._seen_failures: set[tuple] = set()
        self._out = plain_out
        self._err = plain_err
        self.banner: str | None = None  # a line above the live table, e.g. the web UI's URL

    def setup_logging(self, level: int = logging.INFO) -> None:
        root = logging.getLogger()
        for handler in list(root.handlers):
            root.removeHandler(handler)
        if self.interactive:
            handler: logging.Handler = RichHandler(
                console=self.console, show_path=False, markup=False, rich_tracebacks=False
            )
            handler.setFormatter(logging.Formatter("%(message)s"))
        else:
            handler = logging.StreamHandler(sys.stderr)
            handler.setFormatter(
                logging.Formatter("%(asctime)s %(levelname)s %(message)s", "%H:%M:%S")
            )
        root.addHandler(handler)
        root.setLevel(logging.WARNING if self.quiet else level)

    def start(self) -> None:
        if self.interactive:
            # no refresh thread: update() redraws, from the loop's thread, twice a second
            self._live = Live(console=self.console, auto_refresh=False, transient=True)
            self._live.start()

    def update(self, snap: dict) -> None:
        if self.quiet:
            return
        self.rates.update(snap)
        self._new_failures(snap)
        if self._live is not None:
            self._live.update(live_renderable(snap, self.rates, self.banner), refresh=True)
        elif time.monotonic() >= self._next_plain:
            self._next_plain = time.monotonic() + PLAIN_EVERY_SECS
            print(plain_line(snap, self.rates), file=self._out or sys.stdout, flush=True)

    def _new_failures(self, snap: dict) -> None:
        failures = snap.get("failures") or []
        if not failures:
            return
        keys = [_failure_key(f) for f in failures]
        for key, f in zip(keys, failures):
            if key in self._seen_failures:
                continue
            if self._live is not None:
                self._live.console.print(failure_block(f))  # printed above the live table
            else:
                print("\n    ".join(failure_lines(f)), file=self._err or sys.stderr, flush=True)
        self._seen_failures = set(keys)  # the list is bounded: so is this set

    def stop(self) -> None:
        if self._live is not None:
            self._live.stop()
            self._live = None

    def summary(self, snap: dict) -> None:
        """The final state, printed whether or not the view was live."""
        if self.interactive:
            self.console.print(component_table(snap))
            return
        out = self._out or sys.stdout
        top = snap["topology"]
        lat = top["complete_latency_ms"]
        print(
            f"topology {top['name']}: ran {top['uptime_s']:.1f}s, "
            f"spout tuples acked={top['spout_tuples_acked']} "
            f"failed={top['spout_tuples_failed']} timed_out={top['spout_tuples_timed_out']}, "
            f"complete latency p50={_ms(lat['p50'])} ms p99={_ms(lat['p99'])} ms",
            file=out,
        )
        for cid, c in snap["components"].items():
            print(
                f"  {cid}: tasks={c['tasks']} emitted={c['emitted']} "
                f"executed={c['executed']} acked={c['acked']} failed={c['failed']} "
                f"restarts={c['restarts']} errors={c['errors']}",
                file=out,
            )
        for line in metric_lines(snap):
            print(f"  metrics of {line}", file=out)
        out.flush()
