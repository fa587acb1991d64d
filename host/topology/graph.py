"""A picture of a topology: Graphviz DOT text, rendered to SVG or PNG by `dot` when installed.

Spouts are yellow boxes, bolts blue rounded boxes; each shows its id, its number of tasks and
what it runs (the command, the Storm class a built-in stands for, or, for DRPC's parts that run
inside the host, the Storm class and its function with "in host"). Every subscription is an
edge from the source to the bolt, labelled with the grouping (and its fields) and, when it is not
`default`, the stream. Direct groupings are dashed, all-groupings bold.
"""

from __future__ import annotations

import shutil
import subprocess

from host.topology.flux_java import builtin_for_command
from host.topology.model import (
    ALL,
    DIRECT,
    DRPC_REQUEST,
    DRPC_RESULT,
    DRPC_SPOUT,
    GROUPINGS_WITH_FIELDS,
    RETURN_RESULTS,
    Component,
    Input,
    Topology,
)
from multilang.messages import DEFAULT_STREAM

FORMATS = ("dot", "svg", "png")
COMMAND_LABEL_CHARS = 48

_SPOUT_STYLE = 'shape=box, style="filled", fillcolor="#fff2b3"'
_BOLT_STYLE = 'shape=box, style="rounded,filled", fillcolor="#d6e9ff"'


class GraphError(Exception):
    """The picture cannot be made (e.g. Graphviz is missing)."""


def quote(text: str) -> str:
    """A DOT double-quoted string; `\\n` in `text` stays a real line break in the label."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def _tasks(n: int) -> str:
    return f"{n} task" if n == 1 else f"{n} tasks"


def in_host_label(c: Component) -> str | None:
    """What a DRPC part run inside the host stands for, e.g. `DRPCSpout(exclaim), in host`
    (docs/drpc.md §3); None for a component that runs a command."""
    if c.in_host is None:
        return None
    name = _IN_HOST_NAMES.get(c.in_host, c.in_host)
    function = f"({c.drpc_function})" if c.drpc_function else ""
    return f"{name}{function}, in host"


# Storm's classes for the parts (a linear topology's ends are its PrepareRequest and JoinResult,
# with ReturnResults for the answer)
_IN_HOST_NAMES = {
    DRPC_SPOUT: "DRPCSpout",
    RETURN_RESULTS: "ReturnResults",
    DRPC_REQUEST: "PrepareRequest",
    DRPC_RESULT: "JoinResult",
}


def _runs(c: Component) -> str:
    in_host = in_host_label(c)
    if in_host is not None:
        return in_host
    builtin = builtin_for_command(c.command)
    if builtin is not None:
        return f"{builtin.short_name} (built-in)"
    text = " ".join(c.command)
    return text if len(text) <= COMMAND_LABEL_CHARS else text[: COMMAND_LABEL_CHARS - 3] + "..."


def _node(c: Component) -> str:
    kind = "spout" if c.is_spout else "bolt"
    label = f"{c.id}\n{kind} · {_tasks(c.parallelism)}\n{_runs(c)}"
    style = _SPOUT_STYLE if c.is_spout else _BOLT_STYLE
    return f"  {quote(c.id)} [{style}, label={quote(label)}];"


def edge_label(inp: Input) -> str:
    """`shuffle`, `fields(word)`, `partial_key(a, b)`, prefixed with `[stream]` when not the
    default stream."""
    grouping = inp.grouping.type
    if inp.grouping.type in GROUPINGS_WITH_FIELDS:
        grouping += f"({', '.join(inp.grouping.fields)})"
    return grouping if inp.stream == DEFAULT_STREAM else f"[{inp.stream}] {grouping}"


def _edge(bolt: Component, inp: Input) -> str:
    attrs = [f"label={quote(edge_label(inp))}"]
    if inp.grouping.type == DIRECT:
        attrs.append('style="dashed"')
    elif inp.grouping.type == ALL:
        attrs.append('style="bold"')
    return f"  {quote(inp.source)} -> {quote(bolt.id)} [{', '.join(attrs)}];"


def to_dot(topology: Topology) -> str:
    """The topology as a DOT digraph, spouts ranked first, left to right."""
    lines = [
        f"digraph {quote(topology.name)} {{",
        "  rankdir=LR;",
        f"  label={quote(f'topology {topology.name}')};",
        "  labelloc=t;",
        '  fontname="Helvetica";',
        '  node [fontname="Helvetica", fontsize=11];',
        '  edge [fontname="Helvetica", fontsize=10];',
    ]
    if topology.spouts:
        lines.append(
            "  { rank=source; " + " ".join(quote(c.id) + ";" for c in topology.spouts) + " }"
        )
    lines += [_node(c) for c in topology.components]
    lines += [_edge(bolt, inp) for bolt in topology.bolts for inp in bolt.inputs]
    lines.append("}")
    return "\n".join(lines) + "\n"


def find_dot() -> str | None:
    """Graphviz's `dot` on PATH, or None."""
    return shutil.which("dot")


def render(dot_text: str, fmt: str) -> bytes:
    """DOT text -> the picture in `fmt` (dot: the text itself; svg, png: through Graphviz)."""
    if fmt not in FORMATS:
        raise GraphError(f"unknown format {fmt!r}; formats are: {', '.join(FORMATS)}")
    if fmt == "dot":
        return dot_text.encode("utf-8")
    program = find_dot()
    if program is None:
        raise GraphError(
            f"{fmt} needs Graphviz's 'dot', which is not installed: install it "
            f"(e.g. 'apt-get install graphviz') or use --format dot"
        )
    result = subprocess.run(
        [program, f"-T{fmt}"], input=dot_text.encode("utf-8"), capture_output=True, timeout=60
    )
    if result.returncode != 0:
        detail = result.stderr.decode("utf-8", "replace").strip()
        raise GraphError(f"dot failed with exit status {result.returncode}: {detail}")
    return result.stdout
