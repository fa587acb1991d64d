"""`python -m host drpc FUNCTION ARGS`: call a DRPC function of a running topology and print its
result (docs/drpc.md §4). Exit status: 0 a result, 1 an error answer, 2 no answer (nothing at
the URL, a lost connection, --timeout) or bad usage; as host/cli.py, never a traceback."""

from __future__ import annotations

import sys

import click

from host.drpc.client import DEFAULT_URL, DRPCClient, DRPCConnectionError, DRPCError

EXIT_OK, EXIT_ERROR_ANSWER, EXIT_NO_ANSWER = 0, 1, 2


@click.command("drpc")
@click.argument("function")
@click.argument("args")
@click.option(
    "--url",
    default=DEFAULT_URL,
    show_default=True,
    metavar="URL",
    help="The DRPC server (the host logs its URL when it starts).",
)
@click.option(
    "--timeout",
    type=click.FloatRange(min=0, min_open=True),
    default=None,
    metavar="SECS",
    help="Give up after this many seconds without an answer (default: wait as long as the "
    "server does, its drpc.request.timeout.secs).",
)
def drpc(function: str, args: str, url: str, timeout: float | None) -> None:
    """Call the DRPC function FUNCTION with ARGS and print its result.

    ARGS `-` reads the arguments from stdin, as they are (UTF-8; `echo` adds a newline, `printf
    %s` does not). Arguments that start with `-` go after `--`.

    \b
        python -m host drpc exclaim hello
        printf %s 'a/b c' | python -m host drpc exclaim -
        python -m host drpc reach -- -1
    """
    if args == "-":
        args = _read_stdin()
    try:
        client = DRPCClient(url, timeout=timeout)
    except ValueError as exc:
        click.echo(f"error: --url: {exc}", err=True)
        sys.exit(EXIT_NO_ANSWER)
    try:
        with client:
            result = client.execute(function, args)
    except DRPCError as exc:
        click.echo(f"{exc.type}: {exc.message}", err=True)
        sys.exit(EXIT_ERROR_ANSWER)
    except DRPCConnectionError as exc:  # DRPCTimeoutError too
        click.echo(f"error: {exc}", err=True)
        sys.exit(EXIT_NO_ANSWER)
    except ValueError as exc:  # an empty function name
        click.echo(f"error: {exc}", err=True)
        sys.exit(EXIT_NO_ANSWER)
    # bytes, exactly: click.echo would strip ANSI escapes from a result when stdout is no terminal
    sys.stdout.buffer.write(result.encode("utf-8") + b"\n")
    sys.stdout.buffer.flush()
    sys.exit(EXIT_OK)


def _read_stdin() -> str:
    if sys.stdin.isatty():
        click.echo("reading the arguments from stdin; end with Ctrl-D", err=True)
    data = sys.stdin.buffer.read()
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        click.echo(f"error: the arguments on stdin are not UTF-8: {exc}", err=True)
        sys.exit(EXIT_NO_ANSWER)
