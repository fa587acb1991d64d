"""The ready SQLite committer (components/sqlite_committer), unchanged but for which faults its
seams fire: those planned by TX_FAULTS (tx_faults.py), each once per schedule, instead of the
single `FAULT=point:txid[:attempt]` of components/fault_seam.py. The seams themselves (where the
committer exits, the `after_ack` flush) are the component's own."""

from __future__ import annotations

from typing import Any, cast

from tx_faults import PLANNED, PlannedFaults

from components.fault_seam import POINTS, AfterAck, Fault
from components.sqlite_committer.committer import SqliteCommitter


class ChaosCommitter(SqliteCommitter):
    def initialize(self, conf: dict[str, Any], context: dict[str, Any]) -> None:
        super().initialize(conf, context)
        if any(point in POINTS for point, _ in PLANNED):
            self.fault = cast(Fault, PlannedFaults())  # duck-typed: only `hits` is asked
            self.after_ack = AfterAck(self.fault)


ChaosCommitter().run()
