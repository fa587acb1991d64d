"""The crash seam of the ready committers, for the exactly-once chaos tests.

`FAULT=point:txid[:attempt]` in a committer's environment makes it `os._exit(137)` (a SIGKILL's
status, no clean-up, no flush) when it reaches `point` in that txid (and attempt, when given).
Without an attempt the fault fires at every attempt of the txid that reaches the point; the
committers reach `after_commit` only when the write was applied (a replay of an applied txid skips
the write), so that one fires once. The points:

- `before_write`: in the commit phase's finish, before the write starts;
- `after_commit`: the write is durable, the finish not yet acked (the window where the replay must
  be skipped: docs/transactional.md §7, the sink contract);
- `after_ack`: the finish was acked; a client acks on return from `finish_batch`, so the committer
  arms the fault there and exits at the next message it is given.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass

POINTS = ("before_write", "after_commit", "after_ack")
EXIT_STATUS = 137


@dataclass(frozen=True)
class Fault:
    point: str
    txid: int
    attempt: int | None = None

    def hits(self, point: str, txid: int, attempt: int) -> bool:
        return (
            point == self.point
            and txid == self.txid
            and (self.attempt is None or attempt == self.attempt)
        )


def parse(text: str) -> Fault:
    parts = text.split(":")
    if len(parts) not in (2, 3) or parts[0] not in POINTS:
        raise ValueError(
            f"FAULT={text!r}: expected point:txid[:attempt] with point one of {', '.join(POINTS)}"
        )
    try:
        numbers = [int(p) for p in parts[1:]]
    except ValueError:
        raise ValueError(f"FAULT={text!r}: txid and attempt are integers") from None
    return Fault(parts[0], numbers[0], numbers[1] if len(numbers) == 2 else None)


def from_env(env: Mapping[str, str] = os.environ) -> Fault | None:
    text = env.get("FAULT", "").strip()
    return parse(text) if text else None


def crash_at(fault: Fault | None, point: str, txid: int, attempt: int) -> None:
    """Exit at once with status 137 if `fault` is this point of this attempt."""
    if fault is not None and fault.hits(point, txid, attempt):
        sys.stderr.write(f"FAULT: exiting at {point} of txid {txid} attempt {attempt}\n")
        sys.stderr.flush()
        os._exit(EXIT_STATUS)


class AfterAck:
    """The `after_ack` point: armed when the committer's `finish_batch` returns (its ack is then
    queued), fired at the next hook the client calls, after writing the queued ack out."""

    def __init__(self, fault: Fault | None) -> None:
        self.fault = fault
        self.armed: tuple[int, int] | None = None

    def arm(self, txid: int, attempt: int) -> None:
        if self.fault is not None and self.fault.hits("after_ack", txid, attempt):
            self.armed = (txid, attempt)

    def fire_if_armed(self, flush: Callable[[], None]) -> None:
        if self.armed is not None:
            flush()
            crash_at(self.fault, "after_ack", *self.armed)
