"""The optional speed-ups of the host's decoder against their pure Python reference versions:
multilang/_speedups.c (parsed values -> typed messages) and orjson in `codec.parse_array`."""

from __future__ import annotations

import math
import os
import sys

import pytest
import ujson
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from multilang import codec, component_decoding
from multilang.component_decoding import ComponentDecoder
from multilang.messages import Ack, Emit, Pid

pure = os.environ.get("MULTILANG_PURE_PYTHON", "") not in ("", "0")
needs_c = pytest.mark.skipif(
    component_decoding._c_component_messages is None, reason="multilang._speedups is not built"
)


@pytest.mark.skipif(pure, reason="MULTILANG_PURE_PYTHON is set")
def test_the_c_decoder_is_built_here():
    # `make test` builds it (setup.py); a silent fallback would leave the data path 10-15 %
    # slower and the C code untested
    assert component_decoding._c_component_messages is not None


def both(values: list, awaiting_pid: bool = False):
    """(result, awaiting_pid after) of the C and of the Python version, for the same values."""
    out = []
    for use_c in (True, False):
        decoder = ComponentDecoder(awaiting_pid=awaiting_pid)
        if use_c:
            result = decoder._messages(values)
        else:
            result = decoder._messages_py(values)
        out.append((result, decoder.awaiting_pid))
    return out


def same(values: list, awaiting_pid: bool = False):
    (c, c_pid), (py, py_pid) = both(values, awaiting_pid)
    assert c_pid == py_pid
    if py is None:
        assert c is None
        return None
    assert c is not None and len(c) == len(py)
    for a, b in zip(c, py):
        assert type(a) is type(b)
        assert tuple(a) == tuple(b) or repr(a) == repr(b)  # NaN values compare by repr
        if type(a) is Emit:  # the anchors list is kept as the very object, as in Python
            assert type(a.anchors) is type(b.anchors)
    return c


WORD = {
    "command": "emit",
    "tuple": ["cow"],
    "anchors": ["12345678901234567890"],
    "need_task_ids": False,
}


@needs_c
@pytest.mark.parametrize(
    "values",
    [
        [WORD, {"command": "ack", "id": "12345678901234567890"}],
        [{"command": "emit", "tuple": []}],  # every default
        [
            {
                "command": "emit",
                "tuple": [1],
                "stream": None,
                "anchors": None,
                "task": None,
                "need_task_ids": None,
                "id": None,
            }
        ],
        [
            {
                "command": "emit",
                "tuple": [1],
                "stream": "s",
                "anchors": "7",
                "task": 3,
                "need_task_ids": True,
                "id": {"k": [1]},
            }
        ],
        [{"command": "emit", "tuple": [1], "task": 0}],  # Storm: task 0 is not a direct emit
        [{"command": "emit", "tuple": [1], "task": 2**70}],
        [{"command": "emit", "tuple": [1], "anchors": []}],
        [{"command": "ack", "id": 5}, {"command": "ack", "id": None}, {"command": "ack"}],
        [
            {"command": "sync"},
            {"command": "log", "msg": "hi", "level": 3},
            {"command": "fail", "id": "1"},
        ],
        [{"command": "metrics", "name": "m", "params": 1}, {"command": "nope", "x": 1}],
        # malformed emits: the whole batch is given up (None), like the Python version
        [WORD, {"command": "emit"}],
        [{"command": "emit", "tuple": "cow"}],
        [{"command": "emit", "tuple": ("cow",)}],
        [{"command": "emit", "tuple": [1], "stream": 5}],
        [{"command": "emit", "tuple": [1], "anchors": [1]}],
        [{"command": "emit", "tuple": [1], "anchors": ["1", None]}],
        [{"command": "emit", "tuple": [1], "anchors": {"a": 1}}],
        [{"command": "emit", "tuple": [1], "task": True}],
        [{"command": "emit", "tuple": [1], "task": 1.0}],
        [{"command": "emit", "tuple": [1], "need_task_ids": 1}],
        # not messages at all: the Python callback raises, the batch is given up
        [WORD, [1, 2]],
        [WORD, "text"],
        [{"command": 7}],
        [{"no": "command"}],
        [{"command": "metrics"}],
        [],
    ],
)
def test_fixed_cases_decode_as_the_python_version(values):
    same(values)


@needs_c
def test_the_pid_reply_is_handled_by_the_callback_and_remembered():
    result = same([{"command": "log", "msg": "early"}, {"pid": 42}, WORD], awaiting_pid=True)
    assert type(result[1]) is Pid
    (_, c_pid), _ = both([{"pid": 42}], awaiting_pid=True)
    assert c_pid is False
    # a later bad value gives the batch up, and the decoder still awaits its pid (the caller
    # retries frame by frame)
    (c, c_pid), _ = both([{"pid": 42}, {"command": "emit"}], awaiting_pid=True)
    assert c is None and c_pid is True


@needs_c
def test_exceptions_other_than_protocol_errors_propagate():
    def boom(value):
        raise KeyError("boom")

    with pytest.raises(KeyError):
        component_decoding._c_component_messages([WORD, {"command": "sync"}], Emit, Ack, boom)
    with pytest.raises(TypeError):
        component_decoding._c_component_messages((WORD,), Emit, Ack, boom)
    with pytest.raises(TypeError):
        component_decoding._c_component_messages([WORD], dict, Ack, boom)


@needs_c
def test_no_reference_is_leaked_or_lost():
    values = [
        dict(WORD, tuple=["a fresh value object"]),
        {"command": "ack", "id": "x" * 30},
        {"command": "emit", "tuple": [1], "anchors": "single"},
        {"command": "sync"},
    ]
    watched = [values[0]["tuple"], values[0]["anchors"], values[1]["id"], values[2]["anchors"]]
    before = [sys.getrefcount(w) for w in watched]
    for _ in range(1000):
        result = ComponentDecoder(awaiting_pid=False)._messages(values)
        assert result is not None
        del result
        assert (
            ComponentDecoder(awaiting_pid=False)._messages(values + [{"command": "emit"}]) is None
        )
    assert [sys.getrefcount(w) for w in watched] == before


# random message-like values: every key of an emit, with right and wrong types
loose = (
    st.none()
    | st.booleans()
    | st.integers(-3, 3)
    | st.integers(2**63, 2**70)
    | st.floats(allow_nan=True)
    | st.text(max_size=4)
    | st.lists(st.text(max_size=3) | st.integers(0, 2), max_size=3)
)
fields = st.fixed_dictionaries(
    {},
    optional={
        "command": st.sampled_from(["emit", "ack", "sync", "fail", "log", "metrics", "bogus"])
        | loose,
        "tuple": loose,
        "stream": loose,
        "anchors": loose,
        "task": loose,
        "need_task_ids": loose,
        "id": loose,
        "msg": loose,
        "level": loose,
        "name": loose,
        "params": loose,
        "pid": loose,
    },
)
emit_like = st.fixed_dictionaries(
    {"command": st.just("emit"), "tuple": st.lists(st.text(max_size=3), max_size=2)},
    optional={
        "stream": st.none() | st.text(max_size=3),
        "anchors": st.none() | st.text(max_size=3) | st.lists(st.text(max_size=3), max_size=2),
        "task": st.none() | st.integers(-2, 2),
        "need_task_ids": st.none() | st.booleans(),
        "id": loose,
    },
)
values_strategy = st.lists(fields | emit_like | loose, max_size=6)


@needs_c
@settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(values=values_strategy, awaiting_pid=st.booleans())
def test_random_values_decode_as_the_python_version(values, awaiting_pid):
    same(values, awaiting_pid)


# ---- orjson in parse_array ---------------------------------------------------------------------

needs_orjson = pytest.mark.skipif(codec._orjson is None, reason="orjson is not installed")


def ujson_or_error(text: bytes):
    try:
        return ujson.loads(text)
    except (ValueError, OverflowError) as exc:
        return type(exc)


def parse_or_error(text: bytes):
    try:
        return codec.parse_array(text)
    except (ValueError, OverflowError) as exc:
        return type(exc)


def identical(a, b) -> bool:
    """Equal values of equal types, NaN equal to NaN (so 1 and 1.0 differ, as they would on the
    wire when the host writes them back)."""
    if type(a) is not type(b):
        return False
    if type(a) is float:
        return a == b or (math.isnan(a) and math.isnan(b))
    if type(a) is list:
        return len(a) == len(b) and all(map(identical, a, b))
    if type(a) is dict:
        return a.keys() == b.keys() and all(identical(a[k], b[k]) for k in a)
    return a == b


@needs_orjson
@pytest.mark.parametrize(
    "text",
    [
        b"[99999999999999999999]",
        b"[-9999999999999999999]",
        b"[18446744073709551615]",
        b"[-9223372036854775808]",
        b"[1,\t12345678901234567890123]",
        b'["12345678901234567890"]',
        b'[{"id":"12345678901234567890","n":12345678901234567890}]',
        b"[NaN]",
        b"[1e400]",
        b'["\\ud800"]',
        b"[1.0, -0, 1E5, 0.1]",
        b'["a\\u0000b"]',
        b'[{"a":1,"a":2}]',
        b"[1,]",
        b'["\xff"]',
    ],
)
def test_parse_array_reads_what_ujson_reads(text):
    assert identical(parse_or_error(text), ujson_or_error(text))


json_texts = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**80), 2**80)
    | st.floats()
    | st.text(max_size=6)
    | st.integers(-(2**80), 2**80).map(str),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=4), inner, max_size=3)
    ),
    max_leaves=10,
).map(
    lambda v: (
        ("[" + ujson.dumps(v, reject_bytes=False) + "]").encode()
        if not isinstance(v, float) or math.isfinite(v)
        else b"[NaN]"
    )
)


@needs_orjson
@settings(max_examples=1000, deadline=None)
@given(text=json_texts)
def test_random_arrays_parse_as_ujson_parses_them(text):
    assert identical(parse_or_error(text), ujson_or_error(text))


def test_a_batch_with_a_huge_integer_keeps_it_exact():
    big = 2**64 + 1
    stream = b'{"command":"emit","tuple":[%d, "12345678901234567890123"]}\nend\n' % big
    [message] = ComponentDecoder(awaiting_pid=False).feed(stream)
    assert message.values == [big, "12345678901234567890123"] and type(message.values[0]) is int


# ---- plain_frames: the Spark component driver's scan of plain emits and acks ----------------------

needs_c_scan = pytest.mark.skipif(
    component_decoding._c_plain_frames is None, reason="multilang._speedups is not built"
)


def emit_frame(tuple_text: str, anchor: str) -> str:
    return (
        f'{{"command":"emit","tuple":{tuple_text},"anchors":["{anchor}"],'
        '"need_task_ids":false}\nend\n'
    )


def ack_frame(tid: str) -> str:
    return f'{{"command":"ack","id":"{tid}"}}\nend\n'


def same_scan(body: str):
    py = component_decoding.plain_frames_py(body)
    c = component_decoding._c_plain_frames(body)  # type: ignore[misc]
    assert c == py
    return py


@pytest.mark.skipif(pure, reason="MULTILANG_PURE_PYTHON is set")
def test_the_c_scan_is_built_here():
    assert component_decoding._c_plain_frames is not None


def test_what_our_clients_write_is_scanned_in_order():
    body = (
        ack_frame("6")
        + emit_frame('["the"]', "7")
        + emit_frame('["cow"]', "7")
        + ack_frame("7")
        + emit_frame('["late"]', "7")
        + emit_frame("[]", "-8")
    )
    assert component_decoding.plain_frames_py(body) == (
        b'[["the"],["cow"],["late"],[]]',
        ["7", "7", "7", "-8"],
        ["6", "7"],
        ["7"],
        8,
    )
    assert component_decoding.plain_frames_py("") == (b"[]", [], [], [], 0)
    assert component_decoding.plain_frames_py(ack_frame("1") + ack_frame("1")) == (
        b"[]",
        [],
        ["1", "1"],
        [],
        0,
    )


def test_anything_else_is_not_scanned():
    plain = emit_frame('["a"]', "1")
    for body in [
        plain + "x",  # trailing bytes
        plain[:-1],  # no end line
        plain.replace("\nend\n", "\r\nend\n"),
        emit_frame('["a\rb"]', "1"),
        emit_frame('["a"]', "1").replace('"need_task_ids":false', '"need_task_ids":true'),
        '{"command":"emit","anchors":["1"],"tuple":["a"],"need_task_ids":false}\nend\n',
        '{"command":"emit","tuple":["a"],"stream":"s","anchors":["1"],"need_task_ids":false}'
        "\nend\n",
        emit_frame('["a"]', ""),
        emit_frame('["a"]', "--1"),
        emit_frame('["a"]', "1-"),
        emit_frame('["a"]', "x"),
        emit_frame('["a"]', "\u0661"),  # an Arabic-Indic digit: ASCII digits only
        emit_frame('"a"', "1"),
        emit_frame("]", "1"),
        ack_frame(""),
        ack_frame("1 "),
        '{"command":"sync"}\nend\n',
        '{"command":"ack","id":1}\nend\n',
    ]:
        assert component_decoding.plain_frames_py(body) is None, body


def test_a_tuple_may_hold_what_looks_like_the_frame_s_tail():
    text = '["],\\"anchors\\":[\\"5\\"],\\"need_task_ids\\":false}", "é😀"]'
    got = component_decoding.plain_frames_py(emit_frame(text, "12"))
    assert got == (f"[{text}]".encode(), ["12"], [], [], len(text))


@needs_c_scan
@pytest.mark.parametrize(
    "body",
    [
        "",
        ack_frame("6") + emit_frame('["the"]', "7") + ack_frame("7") + emit_frame("[1]", "7"),
        emit_frame('["é", "😀", "\\u00e9"]', "-12345678901234567890"),
        emit_frame('["],\\"anchors\\":[\\"5\\"],\\"need_task_ids\\":false}x"]', "3"),
        emit_frame('["a"]', "1") + "x",
        emit_frame('["a"]', "1")[:-1],
        emit_frame('["a\rb"]', "1"),
        emit_frame('["a"]', "\u0661"),
        emit_frame('["a"]', "--1"),
        emit_frame('["\ud800"]', "1"),  # a lone surrogate: not UTF-8, not scanned
        emit_frame("]", "1"),
        emit_frame("[]", "1"),
        ack_frame("-0") + ack_frame("1") + ack_frame("1"),
        '{"command":"ack","id":"1"}\nend',
        '{"command":"ack","id":"1"}\n\nend\n',
        "\nend\n",
    ],
)
def test_the_c_scan_agrees_on_fixed_cases(body):
    same_scan(body)


def test_the_pure_python_scan_is_used_without_the_c_one(monkeypatch):
    monkeypatch.setattr(component_decoding, "_c_plain_frames", None)
    assert component_decoding.plain_frames(emit_frame("[1]", "2")) == (b"[[1]]", ["2"], [], [], 3)


_tuple_texts = st.one_of(
    st.lists(st.text(max_size=6), max_size=3).map(lambda v: ujson.dumps(v, ensure_ascii=False)),
    st.text(alphabet='[]",\\:{}a1-é\r\n ', max_size=12),
)
_ids = st.one_of(
    st.integers(-(2**70), 2**70).map(str), st.text(alphabet="-0123456789x\u0661", max_size=4)
)
_frames = st.one_of(
    st.builds(emit_frame, _tuple_texts, _ids),
    st.builds(ack_frame, _ids),
    st.sampled_from(['{"command":"sync"}\nend\n', "\nend\n", "end\n", "x", "\r"]),
)


@needs_c_scan
@settings(max_examples=2000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(frames=st.lists(_frames, max_size=8), cut=st.integers(0, 3))
def test_random_bodies_are_scanned_as_the_python_version(frames, cut):
    body = "".join(frames)
    same_scan(body)
    same_scan(body[: len(body) - cut])  # a body cut short
