"""What failure reports show of a message: the exact bytes, escaped so that any bytes print as
readable text, cut with the total size stated; and the decoders finding those bytes again."""

from __future__ import annotations

import msgpack
import pytest
from hypothesis import given
from hypothesis import strategies as st

from host.observe.observations import _head, _tail
from host.runtime.link import REPORT_BYTES, wrote_text
from multilang.codec import ProtocolError, printable, shorten
from multilang.component_decoding import ComponentDecoder
from multilang.msgpack_serializer import MsgpackDecoder


def test_utf8_text_is_shown_as_it_is():
    assert printable('{"command":"log","msg":"héllo wörld ✓"}'.encode()) == (
        '{"command":"log","msg":"héllo wörld ✓"}'
    )


def test_a_backslash_of_json_is_left_alone():
    assert printable(b'{"tuple":["a\\"b","c\\\\d"]}') == '{"tuple":["a\\"b","c\\\\d"]}'


def test_control_characters_invalid_utf8_and_binary_are_escaped():
    assert printable(b"a\x00b\tc\r\nd\x7f") == "a\\x00b\\tc\\r\\nd\\x7f"
    assert printable(b"bad \xff\xfe\xc3(") == "bad \\xff\\xfe\\xc3("
    assert printable("\u2028\x85".encode()) == "\\u2028\\u0085"  # unprintable, valid UTF-8
    packed = msgpack.packb({"command": "ack", "id": "5"})
    assert printable(packed) == "\\x82\\xa7command\\xa3ack\\xa2id\\xa15"


def test_newlines_may_be_kept_for_readers_that_show_lines():
    assert printable(b"{}\nend\n\x00", newlines=True) == "{}\nend\n\\x00"


@given(st.binary(max_size=200))
def test_property_any_bytes_print_as_one_line_of_printable_text(data):
    text = printable(data)
    assert text.isprintable()
    assert "\ufffd" not in text or "\ufffd".encode() in data  # nothing replaced


@given(st.binary(max_size=100))
def test_property_the_escaped_text_determines_the_bytes_but_for_backslashes(data):
    # escapes of bytes that are not UTF-8 never collide with characters: `\x80`-`\xff` mean
    # bytes, characters at or above 0x80 are written `\u....`
    if b"\\" in data:
        return
    assert _unprintable(printable(data)) == data


def _unprintable(text: str) -> bytes:
    """Undo `printable`: `\\xNN` is the byte NN (a character below 0x80, a byte that was not
    UTF-8 above), `\\u` and `\\U` a character, `\\n` `\\t` `\\r` those."""
    out = bytearray()
    i = 0
    while i < len(text):
        c = text[i]
        if c != "\\":
            out += c.encode()
            i += 1
            continue
        kind = text[i + 1]
        if kind in "ntr":
            out += {"n": b"\n", "t": b"\t", "r": b"\r"}[kind]
            i += 2
        elif kind == "x":
            out.append(int(text[i + 2 : i + 4], 16))
            i += 4
        elif kind == "u":
            out += chr(int(text[i + 2 : i + 6], 16)).encode()
            i += 6
        else:
            out += chr(int(text[i + 2 : i + 10], 16)).encode()
            i += 10
    return bytes(out)


def test_shorten_states_the_size_of_what_it_cuts():
    assert shorten(b"x" * 10, 20) == "x" * 10
    assert shorten(b"x" * 1234, 20) == "x" * 20 + "… (1234 bytes in all)"


def test_a_report_says_whether_it_shows_bytes_or_a_parsed_message():
    assert wrote_text(b'{"command":"ack","id":"c0"}') == '; it wrote {"command":"ack","id":"c0"}'
    assert wrote_text('{"id":"c0"}') == '; the message, as parsed: {"id":"c0"}'
    assert wrote_text(None) == wrote_text(b"") == ""
    long = wrote_text(b"\x00" * 1000)
    assert long == "; it wrote " + "\\x00" * REPORT_BYTES + "… (1000 bytes in all)"


def test_the_stats_files_failure_report_is_escaped_and_sized():
    frame = msgpack.packb({"id": "1", "comp": "s", "stream": "default", "task": 0, "tuple": [0]})
    assert _head(frame) == printable(frame) and "\x00" not in _head(frame)
    assert _head(b"y" * 500) == "y" * 300 + "… (500 bytes in all)"
    tail = _tail(b'{"command":"ack","id":"1"}\nend\n' * 30)
    assert tail.split("\n")[0] in ("end", '{"command":"ack","id":"1"}')  # from a line start
    assert tail.endswith('{"command":"ack","id":"1"}\nend\n')
    assert "\x00" not in _tail(b"\x00" * 1000) and len(_tail(b"\x00" * 1000)) == 1600


# ---- the decoders find a message's bytes again ------------------------------------------------


def test_the_json_decoder_gives_the_frames_of_its_last_feed():
    d = ComponentDecoder()
    assert d.feed(b'{"pid":1}\nend\n{"command":"ack",') and d.frames() == [b'{"pid":1}']
    messages = d.feed(b' "id":"c0"}\nend\n{"command":"sync"}\nend\n{"comm')
    assert len(messages) == 2
    assert d.frames() == [b'{"command":"ack", "id":"c0"}', b'{"command":"sync"}']
    messages = d.feed(b'and":"sync"}\r\nend\r\n')
    assert len(messages) == 1 and d.frames() == [b'{"command":"sync"}\r\n']


def test_the_json_decoders_frames_cover_what_a_protocol_error_handed_over():
    d = ComponentDecoder()
    d.feed(b'{"pid":1}\nend\n')
    with pytest.raises(ProtocolError) as err:
        d.feed(b'{"command":"ack","id":"1"}\nend\nnot json\nend\n')
    assert len(err.value.decoded) == 1 and err.value.raw == b"not json"
    assert d.frames()[0] == b'{"command":"ack","id":"1"}'


def test_the_msgpack_decoder_gives_the_messages_of_its_last_feed():
    pid, ack = msgpack.packb({"pid": 1}), msgpack.packb({"command": "ack", "id": "5"})
    emit = msgpack.packb({"command": "emit", "tuple": [0, 1, "x" * 300]})
    stream = pid + ack + emit + ack
    d = MsgpackDecoder()
    assert d.feed(stream[:3]) == [] and d.frames() == []
    cut = len(pid) + len(ack) + 10  # in the middle of the emit
    assert len(d.feed(stream[3:cut])) == 2 and d.frames() == [pid, ack]
    assert len(d.feed(stream[cut:])) == 2 and d.frames() == [emit, ack]


def test_the_msgpack_decoders_frames_cover_what_a_protocol_error_handed_over():
    pid, ack = msgpack.packb({"pid": 1}), msgpack.packb({"command": "ack", "id": "5"})
    d = MsgpackDecoder()
    d.feed(pid[:2])
    with pytest.raises(ProtocolError) as err:
        d.feed(pid[2:] + ack + b"\xc1")
    assert len(err.value.decoded) == 2 and d.frames() == [pid, ack]
