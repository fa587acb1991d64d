"""What the user sees while a topology runs: a live table on a terminal, periodic plain lines
otherwise, and a summary at the end. Reads snapshots (`Supervisor.snapshot()`); owns no state of
the run."""

from __future__ import annotations

import logging
import sys
import time

from rich.console import Console
from rich.live import Live
from rich.logging import RichHandler
from rich.table import Table

PLAIN_EVERY_SECS = 5.0


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}"


class Rates:
    """Per-second rates of the topology's acked / failed counts between two snapshots."""

    def __init__(self) -> None:
        self._last: tuple[float, int, int] | None = None
        self.acked_per_s = 0.0
        self.failed_per_s = 0.0

    def update(self, snap: dict) -> None:
        top = snap["topology"]
        now = top["uptime_s"]
        acked, failed = top["spout_tuples_acked"], top["spout_tuples_failed"]
        if self._last is not None and now > self._last[0]:
            dt = now - self._last[0]
            self.acked_per_s = (acked - self._last[1]) / dt
            self.failed_per_s = (failed - self._last[2]) / dt
        self._last = (now, acked, failed)


def component_table(snap: dict, rates: Rates | None = None) -> Table:
    top = snap["topology"]
    lat = top["complete_latency_ms"]
    title = (f"{top['name']}  up {top['uptime_s']:.0f}s  acked {top['spout_tuples_acked']}"
             f"  failed {top['spout_tuples_failed']}  timed out {top['spout_tuples_timed_out']}"
             f"  pending {top.get('spout_tuples_pending', 0)}")
    if rates is not None:
        title += f"  |  {rates.acked_per_s:,.0f} acked/s  {rates.failed_per_s:,.0f} failed/s"
    title += f"  |  latency p50 {_ms(lat['p50'])} ms  p99 {_ms(lat['p99'])} ms"
    table = Table(title=title, title_justify="left", expand=False)
    for col in ("component", "tasks", "state", "emitted", "executed", "acked", "failed",
                "in-flight", "queued", "restarts", "errors"):
        table.add_column(col, justify="left" if col in ("component", "state") else "right")
    for cid, c in snap["components"].items():
        restarts = str(c["restarts"])
        errors = str(c["errors"])
        table.add_row(cid, str(c["tasks"]), ",".join(c.get("states", [])), str(c["emitted"]),
                      str(c["executed"]), str(c["acked"]), str(c["failed"]),
                      str(c.get("in_flight", 0)), str(c.get("queued", 0)),
                      f"[bold red]{restarts}[/]" if c["restarts"] else restarts,
                      f"[bold red]{errors}[/]" if c["errors"] else errors)
    return table


def plain_line(snap: dict, rates: Rates) -> str:
    top = snap["topology"]
    lat = top["complete_latency_ms"]
    parts = [f"[{top['uptime_s']:.0f}s] acked={top['spout_tuples_acked']}"
             f" ({rates.acked_per_s:,.0f}/s) failed={top['spout_tuples_failed']}"
             f" timed_out={top['spout_tuples_timed_out']}"
             f" pending={top.get('spout_tuples_pending', 0)}"
             f" latency_ms p50={_ms(lat['p50'])} p99={_ms(lat['p99'])}"]
    for cid, c in snap["components"].items():
        parts.append(f"{cid}: emitted={c['emitted']} acked={c['acked']} failed={c['failed']}"
                     f" in_flight={c.get('in_flight', 0)} restarts={c['restarts']}")
    return " | ".join(parts)


class LiveView:
    """Renders snapshots: a refreshing rich table on a terminal, a plain line every few seconds
    when stdout is not one, nothing with `quiet`."""

    def __init__(self, quiet: bool = False, console: Console | None = None):
        self.console = console or Console()
        self.quiet = quiet
        self.interactive = self.console.is_terminal and not quiet
        self.rates = Rates()
        self._live: Live | None = None
        self._next_plain = time.monotonic() + PLAIN_EVERY_SECS

    def setup_logging(self, level: int = logging.INFO) -> None:
        root = logging.getLogger()
        for handler in list(root.handlers):
            root.removeHandler(handler)
        if self.interactive:
            handler: logging.Handler = RichHandler(console=self.console, show_path=False,
                                                   markup=False, rich_tracebacks=False)
            handler.setFormatter(logging.Formatter("%(message)s"))
        else:
            handler = logging.StreamHandler(sys.stderr)
            handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(message)s",
                                                   "%H:%M:%S"))
        root.addHandler(handler)
        root.setLevel(logging.WARNING if self.quiet else level)

    def start(self) -> None:
        if self.interactive:
            self._live = Live(console=self.console, refresh_per_second=2, transient=True)
            self._live.start()

    def update(self, snap: dict) -> None:
        self.rates.update(snap)
        if self._live is not None:
            self._live.update(component_table(snap, self.rates))
        elif not self.quiet and time.monotonic() >= self._next_plain:
            self._next_plain = time.monotonic() + PLAIN_EVERY_SECS
            print(plain_line(snap, self.rates), flush=True)

    def stop(self) -> None:
        if self._live is not None:
            self._live.stop()
            self._live = None

    def summary(self, snap: dict) -> None:
        """The final state, printed whether or not the view was live."""
        if self.interactive:
            self.console.print(component_table(snap))
            return
        top = snap["topology"]
        lat = top["complete_latency_ms"]
        print(f"topology {top['name']}: ran {top['uptime_s']:.1f}s, "
              f"spout tuples acked={top['spout_tuples_acked']} "
              f"failed={top['spout_tuples_failed']} timed_out={top['spout_tuples_timed_out']}, "
              f"complete latency p50={_ms(lat['p50'])} ms p99={_ms(lat['p99'])} ms")
        for cid, c in snap["components"].items():
            print(f"  {cid}: tasks={c['tasks']} emitted={c['emitted']} "
                  f"executed={c['executed']} acked={c['acked']} failed={c['failed']} "
                  f"restarts={c['restarts']} errors={c['errors']}")
        sys.stdout.flush()
