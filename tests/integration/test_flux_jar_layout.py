"""A Flux topology laid out as its jar is (the Flux file beside `resources/`) runs every shell
component in `resources/`, whatever its command, as Storm does (docs/flux.md §3.1): a package
run with `python -m`, a runner that imports a dotted name from its directory (the shape of
`streamparse_run pkg.Spout`), each finding its module and a data file relative to its cwd."""

from __future__ import annotations

import textwrap
from pathlib import Path

from host.topology import load

LINES = ["first line", "second line", "third line"]

SPOUT = '''\
"""Emits each line of data.txt, opened relative to the working directory, with its number."""
from multilang import Spout


class Lines(Spout):
    def initialize(self, conf, context):
        with open("data.txt") as f:
            self.todo = list(enumerate(f.read().splitlines()))

    def next_tuple(self):
        if self.todo:
            i, line = self.todo.pop(0)
            self.emit([line], id=i)


Lines().run()
'''

BOLT = '''\
"""Upper-cases each line and says where it runs and what prefix.txt (beside it) holds."""
import os

from multilang import BasicBolt


class Upper(BasicBolt):
    def initialize(self, conf, context):
        with open("prefix.txt") as f:
            self.prefix = f.read().strip()

    def process(self, tup):
        self.emit([f"{self.prefix} {tup.values[0].upper()}", os.getcwd()])


Upper().run()
'''

# what `streamparse_run pkg.Spout` does: import a module by its dotted name from the cwd
RUNNER = "import runpy; runpy.run_module('mypkg.upper', run_name='__main__')"


def jar_layout(root: Path) -> Path:
    resources = root / "resources"
    (resources / "mypkg").mkdir(parents=True)
    (resources / "mypkg" / "__init__.py").write_text("")
    (resources / "mypkg" / "lines.py").write_text(SPOUT)
    (resources / "mypkg" / "upper.py").write_text(BOLT)
    (resources / "data.txt").write_text("\n".join(LINES) + "\n")
    (resources / "prefix.txt").write_text(">>\n")
    flux = root / "topology.yaml"
    flux.write_text(
        textwrap.dedent(f"""\
        name: jar-layout
        spouts:
          - id: lines
            className: org.apache.storm.flux.wrappers.spouts.FluxShellSpout
            constructorArgs: [[python, -m, mypkg.lines], [line]]
        bolts:
          - id: module
            className: org.apache.storm.flux.wrappers.bolts.FluxShellBolt
            constructorArgs: [[python, -m, mypkg.upper], [line, cwd]]
          - id: runner
            className: org.apache.storm.flux.wrappers.bolts.FluxShellBolt
            constructorArgs: [[python, -c, "{RUNNER}"], [line, cwd]]
        streams:
          - {{from: lines, to: module, grouping: {{type: SHUFFLE}}}}
          - {{from: lines, to: runner, grouping: {{type: SHUFFLE}}}}
        """)
    )
    return flux


def test_python_m_and_a_runner_find_their_module_and_data_in_resources(tmp_path, run_topology):
    flux = jar_layout(tmp_path)
    resources = str(tmp_path / "resources")
    # nothing of mypkg or data.txt is beside the topology file: only resources/ has them
    assert not (tmp_path / "mypkg").exists() and not (tmp_path / "data.txt").exists()
    topology = load(flux)
    assert {c.cwd for c in topology.components} == {resources}

    result = run_topology(topology, until=lambda r: len(r.acked.get("lines", [])) == len(LINES))

    assert sorted(result.acked["lines"]) == [0, 1, 2] and not result.failed
    expected = sorted([f">> {line.upper()}", resources] for line in LINES)
    assert sorted(result.values("module")) == expected
    assert sorted(result.values("runner")) == expected
    assert not any(result.restarts.values()) and result.errors == []
