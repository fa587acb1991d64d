"""The Python client's msgpack side (multilang/client_msgpack.py), the host's bytes in tuples
(multilang/msgpack_serializer.py, codec.dumps), and the Kafka components' bytes settings: pure
logic, no processes (tests/integration/test_python_client_msgpack.py runs them)."""

from __future__ import annotations

import base64

import msgpack
import pytest

from components.kafka_bolt.bolt import ConfigError, from_base64, from_conf
from components.kafka_spout.translate import translator
from multilang import BasicBolt, Spout
from multilang.client_io import detect_serializer
from multilang.client_msgpack import MsgpackHostDecoder, msgpack_class, pack
from multilang.codec import EncodeError, ProtocolError, dumps, encode, values_json
from multilang.messages import Emit, Handshake, Log, SpoutCommand, TaskIds, TupleMessage
from multilang.msgpack_serializer import MsgpackDecoder, MsgpackSerializer

# ---- detecting the serializer -------------------------------------------------------------------


def test_the_hosts_json_setup_message_means_json():
    assert detect_serializer(encode(Handshake("/tmp", {"a": 1}, {"taskid": 1}))) == "json"


def test_the_hosts_msgpack_setup_message_means_msgpack():
    data = MsgpackSerializer().encode(Handshake("/tmp", {"a": 1}, {"taskid": 1}))
    assert detect_serializer(data) == "msgpack"


@pytest.mark.parametrize("first", [0x80, 0x83, 0x8F, 0xDE, 0xDF])
def test_every_msgpack_map_start_means_msgpack(first):
    assert detect_serializer(bytes([first]) + b"rest") == "msgpack"


@pytest.mark.parametrize("data", [b"", b"{", b" {", b"\x90", b"\xdc", b"\xa3abc", b"x"])
def test_anything_else_is_left_to_the_json_decoder(data):
    assert detect_serializer(data) == "json"


# ---- the client's decoder -----------------------------------------------------------------------


def host_stream() -> bytes:
    ser = MsgpackSerializer()
    prefix = ser.tuple_prefix("spout", "default", 1)
    return b"".join(
        [
            ser.encode(Handshake("/tmp/p", {"k": "v"}, {"taskid": 3})),
            ser.tuple_frame(prefix, ser.values([1, b"\xff\x00", "t\u00e9xt"]), 42),
            ser.spout_command("next", ""),
            ser.task_ids([4, 7]),
        ]
    )


def test_the_decoder_reads_what_the_host_writes_however_it_is_cut():
    whole = MsgpackHostDecoder().feed(host_stream())
    byte_by_byte = []
    decoder = MsgpackHostDecoder()
    for i in range(len(host_stream())):
        byte_by_byte += decoder.feed(host_stream()[i : i + 1])
    assert whole == byte_by_byte
    handshake, tup, command, task_ids = whole
    assert handshake == Handshake("/tmp/p", {"k": "v"}, {"taskid": 3})
    assert type(tup) is TupleMessage
    assert tup == TupleMessage("42", "spout", "default", 1, [1, b"\xff\x00", "t\u00e9xt"])
    assert command == SpoutCommand("next", "")
    assert task_ids == TaskIds([4, 7])


def test_a_value_that_is_no_host_message_is_reported_and_the_rest_kept():
    decoder = MsgpackHostDecoder()
    data = pack({"command": "next", "id": ""}) + pack("stray") + pack([1, 2])
    with pytest.raises(ProtocolError) as err:
        decoder.feed(data)
    assert err.value.decoded == [SpoutCommand("next", "")]
    assert decoder.feed(b"") == [TaskIds([1, 2])]


def test_bytes_that_are_not_msgpack_are_reported_once_and_dropped():
    decoder = MsgpackHostDecoder()
    with pytest.raises(ProtocolError) as err:
        decoder.feed(pack({"command": "next", "id": ""}) + b"\xc1")  # 0xc1: never used
    assert err.value.decoded == [SpoutCommand("next", "")]
    assert decoder.feed(b"") == []  # the client's recovery loop ends
    assert decoder.feed(pack([3])) == [TaskIds([3])]


def test_the_decoder_is_bounded():
    decoder = MsgpackHostDecoder(max_frame=64)
    with pytest.raises(ProtocolError):
        decoder.feed(pack({"command": "x" * 100}))


def test_pack_refuses_what_msgpack_cannot_hold():
    with pytest.raises(EncodeError):
        pack({"tuple": [object()]})
    with pytest.raises(EncodeError):
        pack({"tuple": [2**70]})


# ---- the msgpack classes ------------------------------------------------------------------------


class Wrapping(BasicBolt):
    def emit(self, values, *args, **kwargs):
        return super().emit(["wrapped", *values], *args, **kwargs)


def test_the_msgpack_class_keeps_user_overrides_above_its_own():
    made = msgpack_class(Wrapping)
    assert made is msgpack_class(Wrapping)  # one per class
    assert issubclass(made, Wrapping) and made.__name__ == "Wrapping"
    mro = made.__mro__
    assert mro.index(Wrapping) < mro.index(BasicBolt) < mro.index(made.__mro__[3])
    bolt = Wrapping()
    bolt._speak_msgpack()  # as the handshake does on a msgpack setup message
    assert type(bolt) is made
    bolt.emit(["x"])
    assert msgpack.unpackb(bolt._out[0]) == {
        "command": "emit",
        "tuple": ["wrapped", "x"],
        "need_task_ids": False,
    }


def test_a_msgpack_spout_sends_bytes_as_bin_and_syncs_in_msgpack():
    spout = Spout()
    spout._speak_msgpack()
    assert type(spout) is msgpack_class(Spout)
    spout.emit([b"\xff", "s"], id=[1, 2])
    spout._handle(SpoutCommand("next", ""))
    first = msgpack.unpackb(spout._out[0])
    assert first == {
        "command": "emit",
        "tuple": [b"\xff", "s"],
        "id": [1, 2],
        "need_task_ids": False,
    }
    assert msgpack.unpackb(spout._out[1]) == {"command": "sync"}


# ---- the host: bytes in tuples ------------------------------------------------------------------


def host_reads(message: dict) -> list:
    decoder = MsgpackDecoder(awaiting_pid=False)
    return decoder.feed(msgpack.packb(message, use_bin_type=True))


def test_bin_in_an_emits_tuple_stays_bytes_at_any_depth():
    [m] = host_reads(
        {"command": "emit", "tuple": [b"\xff", [b"\x00"], {"k": b"\x80"}, "s"], "id": b"7"}
    )
    assert type(m) is Emit
    assert m.values == [b"\xff", [b"\x00"], {"k": b"\x80"}, "s"]
    assert m.id == "7"  # ids stay as before: bin -> str


def test_bin_outside_tuples_is_text_as_before():
    assert host_reads({"command": "log", "msg": b"hello", "level": 2}) == [Log("hello", 2)]
    [m] = host_reads({"command": "emit", "tuple": [], "anchors": [b"5"], "stream": b"s"})
    assert (m.anchors, m.stream) == (["5"], "s")
    with pytest.raises(ProtocolError):
        host_reads({"command": "log", "msg": b"\xff", "level": 2})  # invalid UTF-8, as before


def test_extension_types_in_a_tuple_are_still_refused():
    with pytest.raises(ProtocolError):
        host_reads({"command": "emit", "tuple": [msgpack.ExtType(1, b"x")]})


def test_bytes_go_to_msgpack_targets_as_bin_and_to_json_ones_as_base64():
    values = [b"\xff\x00", "s", {"k": [b"\x80"]}, 2**70]
    assert msgpack.unpackb(MsgpackSerializer().values(values[:3])) == values[:3]
    assert values_json(values) == b'["/wA=","s",{"k":["gA=="]},1180591620717411303424]'
    assert dumps(b"\x01") == '"AQ=="'


def test_json_still_refuses_what_it_cannot_hold_with_or_without_bytes():
    with pytest.raises(EncodeError):
        values_json([object()])
    with pytest.raises(EncodeError):
        values_json([b"x", object()])


# ---- Kafka: bytes settings ----------------------------------------------------------------------


def test_the_spout_translator_emits_raw_bytes_only_when_asked():
    args = ("t", 0, 5, b"\xffk", b"\x00v")
    assert translator("default", "bytes", raw_bytes=True)(*args)[3:] == [b"\xffk", b"\x00v"]
    assert translator("default", "bytes")(*args)[3:] == ["/2s=", "AHY="]
    assert translator("value", "string", raw_bytes=True)(*args) == ["\x00v"]


def test_the_bolt_encoding_setting():
    base = {"kafka.bolt.bootstrap.servers": "h:1", "kafka.bolt.topic": "t"}
    assert from_conf(base).encoding == "string"
    assert from_conf({**base, "kafka.bolt.encoding": "bytes"}).encoding == "bytes"
    with pytest.raises(ConfigError, match="encoding"):
        from_conf({**base, "kafka.bolt.encoding": "base64"})


def test_the_bolt_decodes_base64_text_and_keeps_bytes_with_encoding_bytes():
    assert from_base64(base64.b64encode(b"\xff\x00").decode()) == b"\xff\x00"
    assert from_base64(b"\xff") == b"\xff"
    assert from_base64(None) is None
    assert from_base64(7) == b"7"
    with pytest.raises(ValueError, match="not base64"):
        from_base64("not base64!")
