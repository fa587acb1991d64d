"""pytest fixtures for testing multilang topologies and components (see `host.testing`).

Loaded automatically through the package's `pytest11` entry point (named `host.pytest_plugin`,
so `-p no:host.pytest_plugin` turns it off and `pytest_plugins = ["host.testing.pytest_plugin"]` in a
conftest is harmless). It provides:

- `run_topology(topology, inputs=None, until=None, timeout=30.0, clock=None, *, config=None)`
- `run_component(command, tuples=(), *, kind="bolt", ...)`
- `fake_clock`: a fresh `host.testing.FakeClock`

```python
def test_split(run_component):
    result = run_component(["bash", "split.sh"], [["a b"]], cwd="topology")
    assert result.values() == [["a"], ["b"]] and result.acked == ["1"]

def test_counts(run_topology):
    result = run_topology("topology/wordcount.yaml", inputs={"sentences": [["a b a"]]})
    assert result.values("count")[-1] == ["a", 2]
```

When a test fails, the transcript of every `run_component` call and a report of every
`run_topology` call it made (how the run ended, what was emitted, acked and failed, the last log
lines) are added to the failure report.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Generator
from typing import Any, TypeVar

import pytest

from host import testing

Result = TypeVar("Result", testing.TopologyResult, testing.ComponentResult)

_RESULTS = pytest.StashKey[list[testing.TopologyResult | testing.ComponentResult]]()


def _recording(request: pytest.FixtureRequest, run: Callable[..., Result]) -> Callable[..., Result]:
    results = request.node.stash.setdefault(_RESULTS, [])

    @functools.wraps(run)
    def recorded(*args: Any, **kwargs: Any) -> Result:
        result = run(*args, **kwargs)
        results.append(result)
        return result

    return recorded


@pytest.fixture
def run_topology(request: pytest.FixtureRequest) -> Callable[..., testing.TopologyResult]:
    """`host.testing.run_topology`, with its report added to a failing test's output."""
    return _recording(request, testing.run_topology)


@pytest.fixture
def run_component(request: pytest.FixtureRequest) -> Callable[..., testing.ComponentResult]:
    """`host.testing.run_component`, with its transcript added to a failing test's output."""
    return _recording(request, testing.run_component)


@pytest.fixture
def fake_clock() -> testing.FakeClock:
    """A fresh FakeClock, for `run_topology(..., clock=fake_clock)`."""
    return testing.FakeClock()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    if report.failed and report.when == "call":
        results = item.stash.get(_RESULTS, [])
        for n, result in enumerate(results, start=1):
            if isinstance(result, testing.ComponentResult):
                title = f"run_component #{n}: {' '.join(result.command)}"
                report.sections.append((title, result.transcript_text))
            else:
                report.sections.append((f"run_topology #{n}", result.report()))
    return report
