"""host.observe.render, component_table and view: the sparkline, the rates, the component
table, log lines and failure blocks, and the live / plain / quiet modes, rendered to strings (rich
Console with record=True or StringIO), from made-up snapshots that fit host.observe.snapshot's
schema."""

from __future__ import annotations

import io
from typing import Any

from rich.console import Console

from host.observe.component_table import BARS, Rates, component_table, sparkline
from host.observe.render import (
    failure_lines,
    live_renderable,
    log_lines,
    metric_lines,
    plain_line,
)
from host.observe.snapshot import Snapshot
from host.observe.view import LiveView
from tests.support.typed_dict_check import typed_dict_problems


def task(task_id: int, state: str = "running", **counts: Any) -> dict[str, Any]:
    """One `tasks_detail` entry."""
    detail = {
        "task": task_id,
        "pid": 4000 + task_id if state == "running" else None,
        "state": state,
        "emitted": 0,
        "executed": 0,
        "acked": 0,
        "failed": 0,
        "in_flight": 0,
        "queued": 0,
        "restarts": 0,
        "errors": 0,
        "last_error": None,
        "last_error_at": None,
        "capacity": 0.0,
        "cpu_percent": None,
        "rss_bytes": None,
    }
    detail.update(counts)
    return detail


def snapshot(
    uptime: float = 10.0,
    acked: int = 1000,
    *,
    acked_per_s: float = 100.0,
    measured: bool = True,
    restarts: int = 0,
    failures: list | None = None,
    logs: list | None = None,
) -> Any:
    """A snapshot as the supervisor makes it. `measured=False`: as before anything was measured
    (no process latency sample, CPU and memory unknown, capacity 0)."""
    components = {
        "sentences": {
            "tasks": 1,
            "emitted": acked + 10,
            "transferred": acked + 10,
            "executed": 0,
            "acked": acked,
            "failed": 0,
            "restarts": 0,
            "errors": 0,
            "in_flight": 0,
            "queued": 0,
            "states": ["running"],
            "cpu_percent": None,
            "rss_bytes": None,
            "tasks_detail": [task(1, emitted=acked + 10, acked=acked)],
        },
        "count": {
            "tasks": 2,
            "emitted": 5 * acked,
            "transferred": 5 * acked,
            "executed": 5 * acked,
            "acked": 5 * acked,
            "failed": 0,
            "restarts": restarts,
            "errors": restarts,
            "in_flight": 12,
            "queued": 3,
            "states": ["backoff", "running"] if restarts else ["running"],
            "capacity": 0.0,
            "cpu_percent": None,
            "rss_bytes": None,
            "tasks_detail": [
                task(2, "backoff" if restarts else "running", restarts=restarts, errors=restarts),
                task(3, in_flight=12, queued=3),
            ],
        },
    }
    if restarts:
        components["count"].update(last_error="exited\nwith more detail", last_error_at=1.7e9)
    if measured:
        components["sentences"].update(cpu_percent=2.0, rss_bytes=14 << 20)
        components["count"].update(
            process_latency_ms={"p50": 4.5, "p99": 30.25},
            capacity=0.91,
            cpu_percent=8.0,
            rss_bytes=96 << 20,
        )
    snap = {
        "topology": {
            "name": "wordcount",
            "uptime_s": uptime,
            "spout_tuples_acked": acked,
            "spout_tuples_failed": 0,
            "spout_tuples_timed_out": 0,
            "spout_tuples_pending": 40,
            "acked_per_s": acked_per_s,
            "failed_per_s": 0.0,
            "timed_out_per_s": 0.0,
            "complete_latency_ms": {"p50": 23.5, "p99": 210.0, "mean": 30.0},
        },
        "components": components,
        "recent_logs": logs if logs is not None else [],
        "failures": failures if failures is not None else [],
    }
    assert typed_dict_problems(snap, Snapshot, extra_keys=False) == []
    return snap


FAILURE = {
    "time": 1_700_000_000.0,
    "component": "count",
    "task": 3,
    "pid": 4242,
    "reason": "exited",
    "exit": "exit status 1",
    "stderr": ["Traceback (most recent call last):", "ZeroDivisionError: division by zero"],
    "last_sent": '{"id":"77","comp":"split","stream":"default","task":6,"tuple":["cow"]}\nend\n',
    # the tail of what it wrote, cut in the middle of a message
    "last_received": 'ask_ids":false}\nend\n{"command":"ack","id":"76"}\nend\n',
}


def render(renderable, width: int = 200) -> str:
    console = Console(record=True, width=width, file=io.StringIO(), color_system=None)
    console.print(renderable)
    return console.export_text()


# ---- sparkline and rates ------------------------------------------------------------------------


def test_sparkline_scales_to_the_maximum_and_grows_to_the_right():
    assert sparkline([0, 5, 10], width=5) == BARS[0] + BARS[4] + BARS[-1] + "  "
    assert sparkline([], width=3) == "   "
    assert sparkline([0, 0, 0], width=3) == BARS[0] * 3  # idle: a flat line, not nothing
    assert sparkline(range(100), width=10) == sparkline(range(90, 100), width=10)
    assert len(sparkline([3.0] * 80, width=60)) == 60


def test_rates_keep_one_point_per_second_from_the_snapshots_own_clock():
    rates = Rates()
    for i in range(9):  # every 0.5 s, 100 more acked each time: 200/s
        rates.update(snapshot(uptime=i * 0.5, acked=100 * i, acked_per_s=190.0))
    assert list(rates.history) == [200.0] * 4
    assert rates.acked_per_s == 190.0  # the supervisor's own figure, as the web UI shows it


def test_rates_history_is_bounded():
    rates = Rates(history=5)
    for i in range(40):
        rates.update(snapshot(uptime=float(i), acked=10 * i))
    assert len(rates.history) == 5


# ---- the table ----------------------------------------------------------------------------------


def test_table_shows_every_component_and_the_new_columns_when_present():
    rates = Rates()
    for i in range(5):
        rates.update(snapshot(uptime=float(i), acked=100 * i))
    text = render(component_table(snapshot(acked=400), rates))
    for expected in (
        "wordcount",
        "sentences",
        "count",
        "p50/p99 ms",
        "4.5/30.2",
        "capacity",
        "0.91",
        "cpu %",
        "96.0M",
        "acked/s",
        "restarts",
        "errors",
    ):
        assert expected in text, expected
    assert BARS[-1] in text  # the sparkline


def test_table_leaves_out_the_columns_nothing_has_a_value_for():
    text = render(component_table(snapshot(measured=False)))
    assert "sentences" in text and "count" in text and "capacity" in text
    for absent in ("p50/p99", "cpu %", "last error"):
        assert absent not in text


def test_restarts_and_errors_are_highlighted():
    table = component_table(snapshot(restarts=2))
    grid = table.renderables[1]
    plain = grid.plain
    row = next(line for line in plain.splitlines() if line.startswith("count"))
    assert "backoff,running" in row and "exited" in row  # first line of the last error only
    assert "with more detail" not in plain
    start = plain.index("count")
    styles = {str(span.style) for span in grid.spans if span.start <= start < span.end}
    assert "bold red" in styles  # the component's name
    red_cells = [plain[s.start : s.end].strip() for s in grid.spans if str(s.style) == "bold red"]
    assert red_cells.count("2") == 2  # restarts and errors
    healthy = component_table(snapshot()).renderables[1]
    assert not [
        s
        for s in healthy.spans
        if str(s.style) == "bold red"
        and healthy.plain[s.start : s.end].strip() in ("0", "sentences")
    ]


def test_capacity_is_coloured_by_how_busy_the_bolt_is():
    grid = component_table(snapshot()).renderables[1]
    spans = {grid.plain[s.start : s.end].strip(): str(s.style) for s in grid.spans}
    assert spans["0.91"] == "bold red"


# ---- log lines and failures ---------------------------------------------------------------------


def test_log_lines_show_the_last_few_one_line_each():
    logs = [
        {
            "time": 1_700_000_000.0 + i,
            "component": "report",
            "task": 4,
            "level": "INFO",
            "message": f"line {i}\nsecond part",
        }
        for i in range(20)
    ]
    logs.append(
        {
            "time": 1_700_000_030.0,
            "component": "count",
            "task": 2,
            "level": "ERROR",
            "message": "boom",
        }
    )
    text = log_lines(snapshot(logs=logs), count=3).plain
    lines = text.splitlines()
    assert len(lines) == 3
    assert "report[4]" in lines[0] and "line 18 second part" in lines[0]
    assert "count[2]" in lines[2] and "ERROR" in lines[2] and "boom" in lines[2]
    assert log_lines(snapshot(logs=[])) is None


def test_failure_block_names_component_task_pid_exit_stderr_and_last_messages():
    lines = failure_lines(FAILURE)
    assert lines[0].startswith("count task 3 pid 4242 failed at ")
    assert lines[0].endswith(": exited")
    text = "\n".join(lines)
    assert "exit: exit status 1" in text
    assert "ZeroDivisionError: division by zero" in text
    assert 'last message sent to it:\n  {"id":"77"' in text
    assert 'last it wrote:\n  {"command":"ack","id":"76"}' in text
    assert "\n  end" not in text  # frame terminators are noise
    assert "ask_ids" not in text  # nor is half a message


def test_live_renderable_puts_log_lines_under_the_table():
    logs = [
        {
            "time": 1_700_000_000.0,
            "component": "report",
            "task": 4,
            "level": "INFO",
            "message": "top 10: the=9",
        }
    ]
    text = render(live_renderable(snapshot(logs=logs), Rates(), "web UI: http://127.0.0.1:1/"))
    assert text.startswith("web UI: http://127.0.0.1:1/\n")
    assert text.index("sentences") < text.index("recent component log lines")
    assert text.index("recent component log lines") < text.index("top 10: the=9")


# ---- the modes ----------------------------------------------------------------------------------


def test_live_view_on_a_terminal_draws_the_table_and_each_failure_once():
    out = io.StringIO()
    console = Console(file=out, force_terminal=True, width=180, color_system=None)
    view = LiveView(console=console)
    assert view.interactive
    view.start()
    try:
        view.update(snapshot(uptime=1.0, failures=[FAILURE]))
        view.update(snapshot(uptime=1.5, failures=[FAILURE]))
    finally:
        view.stop()
    text = out.getvalue()
    assert "sentences" in text and "count" in text
    assert text.count("count task 3 pid 4242 failed at") == 1
    assert "ZeroDivisionError" in text


def test_plain_mode_prints_periodic_lines_and_failures_once():
    out, err = io.StringIO(), io.StringIO()
    console = Console(file=io.StringIO(), force_terminal=False)
    view = LiveView(console=console, plain_out=out, plain_err=err)
    assert not view.interactive
    view._next_plain = 0.0  # due now
    view.update(snapshot(uptime=1.0, failures=[FAILURE]))
    view.update(snapshot(uptime=1.5, failures=[FAILURE]))
    lines = out.getvalue().splitlines()
    assert len(lines) == 1 and "acked=1000" in lines[0] and "capacity=0.91" in lines[0]
    assert err.getvalue().count("count task 3 pid 4242 failed at") == 1
    assert "last it wrote:" in err.getvalue()


def test_quiet_shows_nothing():
    out, err = io.StringIO(), io.StringIO()
    console = Console(file=io.StringIO(), force_terminal=True)
    view = LiveView(quiet=True, console=console, plain_out=out, plain_err=err)
    view._next_plain = 0.0
    view.start()
    view.update(snapshot(failures=[FAILURE]))
    view.stop()
    assert not view.interactive
    assert out.getvalue() == err.getvalue() == console.file.getvalue() == ""


def test_plain_line_before_anything_is_measured():
    line = plain_line(snapshot(measured=False), Rates())
    assert line.startswith("[10s] acked=1000") and "count: emitted=5000" in line
    assert "sentences: emitted=1010 acked=1000 failed=0 in_flight=0 restarts=0 |" in line
    assert line.endswith("capacity=0.00 restarts=0")  # a bolt's; no errors, so no errors=


def test_summary_in_plain_mode():
    out = io.StringIO()
    view = LiveView(console=Console(file=io.StringIO(), force_terminal=False), plain_out=out)
    view.summary(snapshot())
    assert out.getvalue().startswith("topology wordcount: ran 10.0s")


def test_custom_metrics_are_shown_per_component_and_bounded():
    snap = snapshot()
    snap["components"]["count"]["metrics"] = {f"m{i}": i for i in range(8)}
    snap["components"]["count"]["metrics"]["state"] = "x" * 100
    lines = metric_lines(snap)
    assert lines == ["count: m0=0 m1=1 m2=2 m3=3 m4=4 m5=5 (+3 more)"]
    console = Console(record=True, width=160, force_terminal=False)
    console.print(live_renderable(snap, Rates()))
    text = console.export_text()
    assert "custom metrics" in text and "m5=5" in text
    assert metric_lines(snapshot()) == []  # none, no section
