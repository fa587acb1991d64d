"""The event loop: one selector over every pipe of every task, a handler per file descriptor, and
every timer in one `Deadlines` heap. One thread, no locks: the handlers (host/runtime/supervision.py,
the links) and the timers are the only code that runs, one at a time.

Signals (SIGINT, SIGTERM) reach the loop through a wake-up pipe (`signal.set_wakeup_fd`), so a
stop request never waits for the next timer.
"""

from __future__ import annotations

import os
import selectors
import signal
import threading
from collections.abc import Callable
from typing import Any, Protocol

from host.runtime.deadlines import Deadlines

Handler = Callable[[], None]


class Stamped(Protocol):
    now: float


class EventLoop:
    def __init__(self, clock: Callable[[], float], stamped: list[Stamped]) -> None:
        self.clock = clock
        self.now = clock()
        self.stamped = stamped  # objects whose `now` is the clock reading of the current event
        self.selector = selectors.DefaultSelector()
        self.deadlines = Deadlines()
        self.last_events = 0  # how many descriptors were ready in the last turn
        self._wake_r: int | None = None
        self._wake_w: int | None = None
        self._old_wakeup = -1
        self._old_signals: dict[int, Any] = {}

    def stamp(self) -> float:
        now = self.now = self.clock()
        for obj in self.stamped:
            obj.now = now
        return now

    # -- descriptors -----------------------------------------------------------------------------
    def watch_read(self, fd: int, handler: Handler) -> None:
        self.selector.register(fd, selectors.EVENT_READ, handler)

    def watch_write(self, fd: int, handler: Handler) -> None:
        self.selector.register(fd, selectors.EVENT_WRITE, handler)

    def unwatch(self, fd: int | None) -> None:
        if fd is None:
            return
        try:
            self.selector.unregister(fd)
        except (KeyError, ValueError):
            pass

    def watching(self, fd: int) -> bool:
        return fd in self.selector.get_map()

    # -- one turn --------------------------------------------------------------------------------
    def turn(self, max_wait: float | None = None) -> None:
        """Wait until a descriptor is ready or the next deadline (at most `max_wait` real
        seconds), run the handlers of the ready ones, then the deadlines that are due."""
        wait = max(0.0, self.deadlines.next_due() - self.clock())
        if max_wait is not None:
            wait = min(wait, max_wait)
        events = self.selector.select(wait)
        self.last_events = len(events)
        registered = self.selector.get_map()
        for key, _ in events:
            if registered.get(key.fd) is not key:
                continue  # unregistered by an earlier handler of this turn (a fault)
            self.stamp()
            key.data()
        self.deadlines.run_due(self.stamp())

    # -- signals ---------------------------------------------------------------------------------
    def catch_signals(self, on_signal: Callable[[str], None]) -> None:
        """SIGINT and SIGTERM call `on_signal(name)` (in the main thread only, where Python
        delivers signals); either way the wake-up pipe is watched."""
        self._wake_r, self._wake_w = os.pipe()
        os.set_blocking(self._wake_r, False)
        os.set_blocking(self._wake_w, False)
        self.watch_read(self._wake_r, self._drain_wakeup)
        if threading.current_thread() is threading.main_thread():
            self._old_wakeup = signal.set_wakeup_fd(self._wake_w)
            for sig in (signal.SIGINT, signal.SIGTERM):
                self._old_signals[sig] = signal.signal(
                    sig, lambda s, f: on_signal(f"received {signal.Signals(s).name}")
                )

    def _drain_wakeup(self) -> None:
        try:
            os.read(self._wake_r, 4096)  # type: ignore[arg-type]
        except BlockingIOError:
            pass

    def close(self) -> None:
        if self._old_signals:
            signal.set_wakeup_fd(self._old_wakeup)
            for sig, handler in self._old_signals.items():
                signal.signal(sig, handler)
            self._old_signals = {}
        self.selector.close()
        for fd in (self._wake_r, self._wake_w):
            if fd is not None:
                os.close(fd)
        self._wake_r = self._wake_w = None
