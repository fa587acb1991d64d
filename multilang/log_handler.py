"""Python `logging` into the host's log: the handler the Python client installs while it runs.

`multilang.client_base` adds a `HostLogHandler` to the root logger once the handshake is done, so that
`logging.getLogger(__name__).info("...")` anywhere in a component reaches the host's log as a
Storm `log` command at the matching level, as it does with pystorm. The loggers' own levels
decide what is sent; the root logger is set to INFO unless the component configured logging
before `run()` (see `install`).

Contract: the client writes the protocol pipe only from the thread that runs the component (see
multilang/client.py), so this handler sends only the records of that thread. A record logged
by any other thread is written to stderr instead, which the host logs as well: never to the
protocol pipe, where it could interleave with a frame being written.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from .codec import EncodeError
from .messages import DEBUG, ERROR, INFO, TRACE, WARN

#: What a record looks like in the host's log (which adds the time, component and task itself).
FORMAT = "%(name)s: %(message)s"


def storm_level(levelno: int) -> int:
    """A `logging` level number -> the Storm level of the `log` command. Levels between the
    named ones go down to the next named one, as `logging` itself compares them; below DEBUG
    is TRACE, CRITICAL and above are ERROR (Storm has nothing above ERROR)."""
    if levelno < logging.DEBUG:
        return TRACE
    if levelno < logging.INFO:
        return DEBUG
    if levelno < logging.WARNING:
        return INFO
    if levelno < logging.ERROR:
        return WARN
    return ERROR


class HostLogHandler(logging.Handler):
    """Sends each record as a `log` command through `send(text, storm_level)` (the component's
    `log` method, which only buffers: the client writes the pipe itself).

    Never recursive: a record that arrives while this handler is already sending one on the same
    thread (a `__str__` or a replaced stderr that logs, say) goes to stderr, and so does a record
    from another thread (see the module's contract). A message that cannot be encoded (a lone
    surrogate, say) is sent with the offending characters escaped; anything else that goes
    wrong is reported by `logging`'s own `handleError`, on stderr.
    """

    def __init__(self, send: Callable[[str, int], None], level: int = logging.NOTSET) -> None:
        super().__init__(level)
        self._send = send
        self._thread = threading.get_ident()  # the only thread that may write the protocol
        self._sending = False
        self._stderr = logging.StreamHandler()  # sys.stderr, for what must not go to the pipe
        self.setFormatter(logging.Formatter(FORMAT))

    def emit(self, record: logging.LogRecord) -> None:
        if self._sending or threading.get_ident() != self._thread:
            self._stderr.setFormatter(self.formatter)
            self._stderr.handle(record)
            return
        self._sending = True
        try:
            text = self.format(record)
            level = storm_level(record.levelno)
            try:
                self._send(text, level)
            except EncodeError:
                self._send(text.encode("utf-8", "backslashreplace").decode("utf-8"), level)
        except Exception:
            self.handleError(record)
        finally:
            self._sending = False


def install(send: Callable[[str, int], None]) -> Callable[[], None]:
    """Add a HostLogHandler to the root logger; the function that takes it away again.

    If the component has not configured logging (the root logger has no handler and the default
    level, WARNING), the root logger is set to INFO meanwhile, so `logger.info` reaches the host
    as a Storm component's INFO log would; a level or handlers set before `run()` are kept.
    """
    root = logging.getLogger()
    handler = HostLogHandler(send)
    default_level = not root.handlers and root.level == logging.WARNING
    if default_level:
        root.setLevel(logging.INFO)
    root.addHandler(handler)

    def uninstall() -> None:
        root.removeHandler(handler)
        if default_level and root.level == logging.INFO:  # unless the component changed it
            root.setLevel(logging.WARNING)

    return uninstall
