"""host/spark/stderr_tags.py: a child's stderr as tagged lines, read from its pipe without
spinning on a closed one and drained within bounds after it exits."""

from __future__ import annotations

import logging
import os

import pytest

from host.spark.stderr_tags import DRAIN_READS, MAX_PARTIAL_LINE, READ_CHUNK, TaggedLog


@pytest.fixture
def pipe():
    r, w = os.pipe()
    os.set_blocking(r, False)
    yield r, w
    for fd in (r, w):
        try:
            os.close(fd)
        except OSError:
            pass


def _lines(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "host.spark"]


def test_lines_are_tagged_whole_across_reads_and_the_end_is_reported(pipe, caplog):
    r, w = pipe
    tagged = TaggedLog("split", 3)
    tagged.new_process(4242)
    caplog.set_level(logging.INFO, logger="host.spark")
    os.write(w, b"first li")
    assert tagged.read_from(r) is True
    assert tagged.read_from(r) is True  # nothing to read: not the end
    os.write(w, b"ne\nlast without an end")
    assert tagged.read_from(r) is True
    os.close(w)
    assert tagged.read_from(r) is False  # the end: the caller stops polling it
    assert _lines(caplog) == [
        "split[3] pid=4242: first line",
        "split[3] pid=4242: last without an end",
    ]
    assert list(tagged.tail) == ["first line", "last without an end"]


def test_drain_reads_what_an_exited_child_left(pipe, caplog):
    r, w = pipe
    tagged = TaggedLog("count", 0)
    caplog.set_level(logging.INFO, logger="host.spark")
    os.write(w, b"a\nb\nc")
    os.close(w)
    tagged.drain(r)
    assert list(tagged.tail) == ["a", "b", "c"]


def test_drain_is_bounded_while_something_still_writes(caplog):
    """/dev/zero stands for a pipe a grandchild keeps writing to: it never ends."""
    endless = os.open("/dev/zero", os.O_RDONLY)
    try:
        tagged = TaggedLog("count", 0)
        caplog.set_level(logging.INFO, logger="host.spark")
        tagged.drain(endless)  # returns
    finally:
        os.close(endless)
    # no line end in it: logged in pieces of a partial line's bound, one per read at most
    pieces = len(_lines(caplog))
    assert 0 < pieces <= DRAIN_READS
    assert pieces >= DRAIN_READS * READ_CHUNK // (MAX_PARTIAL_LINE + READ_CHUNK)
