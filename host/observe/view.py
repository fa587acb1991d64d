"""What the user sees while a topology runs: a live table on a terminal, periodic plain lines
otherwise, and a summary at the end (drawn by `host.observe.render`). Reads snapshots
(`host.observe.snapshot.Snapshot`); owns no state of the run.

The live view is redrawn from the event loop's own thread (`update`, every report), never by a
background refresh thread: one render every half second, a few milliseconds, and no thread
competing with the loop for the GIL.
"""

from __future__ import annotations

import logging
import sys
import time
from typing import TextIO

from rich.console import Console
from rich.live import Live
from rich.logging import RichHandler

from host.observe.batch_panel import batch_section
from host.observe.component_table import Rates, component_table
from host.observe.render import (
    drpc_line,
    failure_block,
    failure_lines,
    live_renderable,
    plain_line,
    summary_lines,
)
from host.observe.snapshot import FailureReport, Snapshot

PLAIN_EVERY_SECS = 5.0

FailureKey = tuple[float, str, int, int | None]


def _failure_key(f: FailureReport) -> FailureKey:
    return (f["time"], f["component"], f["task"], f["pid"])


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
        self._seen_failures: set[FailureKey] = set()
        self._out = plain_out
        self._err = plain_err
        self.banner: str | None = None  # a line above the live table, e.g. the web UI's URL

    def setup_logging(self, level: int = logging.INFO) -> None:
        root = logging.getLogger()
        for old in list(root.handlers):
            root.removeHandler(old)
        handler: logging.Handler
        if self.interactive:
            handler = RichHandler(
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

    def update(self, snap: Snapshot) -> None:
        if self.quiet:
            return
        self.rates.update(snap)
        self._new_failures(snap)
        if self._live is not None:
            self._live.update(live_renderable(snap, self.rates, self.banner), refresh=True)
        elif time.monotonic() >= self._next_plain:
            self._next_plain = time.monotonic() + PLAIN_EVERY_SECS
            print(plain_line(snap, self.rates), file=self._out or sys.stdout, flush=True)

    def _new_failures(self, snap: Snapshot) -> None:
        failures = snap["failures"]
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

    def summary(self, snap: Snapshot) -> None:
        """The final state, printed whether or not the view was live."""
        if self.interactive:
            self.console.print(component_table(snap))
            batches = batch_section(snap)
            if batches is not None:
                self.console.print(batches)
            if "drpc" in snap:
                self.console.print(drpc_line(snap["drpc"]))
            return
        out = self._out or sys.stdout
        for line in summary_lines(snap):
            print(line, file=out)
        out.flush()
