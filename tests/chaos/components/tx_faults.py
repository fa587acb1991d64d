"""Once-per-schedule fault seams of the transactional chaos components (tx_*.py here; the Node and
bash bolts do the same in their own language), for tests/chaos/test_transactional_chaos.py.

`TX_FAULTS="point:txid,point:txid,..."` in a component's environment plans the faults of one
schedule; `TX_FAULT_DIR` is a directory where a fault, when it fires, creates its marker file
`<point>-<txid>`. The marker is created with O_EXCL, so exactly one process fires each fault, once
per schedule, whatever the attempt number and across task restarts and host restarts: a replay of
the txid then goes through. (components/fault_seam.py's `FAULT=point:txid` without an attempt
fires at every attempt that reaches the point, which would loop; with an attempt, it may never
fire when an earlier fault aborted that attempt.) The test reads the markers to know what fired.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable

EXIT_STATUS = 137  # a SIGKILL's status, as components/fault_seam.py exits


def _planned(text: str) -> frozenset[tuple[str, int]]:
    planned = set()
    for item in text.split(","):
        if item.strip():
            point, _, txid = item.strip().partition(":")
            planned.add((point, int(txid)))
    return frozenset(planned)


PLANNED = _planned(os.environ.get("TX_FAULTS", ""))


def claim(point: str, txid: int) -> bool:
    """True once per schedule: when the fault `point` is planned at `txid` and this call created
    its marker (every later call, in any process, is False)."""
    if (point, txid) not in PLANNED:
        return False
    marker = os.path.join(os.environ["TX_FAULT_DIR"], f"{point}-{txid}")
    try:
        os.close(os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))
    except FileExistsError:
        return False
    return True


def die(point: str, txid: int, flush: Callable[[], None] | None = None) -> None:
    """Exit at once (no clean-up), after writing out what the component buffered if `flush`."""
    if flush is not None:
        flush()
    sys.stderr.write(f"TX FAULT: {point} at txid {txid}, exiting {EXIT_STATUS}\n")
    sys.stderr.flush()
    os._exit(EXIT_STATUS)


class PlannedFaults:
    """Stands in for components.fault_seam.Fault in the SQLite committer: its seams
    (`before_write`, `after_commit`, `after_ack`) hit at a planned txid, the first time any
    incarnation reaches them."""

    def __init__(self) -> None:
        # `after_ack` is asked twice: when it is armed (the finish returns) and when it fires
        self.claimed: set[tuple[str, int]] = set()

    def hits(self, point: str, txid: int, attempt: int) -> bool:
        if (point, txid) in self.claimed:
            return True
        if claim(point, txid):
            self.claimed.add((point, txid))
            return True
        return False
