"""Python `logging` in a component reaches the host's log (multilang/log_handler.py), tested on
real `python` subprocesses through ComponentPeer."""

from __future__ import annotations

import logging
import textwrap
from pathlib import Path

import pytest

from host.testing import ComponentPeer
from multilang.log_handler import storm_level
from multilang.messages import DEBUG, ERROR, INFO, TRACE, WARN, Ack, Emit, Log

# Each tuple's first value names what the bolt logs; the bolt acks every tuple (BasicBolt).
BOLT = '''
import logging
import sys
import threading

from multilang import BasicBolt

log = logging.getLogger("wordbolt")
{setup}

class Loud:
    """A value whose str() logs: the record made while formatting must not recurse."""
    def __str__(self):
        logging.getLogger("inner").warning("logged while formatting")
        return "loud"


class LoggingBolt(BasicBolt):
    {attributes}

    def initialize(self, conf, context):
        log.info("initialized")

    def process(self, tup):
        action = tup.values[0]
        if action == "levels":
            log.debug("debug is below the default INFO")
            log.info("info %d", 1)
            log.warning("warning")
            log.error("error")
            log.critical("critical")
        elif action == "own_levels":
            logging.getLogger("quiet").setLevel(logging.ERROR)
            logging.getLogger("quiet").warning("below the logger's level")
            logging.getLogger("chatty").setLevel(1)
            logging.getLogger("chatty").debug("debug")
            logging.getLogger("chatty").log(5, "trace")
        elif action == "exception":
            try:
                raise ValueError("boom")
            except ValueError:
                log.exception("it failed")
        elif action == "thread":
            thread = threading.Thread(target=lambda: log.warning("from another thread"))
            thread.start()
            thread.join()
        elif action == "surrogate":
            log.info("half a pair: \\ud800")
        elif action == "recursive":
            log.info("value %s", Loud())
        self.emit(["done", action])

    def cleanup(self):
        log.info("cleaning up")


LoggingBolt().run()
'''


def start(tmp_path: Path, setup: str = "", attributes: str = "pass") -> ComponentPeer:
    script = tmp_path / "logging_bolt.py"
    script.write_text(textwrap.dedent(BOLT).format(setup=setup, attributes=attributes))
    peer = ComponentPeer(["python", str(script)])
    try:
        peer.handshake()
    except BaseException:
        peer.close()
        raise
    return peer


@pytest.fixture
def bolt(tmp_path: Path):
    peer = start(tmp_path)
    assert peer.read() == Log("wordbolt: initialized", INFO)  # initialize runs after the pid
    yield peer
    peer.close()


def logs_of(peer: ComponentPeer, tuple_id: str, action: str) -> list[Log]:
    """Send one tuple; the `log` messages it caused, checking that it was then handled as usual."""
    peer.tuple(tuple_id, [action])
    messages = peer.read_until(Ack)
    assert messages[-2:] == [
        Emit(["done", action], "default", [tuple_id], None, False),
        Ack(tuple_id),
    ]
    logs = messages[:-2]
    assert all(type(m) is Log for m in logs), logs
    return logs


def test_logger_calls_reach_the_host_at_storms_levels(bolt):
    assert logs_of(bolt, "1", "levels") == [
        Log("wordbolt: info 1", INFO),
        Log("wordbolt: warning", WARN),
        Log("wordbolt: error", ERROR),
        Log("wordbolt: critical", ERROR),
    ]


def test_each_loggers_own_level_decides_what_is_sent(bolt):
    assert logs_of(bolt, "1", "own_levels") == [
        Log("chatty: debug", DEBUG),
        Log("chatty: trace", TRACE),
    ]


def test_an_exception_is_sent_with_its_traceback(bolt):
    [record] = logs_of(bolt, "1", "exception")
    assert record.level == ERROR
    assert record.msg.startswith("wordbolt: it failed\nTraceback")
    assert "ValueError: boom" in record.msg


def test_records_of_other_threads_go_to_stderr_not_to_the_protocol(bolt):
    assert logs_of(bolt, "1", "thread") == []
    assert bolt.quiet() == []  # also reads what is on stderr by now
    assert b"wordbolt: from another thread\n" in bolt.stderr


def test_a_message_that_cannot_be_encoded_is_sent_escaped(bolt):
    assert logs_of(bolt, "1", "surrogate") == [Log("wordbolt: half a pair: \\ud800", INFO)]
    assert logs_of(bolt, "2", "levels")[0] == Log("wordbolt: info 1", INFO)  # still sending


def test_a_record_logged_while_one_is_sent_goes_to_stderr(bolt):
    assert logs_of(bolt, "1", "recursive") == [Log("wordbolt: value loud", INFO)]
    assert bolt.quiet() == []
    assert b"inner: logged while formatting\n" in bolt.stderr


def test_records_logged_at_shutdown_reach_the_host(bolt):
    bolt.proc.stdin.close()  # end of input: cleanup runs, then the last flush
    assert bolt.read() == Log("wordbolt: cleaning up", INFO)
    assert bolt.close() == 0


def test_logging_configured_before_run_keeps_its_level(tmp_path):
    peer = start(tmp_path, setup="logging.basicConfig(level=logging.WARNING)")
    try:
        assert logs_of(peer, "1", "levels") == [
            Log("wordbolt: warning", WARN),
            Log("wordbolt: error", ERROR),
            Log("wordbolt: critical", ERROR),
        ]
    finally:
        peer.close()


def test_forward_logging_false_leaves_logging_alone(tmp_path):
    peer = start(tmp_path, attributes="forward_logging = False")
    try:
        assert logs_of(peer, "1", "levels") == []
        assert peer.quiet() == []
        # Python's last-resort handler: WARNING and above on stderr
        assert b"warning\nerror\ncritical\n" in peer.stderr
    finally:
        peer.close()


@pytest.mark.parametrize(
    ("levelno", "expected"),
    [
        (1, TRACE),
        (5, TRACE),
        (logging.DEBUG, DEBUG),
        (15, DEBUG),
        (logging.INFO, INFO),
        (logging.WARNING, WARN),
        (logging.ERROR, ERROR),
        (logging.CRITICAL, ERROR),
        (99, ERROR),
    ],
)
def test_storm_level_of_each_logging_level(levelno, expected):
    assert storm_level(levelno) == expected
