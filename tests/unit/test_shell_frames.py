"""multilang/shell_frames.py against the real thing: the bash library's own jq program
(`_ML_JQ_PROGRAM` in multilang/bash/multilang.sh), run by jq on the JSON the host would have
written, must give byte for byte what the host writes as shell frames, for any message and value
(hypothesis), counting lengths in characters and in bytes."""

from __future__ import annotations

import json
import math
import re
import subprocess
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from multilang.paths import BASH_LIBRARY
from multilang.shell_frames import (
    JOIN_BYTES,
    JOIN_MAX,
    command,
    jq_number,
    jq_tojson,
    shell_frames,
)

_PROGRAM = re.search(
    r"^_ML_JQ_PROGRAM='\n(.*?)^'$", BASH_LIBRARY.read_text(), re.MULTILINE | re.DOTALL
)
assert _PROGRAM is not None, f"no _ML_JQ_PROGRAM in {BASH_LIBRARY}"
PROGRAM = _PROGRAM.group(1)
SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def jq_frames(messages: list[Any], chars: bool, batch: bool = False) -> bytes:
    """What the library's jq co-process writes for these host messages (as JSON frames)."""
    data = "".join(json.dumps(m) + "\nend\n" for m in messages).encode()
    result = subprocess.run(
        ["jq", "-nRj", "--argjson", "bytes", json.dumps(not chars), "--argjson", "batch"]
        + [json.dumps(batch), PROGRAM],
        input=data,
        capture_output=True,
        check=True,
        env={"LC_ALL": "C.UTF-8", "PATH": "/usr/bin:/bin:/usr/local/bin"},
    )
    return result.stdout


def jq_tojson_text(values: list[Any]) -> list[str]:
    out = subprocess.run(
        ["jq", "-c", ".[] | tojson"],
        input=json.dumps(values).encode(),
        capture_output=True,
        check=True,
    ).stdout.decode()
    return [json.loads(line) for line in out.splitlines()]


# ---- values ----------------------------------------------------------------------------------------

finite = st.floats(allow_nan=False, allow_infinity=False)
numbers = st.one_of(st.integers(-(2**63), 2**63), finite)
text = st.text(st.characters(blacklist_categories=["Cs"]), max_size=12) | st.sampled_from(
    ["", "'", "a'b", "\x00", "x\x00y", "\x7f\x01\b\f\n\r\t", "é€𝄞", "\u2028", '"\\/']
)
json_values = st.recursive(
    st.none() | st.booleans() | numbers | text,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(text, inner, max_size=3),
    max_leaves=8,
)


@SETTINGS
@given(st.lists(numbers, min_size=1, max_size=40))
@example([1.0, 1e15, 1e16, 1e17, 123456789012345678, 1e-5, 1.5e-7, 0.0001, -0.0, 5e-324, 2**63])
def test_numbers_are_written_as_jq_writes_them(values: list[float]) -> None:
    assert [jq_number(float(v)) for v in values] == jq_tojson_text(values)


def test_what_json_has_no_number_for() -> None:
    assert jq_number(math.nan) == "null"
    assert jq_number(math.inf) == "1.7976931348623157e+308"
    huge = [10**400, -(10**400)]  # beyond a double: jq reads them as the largest ones
    assert [jq_tojson(v) for v in huge] == jq_tojson_text(huge)


# ---- messages --------------------------------------------------------------------------------------

ids = st.text(st.characters(whitelist_categories=["Nd", "Ll"]), max_size=20) | st.integers(
    -(2**63), 2**63
).map(str)
tuples = st.fixed_dictionaries(
    {
        "id": ids,
        "comp": st.none() | text,
        "stream": text,
        "task": st.integers(-1, 10_000),
        "tuple": st.lists(json_values, max_size=4),
    }
)
ticks = st.integers(1, 60).map(
    lambda f: {"id": "1", "comp": "__system", "stream": "__tick", "task": -1, "tuple": [f]}
)
heartbeats = st.just({"id": "5", "comp": None, "stream": "__heartbeat", "task": -1, "tuple": []})
commands = st.fixed_dictionaries(
    {
        "command": st.sampled_from(["next", "ack", "fail", "activate", "deactivate"]),
        "id": st.just("") | ids | st.integers(-(2**70), 2**70) | text,
    }
)
task_ids = st.lists(st.integers(0, 10_000), max_size=5)
messages = st.lists(
    st.one_of(tuples, ticks, heartbeats, commands, task_ids), min_size=1, max_size=8
)


@pytest.mark.parametrize("chars", [True, False], ids=["characters", "bytes"])
@SETTINGS
@given(batch=messages)
def test_every_message_is_written_as_the_jq_program_writes_it(chars: bool, batch: list) -> None:
    assert b"".join(command(m, chars, False) for m in batch) == jq_frames(batch, chars)


def test_lone_surrogates_become_replacement_characters() -> None:
    """JSON allows a lone surrogate (\\ud800), UTF-8 does not: jq 1.6 refuses the whole message
    (its handler `_ml_X` reports it), the host writes U+FFFD in its place, as jq 1.7 reads it."""
    msg = {"id": "1", "comp": "c", "stream": "s", "task": 2, "tuple": ["a\ud800b", ["\udc00"]]}
    clean = {**msg, "tuple": ["a\ufffdb", ["\ufffd"]]}
    assert b"_ml_X 'cannot read a host message" in jq_frames([msg], True)
    for chars in (True, False):
        assert command(msg, chars, False) == jq_frames([clean], chars)


@pytest.mark.parametrize("chars", [True, False], ids=["characters", "bytes"])
@SETTINGS
@given(t=tuples, tuple_id=st.integers(-(2**63), 2**63 - 1))
def test_the_hot_path_writes_a_tuple_as_command_does(chars: bool, t: dict, tuple_id: int) -> None:
    ser = shell_frames(chars)
    frame = ser.tuple_frame(
        ser.tuple_prefix(t["comp"], t["stream"], t["task"]), ser.values(t["tuple"]), tuple_id
    )
    assert frame == command({**t, "id": str(tuple_id)}, chars, False)


@pytest.mark.parametrize("chars", [True, False], ids=["characters", "bytes"])
def test_spout_commands_and_task_ids(chars: bool) -> None:
    ser = shell_frames(chars)
    got = ser.spout_command("ack", 12) + ser.spout_command("fail", "m'1") + ser.task_ids([3, 4])
    want = jq_frames(
        [{"command": "ack", "id": 12}, {"command": "fail", "id": "m'1"}, [3, 4]], chars
    )
    assert got == want


# ---- joined frames (`join_frames`) ----------------------------------------------------------------


def split_frames(data: bytes, chars: bool) -> list[bytes]:
    """The frames of one write, each with its 10-digit length, cut where the lengths say."""
    out = []
    while data:
        length, body = int(data[:10]), data[10:]
        size = len(body.decode()[:length].encode()) if chars else length
        assert len(body) >= size, "a frame's length runs past the write"
        out.append(data[: 10 + size])
        data = body[size:]
    return out


messages = st.lists(
    st.one_of(tuples, tuples, tuples, ticks, heartbeats, st.lists(st.integers(0, 99))), max_size=150
)


@pytest.mark.parametrize("chars", [True, False], ids=["characters", "bytes"])
@SETTINGS
@given(msgs=messages)
def test_joined_frames_hold_runs_of_tuples_and_nothing_else(chars: bool, msgs: list) -> None:
    frames = [command(m, chars, False) for m in msgs]
    assert shell_frames(chars).join_frames(frames) == b"".join(frames)  # a library without it
    written = split_frames(shell_frames(chars, joined=True).join_frames(frames), chars)
    assert join_walk(frames, written) == []


def join_walk(frames: list[bytes], written: list[bytes]) -> list[bytes]:
    """Walks the input along what was written: every frame written must be either the next
    non-tuple frame as it was, or the next run of bolt tuples, one command a line: as many as
    follow, up to JOIN_MAX and JOIN_BYTES (the first of a run always goes in). Returns the input
    left over."""
    rest = list(frames)
    for w in written:
        if not rest[0].startswith(b"_ml_T ", 10):
            assert w == rest.pop(0)
            continue
        run = [rest.pop(0)]
        size = len(run[0])
        while (
            rest
            and rest[0].startswith(b"_ml_T ", 10)
            and len(run) < JOIN_MAX
            and size + len(rest[0]) <= JOIN_BYTES
        ):
            size += len(rest[0])
            run.append(rest.pop(0))
        assert w[10:] == b"\n".join(f[10:] for f in run)
    return rest


@pytest.mark.parametrize("chars", [True, False], ids=["characters", "bytes"])
def test_a_long_run_of_tuples_is_cut_at_join_max(chars: bool) -> None:
    ser = shell_frames(chars, joined=True)
    prefix = ser.tuple_prefix("s", "default", 1)
    frames = [ser.tuple_frame(prefix, ser.values(["é ' \n"]), i) for i in range(JOIN_MAX + 1)]
    written = split_frames(ser.join_frames(frames), chars)
    assert len(written) == 2 and written[1] == frames[-1]
    assert written[0][10:].count(b"_ml_T ") == JOIN_MAX


@pytest.mark.parametrize("chars", [True, False], ids=["characters", "bytes"])
def test_large_tuples_are_joined_up_to_join_bytes(chars: bool) -> None:
    ser = shell_frames(chars, joined=True)
    prefix = ser.tuple_prefix("s", "default", 1)
    sizes = [JOIN_BYTES // 3, JOIN_BYTES // 3, JOIN_BYTES // 3, 2 * JOIN_BYTES, 10, 10]
    frames = [ser.tuple_frame(prefix, ser.values(["é" * (n // 2)]), i) for i, n in enumerate(sizes)]
    written = split_frames(ser.join_frames(frames), chars)
    # two of a third of JOIN_BYTES (bytes) fit in a frame, not three; a larger one goes alone
    assert [w[10:].count(b"_ml_T ") for w in written] == [2, 1, 1, 2]
    assert join_walk(frames, written) == []
