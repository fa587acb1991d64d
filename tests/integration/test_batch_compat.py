"""What unmodified Storm client libraries do with the shapes of the `batch/1` extension
(docs/transactional.md §4, §8): the measurements behind the choice of those shapes.

Each library runs as a real subprocess (ComponentPeer: the real pipes, scripted frames): Storm's
own storm.py, storm.js and storm.rb (vendored unmodified in components/batch_compat/storm/, see
its README) and pystorm from PyPI. The user components (components/batch_compat/<library>/) log
`process [id, comp, stream, task, values]` for every tuple that reaches user code, and `next` for
every `next`; their library acks or syncs as it always does.

Replies are read as the raw JSON frames the library wrote (from the peer's transcript), not
through our decoder: some of them (storm.js's ack without an id) are protocol errors to the host,
and what is measured is what the library writes.

Ordering, not time, is what the assertions rest on: every library here handles its input one
message at a time, in order, and writes each reply before it reads the next message. So a
message's effect is pinned by a marker sent after it (a normal tuple, a `next`): whatever the
library answers to the first comes before the marker's answer. The one bounded wait is storm.js's
spout hang, see `test_storm_js_spout_never_syncs_an_unknown_command`.
"""

from __future__ import annotations

import json
import shutil
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from host.testing import ComponentPeer, make_context
from multilang.codec import ProtocolError, dumps

COMPONENTS = Path(__file__).resolve().parent / "components" / "batch_compat"

# How long storm.js's spout is watched for a `sync` it never writes. Not a timing dependency: the
# test's conclusion comes from the ordering check after it, this window only shows the host's
# view (a lock-step host waiting for that sync waits for ever).
HANG_WINDOW_S = 1.0


@dataclass(frozen=True)
class Library:
    name: str
    bolt: tuple[str, ...]
    spout: tuple[str, ...]
    banner: str | None = None  # a log line of its own the library writes after the pid reply


LIBRARIES = [
    Library("storm.py", ("python", "storm_py/bolt.py"), ("python", "storm_py/spout.py")),
    Library("storm.js", ("node", "storm_js/bolt.js"), ("node", "storm_js/spout.js")),
    Library("storm.rb", ("ruby", "storm_rb/bolt.rb"), ("ruby", "storm_rb/spout.rb")),
    Library(
        "pystorm",
        ("python", "pystorm/bolt.py"),
        ("python", "pystorm/spout.py"),
        banner="pystorm StormHandler logging enabled",
    ),
]
BY_NAME = {lib.name: lib for lib in LIBRARIES}
each_library = pytest.mark.parametrize("lib", LIBRARIES, ids=lambda lib: lib.name)

# pystorm builds a namedtuple per source stream from these fields: every test tuple has two values
BOLT_CONTEXT = make_context(
    taskid=3,
    componentid="bolt",
    outputs={"default": ["word"]},
    sources={"spout": {"default": ["word", "n"]}},
)
SPOUT_CONTEXT = make_context(
    taskid=1, componentid="spout", outputs={"default": ["word"]}, sources={}
)

# ---- the frames (docs/transactional.md §4.2, §4.3) ----------------------------------------------

TUPLE_WITH_TX = {
    "id": "-42",
    "comp": "spout",
    "stream": "default",
    "task": 1,
    "tuple": ["red", 1],
    "tx": {"txid": 7, "attempt": 2},
}
FINISH = {
    "id": "8823",
    "comp": None,
    "stream": "__heartbeat",
    "task": -1,
    "tuple": [],
    "batch": {"op": "finish", "txid": 7, "attempt": 2, "commit": False},
}
ABORT = {
    "id": "8824",
    "comp": None,
    "stream": "__heartbeat",
    "task": -1,
    "tuple": [],
    "batch": {"op": "abort", "txid": 7, "attempt": 2},
}
# the shape the extension does not use (design note §4.1): a stream of its own from __system
TUPLE_ON_BATCH_STREAM = {
    "id": "77",
    "comp": "__system",
    "stream": "__batch",
    "task": -1,
    "tuple": [7, 2],
}
# the other shape it does not use: a bolt command of its own
FINISH_BATCH_COMMAND = {"command": "finish_batch"}
# the marker: a normal tuple, sent after the message under test
AFTER = {"id": "9", "comp": "spout", "stream": "default", "task": 1, "tuple": ["after", 2]}

BATCH_EMIT = {
    "command": "batch_emit",
    "id": "",
    "tx": {"txid": 8, "attempt": 1},
    "meta": {"from": 800, "to": 900},
    "task_meta": None,
    "prev_task_meta": {"p0": 700},
    "committed": 7,
    "replay": False,
}
NEXT = {"command": "next", "id": ""}
SYNC = {"command": "sync"}


def frame(message: dict[str, Any]) -> bytes:
    return dumps(message).encode("utf-8") + b"\nend\n"


def processed(message: dict[str, Any]) -> dict[str, Any]:
    """What the user components log when `message` reaches their `process`."""
    seen = [message.get(k) for k in ("id", "comp", "stream", "task", "tuple")]
    return {"command": "log", "process": seen}


def ack(id: Any) -> dict[str, Any]:
    return {"command": "ack", "id": id}


# ---- driving a library --------------------------------------------------------------------------


class Wire:
    """A component's replies as the JSON frames it wrote, read from the peer's transcript (which
    keeps every frame, also those our decoder rejects; those rejections go to `rejected`). A
    `process ...` log becomes {"command": "log", "process": [...]}, the other logs keep `msg`."""

    def __init__(self, peer: ComponentPeer):
        """`peer` after its handshake: reading starts right after the pid reply, whose chunk
        may have brought more (pystorm's first log line), already in the transcript."""
        self.peer = peer
        replies = [i for i, line in enumerate(peer.transcript) if line.startswith("<- ")]
        assert json.loads(peer.transcript[replies[0]][3:]).keys() == {"pid"}
        self.seen = replies[0] + 1
        self.rejected: list[ProtocolError] = []

    def send(self, message: dict[str, Any]) -> None:
        self.peer.send_raw(frame(message))

    def _new(self) -> list[dict[str, Any]]:
        lines = self.peer.transcript[self.seen :]
        self.seen = len(self.peer.transcript)
        return [_readable(json.loads(line[3:])) for line in lines if line.startswith("<- ")]

    def _pump(self, seconds: float) -> None:
        try:
            self.peer._pump(seconds)  # the peer's own reader (tests/unit/test_transcripts.py too)
        except ProtocolError as exc:
            self.rejected.append(exc)

    def frames(self, count: int, timeout: float = 10) -> list[dict[str, Any]]:
        """The next `count` frames; AssertionError if they do not come within `timeout`."""
        got: list[dict[str, Any]] = []
        peer = self.peer
        deadline = _deadline(timeout)
        while len(got) < count and not peer.stdout_closed and _left(deadline) > 0:
            self._pump(min(_left(deadline), 0.5))
            got += self._new()
        assert len(got) >= count, f"wanted {count} frames, got {got}; stderr: {peer.stderr!r}"
        assert len(got) == count, f"more frames than the {count} expected: {got}"
        return got

    def during(self, seconds: float) -> list[dict[str, Any]]:
        """Every frame written within `seconds`."""
        deadline = _deadline(seconds)
        while not self.peer.stdout_closed and _left(deadline) > 0:
            self._pump(_left(deadline))
        return self._new()

    def until_exit(self, timeout: float = 10) -> tuple[list[dict[str, Any]], int]:
        """Every frame up to the end of its stdout, and its exit status (it exits on its own)."""
        deadline = _deadline(timeout)
        while not self.peer.stdout_closed and _left(deadline) > 0:
            self._pump(min(_left(deadline), 0.5))
        assert self.peer.stdout_closed, f"still running after {timeout}s"
        return self._new(), self.peer.proc.wait(timeout)


def _readable(frame: Any) -> Any:
    if isinstance(frame, dict) and frame.get("command") == "log":
        msg = frame.get("msg", "")
        if msg.startswith("process "):
            return {"command": "log", "process": json.loads(msg[len("process ") :])}
    return frame


def _deadline(seconds: float) -> float:
    return time.monotonic() + seconds


def _left(deadline: float) -> float:
    return deadline - time.monotonic()


def start(lib: Library, argv: tuple[str, ...], context: dict[str, Any]) -> Wire:
    # never skipped: `make tools` installs what is missing (ruby included, see the Makefile)
    if shutil.which(argv[0]) is None:
        pytest.fail(f"{argv[0]} is not installed: `make tools` installs it")
    peer = ComponentPeer(list(argv), cwd=str(COMPONENTS))
    try:
        peer.handshake(context=context)
        wire = Wire(peer)
        if lib.banner is not None:
            [banner] = wire.frames(1)
            assert banner["command"] == "log" and banner["msg"].startswith(lib.banner)
    except BaseException:
        peer.close()
        raise
    return wire


@pytest.fixture
def started():
    """Starts components (closed at the end of the test): `started(lib, lib.bolt, BOLT_CONTEXT)`."""
    wires: list[Wire] = []

    def run(lib: Library, argv: tuple[str, ...], context: dict[str, Any]) -> Wire:
        wires.append(start(lib, argv, context))
        return wires[-1]

    yield run
    for wire in wires:
        wire.peer.close()


@pytest.fixture
def bolt_of(started):
    return lambda lib: started(lib, lib.bolt, BOLT_CONTEXT)


@pytest.fixture
def spout_of(started):
    return lambda lib: started(lib, lib.spout, SPOUT_CONTEXT)


# ---- bolts: the shapes the extension uses -------------------------------------------------------


@each_library
def test_a_tuple_with_a_tx_key_is_processed_as_usual(lib, bolt_of):
    bolt = bolt_of(lib)
    bolt.send(TUPLE_WITH_TX)
    # the extra key is invisible: same values, same id, acked as any tuple
    seen = {"command": "log", "process": ["-42", "spout", "default", 1, ["red", 1]]}
    assert bolt.frames(2) == [seen, ack("-42")]


@each_library
@pytest.mark.parametrize("message", [FINISH, ABORT], ids=["finish", "abort"])
def test_a_heartbeat_shaped_batch_message_gets_sync_and_never_reaches_user_code(
    lib, message, bolt_of
):
    bolt = bolt_of(lib)
    bolt.send(message)
    bolt.send(AFTER)
    # the library answers it as a heartbeat; the next thing user code sees is the marker
    assert bolt.frames(3) == [SYNC, processed(AFTER), ack("9")]
    assert bolt.rejected == []


# ---- bolts: the shapes it does not use ----------------------------------------------------------


@each_library
def test_a_tuple_on_a_batch_stream_reaches_user_code_as_data(lib, bolt_of):
    bolt = bolt_of(lib)
    bolt.send(TUPLE_ON_BATCH_STREAM)
    # a plain bolt would count it as one more input tuple: why the extension has no such stream
    assert bolt.frames(2) == [processed(TUPLE_ON_BATCH_STREAM), ack("77")]


def test_finish_batch_command_ends_a_storm_py_bolt(bolt_of):
    bolt = bolt_of(BY_NAME["storm.py"])
    bolt.send(FINISH_BATCH_COMMAND)
    # storm.py reads every bolt input as a tuple: no `id` -> KeyError, reported; the run loop
    # ends and the process exits (status 0) without reading another message
    frames, status = bolt.until_exit()
    [error] = frames
    assert error["command"] == "error"
    assert "KeyError: 'id'" in error["msg"]
    assert status == 0


def test_finish_batch_command_makes_pystorm_exit_1(bolt_of):
    bolt = bolt_of(BY_NAME["pystorm"])
    bolt.send(FINISH_BATCH_COMMAND)
    # pystorm: no `comp` -> KeyError, logged with its traceback, then exit 1 (exit_on_exception)
    frames, status = bolt.until_exit()
    [log] = frames
    assert log["command"] == "log"
    assert "Exception in SeenBolt.run()" in log["msg"]
    assert "KeyError: 'comp'" in log["msg"]
    assert log["level"] == 4  # error
    assert status == 1


def test_finish_batch_command_reaches_storm_js_user_code_and_is_acked_without_an_id(bolt_of):
    bolt = bolt_of(BY_NAME["storm.js"])
    bolt.send(FINISH_BATCH_COMMAND)
    # user code gets a tuple of undefined fields; storm.js then acks `undefined`, which
    # JSON.stringify leaves out: an ack without an id, a protocol error to the host
    assert bolt.frames(2) == [{"command": "log", "process": [None] * 5}, {"command": "ack"}]
    [rejected] = bolt.rejected
    assert rejected.reason == "ack without an `id`"
    bolt.send(AFTER)
    assert bolt.frames(2) == [processed(AFTER), ack("9")]  # and it carries on


def test_finish_batch_command_reaches_storm_rb_user_code_with_nil_fields(bolt_of):
    bolt = bolt_of(BY_NAME["storm.rb"])
    bolt.send(FINISH_BATCH_COMMAND)
    # Tuple.from_hash takes the keys it knows: all nil; user code gets it and acks id null
    assert bolt.frames(2) == [{"command": "log", "process": [None] * 5}, ack(None)]
    bolt.send(AFTER)
    assert bolt.frames(2) == [processed(AFTER), ack("9")]


# ---- spouts: an unknown command -----------------------------------------------------------------


def _next_is_answered(spout: Wire) -> None:
    spout.send(NEXT)
    assert spout.frames(2) == [{"command": "log", "msg": "next", "level": 2}, SYNC]


@pytest.mark.parametrize("name", ["storm.py", "storm.rb"])
def test_an_unknown_spout_command_is_ignored_and_synced(name, spout_of):
    spout = spout_of(BY_NAME[name])
    _next_is_answered(spout)
    spout.send(BATCH_EMIT)
    assert spout.frames(1) == [SYNC]  # no user code ran (it would have logged)
    _next_is_answered(spout)


def test_pystorm_logs_an_unknown_spout_command_then_syncs(spout_of):
    spout = spout_of(BY_NAME["pystorm"])
    _next_is_answered(spout)
    spout.send(BATCH_EMIT)
    log, sync = spout.frames(2)
    assert log["command"] == "log"
    assert "Received invalid command from Storm" in log["msg"] and "batch_emit" in log["msg"]
    assert log["level"] == 4  # error
    assert sync == SYNC
    _next_is_answered(spout)


def test_storm_js_spout_never_syncs_an_unknown_command(spout_of):
    spout = spout_of(BY_NAME["storm.js"])
    _next_is_answered(spout)  # it answers a known command at once
    spout.send(BATCH_EMIT)
    # The host's view: no answer. A lock-step host (Storm's ShellSpout, ours) waits for this
    # sync until its subprocess timeout.
    assert spout.during(HANG_WINDOW_S) == []
    # Why that is not a timing assertion: storm.js handles stdin messages in order and answers
    # `next` synchronously, so a sync for batch_emit, however late, would come before the
    # answer to this `next`. The answer is exactly [log, sync]: there never was one.
    _next_is_answered(spout)
    assert spout.peer.proc.poll() is None  # alive: a hang, not a crash
