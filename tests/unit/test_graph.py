"""host.topology.graph: the topology as Graphviz DOT text, and as SVG/PNG through Graphviz's `dot` (which
`make tools` installs)."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from host.cli import main
from host.topology import TopologyBuilder, graph, load
from host.topology.graph import GraphError, edge_label, quote, render, to_dot
from host.topology.model import Grouping, Input

FLUX = Path(__file__).parent / "flux"


@pytest.fixture
def topology(tmp_path: Path):
    for name in ("spout.py", "bolt.py"):
        (tmp_path / name).write_text("# dummy\n")
    b = TopologyBuilder("demo")
    b.spout(
        "sentences", ["python", "spout.py"], outputs={"default": ["sentence"], "alerts": ["level"]}
    )
    b.bolt(
        'sp"lit',
        ["python", "bolt.py", "--a-rather-long-option-that-will-be-shortened"],
        outputs=["word"],
        parallelism=3,
    ).shuffle("sentences")
    b.bolt(
        "count",
        ["python", "-m", "components.storm_builtins.test_word_counter"],
        outputs=["word", "count"],
        parallelism=2,
    ).fields('sp"lit', "word")
    b.bolt("sink", ["python", "bolt.py"]).global_("count").all(
        "sentences", stream="alerts"
    ).partial_key('sp"lit', "word")
    b.bolt("direct", ["python", "bolt.py"]).direct("sentences", stream="alerts")
    return b.build(tmp_path)


def test_dot_shows_components_parallelism_streams_and_groupings(topology):
    dot = to_dot(topology)
    assert dot.startswith('digraph "demo" {\n') and dot.endswith("}\n")
    lines = dot.splitlines()
    node = next(line for line in lines if line.startswith('  "sentences" ['))
    assert 'fillcolor="#fff2b3"' in node  # spouts and bolts look different
    assert 'label="sentences\\nspout · 1 task\\npython spout.py"' in node
    split = next(line for line in lines if line.startswith('  "sp\\"lit" ['))
    assert 'style="rounded,filled"' in split and "bolt · 3 tasks" in split
    assert "python bolt.py --a-rather-long-option-that-wi..." in split
    count = next(line for line in lines if line.startswith('  "count" ['))
    assert "TestWordCounter (built-in)" in count and "bolt · 2 tasks" in count
    edges = [line for line in lines if " -> " in line]
    assert edges == [
        '  "sentences" -> "sp\\"lit" [label="shuffle"];',
        '  "sp\\"lit" -> "count" [label="fields(word)"];',
        '  "count" -> "sink" [label="global"];',
        '  "sentences" -> "sink" [label="[alerts] all", style="bold"];',
        '  "sp\\"lit" -> "sink" [label="partial_key(word)"];',
        '  "sentences" -> "direct" [label="[alerts] direct", style="dashed"];',
    ]
    assert '{ rank=source; "sentences"; }' in dot


@pytest.mark.parametrize(
    "grouping, stream, label",
    [
        (Grouping("fields", ("a", "b")), "default", "fields(a, b)"),
        (Grouping("local_or_shuffle"), "s", "[s] local_or_shuffle"),
        (Grouping("none"), "default", "none"),
    ],
)
def test_edge_labels(grouping, stream, label):
    assert edge_label(Input("x", stream, grouping)) == label


def test_quote_escapes_for_dot():
    assert quote('a "b" \\ c\nd') == '"a \\"b\\" \\\\ c\\nd"'


def test_render_svg_and_png_with_graphviz(topology):
    svg = render(to_dot(topology), "svg").decode()
    assert "<svg" in svg and "sentences" in svg and "TestWordCounter" in svg
    assert render(to_dot(topology), "png").startswith(b"\x89PNG")
    assert render("digraph x {}\n", "dot") == b"digraph x {}\n"


def test_svg_without_graphviz_is_a_clear_error(topology, monkeypatch):
    monkeypatch.setattr(graph, "find_dot", lambda: None)
    with pytest.raises(GraphError) as info:
        render(to_dot(topology), "svg")
    assert "'dot'" in str(info.value) and "--format dot" in str(info.value)
    assert render(to_dot(topology), "dot")  # DOT text needs no Graphviz


def test_graph_cli_on_a_flux_file(tmp_path):
    runner = CliRunner()
    result = runner.invoke(main, ["graph", str(FLUX / "groupings.yaml")])
    assert result.exit_code == 0, result.output
    assert result.output.startswith('digraph "groupings" {')
    assert '"source" -> "partial" [label="partial_key(word)"];' in result.output
    out = tmp_path / "picture.svg"  # the format follows the file's suffix
    result = runner.invoke(main, ["graph", str(FLUX / "builtins.yaml"), "-o", str(out)])
    assert result.exit_code == 0, result.output
    assert "<svg" in out.read_text()
    result = runner.invoke(
        main,
        ["graph", str(FLUX / "builtins.yaml"), "--format", "png", "-o", str(tmp_path / "p.out")],
    )
    assert result.exit_code == 0 and (tmp_path / "p.out").read_bytes().startswith(b"\x89PNG")


def test_graph_cli_without_graphviz(monkeypatch):
    monkeypatch.setattr(graph, "find_dot", lambda: None)
    result = CliRunner().invoke(main, ["graph", str(FLUX / "builtins.yaml"), "--format", "svg"])
    assert result.exit_code == 1
    assert result.output.startswith("error: svg needs Graphviz's 'dot'")


def test_graph_of_a_native_topology_file():
    root = Path(__file__).resolve().parents[2]
    dot = to_dot(load(root / "examples" / "wordcount" / "topology.yaml"))
    assert '"count" -> "report" [label="global"];' in dot
