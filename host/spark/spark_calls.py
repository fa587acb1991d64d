"""Calls into Spark's JVM from the engine's driver that must not hang or clutter the command: a
call bounded in time, Spark's own log levels, and the line of a Spark error that says what went
wrong (docs/spark.md §4.4)."""

from __future__ import annotations

import re
import threading
from collections.abc import Callable
from typing import Any, Generic, TypeVar

T = TypeVar("T")


class _CallThread(threading.Thread, Generic[T]):
    """`call()` in a daemon thread (a call into Spark's JVM through py4j blocks the thread that
    makes it; a daemon one does not keep the command from ending), keeping its result or what it
    raised for the thread that waits."""

    def __init__(self, call: Callable[[], T], name: str) -> None:
        super().__init__(name=name, daemon=True)
        self.call = call
        self.result: T | None = None
        self.failure: BaseException | None = None

    def run(self) -> None:
        try:
            self.result = self.call()
        except BaseException as exc:  # the waiting thread reports or raises it
            self.failure = exc


def bounded(
    call: Callable[[], object], secs: float, what: str, echo: Callable[[str], None]
) -> None:
    """Call `call` in a daemon thread and wait for it at most `secs`: a call into Spark that
    hangs must not keep the command from ending (its JVM exits with this process)."""
    thread = _CallThread(call, what)
    thread.start()
    thread.join(secs)
    if thread.is_alive():
        echo(f"{what} did not end within {secs:g}s: going on without it")
    elif thread.failure is not None:
        echo(f"{what} failed: {first_line(thread.failure)}")


def until_stopped(
    call: Callable[[], T], what: str, stopping: Callable[[], bool], poll_secs: float
) -> T | None:
    """`call()`'s result, made in a daemon thread while this one looks at `stopping()` every
    `poll_secs`; None, the call left running, once `stopping()` (a SIGTERM must end the command
    while a job waits for executors that never come). What the call raised is raised here."""
    thread: _CallThread[T] = _CallThread(call, what)
    thread.start()
    while thread.is_alive():
        if stopping():
            return None
        thread.join(poll_secs)
    if thread.failure is not None:
        raise thread.failure
    return thread.result


def set_log_levels(spark: Any, levels: dict[str, str]) -> None:
    """Spark's own loggers (log4j2, in the driver's JVM)."""
    jvm = spark.sparkContext._jvm
    log4j = jvm.org.apache.logging.log4j
    for name, level in levels.items():
        log4j.core.config.Configurator.setLevel(name, log4j.Level.getLevel(level))


# our errors as a traceback in Spark's exception text ends them: `host.errors.TopologyError: ...`
# (not a source line of the traceback that names the class, `raise TopologyError(`)
_OUR_ERROR = re.compile(r"\b(ComponentFailed|TopologyError|RoutingError): ")


_TRACEBACK = "Traceback (most recent call last):"


def first_line(error: BaseException) -> str:
    """What a Spark error says went wrong, in one line: one of our errors when its text carries
    one (a Python worker's traceback), else the exception that ends the last Python traceback in
    it (Spark's own first line, "An exception was thrown from the Python worker:", says only
    where), else its first line."""
    text = str(error).strip()
    lines = text.splitlines()
    for line in lines:
        if _OUR_ERROR.search(line):
            return line.strip()[:1000]
    if _TRACEBACK in text:
        frames = text.rsplit(_TRACEBACK, 1)[1].splitlines()[1:]
        # the frames are indented; the first line that is not ends the traceback
        ending = next((f for f in frames if f.strip() and not f[:1].isspace()), None)
        if ending is not None:
            return ending.strip()[:1000]
    return (lines or [type(error).__name__])[0][:1000]
