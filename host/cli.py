"""`python -m host`: run and check topologies. User errors are one line and an exit code, never a
traceback: 0 clean, 1 runtime failure, 2 bad topology or usage."""

from __future__ import annotations

import json
import logging
import os
import sys

import click

from .errors import TopologyError

EXIT_OK, EXIT_RUNTIME, EXIT_TOPOLOGY = 0, 1, 2


def _load(path: str, overrides: tuple[str, ...] = ()):
    from .config import parse_overrides, with_overrides
    from .topology import load

    try:
        topology = load(path)
        return with_overrides(topology, parse_overrides(overrides))
    except TopologyError as exc:
        click.echo(f"error: {exc}", err=True)
        sys.exit(EXIT_TOPOLOGY)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
def main() -> None:
    """Run Apache Storm multilang topologies (bash, Node, Python, ... components) locally."""


@main.command()
@click.argument("topology", type=click.Path(exists=True, dir_okay=False))
@click.option("--duration", type=click.FloatRange(min=0), metavar="SECONDS",
              help="Stop after this many seconds (default: run until Ctrl-C).")
@click.option("--stats-json", type=click.Path(dir_okay=False, writable=True), metavar="PATH",
              help="Write the run's statistics as JSON here when it ends.")
@click.option("--quiet", is_flag=True, help="No live view; only warnings, errors and the summary.")
@click.option("-c", "--config", "overrides", multiple=True, metavar="KEY=VALUE",
              help="Override a topology config key (repeatable), e.g. -c topology.debug=true.")
def local(topology: str, duration: float | None, stats_json: str | None, quiet: bool,
          overrides: tuple[str, ...]) -> None:
    """Run TOPOLOGY (our YAML or a Python file) on this machine."""
    from .supervisor import Supervisor
    from .view import LiveView

    model = _load(topology, overrides)
    view = LiveView(quiet=quiet)
    view.setup_logging()
    supervisor = Supervisor(model)
    supervisor.on_report = view.update
    view.start()
    try:
        code = supervisor.run(duration)
    except Exception:  # a bug in the host itself: say so, and still clean up what we can
        view.stop()
        logging.getLogger("host").exception("the host failed")
        sys.exit(EXIT_RUNTIME)
    finally:
        view.stop()
    snap = supervisor.snapshot()
    if stats_json:
        tmp = f"{stats_json}.tmp"
        with open(tmp, "w", encoding="utf-8") as fh:
            json.dump(snap, fh, indent=2)
        os.replace(tmp, stats_json)
    view.summary(snap)
    if supervisor.failure:
        click.echo(f"error: {supervisor.failure}", err=True)
    sys.exit(code)


@main.command()
@click.argument("topology", type=click.Path(exists=True, dir_okay=False))
@click.option("-c", "--config", "overrides", multiple=True, metavar="KEY=VALUE")
def validate(topology: str, overrides: tuple[str, ...]) -> None:
    """Check TOPOLOGY without running it."""
    model = _load(topology, overrides)
    tasks = sum(c.parallelism for c in model.components)
    click.echo(f"{topology}: ok: topology '{model.name}', {len(model.spouts)} spout(s), "
               f"{len(model.bolts)} bolt(s), {tasks} task(s)")
