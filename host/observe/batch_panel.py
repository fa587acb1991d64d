"""A transactional topology's batches in the live view (the snapshot's `batches`,
docs/transactional.md §6): the panel under the component table and the one-line form for the
plain mode and the summary. Apart from host/observe/render.py because only transactional runs
have them."""

from __future__ import annotations

from rich.console import Group, RenderableType
from rich.text import Text

from host.observe.grid import Cell, grid, millis_text, time_of_day
from host.observe.snapshot import BatchStats, Snapshot

OPEN_BATCH_ROWS = 5  # open attempts shown (topology.max.spout.pending of them may be open)
RECENT_BATCH_ROWS = 5  # committed batches shown, of the snapshot's last 20


def _first_line(text: str) -> str:
    return next((line for line in text.splitlines() if line.strip()), "")


_PHASE_STYLES = {"processing": "", "processed": "cyan", "committing": "green"}


def _batch_title(batches: BatchStats) -> Text:
    lat, commit = batches["batch_latency_ms"], batches["commit_latency_ms"]
    text = Text()
    text.append(f"transactional {batches['transactional_id']}", style="bold")
    text.append(f"  committed txid {batches['committed_txid']:,}")
    text.append(f"  committed {batches['committed']:,} ({batches['committed_tuples']:,} tuples)")
    text.append(f"  open {len(batches['open'])}")
    replays = batches["replays"]
    text.append(f"  replays {replays:,}", style="bold yellow" if replays else "")
    text.append(
        f"  |  batch latency p50 {millis_text(lat['p50'])} ms  p99 {millis_text(lat['p99'])} ms"
    )
    text.append(
        f"  commit p50 {millis_text(commit['p50'])} ms  p99 {millis_text(commit['p99'])} ms"
    )
    return text


def _open_grid(batches: BatchStats, count: int) -> Text:
    """The open attempts, lowest txid first; a replayed one (attempt > 1) in yellow."""
    rows: list[list[Cell]] = [
        [
            (f"{a['txid']:,}", "bold"),
            (str(a["attempt"]), "yellow" if a["attempt"] > 1 else ""),
            (a["phase"], _PHASE_STYLES.get(a["phase"], "")),
            (f"{a['age_s']:.1f}s", ""),
            (f"{a['tuples']:,}", ""),
            (f"{a['finished']}/{a['tasks']}", ""),
        ]
        for a in batches["open"][:count]
    ]
    columns = [
        ("open txid", "r"),
        ("attempt", "r"),
        ("phase", "l"),
        ("age", "r"),
        ("tuples", "r"),
        ("finished/tasks", "r"),
    ]
    text = grid(columns, rows)
    more = len(batches["open"]) - count
    if more > 0:
        text.append(f"\n(+{more} more open)", style="dim")
    return text


def _recent_grid(batches: BatchStats, count: int) -> Text:
    """The last `count` committed batches, oldest first (as the snapshot keeps them)."""
    rows: list[list[Cell]] = [
        [
            (f"{b['txid']:,}", ""),
            (str(b["attempt"]), "yellow" if b["attempt"] > 1 else ""),
            (f"{b['tuples']:,}", ""),
            (millis_text(b["processing_ms"]), ""),
            (millis_text(b["commit_ms"]), ""),
            (time_of_day(b["committed_at"]), "dim"),
        ]
        for b in batches["recent"][-count:]
    ]
    columns = [
        ("committed txid", "r"),
        ("attempt", "r"),
        ("tuples", "r"),
        ("processing ms", "r"),
        ("commit ms", "r"),
        ("at", "l"),
    ]
    return grid(columns, rows)


def batch_section(
    snap: Snapshot, open_rows: int = OPEN_BATCH_ROWS, recent_rows: int = RECENT_BATCH_ROWS
) -> Group | None:
    """A transactional topology's batches (the snapshot's `batches`, docs/transactional.md §6):
    a title with the committed txid, counts and latencies; the last abort's reason; the open
    attempts with their phase, age and finished/tasks; the last few committed batches' timings.
    None when the topology is not transactional."""
    batches = snap.get("batches")
    if batches is None:
        return None
    parts: list[RenderableType] = [_batch_title(batches)]
    last_abort = batches["last_abort"]
    if last_abort:
        parts.append(
            Text(
                f"last abort: {_first_line(last_abort)}",
                style="red",
                no_wrap=True,
                overflow="ellipsis",
            )
        )
    if batches["open"]:
        parts.append(_open_grid(batches, open_rows))
    else:
        parts.append(Text("no open attempt", style="dim"))
    if batches["recent"]:
        parts.append(_recent_grid(batches, recent_rows))
    return Group(*parts)


def batch_line(batches: BatchStats) -> str:
    """The batches in one line of plain text (the plain mode and the summary)."""
    lat, commit = batches["batch_latency_ms"], batches["commit_latency_ms"]
    opened = ",".join(f"{a['txid']}.{a['attempt']}:{a['phase']}" for a in batches["open"])
    line = (
        f"transactional {batches['transactional_id']}: committed_txid={batches['committed_txid']}"
        f" committed={batches['committed']} committed_tuples={batches['committed_tuples']}"
        f" replays={batches['replays']}"
        f" open=[{opened}]"
        f" batch_ms p50={millis_text(lat['p50'])} p99={millis_text(lat['p99'])}"
        f" commit_ms p50={millis_text(commit['p50'])} p99={millis_text(commit['p99'])}"
    )
    if batches["last_abort"]:
        line += f" last_abort={_first_line(batches['last_abort'])!r}"
    return line
