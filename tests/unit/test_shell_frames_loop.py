"""`shell-frames/1` in the event loop (multilang/shell_frames.py): the host offers it to every
JSON component, switches a task to shell frames when its pid reply takes them, rewrites what was
queued for it before, and writes the handshake of a restarted process in JSON again. Over fake
children and the fake clock (tests/unit/fake_children.py); real bash components take the frames
in tests/integration/test_bash_client.py (its `shell-frames` runs)."""

from __future__ import annotations

import json

from host.runtime.lifecycle import State
from host.runtime.supervisor import Supervisor
from host.testing import FakeClock
from multilang.codec import END
from multilang.messages import Handshake, SpoutCommand
from multilang.shell_frames import EXT, OFFER_ENV, command
from tests.unit.fake_children import FakeChild, FakeLauncher, spout_and_bolt

TAKEN = [f"{EXT};chars"]
JOINED = [f"{EXT};chars;joined"]  # what our bash library announces


class Run:
    def __init__(self) -> None:
        self.clock = FakeClock()
        self.launcher = FakeLauncher()
        self.sup = Supervisor(
            spout_and_bolt({"topology.subprocess.timeout.secs": 600}),
            clock=self.clock,
            launcher=self.launcher,
        )  # type: ignore[arg-type]
        self.sup.start()
        self.steps()

    def steps(self, n: int = 6) -> None:
        for _ in range(n):
            self.sup.step(max_wait=0)

    def child(self, name: str) -> FakeChild:
        return self.launcher.last(name)

    def state(self, name: str) -> State:
        return next(t.state for t in self.sup.tasks.values() if t.link.cid == name)

    def spout_emits(self, words: list[str]) -> None:
        """The spout (JSON: it does not take the frames) answers `next`s with one word each."""
        spout = self.child("spout")
        left = list(words)
        for _ in range(100):
            for m in spout.received():
                if type(m) is SpoutCommand:
                    if m.command == "next" and left:
                        spout.send(command="emit", tuple=[left.pop(0)], need_task_ids=False)
                    spout.send(command="sync")
            self.steps()
            if not left:
                return
        raise AssertionError(f"the spout was not asked for {left}")

    def restarted_bolt(self, took: list[str] = TAKEN) -> FakeChild:
        """The bolt's process once it took the frames (`took`: its pid reply's extensions) and
        exited, started again (after the restart back-off, on the fake clock), its handshake
        read."""
        bolt, spout = self.child("bolt"), self.child("spout")
        spout.received()
        spout.send(pid=spout.pid)
        bolt.received()
        bolt.send(pid=bolt.pid, ext=took)
        self.steps()
        bolt.exit(1)
        for _ in range(50):
            self.clock.advance(0.5)
            self.steps()
            if self.child("bolt") is not bolt:
                break
        again = self.child("bolt")
        assert again is not bolt, "not restarted"
        # JSON, though the link now writes shell frames
        assert type(again.received()[0]) is Handshake
        return again

    def close(self) -> None:
        for child in self.launcher.children:
            child.exit(0)
        self.sup.finish()


def _tuples(data: bytes) -> list[tuple[str, list[str]]]:
    """(handler, arguments) of each shell frame in `data`: `_ml_T 'id' '"id"' ...`."""
    out = []
    while data:
        n = int(data[:10])
        code = data[10 : 10 + n].decode()
        data = data[10 + n :]
        handler, _, rest = code.partition(" ")
        out.append((handler, [a.strip("'") for a in rest.split(" ")]))
    return out


def test_queued_tuples_are_rewritten_when_the_bolt_takes_shell_frames() -> None:
    run = Run()
    try:
        bolt, spout = run.child("bolt"), run.child("spout")
        assert bolt.env[OFFER_ENV] == EXT and spout.env[OFFER_ENV] == EXT  # offered to all
        assert type(bolt.received()[0]) is Handshake  # in JSON, as Storm writes it
        spout.received()
        spout.send(pid=spout.pid)  # the spout takes nothing: JSON it stays
        run.steps()
        run.spout_emits(["a", "b'c"])  # routed while the bolt has not answered: queued
        assert run.state("bolt") is State.STARTING and bolt.received_bytes() == b""
        bolt.send(pid=bolt.pid, ext=["pipeline/1", *TAKEN])
        run.steps()
        written = bolt.received_bytes()
        tuples = _tuples(written)
        task = next(t.link.task for t in run.sup.tasks.values() if t.link.cid == "spout")
        assert [(h, a[2:5]) for h, a in tuples] == [("_ml_T", ["spout", "default", str(task)])] * 2
        # byte for byte what the library's jq program would have written for the JSON tuple
        for (_, args), word in zip(tuples, ["a", "b'c"], strict=True):
            tid = args[0]
            msg = {"id": tid, "comp": "spout", "stream": "default", "task": task, "tuple": [word]}
            assert command(msg, True, False) in written
        # and what is routed from now on is written in shell frames at once
        run.spout_emits(["d"])
        assert [a[5] for _, a in _tuples(bolt.received_bytes())] == ["d"]
        assert any(m.command == "next" for m in spout.received() if type(m) is SpoutCommand)
    finally:
        run.close()


def test_a_restarted_bolt_gets_its_handshake_in_json_and_takes_the_frames_again() -> None:
    run = Run()
    try:
        again = run.restarted_bolt()
        run.spout_emits(["x"])  # queued in shell frames while it starts
        again.send(pid=again.pid, ext=TAKEN)
        run.steps()
        assert [a[5] for _, a in _tuples(again.received_bytes())] == ["x"]
    finally:
        run.close()


def test_a_process_that_no_longer_takes_the_frames_is_refused_with_what_was_queued() -> None:
    run = Run()
    try:
        again = run.restarted_bolt()
        run.spout_emits(["x"])  # queued as shell frames
        again.send(pid=again.pid)  # and this process reads JSON only
        run.steps()
        assert run.state("bolt") is not State.RUNNING
        assert again.received_bytes() == b""  # nothing it could not read was written
    finally:
        run.close()


def test_tuples_written_at_once_to_a_bolt_that_reads_joined_frames_go_in_one() -> None:
    run = Run()
    try:
        bolt, spout = run.child("bolt"), run.child("spout")
        bolt.received()
        spout.received()
        spout.send(pid=spout.pid)
        run.steps()
        run.spout_emits(["a", "b", "c"])  # queued while the bolt has not answered
        bolt.send(pid=bolt.pid, ext=JOINED)
        run.steps()
        written = bolt.received_bytes()
        assert len(written) == 10 + int(written[:10])  # one frame (ASCII: characters = bytes)
        commands = written[10:].decode().split("\n")  # one a line
        assert [c.split(" ")[0] for c in commands] == ["_ml_T"] * 3
        assert [c.rsplit(" ", 1)[1] for c in commands] == ["'a'", "'b'", "'c'"]
    finally:
        run.close()


def test_a_restarted_bolt_may_take_the_frames_without_joining_them() -> None:
    # What was queued for a process that read joined frames is one frame a tuple until written,
    # so a successor that reads them one by one gets it as well.
    run = Run()
    try:
        again = run.restarted_bolt(took=JOINED)
        run.spout_emits(["x", "y"])
        again.send(pid=again.pid, ext=TAKEN)
        run.steps()
        assert run.state("bolt") is State.RUNNING
        assert [a[5] for _, a in _tuples(again.received_bytes())] == ["x", "y"]
    finally:
        run.close()


def test_a_json_frame_is_rewritten_as_the_jq_program_would() -> None:
    from multilang.shell_frames import shell_frames

    frame = json.dumps({"command": "next", "id": ""}).encode() + END
    assert shell_frames(True).from_json(frame) == b"0000000020_ml_C 'next' '' '\"\"'"
