"""host.observe.batch_panel, render and view with a transactional topology's `batches` section
(docs/transactional.md §6): the live view, the plain line, the summary, from made-up snapshots
that fit host.observe.snapshot's schema; and the same snapshot without the section draws as
before."""

from __future__ import annotations

import io
from typing import Any

from hypothesis import given
from hypothesis import strategies as st
from rich.console import Console

from host.observe.batch_panel import (
    OPEN_BATCH_ROWS,
    RECENT_BATCH_ROWS,
    batch_line,
    batch_section,
)
from host.observe.component_table import Rates
from host.observe.render import live_renderable, plain_line, summary_lines
from host.observe.snapshot import BatchStats, Snapshot
from host.observe.view import LiveView
from tests.support.batch_snapshot import batches
from tests.support.typed_dict_check import typed_dict_problems
from tests.unit.test_view import render, snapshot


def transactional(**kwargs: Any) -> Any:
    snap = snapshot()
    snap["batches"] = batches(**kwargs)
    assert typed_dict_problems(snap, Snapshot, extra_keys=False) == []
    return snap


def line_with(text: str, *parts: str) -> str:
    """The one line of `text` that holds every one of `parts`."""
    found = [line for line in text.splitlines() if all(p in line for p in parts)]
    assert len(found) == 1, (parts, text)
    return found[0]


# ---- the live view ------------------------------------------------------------------------------


def test_live_view_shows_the_batches_under_the_component_table():
    text = render(live_renderable(transactional(), Rates()))
    title = line_with(text, "transactional global-count")
    for figure in (
        "committed txid 41",
        "committed 12 (1,234 tuples)",
        "open 2",
        "replays 1",
        "batch latency p50 85.5 ms  p99 240.0 ms",
        "commit p50 3.5 ms  p99 12.5 ms",
    ):
        assert figure in title, figure
    assert text.index("count") < text.index("transactional global-count")
    # the first line of the reason only
    assert "last abort: txid 42 attempt 1: a tuple failed in partial task 3" in text
    assert "every later one" not in text
    # the open attempts: txid, attempt, phase, age, tuples, finished/tasks
    assert line_with(text, "open txid", "phase", "age", "finished/tasks")
    assert line_with(text, "42", "committing").split() == [
        "42",
        "2",
        "committing",
        "1.8s",
        "300",
        "5/6",
    ]
    assert line_with(text, "43", "processing").split() == [
        "43",
        "1",
        "processing",
        "0.5s",
        "120",
        "1/6",
    ]


def test_live_view_shows_the_last_few_committed_batches_timings():
    text = render(live_renderable(transactional(), Rates()))
    assert line_with(text, "committed txid", "processing ms", "commit ms")
    rows = [
        line.split() for line in text.splitlines() if line.split()[:1] in (["36"], ["37"], ["41"])
    ]
    # the last RECENT_BATCH_ROWS of them, oldest first: txid, attempt, tuples, processing, commit
    assert RECENT_BATCH_ROWS == 5
    assert [row[:5] for row in rows] == [
        ["37", "1", "1,037", "107.0", "2.4"],
        ["41", "1", "1,041", "111.0", "2.4"],
    ]


def test_without_batches_the_live_view_is_unchanged():
    plain = snapshot()
    assert batch_section(plain) is None
    before = render(live_renderable(plain, Rates()))
    after = render(live_renderable(transactional(), Rates()))
    assert "transactional" not in before and "txid" not in before
    assert after.startswith(before.rstrip("\n"))  # the section only adds lines after the table


def test_replays_and_phases_are_highlighted():
    section = batch_section(transactional())
    assert section is not None
    title = section.renderables[0]
    styles = {title.plain[s.start : s.end].strip(): str(s.style) for s in title.spans}
    assert styles["replays 1"] == "bold yellow"
    grid = section.renderables[2]  # after the title and the last abort
    cells = {grid.plain[s.start : s.end].strip(): str(s.style) for s in grid.spans}
    assert cells["committing"] == "green"
    assert cells["2"] == "yellow"  # txid 42's second attempt: a replay
    calm = batch_section(transactional(replays=0, last_abort=None))
    assert calm is not None
    calm_title = calm.renderables[0]
    assert not [s for s in calm_title.spans if "yellow" in str(s.style)]
    assert "last abort" not in render(calm)


def test_many_open_attempts_are_bounded():
    snap = transactional()
    template = snap["batches"]["open"][1]
    snap["batches"]["open"] = [{**template, "txid": 100 + i} for i in range(OPEN_BATCH_ROWS + 3)]
    text = render(batch_section(snap))
    shown = [line.split()[0] for line in text.splitlines() if "processing" in line.split()[2:3]]
    assert shown == [str(100 + i) for i in range(OPEN_BATCH_ROWS)]  # the lowest txids
    assert "(+3 more open)" in text


def test_before_any_batch_commits():
    snap = transactional(replays=0, last_abort=None, recent=0)
    snap["batches"].update(
        committed_txid=0,
        committed=0,
        open=[],
        batch_latency_ms={"p50": None, "p99": None, "mean": None},
        commit_latency_ms={"p50": None, "p99": None, "mean": None},
    )
    assert typed_dict_problems(snap, Snapshot, extra_keys=False) == []
    text = render(batch_section(snap))
    assert "committed txid 0" in text and "batch latency p50 - ms  p99 - ms" in text
    assert "no open attempt" in text
    assert "processing ms" not in text  # no committed batch, no table


@given(
    st.lists(
        st.fixed_dictionaries(
            {
                "txid": st.integers(1, 10**9),
                "attempt": st.integers(1, 10**6),
                "phase": st.sampled_from(["processing", "processed", "committing"]),
                "age_s": st.floats(0, 1e6),
                "tuples": st.integers(0, 10**12),
                "finished": st.integers(0, 500),
                "tasks": st.integers(1, 500),
            }
        ),
        max_size=12,
    ),
    st.one_of(st.none(), st.text(max_size=80)),
)
def test_any_open_attempts_render_and_the_plain_line_names_each(open_: list, abort: Any):
    section: BatchStats = batches(last_abort=abort)
    section["open"] = open_
    snap = snapshot()
    snap["batches"] = section
    text = render(batch_section(snap))
    assert "committed txid 41" in text
    shown = min(len(open_), OPEN_BATCH_ROWS)
    for attempt in open_[:shown]:
        assert f"{attempt['finished']}/{attempt['tasks']}" in text
    line = batch_line(section)
    for attempt in open_:
        assert f"{attempt['txid']}.{attempt['attempt']}:{attempt['phase']}" in line
    assert "\n" not in line


# ---- plain lines and the summary ----------------------------------------------------------------


def test_plain_line_and_summary_carry_the_batches_in_one_line():
    line = plain_line(transactional(), Rates())
    part = line.split(" | ")[-1]
    assert part == (
        "transactional global-count: committed_txid=41 committed=12 committed_tuples=1234"
        " replays=1"
        " open=[42.2:committing,43.1:processing]"
        " batch_ms p50=85.5 p99=240.0 commit_ms p50=3.5 p99=12.5"
        " last_abort='txid 42 attempt 1: a tuple failed in partial task 3'"
    )
    lines = summary_lines(transactional())
    assert f"  {part}" in lines
    assert lines.index(f"  {part}") > 2  # after the components
    assert not [line for line in summary_lines(snapshot()) if "transactional" in line]
    assert "transactional" not in plain_line(snapshot(), Rates())


def test_live_view_draws_the_batches_and_its_summary_keeps_them():
    out = io.StringIO()
    console = Console(file=out, force_terminal=True, width=200, color_system=None)
    view = LiveView(console=console)
    view.start()
    try:
        view.update(transactional())
    finally:
        view.stop()
    view.summary(transactional())
    text = out.getvalue()
    assert text.count("transactional global-count") >= 2  # live, and in the summary
    assert "5/6" in text and "committing" in text


def test_plain_mode_prints_the_batches_line():
    out = io.StringIO()
    view = LiveView(console=Console(file=io.StringIO(), force_terminal=False), plain_out=out)
    view._next_plain = 0.0  # due now
    view.update(transactional())
    view.summary(transactional())
    lines = out.getvalue().splitlines()
    assert "committed_txid=41" in lines[0]
    assert any(line.startswith("  transactional global-count: committed_txid=41") for line in lines)
