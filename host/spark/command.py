"""`python -m host spark TOPOLOGY`: run a transactional topology on Spark, each micro-batch one
transaction (docs/spark.md §4). Exit codes as `python -m host`'s: 0 clean, 1 runtime failure,
2 bad topology or usage. Until host/cli.py registers it, `python -m host.spark.command` runs it.
"""

from __future__ import annotations

import logging
import os
import sys

import click

from host.errors import EXIT_OK, EXIT_RUNTIME, EXIT_TOPOLOGY, HostError, TopologyError


@click.command("spark")
@click.argument("topology", type=click.Path(exists=True, dir_okay=False))
@click.option(
    "--master",
    metavar="URL",
    help="Spark master (default: spark.master in the topology's config, else local[*]).",
)
@click.option(
    "--checkpoint",
    type=click.Path(file_okay=False),
    metavar="DIR",
    help="Where the query's checkpoint and the batches' state live (default "
    "<host.state.dir>/spark/<transactional id>). A shared path on a real cluster.",
)
@click.option(
    "--trigger",
    "trigger_secs",
    type=click.FloatRange(min=0),
    default=1.0,
    show_default=True,
    metavar="SECS",
    help="Processing-time trigger: a micro-batch at most every SECS seconds.",
)
@click.option("--explain", is_flag=True, help="Print the plan and exit; nothing starts.")
@click.option(
    "--max-batches",
    type=click.IntRange(min=1),
    metavar="N",
    help="Stop after N micro-batches committed (default: run until Ctrl-C or SIGTERM).",
)
@click.option(
    "--max-restarts",
    type=click.IntRange(min=0),
    default=3,
    show_default=True,
    metavar="N",
    help="Restart a failed query from its checkpoint up to N times in a row.",
)
@click.option(
    "-c",
    "--config",
    "overrides",
    multiple=True,
    metavar="KEY=VALUE",
    help="Override a topology config key (repeatable), e.g. -c spark.master=local[2].",
)
@click.option(
    "-e",
    "--env-filter",
    "env_filter",
    is_flag=True,
    help="Replace ${ENV-NAME} in the topology file with the environment variable NAME.",
)
def spark(
    topology: str,
    master: str | None,
    checkpoint: str | None,
    trigger_secs: float,
    explain: bool,
    max_batches: int | None,
    max_restarts: int,
    overrides: tuple[str, ...],
    env_filter: bool,
) -> None:
    """Run TOPOLOGY (a transactional one, or one whose spout is a plain spout) as a Spark
    Structured Streaming query, each micro-batch a transaction (docs/spark.md)."""
    from host.spark.explain import explain as explain_text
    from host.spark.plan import plan as make_plan
    from host.topology.files import load
    from host.topology.overrides import parse_overrides, with_overrides
    from host.topology.targets import SPARK

    _log_to_stderr()
    try:
        # validated for Spark, where every spout is transactional: committers may follow a
        # plain spout (host.topology.targets)
        loaded = load(topology, env_filter=env_filter, target=SPARK)
        model = with_overrides(loaded, parse_overrides(overrides))
        plan = make_plan(model)
        if explain:
            click.echo(explain_text(plan, master), nl=False)
            sys.exit(EXIT_OK)
        from host.spark.engine import SparkEngine, default_checkpoint

        engine = SparkEngine(
            plan,
            checkpoint or default_checkpoint(plan),
            master=master,
            trigger_secs=trigger_secs,
            max_batches=max_batches,
            max_restarts=max_restarts,
            echo=click.echo,
        )
    except TopologyError as exc:
        click.echo(f"error: {exc}", err=True)
        sys.exit(EXIT_TOPOLOGY)
    click.echo(
        f"{topology}: running on Spark ({engine.settings['spark.master']}), checkpoint "
        f"{engine.checkpoint}"
    )
    engine.install_signal_handlers()
    try:
        engine.run()
    except TopologyError as exc:  # refused once Spark could look: a streaming input's source
        click.echo(f"error: {exc}", err=True)
        sys.exit(EXIT_TOPOLOGY)
    except HostError as exc:
        click.echo(f"error: {exc}", err=True)
        sys.exit(EXIT_RUNTIME)
    click.echo(
        f"stopped: {engine.committed} micro-batch(es) committed, {engine.skipped} skipped as "
        f"committed before, {engine.restarts} restart(s)"
        + (f", {engine.idle_batches} idle with no txid" if engine.idle_batches else "")
    )
    sys.exit(EXIT_OK)


def _log_to_stderr() -> None:
    """The engine's and the components' tagged lines (logger `host.spark`) on stderr."""
    logger = logging.getLogger("host")
    if not logger.handlers:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
        logger.addHandler(handler)
        logger.setLevel(os.environ.get("HOST_LOG_LEVEL", "INFO"))


if __name__ == "__main__":
    spark()
