"""`ComponentFailed`: a Spark task's component broke (docs/spark.md §4.4, §6.4). Raised by the
component processes (host/spark/component_process.py and the spouts' processes) so that the Spark
task fails and Spark retries it; its text names the component, the task, the pid, the reason, the
bytes at fault (as host local reports them: host/runtime/link.py `wrote_text`) and the last
stderr lines."""

from __future__ import annotations

from typing import Any

from host.errors import HostError
from host.runtime.link import wrote_text


class ComponentFailed(HostError):
    """A run of a component's task broke; the Spark task must fail (and be retried)."""

    def __init__(
        self,
        component: str,
        task: int,
        pid: int | None,
        reason: str,
        raw: bytes = b"",
        stderr: tuple[str, ...] = (),
    ) -> None:
        self.component = component
        self.task = task
        self.pid = pid
        self.reason = reason
        self.raw = raw
        self.stderr = stderr
        text = f"{component}[{task}] pid={pid}: {reason}" + wrote_text(raw)
        if stderr:
            text += "; its last stderr lines: " + " | ".join(stderr)
        super().__init__(text)

    def __reduce__(self) -> tuple[Any, ...]:  # picklable: Spark may ship it to the driver
        return (
            type(self),
            (self.component, self.task, self.pid, self.reason, self.raw, self.stderr),
        )
