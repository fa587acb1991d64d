"""The Spark driver's `SpoutProcess` (host/spark/spout_process.py) bounds the `next`s in flight to
an idle pipelining spout as `host local`'s SpoutLink does (host/runtime/idle_backoff.py,
docs/protocol.md §5.1): the real class, a fake child played by the test and the fake clock."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from host.spark.spout_process import SpoutProcess
from host.testing import FakeClock
from multilang.messages import PIPELINE_EXT, Handshake, SpoutCommand
from tests.unit.fake_children import FakeChild, FakeLauncher, spout_and_bolt

DEPTH = 4


class AnsweringLauncher(FakeLauncher):
    """Its child has written its pid reply (announcing `pipeline/1`) before the host reads, so
    `SpoutProcess.start` returns at once."""

    def start(self, argv: list[str], cwd: str, env: dict) -> FakeChild:
        child = super().start(argv, cwd, env)
        child.send(pid=child.pid, ext=[PIPELINE_EXT])
        return child


class Played:
    """The spout process and the test's side of its child: what was written and not answered."""

    def __init__(self) -> None:
        topology = spout_and_bolt({"host.spout.next.depth": DEPTH})
        self.clock = FakeClock()
        self.launcher = AnsweringLauncher()
        self.proc = SpoutProcess(
            topology,
            "spout",
            topology_spout_task(topology),
            clock=self.clock,
            launcher=self.launcher,  # type: ignore[arg-type]
        )
        self.proc.start()
        self.child = self.launcher.last("spout")
        first = self.child.received()
        assert type(first[0]) is Handshake
        self.nexts = 0  # `next`s written and not yet answered
        self.pump()
        assert self.nexts == 1, "lock-step until a `next` has emitted (emits_per_next unknown)"

    def pump(self) -> None:
        """Two turns of the driver's loop, neither waiting."""
        for _ in range(2):
            self.proc.pump(True, 0.0)
            for m in self.child.received():
                if type(m) is SpoutCommand and m.command == "next":
                    self.nexts += 1
                elif type(m) is SpoutCommand and m.command == "activate":
                    self.child.send(command="sync")

    def answer(self, emit: str | None = None) -> None:
        """The oldest `next` is answered, with one emit or none."""
        assert self.nexts > 0
        if emit is not None:
            self.child.send(command="emit", tuple=[emit], id=emit, need_task_ids=False)
        self.child.send(command="sync")
        self.nexts -= 1


def topology_spout_task(topology: object) -> int:
    from host.runtime.context import assign_tasks

    return assign_tasks(topology).tasks_of("spout")[0]  # type: ignore[arg-type]


@pytest.fixture
def played() -> Iterator[Played]:
    p = Played()
    yield p
    p.child.exit(0)
    p.proc.kill()


def test_an_idle_spout_is_asked_one_next_at_a_time_and_the_whole_depth_after_an_emit(played):
    p = played
    p.answer(emit="m1")
    p.pump()
    assert p.nexts == DEPTH  # it emits: a whole round
    for _ in range(
        DEPTH
    ):  # the round comes back empty: a paced spout's, waited for and asked again
        p.answer()
    p.pump()
    assert p.nexts == 0  # the first wait (1 ms)
    p.clock.advance(1.0)
    p.pump()
    assert p.nexts == DEPTH  # a whole round again: one empty round is not idleness
    for _ in range(DEPTH):
        p.answer()
    for _ in range(3):  # idle: one `next` per wait, never a round
        p.pump()
        assert p.nexts == 0
        p.clock.advance(1.0)
        p.pump()
        assert p.nexts == 1
        p.answer()
    p.pump()
    p.clock.advance(1.0)
    p.pump()
    assert p.nexts == 1
    p.answer(emit="m2")
    p.pump()
    assert p.nexts == DEPTH  # the first emit brings the whole depth back
