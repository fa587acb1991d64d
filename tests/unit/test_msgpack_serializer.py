"""The msgpack serializer (docs/protocol.md §11): reading components, writing host frames, the limits."""

from __future__ import annotations

import msgpack
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from multilang import serializers
from multilang.codec import EncodeError, ProtocolError, encode, to_wire
from multilang.component_decoding import ComponentDecoder
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
from multilang.msgpack_serializer import MsgpackDecoder, MsgpackSerializer

# ---- strategies ---------------------------------------------------------------------------------

# What msgpack can carry: 64-bit integers (signed or unsigned), no NaN (it never equals itself).
ints = st.integers(min_value=-(2**63), max_value=2**64 - 1)
scalars = st.none() | st.booleans() | ints | st.floats(allow_nan=False) | st.text(max_size=20)
values = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)
tuple_ids = st.text(min_size=1, max_size=20)


@st.composite
def emits(draw) -> Emit:
    anchors = draw(st.lists(tuple_ids, max_size=3))
    return Emit(
        values=draw(st.lists(values, max_size=5)),
        stream=draw(st.sampled_from(["default", "errors"]) | st.text(max_size=10)),
        anchors=anchors if anchors else (),
        task=draw(st.none() | ints.filter(lambda t: t != 0)),
        need_task_ids=draw(st.booleans()),
        id=draw(st.none() | values.filter(lambda v: v is not None)),
    )


unknown_commands = (
    st.text(min_size=1, max_size=10)
    .filter(lambda c: c not in {"emit", "ack", "fail", "log", "error", "metrics", "sync"})
    .flatmap(
        lambda c: st.fixed_dictionaries({"command": st.just(c), "x": values}).map(
            lambda raw: UnknownCommand(raw["command"], raw)
        )
    )
)

component_messages = st.one_of(
    emits(),
    tuple_ids.map(Ack),
    tuple_ids.map(Fail),
    st.builds(Log, st.text(max_size=30), st.integers(0, 4)),
    st.builds(Error, st.text(max_size=30)),
    st.builds(Metrics, st.text(min_size=1, max_size=10), values),
    st.just(Sync()),
    unknown_commands,
)


def pack(message, use_bin_type: bool = True) -> bytes:
    """A message as a msgpack component writes it. use_bin_type=False is msgpack < 1.0's default
    (pystorm on an old msgpack): str written with the old "raw" type."""
    return msgpack.packb(to_wire(message), use_bin_type=use_bin_type)


def split_at(data: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({c % (len(data) + 1) for c in cuts})
    chunks, start = [], 0
    for p in points + [len(data)]:
        chunks.append(data[start:p])
        start = p
    return chunks


def feed_all(decoder, chunks) -> list:
    out = []
    for chunk in chunks:
        out.extend(decoder.feed(chunk))
    return out


def comparable(message):
    if type(message) is Emit:
        return message._replace(anchors=tuple(message.anchors))
    return message


def decoder(max_frame: int = 1 << 20, awaiting_pid: bool = False) -> MsgpackDecoder:
    return MsgpackDecoder(max_frame=max_frame, awaiting_pid=awaiting_pid)


# ---- component -> host --------------------------------------------------------------------------


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    messages=st.lists(component_messages, min_size=1, max_size=8),
    pid=st.integers(1, 2**22),
    cuts=st.lists(st.integers(0, 10**6), max_size=12),
    bin_type=st.booleans(),
)
def test_random_streams_split_anywhere_decode_to_the_same_messages(messages, pid, cuts, bin_type):
    stream = pack(Pid(pid), bin_type) + b"".join(pack(m, bin_type) for m in messages)
    decoded = feed_all(MsgpackDecoder(), split_at(stream, cuts))
    assert [comparable(m) for m in decoded] == [Pid(pid)] + [comparable(m) for m in messages]


@settings(max_examples=100, deadline=None)
@given(messages=st.lists(component_messages, min_size=1, max_size=8))
def test_the_same_messages_as_the_json_decoder(messages):
    via_json = ComponentDecoder(awaiting_pid=False).feed(b"".join(encode(m) for m in messages))
    via_msgpack = decoder().feed(b"".join(pack(m) for m in messages))
    assert [comparable(m) for m in via_msgpack] == [comparable(m) for m in via_json]


@settings(max_examples=50, deadline=None)
@given(messages=st.lists(component_messages, min_size=1, max_size=10))
def test_byte_by_byte_feeding(messages):
    stream = b"".join(pack(m) for m in messages)
    decoded = feed_all(decoder(), [stream[i : i + 1] for i in range(len(stream))])
    assert [comparable(m) for m in decoded] == [comparable(m) for m in messages]


def as_text(value):
    """`value` with every bytes map key decoded, as the decoder hands a tuple over: bin values
    in a tuple stay bytes (docs/protocol.md §11)."""
    if type(value) is list:
        return [as_text(v) for v in value]
    if type(value) is dict:
        return {(k.decode() if type(k) is bytes else k): as_text(v) for k, v in value.items()}
    return value


# values as a component on an old msgpack (or one that packs bytes) writes them: some strings,
# keys included, as bin
text_or_bin = st.text(max_size=10) | st.text(max_size=10).map(str.encode)
values_with_bin = st.recursive(
    scalars | text_or_bin,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(text_or_bin, inner, max_size=4),
    max_leaves=12,
)


@settings(max_examples=100, deadline=None)
@given(
    rows=st.lists(st.lists(values_with_bin, max_size=4), min_size=1, max_size=6),
    cuts=st.lists(st.integers(0, 10**6), max_size=8),
)
def test_bin_values_in_tuples_stay_bytes_however_the_stream_is_cut(rows, cuts):
    stream = b"".join(
        msgpack.packb({"command": "emit", "tuple": row, "need_task_ids": False})
        + msgpack.packb({"command": "ack", "id": str(i).encode()})
        for i, row in enumerate(rows)
    )
    decoded = feed_all(decoder(), split_at(stream, cuts))
    expected = []
    for i, row in enumerate(rows):
        expected += [Emit(as_text(row), need_task_ids=False), Ack(str(i))]
    assert decoded == expected


def test_integer_tuple_ids_become_strings_as_pyleus_does():
    d = decoder()
    out = d.feed(
        msgpack.packb({"command": "ack", "id": 7})
        + msgpack.packb({"command": "fail", "id": -9223372036854775808})
        + msgpack.packb({"command": "emit", "tuple": [1], "anchors": [5, "x", 6]})
        + msgpack.packb({"command": "emit", "tuple": [1], "anchors": 12})
        + msgpack.packb({"command": "ack", "id": True})
    )
    assert out == [
        Ack("7"),
        Fail("-9223372036854775808"),
        Emit([1], anchors=["5", "x", "6"]),
        Emit([1], anchors=("12",)),
        Ack(True),
    ]  # not an int: left for the host to reject as not pending


def test_spout_message_ids_are_kept_as_emitted():
    # so that `ack` / `fail` echo the value the spout emitted (docs/protocol.md §16.5)
    [emit] = decoder().feed(msgpack.packb({"command": "emit", "tuple": ["s"], "id": 7}))
    assert emit.id == 7


def test_bin_becomes_str_outside_tuples_and_raw_strings_are_str():
    raw = msgpack.packb(
        {b"command": b"emit", b"tuple": [b"caf\xc3\xa9", {b"k": [b"v"]}], b"stream": b"s"},
        use_bin_type=True,
    )
    old = msgpack.packb({"command": "log", "msg": "é", "level": 3}, use_bin_type=False)
    assert decoder().feed(raw + old) == [Emit([b"caf\xc3\xa9", {"k": [b"v"]}], "s"), Log("é", 3)]


def test_messages_before_the_pid_are_returned_in_order():
    d = decoder(awaiting_pid=True)
    out = d.feed(
        msgpack.packb({"command": "log", "msg": "init"})
        + msgpack.packb({"command": "emit", "tuple": ["early"]})
        + msgpack.packb({"pid": 42})
    )
    assert out == [Log("init", 2), Emit(["early"]), Pid(42)]
    with pytest.raises(ProtocolError, match="without a `command`"):
        d.feed(msgpack.packb({"pid": 43}))  # only the first one is the reply


@pytest.mark.parametrize(
    "value,reason",
    [
        ([1, 2], "not a msgpack map"),
        ("hello world", "not a msgpack map"),
        (5, "not a msgpack map"),
        ({"nocommand": 1}, "without a `command`"),
        ({"command": "emit", "tuple": [1], "stream": 5}, "`stream` that is not a string"),
        ({"command": "emit", "tuple": "x"}, "without a `tuple` array"),
        ({"command": "emit", "tuple": [], "need_task_ids": 1}, "not a boolean"),
        ({"command": "emit", "tuple": [], "task": "4"}, "`task` that is not an integer"),
        ({"command": "emit", "tuple": [], "anchors": [1.5]}, "anchor that is not a string"),
        ({"command": "metrics", "params": 1}, "metrics without a `name`"),
        ({"command": "emit", "tuple": [msgpack.ExtType(5, b"x")]}, "ExtType"),
        ({"command": "emit", "tuple": [msgpack.Timestamp(1, 0)]}, "Timestamp"),
    ],
)
def test_bad_messages_carry_their_exact_bytes_and_what_came_before(value, reason):
    bad = msgpack.packb(value)
    sync = msgpack.packb({"command": "sync"})
    with pytest.raises(ProtocolError, match=reason) as info:
        decoder().feed(sync + bad + sync)
    assert info.value.raw == bad
    assert info.value.decoded == [Sync()]


@pytest.mark.parametrize(
    "data,reason",
    [
        (b"\xc1", "FormatError"),  # the one byte msgpack never uses
        (b"\xa2\xff\xfe", "utf-8"),  # a str that is not UTF-8
        (b"\x81\x01\x02", "int is not allowed for map key"),  # JSON has no such map either
        (b"\x81\x91\x01\x02", "list is not allowed for map key"),
        (b"\x81\xc4\x01\xff\x01", "utf-8"),  # a bin key that is not UTF-8
        (b"\x91" * 5000 + b"\x01", "StackError"),
    ],
)
@pytest.mark.parametrize("chunk", [1, 3, 1 << 20])
def test_undecodable_bytes_are_a_protocol_error(data, reason, chunk):
    sync = msgpack.packb({"command": "sync"})
    stream = sync + data
    d = decoder()
    before = []
    with pytest.raises(ProtocolError, match=reason) as info:
        for i in range(0, len(stream), chunk):
            before.extend(d.feed(stream[i : i + chunk]))
    # the report starts where the bad message starts, however the reads cut it
    assert info.value.raw and data.startswith(info.value.raw)
    assert before + info.value.decoded == [Sync()]


def test_a_bad_bin_value_outside_a_tuple_is_a_protocol_error():
    bad = msgpack.packb({"command": "emit", "tuple": [], "stream": b"\xff"}, use_bin_type=True)
    with pytest.raises(ProtocolError, match="utf-8") as info:
        decoder().feed(bad)
    assert info.value.raw == bad


# ---- limits -------------------------------------------------------------------------------------


def exactly(size: int) -> bytes:
    """A log message of exactly `size` bytes."""
    overhead = len(msgpack.packb({"command": "log", "msg": ""}))
    body = msgpack.packb({"command": "log", "msg": "x" * (size - overhead)})
    # the str header grows with the length: shrink the text until the whole is `size`
    n = size - overhead
    while len(body) > size:
        n -= 1
        body = msgpack.packb({"command": "log", "msg": "x" * n})
    assert len(body) == size
    return body


@settings(max_examples=50, deadline=None)
@given(cuts=st.lists(st.integers(0, 10**6), max_size=6))
def test_a_message_of_exactly_the_frame_limit_fits_however_it_is_cut(cuts):
    limit = 4096
    big = exactly(limit)
    sync = msgpack.packb({"command": "sync"})
    out = feed_all(decoder(limit), split_at(sync + big + sync + big, cuts))
    assert [type(m) for m in out] == [Sync, Log, Sync, Log]


def test_an_oversized_message_is_an_error_not_a_buffer():
    limit = 4096
    d = decoder(limit)
    sync = msgpack.packb({"command": "sync"})
    with pytest.raises(ProtocolError, match="4096-byte frame limit") as info:
        d.feed(sync + exactly(limit + 1))
    assert info.value.decoded == [Sync()]
    assert info.value.raw.startswith(b"\x82")  # the start of the offending message


def test_a_never_ending_message_fails_once_the_limit_is_reached():
    limit = 10_000
    d = decoder(limit)
    d.feed(b"\xdb\xff\xff\xff\xff")  # a str that claims 4 GiB
    fed = 5
    with pytest.raises(ProtocolError, match="frame limit"):
        while True:
            d.feed(b"y" * 1000)
            fed += 1000
            assert len(d.pending) <= limit  # never more than the limit held
    assert fed <= limit + 1000


# ---- host -> component --------------------------------------------------------------------------


@settings(max_examples=100, deadline=None)
@given(
    comp=st.none() | st.text(max_size=12),
    stream=st.text(max_size=12),
    task=st.integers(-1, 2**31 - 1),
    vals=st.lists(values, max_size=5),
    tuple_id=st.integers(1, 2**64 - 1),
)
def test_tuple_frames_are_one_map_equal_to_the_encoded_message(comp, stream, task, vals, tuple_id):
    s = MsgpackSerializer()
    frame = s.tuple_frame(s.tuple_prefix(comp, stream, task), s.values(vals), tuple_id)
    wire = {"comp": comp, "stream": stream, "task": task, "tuple": vals, "id": str(tuple_id)}
    assert msgpack.unpackb(frame) == wire
    assert msgpack.unpackb(s.encode(TupleMessage(str(tuple_id), comp, stream, task, vals))) == wire


def test_frames_stream_back_to_back_for_a_streaming_reader():
    # how pystorm reads: one Unpacker fed whatever os.read returned
    s = MsgpackSerializer()
    prefix = s.tuple_prefix("spout", "default", 1)
    stream = (
        s.tuple_frame(prefix, s.values(["a", 1]), 11)
        + s.task_ids([4, 7])
        + s.encode(SpoutCommand("next"))
        + s.tuple_frame(prefix, s.values([]), 2**64 - 1)
        + s.encode(TupleMessage("-1", None, "__heartbeat", -1, []))
    )
    reader = msgpack.Unpacker()
    got = []
    for i in range(0, len(stream), 3):
        reader.feed(stream[i : i + 3])
        got.extend(reader)
    assert got == [
        {"comp": "spout", "stream": "default", "task": 1, "tuple": ["a", 1], "id": "11"},
        [4, 7],
        {"command": "next", "id": ""},
        {
            "comp": "spout",
            "stream": "default",
            "task": 1,
            "tuple": [],
            "id": "18446744073709551615",
        },
        {"id": "-1", "comp": None, "stream": "__heartbeat", "task": -1, "tuple": []},
    ]


def test_prefixes_and_task_id_replies_are_cached():
    s = MsgpackSerializer()
    assert s.tuple_prefix("a", "default", 1) is s.tuple_prefix("a", "default", 1)
    assert s.task_ids([1, 2]) is s.task_ids([1, 2])
    assert msgpack.unpackb(s.task_ids([])) == []


def test_handshake_context_is_reduced():
    context = {
        "taskid": 3,
        "componentid": "split",
        "task->component": {"1": "spout", "3": "split"},
        "streams": ["default"],
        "stream->outputfields": {"default": ["word"]},
    }
    s = MsgpackSerializer()
    reduced = s.handshake_context(context)
    assert reduced == {"taskid": 3, "task->component": {"1": "spout", "3": "split"}}
    data = s.encode(Handshake("/tmp/pids", {"topology.name": "t"}, reduced))
    assert msgpack.unpackb(data) == {
        "pidDir": "/tmp/pids",
        "conf": {"topology.name": "t"},
        "context": reduced,
    }


def test_spout_commands_and_task_ids_encode_as_maps_and_arrays():
    s = MsgpackSerializer()
    assert msgpack.unpackb(s.encode(SpoutCommand("ack", 7))) == {"command": "ack", "id": 7}
    assert msgpack.unpackb(s.encode(TaskIds([4]))) == [4]


@pytest.mark.parametrize("bad", [object(), 2**70, "\udc80", {"k": {1, 2}}])
def test_what_msgpack_cannot_carry_is_an_encode_error(bad):
    s = MsgpackSerializer()
    with pytest.raises(EncodeError):
        s.values(["ok", bad])
    # the packer is still sound afterwards
    assert msgpack.unpackb(s.values(["ok"])) == ["ok"]


def test_chosen_by_name_with_the_json_serializer_s_interface():
    s = serializers.serializer("msgpack")
    assert isinstance(s, MsgpackSerializer) and s.name == "msgpack"
    protocol = {n for n in vars(serializers.Serializer) if not n.startswith("_")}
    protocol |= set(serializers.Serializer.__annotations__)
    for name in protocol:
        assert hasattr(s, name), name
        assert hasattr(serializers.JsonSerializer(), name), name
    with pytest.raises(ValueError):
        serializers.serializer("xml")
