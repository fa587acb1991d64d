"""The seeded fault schedules of the transactional chaos tier (test_transactional_chaos.py): the
input files, the topology file, and which faults hit which txid, all drawn from
`random.Random(seed)`, so a seed names one schedule exactly.

The topology: the file spout (components/transactional_files, wrapped with two crash seams:
components/tx_files_spout.py; `batch: spout`, 2 tasks) -> a batch bolt in Python, Node or bash
(components/tx_words_bolt.*, 3 tasks: (rid, words, 1) per line) -> the SQLite committer
(components/sqlite_committer via components/tx_committer.py; upsert-add keyed by rid, an audit
table and an attempts log). Every fault fires once per schedule (components/tx_faults.py).
"""

from __future__ import annotations

import math
import random
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

COMPONENTS = Path(__file__).parent / "components"

# point -> where it strikes (the components' docstrings say how)
BOLT_FAULTS = ("crash", "finish", "fail", "hang", "slow")
SPOUT_FAULTS = ("spout_half", "spout_init")
COMMITTER_FAULTS = ("before_write", "after_commit", "after_ack")
FAULTS = BOLT_FAULTS + SPOUT_FAULTS + COMMITTER_FAULTS

BOLTS = {
    "python": [sys.executable, str(COMPONENTS / "tx_words_bolt.py")],
    "node": ["node", str(COMPONENTS / "tx_words_bolt.js")],
    "bash": ["bash", str(COMPONENTS / "tx_words_bolt.sh")],
}
VOCABULARY = ("red", "green", "blue", "cyan", "amber", "slate", "plum", "teal", "rust", "sand")

# timeouts (seconds; the host takes integers): short ones only where a schedule needs them
MESSAGE_TIMEOUT, SHORT_MESSAGE_TIMEOUT = 10, 2  # `slow` sleeps SLOW_SECS, past the short one
SUBPROCESS_TIMEOUT, SHORT_SUBPROCESS_TIMEOUT = 5, 2  # `hang` is killed after the short one
SLOW_SECS = 3.5


@dataclass(frozen=True)
class HostKill:
    """SIGKILL the host once the audit table holds `after_commits` rows, `delay` seconds later."""

    after_commits: int
    delay: float


@dataclass
class Schedule:
    seed: int
    lang: str  # the batch bolt's language
    emit: str  # "finish" or "tuple": when the bolt emits its results
    pending: int  # topology.max.spout.pending
    files: int
    lines: int  # per file
    batch_lines: int  # files.spout.batch.lines
    faults: list[tuple[str, int]]  # (point, txid)
    host_kills: list[HostKill] = field(default_factory=list)

    @property
    def full_txids(self) -> int:
        """How many txids carry lines: the rest of a run's batches are empty."""
        return math.ceil(self.lines / self.batch_lines)

    @property
    def message_timeout(self) -> int:
        return SHORT_MESSAGE_TIMEOUT if self.has("slow") else MESSAGE_TIMEOUT

    @property
    def subprocess_timeout(self) -> int:
        if self.has("slow"):  # the slow bolt must outlive the attempt, not be killed as hung
            return math.ceil(SLOW_SECS) + 2
        return SHORT_SUBPROCESS_TIMEOUT if self.has("hang") else SUBPROCESS_TIMEOUT

    def has(self, point: str) -> bool:
        return any(p == point for p, _ in self.faults)

    def describe(self) -> str:
        faults = " ".join(f"{p}@{t}" for p, t in self.faults)
        kills = " ".join(f"host-kill@{k.after_commits}+{k.delay:.2f}s" for k in self.host_kills)
        return (
            f"seed={self.seed} bolt={self.lang}/{self.emit} pending={self.pending} "
            f"{self.files}x{self.lines} lines, {self.batch_lines}/file/batch "
            f"({self.full_txids} txids with lines); faults: {faults} {kills}".rstrip()
        )


def draw(seed: int) -> Schedule:
    """The schedule of `seed`. Each seed's first fault is FAULTS[seed % 10], so 50 consecutive
    seeds hit every point at least 5 times; one or two more are drawn at random."""
    rng = random.Random(seed)
    lang = rng.choices(("python", "node", "bash"), weights=(3, 1, 1))[0]
    files = rng.choice((2, 3))
    batch_lines = rng.randint(8, 13) if files == 2 else rng.randint(7, 11)  # 16-39 lines a batch
    full = rng.randint(14, 22)
    lines = batch_lines * (full - 1) + rng.randint(1, batch_lines)
    points = [FAULTS[seed % len(FAULTS)]]
    points += rng.sample([p for p in FAULTS if p != points[0]], rng.randint(1, 2))
    # a fault never strikes the last txid with lines: the run is over once that one commits
    faults = [(p, rng.randint(1, full - 1)) for p in points]
    kills: list[HostKill] = []
    for _ in range(rng.choice((0, 0, 1, 1, 2))):
        last = kills[-1].after_commits if kills else 0
        if last + 1 <= full - 2:
            kills.append(HostKill(rng.randint(last + 1, full - 2), round(rng.uniform(0, 0.3), 3)))
    return Schedule(
        seed=seed,
        lang=lang,
        emit=rng.choice(("finish", "tuple")),
        pending=rng.choice((1, 3)),
        files=files,
        lines=lines,
        batch_lines=batch_lines,
        faults=faults,
        host_kills=kills,
    )


def write_inputs(s: Schedule, directory: Path) -> tuple[list[Path], dict[str, tuple[int, int]]]:
    """The input files (each line `RID WORD...`, every rid unique) and the reference the sink
    must equal: rid -> (number of words, 1)."""
    rng = random.Random(f"inputs-{s.seed}")
    paths, reference = [], {}
    for f in range(s.files):
        out = []
        for i in range(s.lines):
            rid = f"r{f}-{i:04d}"
            words = rng.choices(VOCABULARY, k=rng.randint(1, 9))
            out.append(f"{rid} {' '.join(words)}\n")
            reference[rid] = (len(words), 1)
        path = directory / f"input-{f}.txt"
        path.write_text("".join(out))
        paths.append(path)
    return paths, reference


def topology(s: Schedule, tmp: Path, inputs: list[Path], fault_dir: Path) -> dict[str, Any]:
    """The native topology document (docs/transactional.md §3)."""
    env = {
        "TX_FAULTS": ",".join(f"{p}:{t}" for p, t in s.faults),
        "TX_FAULT_DIR": str(fault_dir),
        "TX_SLOW_SECS": str(SLOW_SECS),
    }
    return {
        "name": "tx-chaos",
        "transactional": {"id": "tx-chaos"},
        "config": {
            "topology.max.spout.pending": s.pending,
            "topology.message.timeout.secs": s.message_timeout,
            "topology.subprocess.timeout.secs": s.subprocess_timeout,
            "host.restart.backoff.initial.secs": 0.05,
            "host.restart.backoff.max.secs": 0.5,
            "host.shutdown.grace.secs": 2,
        },
        "spouts": {
            "files": {
                "command": [sys.executable, str(COMPONENTS / "tx_files_spout.py")],
                "batch": "spout",
                "outputs": ["file", "lineno", "line"],
                "parallelism": 2,
                "env": env,
                "config": {
                    "files.spout.paths": [str(p) for p in inputs],
                    "files.spout.batch.lines": s.batch_lines,
                },
            }
        },
        "bolts": {
            "words": {
                "command": BOLTS[s.lang],
                "batch": "bolt",
                "outputs": ["rid", "words", "n"],
                "parallelism": 3,
                "inputs": {"files": "shuffle"},
                "env": env,
                "config": {"tx.emit": s.emit},
            },
            "store": {
                "command": [sys.executable, str(COMPONENTS / "tx_committer.py")],
                "batch": "committer",
                "outputs": [],
                "inputs": {"words": "global"},
                "env": env,
                "config": {
                    "sqlite.committer.path": str(tmp / "sink.db"),
                    "sqlite.committer.table": "sink",
                    "sqlite.committer.mode": "upsert-add",
                    "sqlite.committer.keys": ["rid"],
                    "sqlite.committer.values": ["words", "n"],
                    "sqlite.committer.audit": "audit",
                    "sqlite.committer.attempts_log": str(tmp / "attempts.log"),
                },
            },
        },
    }


def write_topology(
    s: Schedule, tmp: Path, inputs: list[Path], fault_dir: Path, config: dict[str, Any] | None
) -> Path:
    """The topology file, with `config` over the topology's config."""
    doc = topology(s, tmp, inputs, fault_dir)
    doc["config"].update(config or {})
    path = tmp / "topology.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path
