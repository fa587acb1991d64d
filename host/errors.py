"""One error hierarchy for the host: every error names where it came from."""

from __future__ import annotations

# the commands' exit codes (`python -m host local`, `spark`, `test-component`): a topology that
# cannot run is refused with 2 before anything starts; a run that failed exits 1
EXIT_OK, EXIT_RUNTIME, EXIT_TOPOLOGY = 0, 1, 2


class HostError(Exception):
    """Base of every error the host reports to the user."""


def _one_line(text: str) -> str:
    """Control characters escaped (a newline in a component id, say): an error is one line."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


class TopologyError(HostError):
    """A topology that cannot run. Names the file, the component and the key (exit code 2)."""

    def __init__(
        self,
        problem: str,
        *,
        file: str | None = None,
        component: str | None = None,
        key: str | None = None,
    ):
        self.problem = problem
        self.file = file
        self.component = component
        self.key = key
        where = []
        if file:
            where.append(str(file))
        if component:
            where.append(f"component '{component}'")
        if key:
            where.append(f"key '{key}'")
        super().__init__(_one_line(": ".join(where + [problem]) if where else problem))


class RoutingError(HostError):
    """An emit the topology does not allow (undeclared stream, wrong field count, bad direct
    target). The runtime turns it into a fault of the emitting task, reported with the task's
    name, pid and the emit it wrote."""
