"""Spouts whose library does not announce `pipeline/1` get one command at a time, as under
Storm's ShellSpout: an asynchronous spout in the style of storm.js (tests/integration/components/
async/callback_spout.js) never runs two commands at once, keeps its own rate limit, and gets
`deactivate` right after the command in flight when the run stops (docs/protocol.md, "Protocol
extensions")."""

from __future__ import annotations

from pathlib import Path

import pytest

from host.runtime.supervisor import Supervisor
from host.topology import TopologyBuilder

HERE = Path(__file__).parent
CALLBACK_SPOUT = HERE / "components" / "async" / "callback_spout.js"
SINK = HERE / "components" / "host" / "sink_bolt.py"
PERIOD_MS = 100  # callback_spout.js's rate limit: one tuple per `next`, which lasts this long


def run_callback_spout(tmp_path: Path, seconds: float, pipelining: bool | None) -> tuple:
    probe = tmp_path / "probe"
    b = TopologyBuilder("t", config={"host.shutdown.grace.secs": 2})
    b.spout("spout", ["node", str(CALLBACK_SPOUT), str(probe)], ["s"], pipelining=pipelining)
    b.bolt("sink", ["python", str(SINK), str(tmp_path / "sink")], outputs=[]).shuffle("spout")
    sup = Supervisor(b.build(base_dir=tmp_path))
    assert sup.run(seconds) == 0
    commands: list[tuple[str, int]] = []
    emit_ms: list[int] = []
    for line in probe.read_text().splitlines():
        kind, a, b_ = line.split()
        if kind == "cmd":
            commands.append((a, int(b_)))
        else:
            emit_ms.append(int(b_))
    return sup, commands, emit_ms


def test_a_storm_js_style_spout_runs_one_command_at_a_time_and_keeps_its_rate(tmp_path):
    seconds = 3.0
    sup, commands, emit_ms = run_callback_spout(tmp_path, seconds, pipelining=None)
    names = [name for name, _ in commands]
    assert names[0] == "activate" and names.count("next") >= 2  # it ran
    assert max(in_progress for _, in_progress in commands) == 1
    # its rate limit holds: a `next` lasts PERIOD_MS and the next one waits for its sync
    gaps = [b - a for a, b in zip(emit_ms, emit_ms[1:])]
    assert min(gaps) >= PERIOD_MS - 1, gaps  # hrtime rounded down to the millisecond
    assert len(emit_ms) <= seconds * 1000 / PERIOD_MS + 1
    # on stop: nothing after `deactivate`, which came (its hook ran) right after the last `next`
    assert names[-1] == "deactivate" and names[-2] in ("next", "ack", "fail")
    acked = sup.snapshot()["topology"]["spout_tuples_acked"]
    assert acked >= len(emit_ms) - 1  # the last may still be in flight when the run stops


def test_the_pipelining_switch_on_that_spout_runs_its_commands_concurrently(tmp_path):
    # what lock-step protects it from: with commands written ahead it runs several at once, as
    # storm.js spouts did under the host before (the switch is for libraries that answer in order)
    _, commands, _ = run_callback_spout(tmp_path, 2.0, pipelining=True)
    assert max(in_progress for _, in_progress in commands) > 1


@pytest.mark.parametrize("pipelining", [None, False])
def test_our_python_spout_announces_pipelining_and_the_switch_turns_it_off(tmp_path, pipelining):
    b = TopologyBuilder("t", config={"host.shutdown.grace.secs": 2})
    spout = HERE / "components" / "python" / "spout.py"
    b.spout("spout", ["python", str(spout)], ["kind", "n"], pipelining=pipelining)
    b.bolt("sink", ["python", str(SINK), str(tmp_path / "sink")], outputs=[]).shuffle("spout")
    sup = Supervisor(b.build(base_dir=tmp_path))
    sup.start()
    link = sup.spouts[0]
    while not link.running:
        sup.step(max_wait=0.5)
    assert link.pipelined is (pipelining is None)
    sup.request_stop("test")
    while sup.step(max_wait=0.5):
        pass
    sup.finish()
