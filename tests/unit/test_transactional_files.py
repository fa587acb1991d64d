"""The file spout's pure part (components/transactional_files): a stored range reads back the same
lines, consecutive batches tile the file exactly, a partial last line waits, and the config."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from components.transactional_files.config import ConfigError, check_fields, from_conf
from components.transactional_files.partition import new_batch, replay_batch, rows
from components.transactional_files.reader import ReplayError, read_new, read_range
from host.testing import ComponentPeer
from multilang.messages import Emit, UnknownCommand
from tests.support.batch_frames import (
    batch_commit,
    batch_context,
    batch_emit,
    batch_init,
    until_sync,
)

# lines with any text, including \r, empty lines and non-UTF-8 bytes
raw_lines = st.lists(
    st.binary(max_size=30).map(lambda b: b.replace(b"\n", b"")), min_size=0, max_size=40
)
FN_SCOPED = settings(max_examples=60, suppress_health_check=[HealthCheck.function_scoped_fixture])


def text_of(line: bytes) -> str:
    """What the spout emits for a line: UTF-8 text without its newline (nor a CR before it)."""
    return (line[:-1] if line.endswith(b"\r") else line).decode("utf-8", "replace")


def write(path, data: bytes) -> str:
    with open(path, "wb") as fh:
        fh.write(data)
    return str(path)


def append(path: str, data: bytes) -> None:
    with open(path, "ab") as fh:
        fh.write(data)


@FN_SCOPED
@given(lines=raw_lines, tail=st.binary(max_size=10), size=st.integers(1, 7))
def test_consecutive_batches_tile_the_file_and_replays_read_the_same(tmp_path, lines, tail, size):
    tail = tail.replace(b"\n", b"")
    data = b"".join(line + b"\n" for line in lines) + tail
    path = write(tmp_path / "f.txt", data)
    metas, texts, last = [], [], None
    while True:
        batch, meta = new_batch(path, last, size)
        assert meta["offset"] == (last["next"] if last else 0)
        assert len(batch.lines) <= size
        if not batch.lines:
            assert meta["next"] == meta["offset"]
            break
        metas.append(meta)
        texts.extend(batch.lines)
        last = meta
    # the batches cover every complete line, in order, and stop before the partial tail
    whole = sum(len(line) + 1 for line in lines)
    assert (last["next"] if last else 0) == whole
    assert texts == [text_of(line) for line in lines]
    # line numbers run 1..n across batches, and every stored range replays to the same lines
    numbers = [r[1] for m in metas for r in rows(m, replay_batch(m))]
    assert numbers == list(range(1, len(lines) + 1))
    for m in metas:
        again = replay_batch(m)
        assert (again.offset, again.next, len(again.lines)) == (m["offset"], m["next"], m["lines"])


@FN_SCOPED
@given(lines=raw_lines, size=st.integers(1, 5))
def test_a_replay_reads_the_same_range_after_the_file_grew(tmp_path, lines, size):
    path = write(tmp_path / "g.txt", b"".join(line + b"\n" for line in lines))
    batch, meta = new_batch(path, None, size)
    append(path, b"more\nand more\n")
    again = replay_batch(meta)
    assert again.lines == batch.lines and again.next == meta["next"]


def test_a_partial_last_line_waits_until_its_newline_arrives(tmp_path):
    path = write(tmp_path / "p.txt", b"one\ntw")
    batch, meta = new_batch(path, None, 10)
    assert batch.lines == ("one",) and meta == {
        "file": path,
        "offset": 0,
        "next": 4,
        "lines": 1,
        "line": 1,
    }
    batch, meta2 = new_batch(path, meta, 10)
    assert batch.lines == () and meta2["offset"] == meta2["next"] == 4 and meta2["line"] == 2
    append(path, b"o\nthree\r\nfo")
    batch, meta3 = new_batch(path, meta2, 10)
    assert batch.lines == ("two", "three") and meta3["line"] == 2 and meta3["next"] == 15
    assert rows(meta3, batch) == [[path, 2, "two"], [path, 3, "three"]]


def test_a_missing_file_is_empty_until_it_appears(tmp_path):
    path = str(tmp_path / "later.txt")
    batch, meta = new_batch(path, None, 5)
    assert batch.lines == () and meta["next"] == 0
    write(path, b"a\n")
    batch, _ = new_batch(path, meta, 5)
    assert batch.lines == ("a",)


def test_a_truncated_file_cannot_continue_nor_replay(tmp_path):
    path = write(tmp_path / "t.txt", b"a\nb\nc\n")
    _, meta = new_batch(path, None, 2)
    write(path, b"a\n")
    with pytest.raises(ReplayError, match="truncated"):
        new_batch(path, meta, 2)
    with pytest.raises(ReplayError, match="truncated or rewritten"):
        replay_batch(meta)
    write(path, b"a\nbb")  # same size, but the range no longer ends a line
    with pytest.raises(ReplayError):
        read_range(path, 0, 4, 2)
    with pytest.raises(ReplayError, match="hold 1 lines, 2"):
        read_range(path, 0, 2, 2)


def test_a_partition_whose_file_changed_is_refused(tmp_path):
    a = write(tmp_path / "a.txt", b"x\n")
    b = write(tmp_path / "b.txt", b"y\n")
    _, meta = new_batch(a, None, 5)
    with pytest.raises(ReplayError, match="list of files changed"):
        new_batch(b, meta, 5)


def test_long_lines_across_read_chunks(tmp_path):
    long = b"x" * 200_000
    path = write(tmp_path / "l.txt", long + b"\n" + long + b"\nend")
    batch = read_new(path, 0, 1)
    assert batch.next == len(long) + 1 and len(batch.lines[0]) == len(long)
    batch = read_new(path, batch.next, 5)
    assert batch.next == 2 * (len(long) + 1) and len(batch.lines) == 1


def test_config_expands_globs_sorted_and_keeps_plain_paths(tmp_path):
    for name in ("b.log", "a.log", "c.txt"):
        write(tmp_path / name, b"")
    conf = {
        "files.spout.paths": [str(tmp_path / "*.log"), str(tmp_path / "new.txt")],
        "files.spout.batch.lines": 7,
    }
    config = from_conf(conf)
    assert config.files == (
        str(tmp_path / "a.log"),
        str(tmp_path / "b.log"),
        str(tmp_path / "new.txt"),
    )
    assert config.batch_lines == 7
    assert from_conf({"files.spout.paths": str(tmp_path / "c.txt")}).batch_lines == 1000


@pytest.mark.parametrize(
    "conf, message",
    [
        ({}, "paths is required"),
        ({"files.spout.paths": []}, "paths is required"),
        ({"files.spout.paths": "/nonexistent/*.x"}, "no file matches"),
        ({"files.spout.paths": "f", "files.spout.batch.lines": 0}, ">= 1"),
        ({"files.spout.paths": "f", "files.spout.batch.lines": True}, ">= 1"),
        ({"files.spout.paths": "f", "files.spout.typo": 1}, "unknown setting"),
    ],
)
def test_config_errors_name_the_key(conf, message):
    with pytest.raises(ConfigError, match=message):
        from_conf(conf)


def test_three_output_fields_are_required():
    assert check_fields({"stream->outputfields": {"default": ["f", "n", "l"]}}) == ("f", "n", "l")
    with pytest.raises(ConfigError, match="three output fields"):
        check_fields({"stream->outputfields": {"default": ["line"]}})


def test_file_names_are_kept_as_given(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    write("rel.txt", b"r\n")
    batch, meta = new_batch("rel.txt", None, 5)
    assert rows(meta, batch) == [["rel.txt", 1, "r"]]


# ---- the spout, a real process driven over its pipes --------------------------------------------

SPOUT = ["python", "-m", "components.transactional_files"]


def start_spout(paths, taskid: int = 1, tasks: int = 1, **conf) -> ComponentPeer:
    peer = ComponentPeer(SPOUT)
    context = batch_context(
        "spout", taskid=taskid, componentid="lines", outputs={"default": ["file", "n", "line"]}
    )
    context["task->component"] = {str(t): "lines" for t in range(1, tasks + 1)}
    peer.handshake(
        conf={"files.spout.paths": paths, "files.spout.batch.lines": 2, **conf},
        context=context,
    )
    assert "batch/1" in peer.extensions
    return peer


def reply(peer: ComponentPeer) -> tuple[list[list], list]:
    """The emitted values and the reported metadata (batch_meta's) up to the next sync."""
    emitted, metas = [], []
    for msg in until_sync(peer):
        if isinstance(msg, Emit):
            assert msg.id is None and not msg.anchors  # a batch spout's emits carry no id
            emitted.append(msg.values)
        elif isinstance(msg, UnknownCommand) and msg.command == "batch_meta":
            metas.append(msg.raw["meta"])
    return emitted, metas


def to_the_end(peer: ComponentPeer) -> str:
    """Everything the component writes until it closes its stdout, as transcript text."""
    while peer.poll(10) is not None:
        pass
    return "\n".join(peer.transcript)


def test_the_spout_emits_new_batches_replays_them_and_follows_a_growing_file(tmp_path):
    a = write(tmp_path / "a.txt", b"a1\na2\na3\n")
    b = write(tmp_path / "b.txt", b"b1\nb2")
    peer = start_spout([a, b])
    try:
        batch_init(peer, 1, None)
        assert reply(peer) == ([], [{"partitions": 2}])
        batch_emit(peer, 1, 1, {"partitions": 2})
        emitted, [task_meta] = reply(peer)
        assert emitted == [[a, 1, "a1"], [a, 2, "a2"], [b, 1, "b1"]]
        assert task_meta == {
            "0": {"file": a, "offset": 0, "next": 6, "lines": 2, "line": 1},
            "1": {"file": b, "offset": 0, "next": 3, "lines": 1, "line": 1},
        }
        append(b, b"\nb3\n")  # the partial line is complete now, and one more
        # the replay of txid 1 emits the same tuples and reports nothing new
        batch_emit(peer, 1, 2, {"partitions": 2}, task_meta=task_meta)
        assert reply(peer) == (emitted, [])
        # txid 2 goes on from txid 1's metadata
        batch_emit(peer, 2, 1, {"partitions": 2}, prev_task_meta=task_meta, committed=1)
        emitted2, [meta2] = reply(peer)
        assert emitted2 == [[a, 3, "a3"], [b, 2, "b2"], [b, 3, "b3"]]
        assert meta2["0"]["offset"] == 6 and meta2["1"] == {
            "file": b,
            "offset": 3,
            "next": 9,
            "lines": 2,
            "line": 2,
        }
        batch_commit(peer, 2, 1)
        assert reply(peer) == ([], [])
    finally:
        assert peer.close() == 0


def test_each_task_emits_its_own_partitions(tmp_path):
    files = [write(tmp_path / f"{i}.txt", f"line {i}\n".encode()) for i in range(3)]
    peer = start_spout(str(tmp_path / "*.txt"), taskid=2, tasks=2)  # task index 1 of 2
    try:
        batch_emit(peer, 1, 1, {"partitions": 3})
        emitted, [task_meta] = reply(peer)
        assert emitted == [[files[1], 1, "line 1"]] and list(task_meta) == ["1"]
    finally:
        assert peer.close() == 0


def test_a_file_that_shrank_stops_the_spout_with_an_error(tmp_path):
    a = write(tmp_path / "a.txt", b"a1\na2\n")
    peer = start_spout([a])
    try:
        batch_emit(peer, 1, 1, {"partitions": 1})
        _, [task_meta] = reply(peer)
        write(a, b"x\n")
        batch_emit(peer, 1, 2, {"partitions": 1}, task_meta=task_meta)
        assert "truncated or rewritten" in to_the_end(peer)
        assert peer.proc.wait(10) == 1
    finally:
        peer.close()


def test_the_spout_refuses_a_bad_config_at_start(tmp_path):
    peer = ComponentPeer(SPOUT)
    try:
        context = batch_context("spout", componentid="lines", outputs={"default": ["line"]})
        peer.handshake(conf={"files.spout.paths": "x"}, context=context)
        assert "three output fields" in to_the_end(peer)
        assert peer.proc.wait(10) == 1
    finally:
        peer.close()
