"""Golden transcripts recorded with real multilang libraries (storm.py, storm.js, pystorm), kept in
tests/transcripts/ (its README says what each one shows).

Both sides are checked: every line a component wrote (`<-`) decodes with ComponentDecoder and every
line the host wrote (`->`) with HostDecoder; then our own Python client, in a bolt and a spout that
behave like the recorded components, is driven with the recorded host messages and must answer
the way the transcript does, except where docs/protocol.md says otherwise: our client sends
`need_task_ids: false` (so it gets no task-id replies unless it asks), acks tick tuples after
`process_tick`, and always answers a spout command with `sync`.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from host.testing import ComponentPeer
from multilang.codec import encode, to_wire
from multilang.component_decoding import ComponentDecoder
from multilang.host_decoding import HostDecoder
from multilang.messages import (
    Emit,
    Handshake,
    Log,
    Pid,
    SpoutCommand,
    Sync,
    TaskIds,
    TupleMessage,
    UnknownCommand,
)

REPO = Path(__file__).resolve().parents[2]
TRANSCRIPTS = REPO / "tests" / "transcripts"
COMPONENTS = REPO / "tests" / "integration" / "components" / "python"
# batch-*.txt: our client's batch/1 exchanges, checked by tests/unit/test_batch_client.py
FILES = sorted(p for p in TRANSCRIPTS.glob("*.txt") if not p.name.startswith("batch-"))

# Emits that the recorded component made in its initialize, before any command (storm.py's
# tester_spout): our scripted spout makes them there too.
INIT_EMITS = {"storm.py-tester_spout.txt": 1}


@dataclass
class Segment:
    """One message the host wrote (or None: before the first one) and what followed it: the
    component's messages and the task-id replies the host wrote in between, in order."""

    sent: object
    events: list = field(default_factory=list)  # ("<-", dict) or ("->", TaskIds)


@dataclass
class Transcript:
    name: str
    host_lines: list[str]
    component_lines: list[str]
    handshake: Handshake
    segments: list[Segment]  # the ones after the handshake (whose answer is the pid)


def load(path: Path) -> Transcript:
    host_lines, component_lines = [], []
    segments = [Segment(None)]
    decoder = HostDecoder()
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("-> "):
            text = line[3:]
            host_lines.append(text)
            [msg] = decoder.feed(text.encode("utf-8") + b"\nend\n")
            if type(msg) is TaskIds:
                segments[-1].events.append(("->", msg))
            else:
                segments.append(Segment(msg))
        elif line.startswith("<- "):
            text = line[3:]
            if text.startswith("{"):  # not "(timeout)" / "('EOF', None)"
                component_lines.append(text)
                segments[-1].events.append(("<-", json.loads(text)))
    handshake = segments[1]
    assert [kind for kind, _ in handshake.events] == ["<-"], "only the pid answers the handshake"
    return Transcript(path.name, host_lines, component_lines, handshake.sent, segments[2:])


def test_the_transcripts_are_there():
    assert TRANSCRIPTS.is_dir(), f"expected the recorded transcripts in {TRANSCRIPTS}"
    assert len(FILES) >= 7


# ---- decoding both directions -------------------------------------------------------------------


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_component_lines_decode_to_typed_messages(path):
    transcript = load(path)
    stream = b"".join(line.encode("utf-8") + b"\nend\n" for line in transcript.component_lines)
    messages = ComponentDecoder().feed(stream)
    assert len(messages) == len(transcript.component_lines)
    assert type(messages[0]) is Pid
    assert all(type(m) is not UnknownCommand for m in messages)
    assert all(type(m) is not Pid for m in messages[1:])
    # what we decoded says the same as what was written, field for field
    for line, message in zip(transcript.component_lines, messages):
        original = json.loads(line)
        if type(message) is Emit:
            original.setdefault("need_task_ids", True)
            original.setdefault("stream", "default")
            wire = {"stream": "default", "need_task_ids": True, **to_wire(message)}
            assert wire == original
        elif type(message) is Log and "level" not in original:
            assert message.level == 2  # missing level -> INFO
        else:
            assert to_wire(message) == original


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_host_lines_decode_to_typed_messages(path):
    transcript = load(path)
    stream = b"".join(line.encode("utf-8") + b"\nend\n" for line in transcript.host_lines)
    messages = HostDecoder().feed(stream)
    assert len(messages) == len(transcript.host_lines)
    assert type(messages[0]) is Handshake
    assert messages[0].pid_dir == "<pidDir>"
    assert {type(m) for m in messages[1:]} <= {TupleMessage, SpoutCommand, TaskIds}
    for line, message in zip(transcript.host_lines, messages):
        # our encoder writes the same JSON value, on one line
        data = encode(message)
        assert json.loads(data[:-5]) == json.loads(line)


# ---- our client answers like the recorded components --------------------------------------------


def _normal(wire: dict) -> dict:
    """A component message as compared here: need_task_ids is where our client differs."""
    return {k: v for k, v in wire.items() if k != "need_task_ids"}


def _ours(message) -> dict:
    return _normal(to_wire(message))


def _finish(peer: ComponentPeer, timeout: float = 5) -> list:
    """Close stdin, read everything the client still writes until it exits; its messages."""
    peer.proc.stdin.close()
    deadline = time.monotonic() + timeout
    while not peer.stdout_closed and time.monotonic() < deadline:
        peer._pump(0.2)
    out, peer.inbox = peer.inbox, []
    assert peer.close() == 0, peer.stderr
    return out


def _expected_replies(segment: Segment) -> list[dict]:
    return [
        _normal(wire)
        for kind, wire in segment.events
        if kind == "<-" and wire.get("command") != "log"
    ]


BOLT_FILES = [p for p in FILES if any(type(s.sent) is TupleMessage for s in load(p).segments)]
SPOUT_FILES = [p for p in FILES if p not in BOLT_FILES]


@pytest.mark.parametrize("path", BOLT_FILES, ids=lambda p: p.name)
def test_our_bolt_answers_like_the_transcript(path):
    transcript = load(path)
    expected: list[dict] = []
    for segment in transcript.segments:
        sent = segment.sent
        if sent.is_tick:
            # the recorded libraries fail it or crash on it; ours acks it after process_tick
            expected.append({"command": "ack", "id": sent.id})
        else:
            expected.extend(_expected_replies(segment))
    peer = ComponentPeer(["python", str(COMPONENTS / "transcript_bolt.py")])
    try:
        peer.handshake(conf=transcript.handshake.conf, context=transcript.handshake.context)
        for segment in transcript.segments:
            peer.send(segment.sent)  # never the task-id replies: our client did not ask
        got = [peer.read() for _ in expected]
        rest = _finish(peer)
    finally:
        peer.close()
    assert [_ours(m) for m in got] == expected
    assert all(m.need_task_ids is False for m in got if type(m) is Emit)
    assert rest == []


def _spout_script(transcript: Transcript) -> dict:
    """What the recorded spout emitted while handling each command, as a script for ours."""
    asks_by_default = transcript.name.startswith("pystorm")  # pystorm's default is not to ask
    commands = []
    for segment in transcript.segments:
        emits = []
        for kind, wire in segment.events:
            if kind == "<-" and wire.get("command") == "emit":
                e = {"tuple": wire["tuple"]}
                for key in ("id", "task", "stream"):
                    if key in wire:
                        e[key] = wire[key]
                e["need_task_ids"] = asks_by_default and "need_task_ids" not in wire
                emits.append(e)
        commands.append(emits)
    n_init = INIT_EMITS.get(transcript.name, 0)
    return {"init": commands[0][:n_init], "commands": [commands[0][n_init:]] + commands[1:]}


@pytest.mark.parametrize("path", SPOUT_FILES, ids=lambda p: p.name)
def test_our_spout_answers_like_the_transcript(path):
    transcript = load(path)
    script = _spout_script(transcript)
    peer = ComponentPeer(["python", str(COMPONENTS / "transcript_spout.py")])
    logs: list[str] = []
    try:
        peer.handshake(
            conf={**transcript.handshake.conf, "test.script": script},
            context=transcript.handshake.context,
        )
        for segment in transcript.segments:
            expected = _expected_replies(segment)
            if not expected or expected[-1] != {"command": "sync"}:
                expected.append({"command": "sync"})  # ours always syncs (Storm 1.1.0's did not)
            replies = [e for kind, e in segment.events if kind == "->"]
            peer.send(segment.sent)
            got = []
            while not got or type(got[-1]) is not Sync:
                msg = peer.read()
                if type(msg) is Log:
                    logs.append(msg.msg)
                    continue
                got.append(msg)
                if type(msg) is Emit and msg.need_task_ids:
                    peer.send(replies.pop(0))  # the reply the recorded host gave to this emit
            assert [_ours(m) for m in got] == expected, f"after {segment.sent}"
        rest = _finish(peer)
    finally:
        peer.close()
    assert rest == []
    asked = [
        e for emits in [script["init"], *script["commands"]] for e in emits if e["need_task_ids"]
    ]
    assert logs == ["task ids [4]" for _ in asked]
