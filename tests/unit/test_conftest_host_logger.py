"""The `host` logger fixture of tests/conftest.py: what one test does to the `host` logger (as
the commands run in-process do: `host.cli`, `host.spark.command`) does not reach the next. The
two tests run in this order (pytest keeps a file's order), the first changing the logger, the
second finding it as the session did."""

from __future__ import annotations

import logging

from tests.conftest import _HOST_LOGGER_FOUND

_ADDED = logging.NullHandler()


def test_a_test_changes_the_host_logger() -> None:
    host = logging.getLogger("host")
    host.addHandler(_ADDED)
    host.setLevel(logging.DEBUG if host.level != logging.DEBUG else logging.ERROR)
    host.propagate = not host.propagate
    assert _ADDED in host.handlers
    assert (host.level, host.propagate) != (_HOST_LOGGER_FOUND[0], _HOST_LOGGER_FOUND[2])


def test_the_next_test_finds_it_as_the_session_did() -> None:
    host = logging.getLogger("host")
    assert _ADDED not in host.handlers
    assert (host.level, list(host.handlers), host.propagate) == _HOST_LOGGER_FOUND
