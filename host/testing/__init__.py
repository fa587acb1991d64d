"""Test a topology, or one component, without a cluster: real subprocesses, deterministic inputs.

Public API (also available as pytest fixtures, see `host.testing.pytest_plugin`):

`run_topology(topology, inputs=None, until=None, timeout=30.0, clock=None, *, config=None,
              strict=False)`
    Runs `topology` (a Topology, a TopologyBuilder, or the path of a topology file) through the
    real `host.runtime.supervisor.Supervisor`, every component a real subprocess, and returns a
    `TopologyResult`: what every component emitted, per stream; which spout message ids were
    acked, failed and timed out; the host's log lines (component logs, errors, faults); restarts;
    the final stats snapshot.

    `inputs` maps a component id to a list of tuples fed *in place of that component*: the
    component's command is replaced (in a copy of the frozen topology, `dataclasses.replace`) by a
    small Python spout, started by the harness like any component, that emits exactly those
    tuples with message ids 0..n-1, one after another, and does nothing else (a failed or
    timed-out tuple is reported in the result, never replayed). Its id, streams, fields,
    parallelism and every subscription to it are unchanged, so downstream components see the
    same source component, stream and fields as in production. Each tuple is a list of values
    (on the component's `default` stream, or on its only stream when it declares just one) or a
    mapping `{"values": [...], "stream": "name"}`. With parallelism > 1 the tasks share the
    tuples (task k emits tuples k, k+p, k+2p, ...). Inputs for a *bolt* replace that bolt the
    same way: it becomes a spout emitting the given tuples as if the bolt had emitted them, so
    the part of the topology downstream of it can be tested alone. A spout left with no
    subscriber because everything it fed was replaced is silenced (it emits nothing), so an
    endless spout upstream cannot keep the run from ending.

    The run ends at the first of the following, and then stops as `python -m host local` does:
    the spouts are deactivated, what is in flight gets the drain grace period, and every process
    is stopped in stages (stdin closed, SIGTERM, SIGKILL). `result.stopped_because` says which:
    - "quiescent", when `until` is not given: nothing in flight (the acker holds no tuple tree,
      no bolt task has a tuple pending or queued, no spout command is waiting for its `sync`,
      every task is running) and every spout idle (a replaced spout has emitted all its tuples;
      any other spout answered its last three `next`s without emitting). A bolt that never acks
      a tuple keeps the topology from ever being quiescent: give `until` then;
    - "until": `until(result_so_far)` returned true (checked after every turn of the event loop,
      so keep it cheap; `result.quiescent` tells whether the topology is quiet at that moment);
    - "failure": a component was declared fatal by the host (restarted too often);
    - "timeout": `timeout` real seconds passed; then nothing is drained (whatever is in flight is
      stuck) and nothing is raised.
    Ctrl-C (SIGINT) or SIGTERM during a run stops it the same graceful way.

`run_component(command, tuples=(), *, kind="bolt", conf=None, context=None, cwd=None,
               timeout=10, ...)`
    Runs one component process with a scripted stand-in host (`ComponentPeer`): handshake, then
    for a bolt each tuple in turn, waiting until the bolt acks or fails it (answering task-id
    requests meanwhile); for a spout `activate`, `nexts` times `next` followed by an `ack` (or
    `fail`, see `respond`) of every message id it emitted, then `deactivate`. Then stdin is
    closed and the exit status collected. Returns a `ComponentResult`: emits (with anchors,
    streams, direct tasks, task-id requests), acks, fails, logs, errors, metrics, stderr, exit
    code, and the transcript of the whole exchange (`->` host to component, `<-` component to
    host, in the format of `tests/transcripts/`).

`FakeClock`
    A clock that moves only when told (`advance(seconds)`) or when the harness moves it.
    `run_topology(..., clock=FakeClock())` runs the host on it: the harness then drives
    `Supervisor.step()` itself and, whenever the components have gone quiet, moves the fake time
    straight to the host's next timer, one housekeeping period (1 s) at most. So a tuple that
    times out after `topology.message.timeout.secs=30` does so in a fraction of a second of real
    time, with every heartbeat, tick and timeout happening at the fake times it would happen at.

    What the fake clock controls: every timer of the *host*: heartbeats and housekeeping (every
    second), tick tuples (`topology.tick.tuple.freq.secs`), message timeouts
    (`topology.message.timeout.secs`), liveness (`topology.subprocess.timeout.secs`), the
    handshake timeout, restart back-off, the back-off of idle spouts, the drain grace period at
    stop, and the times in the stats (uptime, complete latency).
    What it cannot control: the components' own time. A component that sleeps, reads its own
    clock or runs its own timers does so in real time; process start-up and pipe I/O take real
    time. Fake time moves only while every component is quiet (no message from any of them for
    `FakeClock.autojump_threshold` real seconds, 5 ms by default); while a component owes the
    host an answer (the handshake's pid, a heartbeat's `sync`, a spout command's `sync`) it is
    held for up to `FakeClock.stall_threshold` (0.25 s) of real time per fake second, so a slow
    component is not declared hung in fake time, yet a hung one still is (a 30 s
    `topology.subprocess.timeout.secs` then takes about 8 real seconds). Idle spouts are asked for
    their `next` once per fake-time step rather than every few fake milliseconds. After the
    run is stopped, fake time follows real time, so that the staged shutdown (grace, SIGTERM,
    SIGKILL) is bounded; it is frozen again when `run_topology` returns.

`ComponentPeer`, `make_context`
    The scripted host stand-in for one component process that `run_component` is built on, for
    tests that need to drive the exchange message by message.
"""

from __future__ import annotations

from host.testing.clock import FakeClock
from host.testing.component_run import run_component
from host.testing.peer import ComponentPeer, heartbeat, make_context, tick
from host.testing.results import ComponentResult, Emitted, LogLine, TopologyResult
from host.testing.topology_run import run_topology

__all__ = [
    "ComponentPeer",
    "ComponentResult",
    "Emitted",
    "FakeClock",
    "LogLine",
    "TopologyResult",
    "heartbeat",
    "make_context",
    "run_component",
    "run_topology",
    "tick",
]
