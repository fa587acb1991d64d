"""What `python -m host validate` says about a topology's DRPC functions (docs/drpc.md): which
functions it serves and where, and a linear topology's chain. Text only; the CLI prints it."""

from __future__ import annotations

from host.topology.batch_group import batch_group, role
from host.topology.model import BATCH_BOLT, Topology
from host.topology.settings import Settings, settings_for


def drpc_url(host: str, port: int) -> str:
    """`http://HOST:PORT`, an IPv6 address in brackets."""
    shown = f"[{host}]" if ":" in host else host
    return f"http://{shown}:{port}"


def served_on(settings: Settings) -> str:
    """Where the DRPC server will listen, as configured (port 0: a free port, known once it
    listens)."""
    if settings.drpc_port == 0:
        return f"a free port of {settings.drpc_bind} (port 0)"
    return drpc_url(settings.drpc_bind, settings.drpc_port)


def drpc_lines(topology: Topology) -> list[str]:
    """The lines `validate` adds for a topology with DRPC functions (none without):
    `DRPC functions: exclaim, served on http://127.0.0.1:3774`, and for a linear DRPC topology its
    chain, its finish-batch bolts marked."""
    functions = topology.drpc_functions
    if not functions:
        return []
    lines = [
        f"DRPC functions: {', '.join(functions)}, served on {served_on(settings_for(topology))}"
    ]
    if topology.is_linear_drpc:
        chain = " -> ".join(
            f"{m} (finish_batch)" if role(topology.component(m)) == BATCH_BOLT else m
            for m in batch_group(topology)
        )
        lines.append(f"linear DRPC chain: {chain}")
    return lines
