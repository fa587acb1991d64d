"""Test tiers. Every test is marked with its tier, by where it lives, so that `-m` picks tiers:

    unit          tests/unit: no child processes to speak of; seconds
    conformance   the golden transcripts (tests/unit/test_transcripts.py) and the suite run over
                  every client library, ours and third-party (tests/integration/test_conformance.py)
    integration   tests/integration: real components in bash, Node, Python, pystorm and Spark
    e2e           tests/e2e: `python -m host` as a subprocess, the web UI in a browser
    chaos         tests/chaos: random faults, fuzzing, the host itself killed

`make test-fast` runs `-m "unit or conformance"`; `make test` runs every tier. The markers are
registered in pyproject.toml.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent
DIRECTORY_TIERS = ("unit", "integration", "e2e", "chaos")
CONFORMANCE_FILES = frozenset(
    {
        TESTS / "unit" / "test_transcripts.py",
        TESTS / "integration" / "test_conformance.py",
    }
)


_HOST_LOGGER = logging.getLogger("host")
_HOST_LOGGER_FOUND = (_HOST_LOGGER.level, list(_HOST_LOGGER.handlers), _HOST_LOGGER.propagate)


def _reset_host_logger() -> None:
    level, handlers, propagate = _HOST_LOGGER_FOUND
    _HOST_LOGGER.setLevel(level)
    _HOST_LOGGER.handlers[:] = handlers
    _HOST_LOGGER.propagate = propagate


@pytest.fixture(autouse=True)
def _host_logger_as_found() -> Iterator[None]:
    """Every test starts and ends with the `host` logger as the session found it. The commands
    that tests run in-process (`host.spark.command`, `host.cli`) give it handlers and a level, as
    a command should, and those would otherwise reach the tests after them: a test once read the
    wrong log line only after a Spark command test had run."""
    _reset_host_logger()
    yield
    _reset_host_logger()


def tier_of(path: Path) -> str | None:
    """The tier of the test file at `path`; None for a file outside the tier directories."""
    path = path.resolve()
    if path in CONFORMANCE_FILES:
        return "conformance"
    try:
        top = path.relative_to(TESTS).parts[0]
    except (ValueError, IndexError):
        return None
    return top if top in DIRECTORY_TIERS else None


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        tier = tier_of(item.path)
        if tier is not None:
            item.add_marker(getattr(pytest.mark, tier))
