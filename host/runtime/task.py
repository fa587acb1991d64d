"""One task of a run: its link (the protocol state), the lifecycle of its process, and the
process itself, as the supervision (host/runtime/supervision.py) drives them."""

from __future__ import annotations

from typing import Any

from host.runtime.bolt_link import BoltLink
from host.runtime.lifecycle import Lifecycle, RestartPolicy, State
from host.runtime.process import Child
from host.runtime.spout_link import SpoutLink
from host.runtime.stats import Gauges


class Task:
    """One task: the link (its protocol state), the lifecycle of its process, and the process."""

    def __init__(
        self, link: BoltLink | SpoutLink, policy: RestartPolicy, conf: dict, context: dict
    ) -> None:
        self.link = link
        self.lifecycle = Lifecycle(link.name)
        self.policy = policy
        self.conf = conf
        self.context = context
        self.child: Child | None = None
        self.decoder: Any = None  # the serializer's incremental decoder, new for every process
        self.pre_pid: list = []  # messages written before the pid reply (storm.js logs there)
        self.reading = False  # its stdout is watched (not paused by backpressure)
        self.writing = False  # its stdin is watched for room (a write was partial)
        self.backoff = 0.0
        self.gauges = Gauges()
        self.batch: Any = ()  # the messages of the read being handled, for `raw_of`
        link.raw_of = self.raw_of

    def raw_of(self, message: Any) -> bytes | None:
        """The bytes its process wrote for `message`, if it is one of the read being handled:
        found again by the decoder, only when a report needs them (docs/contracts.md)."""
        for i, m in enumerate(self.batch):
            if m is message:
                frames = self.decoder.frames()
                return frames[i] if i < len(frames) else None
        return None

    @property
    def name(self) -> str:
        return self.link.name

    @property
    def state(self) -> State:
        return self.lifecycle.state

    def __repr__(self) -> str:
        return f"<Task {self.name} {self.state.value}>"
