"""A task's child process as a state machine, and the restart policy.

The allowed transitions are the table below and nothing else: a transition that is not in it is a
bug in the host, and raises. The restart decision (back-off, giving up) is `RestartPolicy`, the
one place that makes it.

    STOPPED --launch--> STARTING --pid reply--> RUNNING
    STARTING / RUNNING --fault--> BACKOFF --deadline--> STARTING
                       --fault, too many restarts--> FATAL
                       --fault while the run stops, or the shutdown ends it--> STOPPED
    STARTING / RUNNING --shutdown begins (stdin closed)--> STOPPING --exited--> STOPPED
"""

from __future__ import annotations

import enum
from collections import deque


class State(enum.Enum):
    STARTING = "starting"  # launched, handshake written, waiting for the pid reply
    RUNNING = "running"
    BACKOFF = "backoff"  # died; waiting to be restarted
    STOPPING = "stopping"  # the run is ending: stdin closed, waiting for it to exit
    STOPPED = "stopped"
    FATAL = "fatal"  # restarted too often; given up


TRANSITIONS: dict[State, frozenset[State]] = {
    State.STOPPED: frozenset({State.STARTING}),
    State.STARTING: frozenset(
        {State.RUNNING, State.BACKOFF, State.FATAL, State.STOPPING, State.STOPPED}
    ),
    State.RUNNING: frozenset({State.BACKOFF, State.FATAL, State.STOPPING, State.STOPPED}),
    State.BACKOFF: frozenset({State.STARTING, State.STOPPED}),
    State.STOPPING: frozenset({State.STOPPED}),
    State.FATAL: frozenset(),
}

ALIVE = frozenset({State.STARTING, State.RUNNING})


class IllegalTransition(RuntimeError):
    """The host tried a transition the table does not allow: a bug in the host."""


class Lifecycle:
    """The state of one task's process across its incarnations."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.state = State.STOPPED

    @property
    def alive(self) -> bool:
        return self.state in ALIVE

    def to(self, new: State) -> None:
        if new not in TRANSITIONS[self.state]:
            raise IllegalTransition(f"{self.name}: {self.state.value} -> {new.value}")
        self.state = new


class RestartPolicy:
    """Exponential back-off between restarts, and giving up after `max_restarts` failures within
    `window` seconds (the run then stops with a failure)."""

    def __init__(self, initial: float, maximum: float, max_restarts: int, window: float) -> None:
        self.initial = initial
        self.maximum = maximum
        self.max_restarts = max_restarts
        self.window = window
        self.failures: deque[float] = deque()  # clock times of the failures within the window

    def after_failure(self, now: float) -> float | None:
        """Record a failure at `now`: the back-off before the restart, or None to give up."""
        failures = self.failures
        failures.append(now)
        while failures and failures[0] < now - self.window:
            failures.popleft()
        if len(failures) > self.max_restarts:
            return None
        return min(self.maximum, self.initial * 2 ** (len(failures) - 1))

    @property
    def recent_failures(self) -> int:
        return len(self.failures)
