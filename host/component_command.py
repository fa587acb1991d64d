"""`python -m host test-component CMD...`: one component through a scripted exchange, its
transcript printed (the harness is host/testing/component_run.py). Exit status: 0 a clean
exchange, 1 the component exited non-zero, broke the protocol or ran out of time, 2 bad usage;
as host/cli.py, never a traceback."""

from __future__ import annotations

import json
import sys
from typing import Any

import click

from host.errors import EXIT_OK, EXIT_RUNTIME, EXIT_TOPOLOGY


@click.command(
    "test-component",
    context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False},
)
@click.option(
    "--bolt/--spout", "is_bolt", default=True, help="What the component is (default: a bolt)."
)
@click.option(
    "--conf",
    "conf_json",
    metavar="JSON",
    help="Config keys, a JSON object merged over the host's defaults in the handshake.",
)
@click.option(
    "--context",
    "context_json",
    metavar="JSON",
    help="The handshake context, a JSON object (default: one built like the host's).",
)
@click.option(
    "--nexts",
    type=click.IntRange(min=0),
    default=5,
    show_default=True,
    help="Spouts: how many `next` commands to send.",
)
@click.option(
    "--respond",
    type=click.Choice(["ack", "fail", "none"]),
    default="ack",
    show_default=True,
    help="Spouts: the answer to every message id emitted.",
)
@click.option(
    "--cwd",
    type=click.Path(exists=True, file_okay=False),
    help="Run the component in this directory.",
)
@click.option(
    "--serializer", type=click.Choice(["json", "msgpack"]), default="json", show_default=True
)
@click.option(
    "--timeout",
    type=click.FloatRange(min=0),
    default=30,
    show_default=True,
    help="Seconds the whole exchange may take.",
)
@click.option(
    "--reply-timeout",
    type=click.FloatRange(min=0),
    default=2,
    show_default=True,
    help="Seconds to wait for an answer before moving on (shown as `(timeout)`).",
)
@click.argument("command", nargs=-1, required=True, type=click.UNPROCESSED)
def test_component(
    is_bolt: bool,
    conf_json: str | None,
    context_json: str | None,
    nexts: int,
    respond: str,
    cwd: str | None,
    serializer: str,
    timeout: float,
    reply_timeout: float,
    command: tuple[str, ...],
) -> None:
    """Run one component, CMD..., through a scripted exchange and print its transcript: `->` what
    the host sent, `<-` what the component wrote. A bolt gets the tuples read from stdin, one JSON
    line each: an array of values, or {"values": [...], "stream": ..., "comp": ..., "task": ...,
    "id": ...}; each is sent when the previous one was acked or failed. A spout gets `activate`,
    `--nexts` times `next` with an ack (see --respond) of each message id it emits, and
    `deactivate`. Exit status 1 when the component exits non-zero, breaks the protocol or runs
    out of time.

    \b
        echo '["the cow jumped"]' | python -m host test-component -- bash split.sh
    """
    from host.testing import run_component

    conf = _json_object(conf_json, "--conf")
    context = _json_object(context_json, "--context")
    tuples = _stdin_tuples() if is_bolt else []
    try:
        result = run_component(
            list(command),
            tuples,
            kind="bolt" if is_bolt else "spout",
            conf=conf,
            context=context,
            cwd=cwd,
            timeout=timeout,
            serializer=serializer,
            nexts=nexts,
            respond=None if respond == "none" else respond,
            reply_timeout=reply_timeout,
        )
    except OSError as exc:
        click.echo(f"error: cannot start {list(command)!r}: {exc.strerror or exc}", err=True)
        sys.exit(EXIT_TOPOLOGY)
    sys.stdout.write(result.transcript_text)
    sys.stdout.flush()
    failed = (
        result.exit_code != 0
        or result.protocol_error is not None
        or result.timed_out
        or result.pid is None
    )
    sys.exit(EXIT_RUNTIME if failed else EXIT_OK)


def _json_object(text: str | None, option: str) -> dict[str, Any] | None:
    if text is None:
        return None
    try:
        value = json.loads(text)
    except ValueError as exc:
        click.echo(f"error: {option}: not JSON: {exc}", err=True)
        sys.exit(EXIT_TOPOLOGY)
    if not isinstance(value, dict):
        click.echo(f"error: {option}: expected a JSON object, got {text!r}", err=True)
        sys.exit(EXIT_TOPOLOGY)
    return value


def _stdin_tuples() -> list[list[Any] | dict[str, Any]]:
    """Bolt input tuples, one JSON line each (blank lines skipped)."""
    if sys.stdin.isatty():
        click.echo("reading tuples from stdin, one JSON line each; end with Ctrl-D", err=True)
    tuples = []
    for n, line in enumerate(sys.stdin, start=1):
        if not line.strip():
            continue
        try:
            value = json.loads(line)
        except ValueError as exc:
            click.echo(f"error: stdin line {n}: not JSON: {exc}", err=True)
            sys.exit(EXIT_TOPOLOGY)
        if not isinstance(value, (list, dict)) or (
            isinstance(value, dict) and "values" not in value
        ):
            click.echo(
                f"error: stdin line {n}: expected an array of values or an object with "
                f'"values", got {line.strip()[:200]}',
                err=True,
            )
            sys.exit(EXIT_TOPOLOGY)
        tuples.append(value)
    return tuples
