"""The exactly-once invariant of the transactional chaos tier, checked on what the run left behind
(pure: no process, so test_transactional_chaos.py also shows it catches each kind of violation).

Evidence, all written by the committer (components/sqlite_committer), none by the host:
- the sink table: rid -> (words, n), from `upsert-add` keyed by rid (n = 2 is a double count);
- the audit table: one row per applied txid (txid, attempt, tuples, content_hash, committed_at);
- the attempts log (`sqlite.committer.attempts_log`): a line per commit-phase finish, applied or
  skipped, in the order they happened;
- per host restart: the host's `currtx` when it was killed and how long the log was then.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class AuditRow:
    txid: int
    attempt: int
    tuples: int
    content_hash: str
    committed_at: float


@dataclass(frozen=True)
class LogLine:
    txid: int
    attempt: int
    tuples: int
    content_hash: str
    applied: bool


@dataclass(frozen=True)
class Restart:
    currtx: int  # the host's lowest uncommitted txid when it was SIGKILLed
    log_lines: int  # how many lines the attempts log had then


def read_sink(db: Path) -> dict[str, tuple[int, int]]:
    con = sqlite3.connect(db)
    try:
        return {r: (w, n) for r, w, n in con.execute("SELECT rid, words, n FROM sink")}
    finally:
        con.close()


def read_audit(db: Path) -> list[AuditRow]:
    """The audit rows in commit order (committed_at; the txid only breaks a tie)."""
    con = sqlite3.connect(db)
    try:
        rows = con.execute(
            "SELECT txid, attempt, tuples, content_hash, committed_at FROM audit "
            "ORDER BY committed_at, txid"
        ).fetchall()
    finally:
        con.close()
    return [AuditRow(*r) for r in rows]


def read_log(path: Path) -> list[LogLine]:
    out = []
    if path.exists():
        for line in path.read_text().splitlines():
            txid, attempt, tuples, digest, outcome = line.split()
            out.append(LogLine(int(txid), int(attempt), int(tuples), digest, outcome == "applied"))
    return out


def problems(
    reference: dict[str, tuple[int, int]],
    sink: dict[str, tuple[int, int]],
    audit: list[AuditRow],
    log: list[LogLine],
    restarts: list[Restart],
) -> list[str]:
    """What breaks exactly-once; empty when it holds."""
    found: list[str] = []

    # the sink equals the reference: every rid once, with its word count, nothing else
    missing = sorted(set(reference) - set(sink))
    unknown = sorted(set(sink) - set(reference))
    twice = sorted(r for r, (_, n) in sink.items() if n != 1)
    wrong = sorted(
        r for r in set(sink) & set(reference) if sink[r][0] != reference[r][0] * sink[r][1]
    )
    if missing:
        found.append(f"sink: {len(missing)} rid(s) missing, e.g. {missing[:5]}")
    if unknown:
        found.append(f"sink: rid(s) never in the input: {unknown[:5]}")
    if twice:
        found.append(
            f"sink: {len(twice)} rid(s) not counted once, e.g. {[(r, sink[r]) for r in twice[:5]]}"
        )
    if wrong:
        found.append(f"sink: wrong word counts for {wrong[:5]}")

    # the audit: each txid applied once, strictly increasing in commit order, none skipped
    txids = [a.txid for a in audit]
    if any(b <= a for a, b in zip(txids, txids[1:])):
        found.append(f"audit: txids not strictly increasing in commit order: {txids}")
    if sorted(txids) != list(range(1, len(txids) + 1)):
        found.append(f"audit: txids are not 1..{len(txids)}: {sorted(txids)}")
    if sum(a.tuples for a in audit) != len(reference):
        found.append(
            f"audit: {sum(a.tuples for a in audit)} tuples applied for {len(reference)} records"
        )

    # the attempts log: applied in strictly increasing txid order, as the audit says; every
    # attempt of a txid (a skipped replay too) carried the same content as the applied one
    by_txid = {a.txid: a for a in audit}
    applied = [line.txid for line in log if line.applied]
    if any(b <= a for a, b in zip(applied, applied[1:])):
        found.append(f"attempts log: applied txids not strictly increasing: {applied}")
    for line in log:
        row = by_txid.get(line.txid)
        if row is None:
            found.append(
                f"attempts log: txid {line.txid} (attempt {line.attempt}) not in the audit"
            )
        elif line.content_hash != row.content_hash or line.tuples != row.tuples:
            found.append(
                f"txid {line.txid}: attempt {line.attempt} carried other tuples "
                f"({line.tuples}, {line.content_hash[:12]}) than the applied attempt "
                f"{row.attempt} ({row.tuples}, {row.content_hash[:12]})"
            )
        elif line.applied and line.attempt != row.attempt:
            found.append(f"txid {line.txid}: applied by attempt {line.attempt} and {row.attempt}")
        elif not line.applied and line.attempt <= row.attempt:
            found.append(
                f"txid {line.txid}: attempt {line.attempt} skipped before attempt {row.attempt} "
                f"was applied"
            )

    # a restarted host replays from its currtx: it never brings a committed txid back
    for n, r in enumerate(restarts, 1):
        again = sorted({line.txid for line in log[r.log_lines :] if line.txid < r.currtx})
        if again:
            found.append(
                f"host restart {n}: committed txid(s) {again} reached the committer again "
                f"(currtx was {r.currtx} when the host was killed)"
            )
    return found
