"""`python -m host`: run and check topologies. User errors are one line and an exit code, never a
traceback: 0 clean, 1 runtime failure, 2 bad topology or usage."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys

import click

from .errors import TopologyError

EXIT_OK, EXIT_RUNTIME, EXIT_TOPOLOGY = 0, 1, 2


def _load(path: str, overrides: tuple[str, ...] = (), env_filter: bool = False):
    from .config import parse_overrides, with_overrides
    from .topology import load

    try:
        topology = load(path, env_filter=env_filter)
        return with_overrides(topology, parse_overrides(overrides))
    except TopologyError as exc:
        click.echo(f"error: {exc}", err=True)
        sys.exit(EXIT_TOPOLOGY)


def _env_filter_option(command):
    """`-e/--env-filter`, as Flux's: replace ${ENV-NAME} in the file with environment variable
    NAME before parsing."""
    return click.option("-e", "--env-filter", "env_filter", is_flag=True,
                        help="Replace ${ENV-NAME} in the topology file with the environment "
                             "variable NAME (as Flux's -e).")(command)


def _log_warnings() -> None:
    """Loader and exporter warnings (left-out bolts, dropped settings) as `warning: ...` lines on
    stderr, for the commands that have no live view."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("warning: %(message)s"))
    handler.setLevel(logging.WARNING)
    logging.getLogger("host").addHandler(handler)


def _write_output(data: bytes, output: str | None) -> None:
    """To `output` (replaced atomically) or to stdout."""
    if output is None:
        sys.stdout.buffer.write(data)
        sys.stdout.buffer.flush()
        return
    tmp = f"{output}.tmp"
    try:
        with open(tmp, "wb") as fh:
            fh.write(data)
        os.replace(tmp, output)
    except OSError as exc:
        click.echo(f"error: cannot write {output}: {exc}", err=True)
        sys.exit(EXIT_RUNTIME)


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
@click.option("--strict", is_flag=True,
              help="Report protocol misuse per message instead of restarting the component.")
@_env_filter_option
def local(topology: str, duration: float | None, stats_json: str | None, quiet: bool,
          overrides: tuple[str, ...], env_filter: bool, strict: bool) -> None:
    """Run TOPOLOGY (our YAML, a Flux YAML or a Python file) on this machine."""
    from .supervisor import Supervisor
    from .view import LiveView

    model = _load(topology, overrides, env_filter)
    view = LiveView(quiet=quiet)
    view.setup_logging()
    supervisor = Supervisor(model, strict=strict)
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
@_env_filter_option
def validate(topology: str, overrides: tuple[str, ...], env_filter: bool) -> None:
    """Check TOPOLOGY without running it."""
    _log_warnings()
    model = _load(topology, overrides, env_filter)
    tasks = sum(c.parallelism for c in model.components)
    click.echo(f"{topology}: ok: topology '{model.name}', {len(model.spouts)} spout(s), "
               f"{len(model.bolts)} bolt(s), {tasks} task(s)")


@main.command("export-flux")
@click.argument("topology", type=click.Path(exists=True, dir_okay=False))
@click.option("-o", "--output", type=click.Path(dir_okay=False, writable=True), metavar="FILE",
              help="Write the Flux YAML here (default: stdout).")
@_env_filter_option
def export_flux(topology: str, output: str | None, env_filter: bool) -> None:
    """Write TOPOLOGY as Flux YAML that Apache Storm's Flux runs unchanged, e.g. with:

    \b
        storm jar <topology.jar> org.apache.storm.flux.Flux --remote FILE
    """
    from .export import export_flux as export

    _log_warnings()
    model = _load(topology, env_filter=env_filter)
    try:
        text = export(model)
    except TopologyError as exc:
        click.echo(f"error: {exc}", err=True)
        sys.exit(EXIT_TOPOLOGY)
    _write_output(text.encode("utf-8"), output)


_GRAPH_SUFFIXES = {".dot": "dot", ".gv": "dot", ".svg": "svg", ".png": "png"}


@main.command()
@click.argument("topology", type=click.Path(exists=True, dir_okay=False))
@click.option("-o", "--output", type=click.Path(dir_okay=False, writable=True), metavar="FILE",
              help="Write the picture here (default: stdout).")
@click.option("--format", "fmt", type=click.Choice(["dot", "svg", "png"]), default=None,
              help="dot (Graphviz text, the default), or svg/png rendered by Graphviz's 'dot'; "
                   "guessed from the -o file's suffix when not given.")
@_env_filter_option
def graph(topology: str, output: str | None, fmt: str | None, env_filter: bool) -> None:
    """Draw TOPOLOGY: components, streams, groupings and parallelism, as Graphviz DOT/SVG/PNG."""
    from .graph import GraphError, render, to_dot

    if fmt is None:
        suffix = os.path.splitext(output)[1].lower() if output else ""
        fmt = _GRAPH_SUFFIXES.get(suffix, "dot")
    if fmt == "png" and output is None and sys.stdout.isatty():
        click.echo("error: PNG is binary: give -o FILE or redirect stdout", err=True)
        sys.exit(EXIT_TOPOLOGY)
    _log_warnings()
    model = _load(topology, env_filter=env_filter)
    try:
        data = render(to_dot(model), fmt)
    except (GraphError, OSError, subprocess.SubprocessError) as exc:
        click.echo(f"error: {exc}", err=True)
        sys.exit(EXIT_RUNTIME)
    _write_output(data, output)
