"""The multilang codec: framing, decoding both directions, encoding, and the errors."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from multilang import codec, component_decoding
from multilang.codec import (
    DEFAULT_MAX_FRAME,
    EncodeError,
    Framer,
    ProtocolError,
    TupleEncoder,
    dumps,
    encode,
    loads,
    to_wire,
    values_json,
)
from multilang.component_decoding import ComponentDecoder
from multilang.host_decoding import HostDecoder, host_message
from multilang.messages import (
    Ack,
    Emit,
    Error,
    Fail,
    Handshake,
    Log,
    Metrics,
    Pid,
    SpoutCommand,
    Sync,
    TaskIds,
    TupleMessage,
    UnknownCommand,
)


@pytest.fixture(autouse=True, params=["speedups", "pure"])
def implementation(request, monkeypatch):
    """Every test here runs twice: with the optional speed-ups this environment has (the C
    decoder, orjson) and with neither, as MULTILANG_PURE_PYTHON=1 runs; they must agree."""
    if request.param == "pure":
        monkeypatch.setattr(component_decoding, "_c_component_messages", None)
        monkeypatch.setattr(codec, "_orjson", None)
    return request.param


# ---- strategies ---------------------------------------------------------------------------------

# Integers well beyond 64 bits: Storm >= 2.6 accepts them, so must we.
ints = st.integers(min_value=-(2**100), max_value=2**100)
scalars = (
    st.none()
    | st.booleans()
    | ints
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=20)
)
json_values = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)
ids = st.text(min_size=1, max_size=20) | ints


@st.composite
def emits(draw) -> Emit:
    anchors = draw(st.lists(st.text(max_size=20), max_size=3))
    return Emit(
        values=draw(st.lists(json_values, max_size=5)),
        stream=draw(st.sampled_from(["default", "errors", "ctl"]) | st.text(max_size=10)),
        # the decoder keeps a JSON list as it came; no anchors at all is the empty tuple
        anchors=anchors if anchors else (),
        task=draw(st.none() | ints.filter(lambda t: t != 0)),
        need_task_ids=draw(st.booleans()),
        id=draw(st.none() | json_values.filter(lambda v: v is not None)),
    )


unknown_commands = (
    st.text(min_size=1, max_size=10)
    .filter(lambda c: c not in {"emit", "ack", "fail", "log", "error", "metrics", "sync"})
    .flatmap(
        lambda c: st.fixed_dictionaries({"command": st.just(c), "x": json_values}).map(
            lambda raw: UnknownCommand(raw["command"], raw)
        )
    )
)

component_messages = st.one_of(
    emits(),
    ids.map(Ack),
    ids.map(Fail),
    st.builds(Log, st.text(max_size=30), st.integers(0, 4)),
    st.builds(Error, st.text(max_size=30)),
    st.builds(Metrics, st.text(min_size=1, max_size=10), json_values),
    st.just(Sync()),
    unknown_commands,
)

line_endings = st.sampled_from([b"\n", b"\r\n", b"\r"])


@st.composite
def framed(draw, message) -> bytes:
    """One message as a component might write it: compact or pretty-printed JSON, any line
    ending, optionally with leading blank lines."""
    eol = draw(line_endings)
    wire = to_wire(message)
    if draw(st.booleans()):
        text = dumps(wire)
    else:
        text = json.dumps(wire, indent=draw(st.integers(0, 3)), ensure_ascii=draw(st.booleans()))
    body = text.encode("utf-8").replace(b"\n", eol)
    blank = eol * draw(st.integers(0, 1))
    return blank + body + eol + b"end" + eol


def split_at(data: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({c % (len(data) + 1) for c in cuts})
    chunks, start = [], 0
    for p in points + [len(data)]:
        chunks.append(data[start:p])
        start = p
    return chunks


def feed_all(decoder, chunks: list[bytes]) -> list:
    out = []
    for chunk in chunks:
        out.extend(decoder.feed(chunk))
    return out


def comparable(message):
    """Emit anchors come back as the JSON list they were sent as; compare them as tuples."""
    if type(message) is Emit:
        return message._replace(anchors=tuple(message.anchors))
    return message


# ---- component -> host: round trips -------------------------------------------------------------


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    data=st.data(),
    messages=st.lists(component_messages, min_size=1, max_size=8),
    pid=st.integers(1, 2**22),
    cuts=st.lists(st.integers(0, 10**6), max_size=12),
)
def test_random_streams_decode_to_the_same_messages(data, messages, pid, cuts):
    stream = data.draw(framed(Pid(pid))) + b"".join(data.draw(framed(m)) for m in messages)
    decoded = feed_all(ComponentDecoder(), split_at(stream, cuts))
    assert [comparable(m) for m in decoded] == [Pid(pid)] + [comparable(m) for m in messages]


@settings(deadline=None)
@given(messages=st.lists(component_messages, min_size=1, max_size=20))
def test_byte_by_byte_feeding(messages):
    stream = encode(Pid(7)) + b"".join(encode(m) for m in messages)
    decoded = feed_all(ComponentDecoder(), [stream[i : i + 1] for i in range(len(stream))])
    assert [comparable(m) for m in decoded] == [Pid(7)] + [comparable(m) for m in messages]


def test_emit_defaults_and_variants():
    d = ComponentDecoder(awaiting_pid=False)
    [plain, single_anchor, not_direct, null_fields] = d.feed(
        b'{"command":"emit","tuple":[1]}\nend\n'
        b'{"command":"emit","tuple":[],"anchors":"a1"}\nend\n'
        b'{"command":"emit","tuple":[],"task":0}\nend\n'
        b'{"command":"emit","tuple":[],"stream":null,"anchors":null,"need_task_ids":null}\nend\n'
    )
    assert plain == Emit([1], "default", (), None, True, None)
    assert single_anchor.anchors == ("a1",)
    assert not_direct.task is None  # Storm: task 0 means "not direct"
    assert null_fields == Emit([], "default", (), None, True, None)


def test_log_levels_default_to_info():
    d = ComponentDecoder(awaiting_pid=False)
    msgs = d.feed(
        b'{"command":"log","msg":"a"}\nend\n{"command":"log","msg":"b","level":9}\nend\n'
        b'{"command":"log","msg":"c","level":3.0}\nend\n'
    )
    assert msgs == [Log("a", 2), Log("b", 2), Log("c", 3)]


def test_big_integers_beyond_64_bits_are_accepted():
    big = 2**64 + 12345
    [msg] = ComponentDecoder(awaiting_pid=False).feed(
        b'{"command":"emit","tuple":[%d, -%d],"id":%d}\nend\n' % (big, big, big * 10**20)
    )
    assert msg.values == [big, -big]
    assert msg.id == big * 10**20


def test_messages_before_the_pid_are_returned_in_order():
    d = ComponentDecoder()
    msgs = d.feed(
        b'{"command":"log","msg":"early"}\nend\n{"command":"emit","tuple":["x"]}\nend\n'
        b'{"pid":99}\nend\n{"command":"sync"}\nend\n'
    )
    assert [type(m) for m in msgs] == [Log, Emit, Pid, Sync]
    assert msgs[2] == Pid(99)
    assert not d.awaiting_pid


def test_pid_reply_accepted_only_while_awaiting_it():
    with pytest.raises(ProtocolError, match="without a `command`"):
        ComponentDecoder(awaiting_pid=False).feed(b'{"pid":1}\nend\n')
    d = ComponentDecoder()
    assert d.feed(b'{"pid":1}\nend\n') == [Pid(1)]
    with pytest.raises(ProtocolError) as err:
        d.feed(b'{"command":"sync"}\nend\n{"pid":1}\nend\n')
    assert err.value.decoded == [Sync()]
    assert err.value.raw == b'{"pid":1}'


def test_empty_messages_are_all_found():
    # every `end` line ends a message, also several in a row
    assert Framer().feed(b"X\nend\nend\nend\n") == [b"X", b"", b""]
    assert Framer().feed(b"end\nend\n") == [b"", b""]
    assert Framer().feed(b"X\r\nend\r\nend\r\nend\r\n") == [b"X\r\n", b"", b""]
    f = Framer()
    assert f.feed(b"X\nend\n") == [b"X"]
    assert f.feed(b"end\n") == [b""]


def test_end_needs_a_whole_line():
    f = Framer()
    assert f.feed(b'{"a":"end"}\n end\nendx\n') == []
    assert f.feed(b"end\n") == [b'{"a":"end"}\n end\nendx']


# ---- component -> host: errors ------------------------------------------------------------------


def _error(data: bytes, awaiting_pid: bool = False) -> ProtocolError:
    with pytest.raises(ProtocolError) as err:
        ComponentDecoder(awaiting_pid=awaiting_pid).feed(data)
    return err.value


@pytest.mark.parametrize(
    "payload, reason",
    [
        (b'["not", "an", "object"]', "not a JSON object"),
        (b'"hello"', "not a JSON object"),
        (b"42", "not a JSON object"),
        (b'{"msg":"no command"}', "without a `command`"),
        (b'{"command":7}', "`command` is not a string"),
        (b'{"command":"emit"}', "without a `tuple`"),
        (b'{"command":"emit","tuple":{"a":1}}', "without a `tuple`"),
        (b'{"command":"emit","tuple":[],"stream":5}', "`stream` that is not a string"),
        (b'{"command":"emit","tuple":[],"anchors":[1]}', "anchor that is not a string"),
        (b'{"command":"emit","tuple":[],"anchors":{"a":1}}', "`anchors` that is not a list"),
        (b'{"command":"emit","tuple":[],"task":"3"}', "`task` that is not an integer"),
        (b'{"command":"emit","tuple":[],"task":3.5}', "`task` that is not an integer"),
        (
            b'{"command":"emit","tuple":[],"need_task_ids":"no"}',
            "`need_task_ids` that is not a bool",
        ),
        (b'{"command":"emit","tuple":[],"need_task_ids":0}', "`need_task_ids` that is not a bool"),
        (b'{"command":"ack"}', "ack without an `id`"),
        (b'{"command":"fail"}', "fail without an `id`"),
        (b'{"command":"metrics","params":1}', "metrics without a `name`"),
        (b'{"command":"metrics","name":""}', "metrics without a `name`"),
        (b'{"command":"sync"', "invalid JSON"),
        (b'hello world\n{"command":"sync"}', "invalid JSON"),
        (b'{"command":"log","msg":"\xff\xfe"}', "invalid JSON"),  # invalid UTF-8
        (b"", "empty message"),
        (b"  \n ", "empty message"),
    ],
)
def test_bad_messages(payload, reason):
    good = b'{"command":"sync"}\nend\n{"command":"ack","id":"1"}\nend\n'
    err = _error(good + payload + b"\nend\n" + good)
    assert reason in err.reason
    assert err.raw == payload
    assert err.decoded == [Sync(), Ack("1")]  # what came before it, to be handled first


def test_a_batch_with_what_ujson_refuses_is_parsed_exactly():
    # the batch parse fails on NaN and integers beyond 64 bits; the frame-by-frame retry takes
    # them (as Storm's parser does), keeping the messages around them
    big = 2**70
    stream = (
        b'{"pid":1}\nend\n{"command":"emit","tuple":[1.5,"a/\xc3\xa9"],"need_task_ids":false}'
        b'\nend\n{"command":"emit","tuple":[NaN,%d]}\nend\n{"command":"ack","id":"7"}'
        b"\nend\n" % big
    )
    messages = ComponentDecoder().feed(stream)
    assert messages[:2] == [Pid(1), Emit([1.5, "a/é"], need_task_ids=False)]
    nan, number = messages[2].values
    assert nan != nan and number == big and type(number) is int
    assert messages[3] == Ack("7")


def test_pid_reply_in_the_same_read_as_a_bad_message_is_still_the_pid():
    # the batch parse gives up on the bad message; the frame-by-frame retry must still be
    # waiting for the pid, not treat it as a message without a command
    decoder = ComponentDecoder()
    with pytest.raises(ProtocolError) as info:
        decoder.feed(b'{"pid":42}\nend\n{"command":"ack"}\nend\n')
    assert info.value.decoded == [Pid(42)]
    assert decoder.awaiting_pid is False


def test_error_carries_the_raw_bytes_in_its_text():
    err = _error(b'{"oops": true}\nend\n')
    assert b'{"oops": true}' == err.raw
    assert "oops" in str(err)


def test_frame_limit_without_an_end_line_raises_instead_of_growing():
    f = Framer(max_frame=1000)
    with pytest.raises(ProtocolError, match="frame limit") as err:
        for _ in range(100):
            f.feed(b"x" * 100)
            assert len(f.pending) <= 1000  # bounded while it waits for the `end` line
    assert len(err.value.raw) <= 200


def test_frame_limit_keeps_the_messages_before_it():
    d = ComponentDecoder(max_frame=100)
    with pytest.raises(ProtocolError, match="no `end` line") as err:
        d.feed(b'{"pid":1}\nend\n{"command":"sync"}\nend\n' + b" " * 200)
    assert err.value.decoded == [Pid(1), Sync()]
    d = ComponentDecoder(max_frame=100)
    with pytest.raises(ProtocolError, match="larger than") as err:
        d.feed(b'{"pid":1}\nend\n{"command":"log","msg":"' + b"m" * 200 + b'"}\nend\n')
    assert err.value.decoded == [Pid(1)]


def test_a_frame_just_under_the_limit_is_fine():
    msg = b'{"command":"log","msg":"' + b"m" * 60 + b'"}'
    assert ComponentDecoder(max_frame=len(msg), awaiting_pid=False).feed(msg + b"\nend\n") == [
        Log("m" * 60, 2)
    ]


# ---- host -> component --------------------------------------------------------------------------

host_messages = st.one_of(
    st.builds(
        Handshake,
        st.text(max_size=30),
        st.dictionaries(st.text(max_size=10), json_values, max_size=4),
        st.dictionaries(st.text(max_size=10), json_values, max_size=4),
    ),
    st.builds(
        TupleMessage,
        st.text(max_size=20),
        st.none() | st.text(max_size=10),
        st.text(max_size=10),
        ints,
        st.lists(json_values, max_size=5),
    ),
    st.builds(
        SpoutCommand,
        st.sampled_from(["next", "activate", "deactivate", "ack", "fail"]),
        json_values,
    ),
    st.builds(TaskIds, st.lists(st.integers(-5, 10**6), max_size=5)),
)


@given(
    messages=st.lists(host_messages, min_size=1, max_size=8),
    cuts=st.lists(st.integers(0, 10**6), max_size=10),
)
def test_host_messages_round_trip(messages, cuts):
    stream = b"".join(encode(m) for m in messages)
    assert feed_all(HostDecoder(), split_at(stream, cuts)) == messages


@given(host_messages)
def test_host_encoding_is_one_line_of_utf8_json_then_end(message):
    data = encode(message)
    assert data.endswith(b"\nend\n")
    body = data[:-5]
    assert b"\n" not in body and b"\r" not in body
    assert json.loads(body.decode("utf-8")) == json.loads(dumps(to_wire(message)))


def test_host_encoding_keeps_non_ascii_raw_and_slashes_plain():
    data = encode(TupleMessage("1", "spout", "default", 1, ["héllo wörld ☃ 𝄞", "a/b"]))
    assert "héllo wörld ☃ 𝄞".encode() in data
    assert b"a/b" in data
    assert b"\\u" not in data


def test_heartbeat_keeps_its_null_component():
    data = encode(TupleMessage("5", None, "__heartbeat", -1, []))
    assert json.loads(data[:-5]) == {
        "id": "5",
        "comp": None,
        "stream": "__heartbeat",
        "task": -1,
        "tuple": [],
    }


@given(
    tuple_id=st.integers(1, 2**64 - 1),
    comp=st.none() | st.text(max_size=10),
    stream=st.text(max_size=10),
    task=st.integers(-1, 10**5),
    values=st.lists(json_values, max_size=5),
)
def test_tuple_encoder_matches_the_decoder(tuple_id, comp, stream, task, values):
    encoder = TupleEncoder()
    data = encoder.encode(tuple_id, comp, stream, task, values_json(values))
    again = encoder.encode(tuple_id, comp, stream, task, values_json(values))  # cached prefix
    assert data == again
    assert data.endswith(b"\nend\n") and b"\n" not in data[:-5]
    assert HostDecoder().feed(data) == [TupleMessage(str(tuple_id), comp, stream, task, values)]


def test_host_decoder_keeps_the_messages_after_a_bad_one():
    d = HostDecoder()
    with pytest.raises(ProtocolError) as err:
        d.feed(b'[1]\nend\n{"surprise":1}\nend\n[2]\nend\n{"command":"next","id":""}\nend\n')
    assert err.value.decoded == [TaskIds([1])]
    assert err.value.raw == b'{"surprise":1}'
    assert d.feed(b"") == [TaskIds([2]), SpoutCommand("next", "")]


def test_host_decoder_rejects_invalid_json():
    with pytest.raises(ProtocolError, match="invalid JSON"):
        HostDecoder().feed(b"{nope\nend\n")


class OneByOneHostDecoder:
    """The reference for HostDecoder, whose fast paths parse a whole read at once: the Framer,
    then each payload parsed and checked on its own."""

    def __init__(self, max_frame: int):
        self.framer = Framer(max_frame)
        self.backlog: list = []

    def feed(self, data: bytes) -> list:
        payloads, self.backlog = self.backlog, []
        if data:
            try:
                payloads = payloads + self.framer.feed(data)
            except ProtocolError as exc:
                out = self._decode(payloads + exc.decoded)
                raise ProtocolError(exc.reason, exc.raw, out) from None
        return self._decode(payloads)

    def _decode(self, payloads: list) -> list:
        out: list = []
        for i, payload in enumerate(payloads):
            try:
                out.append(host_message(loads(payload)))
            except ValueError as exc:
                self.backlog = payloads[i + 1 :]
                reason = (
                    exc.reason if isinstance(exc, ProtocolError) else "invalid JSON from the host"
                )
                raise ProtocolError(reason, payload, out) from None
        return out


def decode_events(decoder, chunks: list[bytes]) -> list:
    """Messages and errors, in order, recovering from each error as the clients do."""
    events: list = []
    for chunk in chunks:
        data = chunk
        while True:
            try:
                events.extend(decoder.feed(data))
                break
            except ProtocolError as exc:
                events.extend(exc.decoded)
                events.append(("error", exc.reason, exc.raw))
                data = b""
    return events


odd_host_frames = st.sampled_from(
    [
        b"{nope\nend\n",  # invalid JSON
        b"\nend\n",  # empty message
        b"end\n",  # an empty message at a line start
        b'{"surprise":1}\nend\n',  # valid JSON, not a host message
        b"7\nend\n",  # a scalar
        b'"unterminated\nend\n',
        b"[1,\nend\n",
        b'{"command":"next","id":""}\r\nend\r\n',  # another line ending
        b'{"command":\n"next"}\nend\n',  # JSON spread over lines
        b'{"command":"ack","id":123456789012345678901234567890}\nend\n',  # beyond 64 bits
        b'{"id":"1","comp":"s","stream":"default","task":2,"tuple":[NaN]}\nend\n',
        b"[1,2] [3]\nend\n",  # two values in one frame
    ]
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    frames=st.lists(host_messages.map(encode) | odd_host_frames, min_size=1, max_size=10),
    cuts=st.lists(st.integers(0, 10**6), max_size=10),
    max_frame=st.sampled_from([DEFAULT_MAX_FRAME, 60]),
)
def test_host_decoder_matches_the_one_by_one_reference(frames, cuts, max_frame):
    chunks = split_at(b"".join(frames), cuts)
    got = decode_events(HostDecoder(max_frame), chunks)
    want = decode_events(OneByOneHostDecoder(max_frame), chunks)
    assert repr(got) == repr(want)  # repr: NaN != NaN, and the message types must match too


def test_host_decoder_parses_a_read_that_ends_inside_a_frame():
    tuples = [TupleMessage(str(i), "split", "default", 2, ["w", i]) for i in range(5)]
    data = b"".join(encode(t) for t in tuples)
    d = HostDecoder()
    first = d.feed(data[:-7])
    assert first == tuples[:4]
    assert d.framer.pending == data[len(b"".join(encode(t) for t in tuples[:4])) : -7]
    assert d.feed(data[-7:] + encode(SpoutCommand("next", ""))) == [
        tuples[4],
        SpoutCommand("next", ""),
    ]
    assert d.framer.pending == b""


def test_host_decoder_error_after_a_carried_over_frame_keeps_its_details():
    d = HostDecoder()
    good = encode(TaskIds([1]))
    assert d.feed(good[:3]) == []
    with pytest.raises(ProtocolError) as err:
        d.feed(good[3:] + b'{"surprise":1}\nend\n[2]\nend\n')
    assert err.value.decoded == [TaskIds([1])]
    assert err.value.raw == b'{"surprise":1}'
    assert d.feed(b"") == [TaskIds([2])]


def test_host_decoder_builds_tuples_as_the_given_type():
    class Mine(TupleMessage):
        __slots__ = ()

    data = encode(TupleMessage("1", "s", "default", 2, ["a"])) + encode(SpoutCommand("ack", 5))
    for chunks in ([data], [data[:10], data[10:]], [bytes([b]) for b in data]):
        got = feed_all(HostDecoder(tuple_type=Mine), chunks)
        assert [type(m) for m in got] == [Mine, SpoutCommand]
        assert got == [("1", "s", "default", 2, ["a"]), ("ack", 5)]
    assert type(host_message({"id": "1", "tuple": []}, Mine)) is Mine
    assert type(HostDecoder().feed(data)[0]) is TupleMessage


# ---- encode errors ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "message",
    [
        Log("lone \ud800 surrogate"),
        Emit(["ok", "\udc00"]),
        Emit([object()]),
        Emit([b"bytes", object()]),  # bytes alone are base64 text (docs/protocol.md §11)
        Emit([{1, 2}]),
        Metrics("m", object()),
        TupleMessage("1", "s", "default", 1, ["\ud83d"]),
    ],
)
def test_encode_errors(message):
    with pytest.raises(EncodeError):
        encode(message)


def test_big_integers_encode_exactly():
    big = 2**80 + 1
    data = encode(Emit([big, -big]))
    assert ComponentDecoder(awaiting_pid=False).feed(data)[0].values == [big, -big]


def test_dumps_writes_html_characters_and_slashes_raw():
    # Storm's own output keeps `<`, `>`, `&` raw; only the keyword-free fast path could get the
    # options wrong, so check the bytes, not just the decoded value
    assert (
        dumps({"task->component": "<a href='/x'>&</a>"})
        == '{"task->component":"<a href=\'/x\'>&</a>"}'
    )
