"""`python -m host`: run and check topologies. User errors are one line and an exit code, never a
traceback: 0 clean, 1 runtime failure, 2 bad topology or usage."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

import click

from host.component_command import test_component as test_component_command
from host.drpc.command import drpc as drpc_command
from host.errors import EXIT_RUNTIME, EXIT_TOPOLOGY, TopologyError
from host.spark.command import spark as spark_command
from host.topology.drpc_info import drpc_lines

if TYPE_CHECKING:  # imported where used: `python -m host validate` starts no runtime
    from host.observe.snapshot import Snapshot
    from host.observe.view import LiveView
    from host.observe.web.server import WebUI
    from host.topology.model import Topology


_Command = TypeVar("_Command", bound=Callable[..., Any])


def _load(
    path: str,
    overrides: tuple[str, ...] = (),
    env_filter: bool = False,
    state_dir: str | None = None,
) -> Topology:
    from host.topology.files import load
    from host.topology.overrides import parse_overrides, with_overrides
    from host.topology.setting_checks import directory_path
    from host.topology.settings import STATE_DIR

    try:
        topology = load(path, env_filter=env_filter)
        config = parse_overrides(overrides)
        if state_dir is not None:  # wins over -c host.state.dir=...; absolute, as it was meant
            try:
                config[STATE_DIR] = directory_path(state_dir, "--state-dir")
            except ValueError as exc:  # a URL: docs/spark.md §6.1
                raise TopologyError(str(exc)) from None
        return with_overrides(topology, config)
    except TopologyError as exc:
        click.echo(f"error: {exc}", err=True)
        sys.exit(EXIT_TOPOLOGY)


def _env_filter_option(command: _Command) -> _Command:
    """`-e/--env-filter`, as Flux's: replace ${ENV-NAME} in the file with environment variable
    NAME before parsing."""
    return click.option(
        "-e",
        "--env-filter",
        "env_filter",
        is_flag=True,
        help="Replace ${ENV-NAME} in the topology file with the environment "
        "variable NAME (as Flux's -e).",
    )(command)


def _state_dir_option(command: _Command) -> _Command:
    """`--state-dir DIR`: host.state.dir, where transactional topologies keep their batches'
    state (docs/transactional.md §3)."""
    return click.option(
        "--state-dir",
        "state_dir",
        type=click.Path(file_okay=False),
        metavar="DIR",
        help="Keep transactional topologies' state here (host.state.dir; default "
        "$XDG_STATE_HOME/multilang-host, else ~/.local/state/multilang-host).",
    )(command)


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


main.add_command(drpc_command)  # `drpc FUNCTION ARGS`: call a DRPC function (docs/drpc.md §4)
main.add_command(
    spark_command
)  # `spark TOPOLOGY`: a transactional topology on Spark (docs/spark.md)
main.add_command(test_component_command)  # `test-component CMD...`: one component, scripted


@main.command()
@click.argument("topology", type=click.Path(exists=True, dir_okay=False))
@click.option(
    "--duration",
    type=click.FloatRange(min=0),
    metavar="SECONDS",
    help="Stop after this many seconds (default: run until Ctrl-C).",
)
@click.option(
    "--stats-json",
    type=click.Path(dir_okay=False, writable=True),
    metavar="PATH",
    help="Write the run's statistics as JSON here when it ends.",
)
@click.option("--quiet", is_flag=True, help="No live view; only warnings, errors and the summary.")
@click.option(
    "-c",
    "--config",
    "overrides",
    multiple=True,
    metavar="KEY=VALUE",
    help="Override a topology config key (repeatable), e.g. -c topology.debug=true.",
)
@click.option(
    "--strict",
    is_flag=True,
    help="Report protocol misuse per message instead of restarting the component.",
)
@click.option(
    "--ui",
    "ui_port",
    type=click.IntRange(0, 65535),
    is_flag=False,
    flag_value=8765,
    default=None,
    metavar="[PORT]",
    help="Serve a web UI on http://127.0.0.1:PORT/ while the topology runs (PORT "
    "defaults to 8765; 0 picks a free port).",
)
@click.option(
    "--drpc-bind",
    metavar="HOST[:PORT]",
    help="Serve a DRPC topology's functions on this address (default 127.0.0.1 and "
    "drpc.http.port, 3774; port 0 picks a free port). See docs/drpc.md.",
)
@_env_filter_option
@_state_dir_option
def local(
    topology: str,
    duration: float | None,
    stats_json: str | None,
    quiet: bool,
    overrides: tuple[str, ...],
    env_filter: bool,
    strict: bool,
    ui_port: int | None,
    state_dir: str | None,
    drpc_bind: str | None,
) -> None:
    """Run TOPOLOGY (our YAML, a Flux YAML or a Python file) on this machine."""
    from host.observe.view import LiveView
    from host.runtime.supervisor import Supervisor

    if drpc_bind is not None:  # wins over -c host.drpc.bind=...
        overrides = (*overrides, f"host.drpc.bind={drpc_bind}")
    model = _load(topology, overrides, env_filter, state_dir)
    view = LiveView(quiet=quiet)
    view.setup_logging()
    ui = _start_ui(model, ui_port) if ui_port is not None else None
    if ui is not None:
        view.banner = f"web UI: {ui.url}"
    try:
        supervisor = Supervisor(model, strict=strict)
    except TopologyError as exc:  # the state directory refused it: before anything starts
        if ui is not None:
            ui.stop()
        click.echo(f"error: {exc}", err=True)
        sys.exit(EXIT_TOPOLOGY)
    if supervisor.drpc is not None:
        try:
            supervisor.listen()
        except OSError as exc:
            if ui is not None:
                ui.stop()
            url = supervisor.drpc.server.url
            click.echo(
                f"error: cannot serve DRPC on {url}: {exc.strerror or exc} "
                "(--drpc-bind 127.0.0.1:0 picks a free port)",
                err=True,
            )
            sys.exit(EXIT_RUNTIME)
        click.echo(
            f"DRPC server listening on {supervisor.drpc.server.url} "
            f"(functions: {', '.join(model.drpc_functions)})"
        )
    supervisor.on_report = view.update if ui is None else _report_to(view, ui)
    if ui is not None:
        ui.publish(supervisor.snapshot())
    view.start()
    try:
        code = supervisor.run(duration)
    except Exception:  # a bug in the host itself: say so, and still clean up what we can
        view.stop()
        logging.getLogger("host").exception("the host failed")
        sys.exit(EXIT_RUNTIME)
    finally:
        view.stop()
        if ui is not None:  # the web UI lives as long as the topology
            ui.stop()
    snap: Snapshot = supervisor.snapshot()
    if stats_json:
        tmp = f"{stats_json}.tmp"
        with open(tmp, "w", encoding="utf-8") as fh:
            json.dump(snap, fh, indent=2)
        os.replace(tmp, stats_json)
    view.summary(snap)
    if supervisor.failure:
        click.echo(f"error: {supervisor.failure}", err=True)
    sys.exit(code)


def _start_ui(model: Topology, port: int) -> WebUI:
    """The web UI's server (host.observe.web), listening on 127.0.0.1 before the topology starts."""
    from host.observe.web.server import HOST, WebUI

    try:
        ui = WebUI(model, port=port)
    except OSError as exc:
        click.echo(
            f"error: cannot serve the web UI on {HOST}:{port}: {exc.strerror or exc} "
            "(--ui 0 picks a free port)",
            err=True,
        )
        sys.exit(EXIT_RUNTIME)
    ui.start()
    click.echo(f"web UI: {ui.url}")
    return ui


def _report_to(view: LiveView, ui: WebUI) -> Callable[[Snapshot], None]:
    """Each report to the live view, and to the web UI (which only keeps a reference)."""

    def report(snap: Snapshot) -> None:
        view.update(snap)
        ui.publish(snap)

    return report


@main.command()
@click.argument("topology", type=click.Path(exists=True, dir_okay=False))
@click.option("-c", "--config", "overrides", multiple=True, metavar="KEY=VALUE")
@_env_filter_option
@_state_dir_option
def validate(
    topology: str, overrides: tuple[str, ...], env_filter: bool, state_dir: str | None
) -> None:
    """Check TOPOLOGY without running it."""
    _log_warnings()
    model = _load(topology, overrides, env_filter, state_dir)
    tasks = sum(c.parallelism for c in model.components)
    click.echo(
        f"{topology}: ok: topology '{model.name}', {len(model.spouts)} spout(s), "
        f"{len(model.bolts)} bolt(s), {tasks} task(s)"
    )
    # the directory each component starts in: the rule differs by format (docs/flux.md §3.1)
    for c in model.components:
        runs = "runs inside the host" if c.in_host is not None else f"runs in {c.cwd}"
        click.echo(f"  {c.kind} {c.id}: {c.parallelism} task(s), {runs}")
    if model.transactional_id is not None:
        _echo_transactional(model)
    for line in drpc_lines(model):
        click.echo(f"  {line}")


def _echo_transactional(model: Topology) -> None:
    """A transactional topology's id, batch group (each member's role) and where its state is
    kept (docs/transactional.md §3)."""
    from host.topology.batch_group import batch_group, role
    from host.topology.settings import state_dir

    directory = state_dir(model)
    transactional_id = model.transactional_id or ""
    click.echo(f"  transactional id: {transactional_id}")
    members = ", ".join(f"{m} ({role(model.component(m))})" for m in batch_group(model))
    click.echo(f"  batch group: {members}")
    click.echo(f"  state directory: {directory}")
    click.echo(f"  its state: {os.path.join(directory, 'transactional', transactional_id)}")


@main.command("export-flux")
@click.argument("topology", type=click.Path(exists=True, dir_okay=False))
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False, writable=True),
    metavar="FILE",
    help="Write the Flux YAML here (default: stdout).",
)
@_env_filter_option
def export_flux(topology: str, output: str | None, env_filter: bool) -> None:
    """Write TOPOLOGY as Flux YAML that Apache Storm's Flux runs unchanged, e.g. with:

    \b
        storm jar <topology.jar> org.apache.storm.flux.Flux --remote FILE
    """
    from host.topology.export import export_flux as export

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
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False, writable=True),
    metavar="FILE",
    help="Write the picture here (default: stdout).",
)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["dot", "svg", "png"]),
    default=None,
    help="dot (Graphviz text, the default), or svg/png rendered by Graphviz's 'dot'; "
    "guessed from the -o file's suffix when not given.",
)
@_env_filter_option
def graph(topology: str, output: str | None, fmt: str | None, env_filter: bool) -> None:
    """Draw TOPOLOGY: components, streams, groupings and parallelism, as Graphviz DOT/SVG/PNG."""
    from host.topology.graph import GraphError, render, to_dot

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
