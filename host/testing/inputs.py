"""`run_topology(..., inputs=...)`: every component named in `inputs` is replaced, in a copy of
the topology, by a small Python spout that emits exactly the given tuples."""

from __future__ import annotations

import dataclasses
import json
import os
import sys
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import multilang
from host.topology.model import SPOUT, Component, Topology

# Run by the harness in place of a component given `inputs`: emits the tuples of the JSON file
# named by argv[1] ([[stream, values], ...]) with message ids = their index, this task's share
# only, a few per `next`, and nothing else (no replay: outcomes are the host's to report).
_FIXED_SPOUT = '''\
"""A fixed-input spout started by host.testing: emits the tuples listed in argv[1]."""
import json
import sys

from multilang import Spout

PER_NEXT = 10


class FixedInputs(Spout):
    def initialize(self, conf, context):
        with open(sys.argv[1], encoding="utf-8") as fh:
            items = json.load(fh)
        me = context["componentid"]
        tasks = sorted(int(t) for t, c in context["task->component"].items() if c == me)
        share, index = len(tasks), tasks.index(int(context["taskid"]))
        self.todo = [(i, s, v) for i, (s, v) in enumerate(items) if i % share == index]
        self.todo.reverse()

    def next_tuple(self):
        for _ in range(PER_NEXT):
            if not self.todo:
                return
            msg_id, stream, values = self.todo.pop()
            self.emit(values, id=msg_id, stream=stream)


FixedInputs().run()
'''


# (stream, values) of one tuple fed in a component's place
Item = tuple[str, list[Any]]


def _input_items(comp: Component, tuples: Iterable[Any]) -> list[Item]:
    """`inputs` entries -> (stream, values), checked against what the component declares, so
    that a mistake is one clear error here rather than a fault in the run."""
    if isinstance(tuples, (str, bytes, Mapping)):
        raise TypeError(f"inputs[{comp.id!r}] must be a list of tuples, got {tuples!r}")
    default = (
        "default"
        if "default" in comp.outputs or len(comp.outputs) != 1
        else next(iter(comp.outputs))
    )
    items: list[Item] = []
    for i, item in enumerate(tuples):
        where = f"inputs[{comp.id!r}][{i}]"
        if isinstance(item, Mapping):
            unknown = set(item) - {"values", "stream"}
            if unknown or "values" not in item:
                raise ValueError(
                    f"{where}: expected {{'values': [...], 'stream': ...}}, got {item!r}"
                )
            values, stream = item["values"], item.get("stream", default)
        else:
            values, stream = item, default
        if isinstance(values, (str, bytes, Mapping)) or not isinstance(values, Sequence):
            raise TypeError(f"{where}: a tuple is a list of values, got {values!r}")
        fields = comp.outputs.get(stream)
        if fields is None:
            declared = ", ".join(repr(s) for s in comp.outputs) or "none"
            raise ValueError(
                f"{where}: {comp.id!r} does not declare stream {stream!r} (declared: {declared})"
            )
        if len(values) != len(fields):
            raise ValueError(
                f"{where}: {len(values)} values for stream {stream!r} of "
                f"{comp.id!r}, which declares {len(fields)} fields {list(fields)}"
            )
        try:
            json.dumps(list(values))
        except (TypeError, ValueError) as exc:
            raise ValueError(f"{where}: values must be JSON values: {exc}") from None
        items.append((stream, list(values)))
    return items


def _fixed_spout(comp: Component, items: list[Item], workdir: Path) -> Component:
    program = workdir / "fixed_inputs_spout.py"
    if not program.exists():
        program.write_text(_FIXED_SPOUT, encoding="utf-8")
    data = workdir / f"inputs-{len(list(workdir.iterdir()))}.json"
    data.write_text(json.dumps([[s, v] for s, v in items]), encoding="utf-8")
    # `multilang` must be importable by the child even when the host runs from a source tree
    pythonpath = str(Path(multilang.__file__).resolve().parent.parent)
    if os.environ.get("PYTHONPATH"):
        pythonpath += os.pathsep + os.environ["PYTHONPATH"]
    return dataclasses.replace(
        comp,
        kind=SPOUT,
        command=(sys.executable, str(program), str(data)),
        inputs=(),
        env={"PYTHONPATH": pythonpath},
        serializer="json",
        heartbeats=True,
        activate=True,
    )


def with_inputs(
    topology: Topology, inputs: Mapping[str, Iterable[Any]], workdir: Path
) -> tuple[Topology, dict[str, list[Item]]]:
    """The topology with every component named in `inputs` replaced by a fixed-input spout, and
    spouts that now feed nobody silenced; plus the items per replaced component."""
    ids = [c.id for c in topology.components]
    fixed: dict[str, list[Item]] = {}
    for cid, tuples in inputs.items():
        if cid not in ids:
            raise ValueError(
                f"inputs names {cid!r}, which is not a component of topology "
                f"{topology.name!r} (components: {', '.join(ids)})"
            )
        fixed[cid] = _input_items(topology.component(cid), tuples)
    if not fixed:
        return topology, fixed
    replaced = [
        _fixed_spout(c, fixed[c.id], workdir) if c.id in fixed else c for c in topology.components
    ]
    feeds = {i.source for c in replaced for i in c.inputs}
    fed_before = {i.source for c in topology.components for i in c.inputs}
    for n, c in enumerate(replaced):
        if c.is_spout and c.id not in fixed and c.id in fed_before and c.id not in feeds:
            fixed[c.id] = []
            replaced[n] = _fixed_spout(c, [], workdir)
    return dataclasses.replace(topology, components=tuple(replaced)), fixed
