"""A wrong field count on a stream nobody subscribes to goes unnoticed, as in Storm (which checks
the count only when it builds a copy for a target task); on a subscribed stream it is a fault."""

from __future__ import annotations

import logging
from types import SimpleNamespace

import pytest

from host.runtime.acker import Acker
from host.runtime.data_path import DataPath
from host.runtime.link import Fault
from host.runtime.router import Router
from host.topology import TopologyBuilder
from multilang.messages import Emit


def make_path(strict: bool = False) -> tuple[DataPath, list]:
    b = TopologyBuilder("t")
    b.spout("spout", ["python", "-c", "pass"], outputs=["sentence"])
    b.bolt(
        "count", ["python", "-c", "pass"], outputs={"default": ["word"], "side": ["word"]}
    ).shuffle("spout")
    b.bolt("sink", ["python", "-c", "pass"], outputs=[]).shuffle("count", stream="side")
    router = Router(b.build(), {"spout": [1], "count": [2, 3], "sink": [4]})
    path = DataPath(router, Acker(30, lambda: 0.0), acking=True)
    path.strict = strict
    seen: list = []
    return path, seen


def link(task: int, seen: list) -> SimpleNamespace:
    observe = SimpleNamespace(log=lambda *args: seen.append(args))
    return SimpleNamespace(
        cid="count",
        task=task,
        name=f"count[{task}]",
        routes={},
        log=SimpleNamespace(pid=9, observe=observe),
    )


def emit(values: list, stream: str = "default") -> Emit:
    return Emit(values, stream, (), None, False, None)


@pytest.mark.parametrize("strict", [False, True])
def test_a_wrong_count_on_an_unsubscribed_stream_goes_nowhere(caplog, strict):
    path, seen = make_path(strict)
    caplog.set_level(logging.WARNING)
    tasks = [link(2, seen), link(3, seen)]
    for _ in range(3):
        for task in tasks:
            assert path.targets(task, emit(["w", 1])) == []  # type: ignore[arg-type]
            assert path.targets(task, emit(["w"])) == []  # type: ignore[arg-type]
    warnings = [r.getMessage() for r in caplog.records]
    if strict:  # once per component and stream, whatever the tasks and emits
        assert len(warnings) == 1 and len(seen) == 1
        assert warnings[0].startswith("count[2] pid=9: emit of 2 values to stream 'default'")
        assert "nobody subscribes" in warnings[0]
    else:
        assert warnings == [] and seen == []


def test_a_wrong_count_on_a_subscribed_stream_is_a_fault():
    path, seen = make_path()
    task = link(2, seen)
    assert path.targets(task, emit(["w"], "side")) == [4]  # type: ignore[arg-type]
    with pytest.raises(Fault, match="emit of 2 values to stream 'side', which declares 1 fields"):
        path.targets(task, emit(["w", 1], "side"))  # type: ignore[arg-type]


def test_an_undeclared_stream_is_still_a_fault():
    path, seen = make_path()
    with pytest.raises(Fault, match="stream 'nope', which 'count' does not declare"):
        path.targets(link(2, seen), emit(["w", 1], "nope"))  # type: ignore[arg-type]
