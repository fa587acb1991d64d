"""The web UI end to end: `python -m host local examples/wordcount/topology.yaml --ui 0` as a real
subprocess, its page in real headless Chromium (Debian's chromium and chromium-driver, which
`make tools` installs) driven by selenium with the driver given explicitly, so selenium-manager
never tries to download anything. The batches section (docs/transactional.md §6) is checked with
the UI's own server (real HTTP, real browser) serving made-up snapshots, so that every figure is
known; so is the DRPC section (docs/drpc.md §6), which is then checked again against a real DRPC
run called over real HTTP."""

from __future__ import annotations

import json
import os
import re
import selectors
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any
from urllib.parse import quote

import psutil
import pytest

os.environ.setdefault("SE_OFFLINE", "true")  # before selenium is imported: no downloads

from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

from host.observe.snapshot import Snapshot
from host.observe.web.server import WebUI
from host.topology import TopologyBuilder, load
from tests.support.batch_snapshot import batches
from tests.support.drpc_snapshot import URL as MADE_UP_DRPC_URL
from tests.support.drpc_snapshot import drpc
from tests.support.typed_dict_check import typed_dict_problems
from tests.unit.test_view import snapshot

ROOT = Path(__file__).resolve().parents[2]
WORDCOUNT = ROOT / "examples" / "wordcount" / "topology.yaml"
CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
COMPONENTS = {"sentences", "split", "count", "report"}
TX_COMPONENTS = ROOT / "tests" / "integration" / "components" / "python" / "tx"
EXCLAIM = ROOT / "examples" / "drpc" / "exclaim" / "topology.yaml"
IN_HOST = {"drpc-request", "drpc-result"}  # the linear DRPC topology's ends (docs/drpc.md §3.2)
URL_LINE = re.compile(r"^web UI: (http://127\.0\.0\.1:(\d+)/)$")

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for arg in (
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--window-size=1400,1000",
        f"--user-data-dir={tmp_path_factory.mktemp('chromium-profile')}",
    ):
        options.add_argument(arg)
    # the console's messages, for console_errors()
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    driver.set_page_load_timeout(30)
    yield driver
    driver.quit()


class Host:
    """`python -m host local ... --ui 0` and the URL it printed."""

    def __init__(self, *args: str, topology: Path = WORDCOUNT):
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "host", "local", str(topology), "--ui", "0", *args],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        self.url, self.port = self._read_url(timeout=30)

    def _read_url(self, timeout: float) -> tuple[str, int]:
        deadline = time.monotonic() + timeout
        with selectors.DefaultSelector() as sel:
            sel.register(self.proc.stdout, selectors.EVENT_READ)
            while time.monotonic() < deadline:
                if not sel.select(deadline - time.monotonic()):
                    break
                line = self.proc.stdout.readline()
                if not line:
                    break
                match = URL_LINE.match(line.strip())
                if match:
                    return match.group(1), int(match.group(2))
        self.stop()
        raise AssertionError("the host printed no 'web UI: http://127.0.0.1:PORT/' line")

    def stop(self) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
        try:
            self.proc.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.communicate()
        return self.proc.returncode


@pytest.fixture
def host():
    running = Host("--duration", "120")
    yield running
    running.stop()


def console_errors(driver: webdriver.Chrome) -> list[str]:
    """The errors the page's console got since the last call (reading the log empties it):
    uncaught exceptions, console.error, failed requests."""
    return [e["message"] for e in driver.get_log("browser") if e["level"] == "SEVERE"]


def fresh_console(driver: webdriver.Chrome) -> None:
    """Leave the previous test's page (it may still poll a host that is gone) and empty the
    console's log, so that console_errors() then sees only the next page's."""
    driver.get("about:blank")
    console_errors(driver)


def number(text: str) -> int:
    return int(text.replace(",", "") or 0)


def test_page_shows_the_graph_and_counters_increase_while_the_topology_runs(browser, host):
    browser.get(host.url)
    wait = WebDriverWait(browser, 20, poll_frequency=0.1)

    # the graph has every component, and an edge per subscription with its grouping
    nodes = wait.until(
        lambda d: (
            d.find_elements(By.CSS_SELECTOR, "#graph g.node")
            if len(d.find_elements(By.CSS_SELECTOR, "#graph g.node")) == 4
            else None
        )
    )
    assert {n.get_attribute("data-id") for n in nodes} == COMPONENTS
    spouts = browser.find_elements(By.CSS_SELECTOR, "#graph g.node.spout")
    assert [n.get_attribute("data-id") for n in spouts] == ["sentences"]
    edges = {
        (e.get_attribute("data-source"), e.get_attribute("data-target"))
        for e in browser.find_elements(By.CSS_SELECTOR, "#graph g.edge")
    }
    assert edges == {("sentences", "split"), ("split", "count"), ("count", "report")}
    labels = {e.text for e in browser.find_elements(By.CSS_SELECTOR, "#graph .edge-label text")}
    assert labels == {"shuffle", "fields(word)", "global"}
    assert "×2" in browser.find_element(By.CSS_SELECTOR, '#graph g.node[data-id="split"]').text
    assert browser.find_element(By.ID, "topology-name").text == "wordcount"

    # the counters move while it runs
    def acked() -> int:
        return number(browser.find_element(By.ID, "acked").text)

    def executed(cid: str) -> int:
        return number(
            browser.find_element(
                By.CSS_SELECTOR, f'#bolts tr[data-id="{cid}"] td[data-key="executed"]'
            ).text
        )

    wait.until(lambda d: acked() > 0)
    first_acked, first_executed = acked(), executed("count")
    wait.until(lambda d: acked() > first_acked and executed("count") > first_executed)
    never_acked = '#bolts tr[data-id="count"] td[data-key="never_acked"]'
    assert browser.find_element(By.CSS_SELECTOR, never_acked).text == "0"  # it acks them all
    assert "running" in browser.find_element(By.ID, "status").text
    assert not browser.find_element(By.ID, "batches").is_displayed()  # not transactional

    config = browser.find_element(By.ID, "config").text
    assert "topology.max.spout.pending" in config and "1000" in config

    # a component's tasks, on click
    browser.find_element(By.CSS_SELECTOR, '#graph g.node[data-id="count"]').click()
    wait.until(lambda d: d.find_element(By.ID, "detail").is_displayed())
    rows = browser.execute_script(  # a count, in one script: the page redraws its tables
        "return document.querySelectorAll('#detail #tasks tbody tr').length;"
    )
    assert rows == 2  # parallelism 2

    # nothing listens anywhere but on 127.0.0.1: not the host, not its components
    procs = [psutil.Process(host.proc.pid), *psutil.Process(host.proc.pid).children(True)]
    listening = [
        c for p in procs for c in p.net_connections(kind="inet") if c.status == psutil.CONN_LISTEN
    ]
    assert listening and {c.laddr.ip for c in listening} == {"127.0.0.1"}
    assert {c.laddr.port for c in listening} == {host.port}

    # the report bolt's log line (it logs on its tick, every 5 s of the run)
    WebDriverWait(browser, 15, poll_frequency=0.2).until(
        lambda d: "report[" in d.find_element(By.ID, "logs").text
    )

    # the UI stops with the topology, and the page says so
    assert host.stop() == 0
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", host.port), timeout=2).close()
    wait.until(lambda d: "stopped" in d.find_element(By.ID, "status").text)


@pytest.fixture
def batch_ui(tmp_path):
    """The web UI's server alone, for a topology with the components of test_view's snapshots."""
    for name in ("spout.py", "bolt.py"):
        (tmp_path / name).write_text("# never run\n")
    b = TopologyBuilder("wordcount")
    b.spout("sentences", ["python", "spout.py"], outputs=["sentence"])
    b.bolt("count", ["python", "bolt.py"], outputs=["word", "count"], parallelism=2).shuffle(
        "sentences"
    )
    server = WebUI(b.build(tmp_path), port=0)
    server.start()
    yield server
    server.stop()


def test_page_shows_the_batches_of_a_transactional_topology(browser, batch_ui):
    transactional = snapshot()
    transactional["batches"] = batches()
    batch_ui.publish(transactional)
    browser.get(batch_ui.url)
    wait = WebDriverWait(browser, 20, poll_frequency=0.1)
    wait.until(lambda d: d.find_element(By.ID, "batches").is_displayed())

    def text(element_id: str) -> str:
        return browser.find_element(By.ID, element_id).text

    assert text("batch-id") == "global-count"
    assert text("batch-committed-txid") == "41"
    assert text("batch-committed") == "12"
    assert text("batch-committed-tuples") == "1,234"
    assert text("batch-open") == "2"
    assert text("batch-replays") == "1"
    assert "warn" in browser.find_element(By.ID, "batch-replays").get_attribute("class")
    assert text("batch-latency") == "85.5 / 240.0 ms"
    assert text("commit-latency") == "3.5 / 12.5 ms"
    assert text("batch-last-abort").startswith("last abort: txid 42 attempt 1: a tuple failed")

    def cells(table: str, txid: int) -> dict[str, str]:
        # read in one script: the page redraws its tables on every poll, and elements found
        # one call before may be gone (stale) by the next
        return browser.execute_script(  # type: ignore[no-any-return]
            "const row = document.querySelector(arguments[0]);"
            "return Object.fromEntries(Array.from(row.querySelectorAll('td'),"
            " (td) => [td.dataset.key, td.textContent]));",
            f'#{table} tbody tr[data-txid="{txid}"]',
        )

    assert cells("open-attempts", 42) == {
        "txid": "42",
        "attempt": "2",
        "phase": "committing",
        "age_s": "1.8",
        "tuples": "300",
        "finished": "5 / 6",
    }
    assert cells("open-attempts", 43)["phase"] == "processing"
    recent = browser.execute_script(
        "return Array.from(document.querySelectorAll('#recent-batches tbody tr'),"
        " (tr) => tr.dataset.txid);"
    )
    assert recent == [str(t) for t in range(41, 29, -1)]
    newest = cells("recent-batches", 41)
    assert (newest["tuples"], newest["processing_ms"], newest["commit_ms"]) == (
        "1,041",
        "111.0",
        "2.4",
    )
    assert newest["committed_at"]  # a clock time, in the browser's time zone

    # the same run's next snapshot: nothing open, nothing aborted
    calm = snapshot(uptime=11.0)
    calm["batches"] = batches(replays=0, last_abort=None)
    calm["batches"].update(open=[], committed_txid=43)
    batch_ui.publish(calm)
    wait.until(lambda d: text("batch-committed-txid") == "43")
    assert not browser.find_element(By.ID, "batch-last-abort").is_displayed()
    assert text("open-attempts").endswith("No open attempt.")
    assert "warn" not in browser.find_element(By.ID, "batch-replays").get_attribute("class")

    # a snapshot without the section hides it
    batch_ui.publish(snapshot(uptime=12.0))
    wait.until(lambda d: not d.find_element(By.ID, "batches").is_displayed())
    assert "sentences" in text("spouts")


def test_a_transactional_run_serves_and_shows_its_batches(browser, tmp_path):
    """A real transactional topology (the integration tests' spout, batch bolt and committer):
    /api/snapshot has a `batches` section that fits the schema, and the page draws it."""
    py = sys.executable
    document = {
        "name": "global-count",
        "transactional": {"id": "gc-ui"},
        "config": {"topology.max.spout.pending": 2, "host.state.dir": str(tmp_path / "state")},
        "spouts": {
            "numbers": {
                "command": [py, str(TX_COMPONENTS / "numbers_spout.py")],
                "outputs": ["n"],
                "batch": "spout",
                "env": {"LIMIT": "60", "STEP": "7"},
            }
        },
        "bolts": {
            "partial": {
                "command": [py, str(TX_COMPONENTS / "partial_bolt.py")],
                "outputs": ["txid", "total"],
                "batch": "bolt",
                "parallelism": 2,
                "inputs": {"numbers": "shuffle"},
            },
            "ledger": {
                "command": [py, str(TX_COMPONENTS / "ledger_committer.py")],
                "batch": "committer",
                "inputs": {"partial": "global"},
                "env": {"LEDGER": str(tmp_path / "ledger.json")},
            },
        },
    }
    (tmp_path / "topology.yaml").write_text(json.dumps(document))  # JSON is YAML
    running = Host("--duration", "120", topology=tmp_path / "topology.yaml")
    try:
        browser.get(running.url)
        wait = WebDriverWait(browser, 30, poll_frequency=0.2)
        # 60 numbers, 7 a batch: 9 batches, then the spout has nothing more
        wait.until(lambda d: d.find_element(By.ID, "batch-committed-txid").text == "9")
        assert browser.find_element(By.ID, "batch-id").text == "gc-ui"
        recent = browser.execute_script(  # in one script: the page redraws its tables
            "return Array.from(document.querySelectorAll('#recent-batches tbody tr'),"
            " (tr) => tr.dataset.txid);"
        )
        assert recent == [str(t) for t in range(9, 0, -1)]
        with urllib.request.urlopen(running.url + "api/snapshot", timeout=5) as response:
            served = json.loads(response.read())
        assert typed_dict_problems(served, Snapshot, extra_keys=False) == []
        section = served["batches"]
        assert (section["transactional_id"], section["committed_txid"]) == ("gc-ui", 9)
        assert section["committed"] == 9 and section["replays"] == 0
        assert section["committed_tuples"] == 60  # every number once
        assert [b["txid"] for b in section["recent"]] == list(range(1, 10))
        assert sum(b["tuples"] for b in section["recent"]) >= 60  # the spout's, and partial's
    finally:
        assert running.stop() == 0


# ---- DRPC (docs/drpc.md §6) ------------------------------------------------------------------


@pytest.fixture
def drpc_ui():
    """The web UI's server alone, for examples/drpc/exclaim (linear: drpc-request -> exclaim ->
    drpc-result, the two ends inside the host); no component runs."""
    server = WebUI(load(str(EXCLAIM)), port=0)
    server.start()
    yield server
    server.stop()


def exclaim_snapshot(uptime: float, section: Any | None) -> Any:
    """test_view's snapshot with one component, `exclaim` (its `count`: 2 tasks), and `section`
    as its `drpc` section (none when None)."""
    snap = snapshot(uptime=uptime)
    snap["components"] = {"exclaim": snap["components"]["count"]}
    if section is not None:
        snap["drpc"] = section
    assert typed_dict_problems(snap, Snapshot, extra_keys=False) == []
    return snap


def classes(element: Any) -> set[str]:
    return set((element.get_attribute("class") or "").split())


DRPC_COUNTS = (
    "answered",
    "failed",
    "timed-out",
    "rejected",
    "pending",
    "waiting",
    "connections",
    "late",
    "duplicate",
)


def test_page_shows_the_drpc_section_and_the_parts_that_run_in_the_host(browser, drpc_ui):
    fresh_console(browser)
    drpc_ui.publish(exclaim_snapshot(10.0, drpc()))
    browser.get(drpc_ui.url)
    wait = WebDriverWait(browser, 20, poll_frequency=0.1)
    wait.until(lambda d: d.find_element(By.ID, "drpc").is_displayed())

    def text(element_id: str) -> str:
        return browser.find_element(By.ID, element_id).text

    assert text("drpc-url") == MADE_UP_DRPC_URL
    assert text("drpc-functions") == "exclaim"
    assert text("drpc-call") == f"{MADE_UP_DRPC_URL}/drpc/exclaim/ARGS"
    assert {name: text(f"drpc-{name}") for name in DRPC_COUNTS} == {
        "answered": "12,345",
        "failed": "7",
        "timed-out": "3",
        "rejected": "2",
        "pending": "9",
        "waiting": "4",
        "connections": "6",
        "late": "5",
        "duplicate": "1",
    }
    assert text("drpc-latency") == "4.5 / 37.5 / 120.0 ms"
    highlighted = {
        name: classes(browser.find_element(By.ID, f"drpc-{name}")) & {"bad", "warn"}
        for name in DRPC_COUNTS
    }
    assert highlighted == {
        **{name: set() for name in DRPC_COUNTS},
        "failed": {"bad"},
        "timed-out": {"bad"},
        "rejected": {"warn"},
    }
    assert not browser.find_element(By.ID, "batches").is_displayed()

    # the graph draws the in-host ends, labelled, with DRPC figures in place of a task's
    nodes = {
        n.get_attribute("data-id"): n
        for n in browser.find_elements(By.CSS_SELECTOR, "#graph g.node")
    }
    assert set(nodes) == IN_HOST | {"exclaim"}
    assert {cid for cid, n in nodes.items() if "in-host" in classes(n)} == IN_HOST
    for cid in IN_HOST:
        assert "runs inside the host" in nodes[cid].text
    assert "PrepareRequest(exclaim)" in nodes["drpc-request"].text
    assert "pending 9" in nodes["drpc-request"].text
    assert "answered 12,345" in nodes["drpc-result"].text
    assert "executed 5,000" in nodes["exclaim"].text
    assert browser.find_element(By.ID, "in-host-hint").is_displayed()

    # the tables: the components with a process with their figures, the in-host ones with a
    # row that says where they run; every row as wide as the table
    for table, ids in (("spouts", ["drpc-request"]), ("bolts", ["exclaim", "drpc-result"])):
        # read in one script: the page redraws its tables on every poll (elements found one
        # call before may be stale by the next)
        heads, rows = browser.execute_script(
            "const t = document.getElementById(arguments[0]);"
            "return [t.tHead.rows[0].cells.length, Array.from(t.tBodies[0].rows, (tr) => ["
            " tr.dataset.id, tr.classList.contains('in-host'),"
            " Array.from(tr.cells).reduce((n, td) => n + (td.colSpan || 1), 0)])];",
            table,
        )
        assert [r[0] for r in rows] == ids
        for cid, in_host, width in rows:
            assert width == heads
            assert in_host == (cid in IN_HOST)
    assert "runs inside the host: JoinResult" in text("bolts")

    # an in-host part's panel says where it runs, and has no tasks
    nodes["drpc-request"].click()
    wait.until(lambda d: d.find_element(By.ID, "detail").is_displayed())
    assert text("detail-name") == "drpc-request"
    assert "inside the host, no process: PrepareRequest(exclaim)" in text("detail-body")
    assert browser.find_elements(By.CSS_SELECTOR, "#detail #tasks") == []
    node = '#graph g.node[data-id="drpc-request"]'
    wait.until(lambda d: "selected" in classes(d.find_element(By.CSS_SELECTOR, node)))

    # the next snapshot: nothing failed, timed out or rejected, so nothing highlighted
    drpc_ui.publish(exclaim_snapshot(11.0, drpc(troubled=False, answered=12400)))
    wait.until(lambda d: text("drpc-answered") == "12,400")
    for name in ("failed", "timed-out", "rejected"):
        assert text(f"drpc-{name}") == "0"
        assert not classes(browser.find_element(By.ID, f"drpc-{name}")) & {"bad", "warn"}

    # a snapshot without the section hides it
    drpc_ui.publish(exclaim_snapshot(12.0, None))
    wait.until(lambda d: not d.find_element(By.ID, "drpc").is_displayed())
    assert "pending" not in browser.find_element(By.CSS_SELECTOR, node).text
    assert console_errors(browser) == []


def served_snapshot(url: str) -> Any | None:
    """/api/snapshot, or None while the host has published none (503)."""
    try:
        with urllib.request.urlopen(url + "api/snapshot", timeout=10) as response:
            return json.loads(response.read())
    except urllib.error.HTTPError as exc:
        if exc.code == 503:
            return None
        raise


def wait_for_snapshot(url: str, fits: Any, timeout: float = 60) -> Any:
    """The first snapshot served that `fits(snapshot)`; AssertionError with the last one after
    `timeout` seconds."""
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        last = served_snapshot(url)
        if last is not None and fits(last):
            return last
        time.sleep(0.1)
    raise AssertionError(f"no snapshot fit in {timeout}s; the last: {json.dumps(last)[:2000]}")


def test_a_drpc_run_serves_and_shows_its_drpc_section(browser):
    """examples/drpc/exclaim run for real, called over real HTTP: /api/snapshot's `drpc` section
    fits the schema and counts the calls, and the page shows it without a console error."""
    running = Host("--drpc-bind", "127.0.0.1:0", "--duration", "120", topology=EXCLAIM)
    try:
        started = wait_for_snapshot(running.url, lambda s: "drpc" in s)
        drpc_url = started["drpc"]["url"]
        assert re.fullmatch(r"http://127\.0\.0\.1:\d+", drpc_url)
        assert started["drpc"]["functions"] == ["exclaim"]
        assert started["drpc"]["answered"] == 0

        words = ["hi", "a b", "café"]
        for word in words:
            call = f"{drpc_url}/drpc/exclaim/{quote(word)}"
            with urllib.request.urlopen(call, timeout=60) as response:
                assert response.read().decode("utf-8") == word + "!"
        with pytest.raises(urllib.error.HTTPError) as unknown:
            urllib.request.urlopen(f"{drpc_url}/drpc/nope/x", timeout=60)
        assert unknown.value.code == 404
        unknown.value.close()

        served = wait_for_snapshot(
            running.url,
            lambda s: s["drpc"]["answered"] == len(words) and s["drpc"]["rejected"] == 1,
        )
        assert typed_dict_problems(served, Snapshot, extra_keys=False) == []
        section = served["drpc"]
        assert (section["url"], section["failed"], section["timed_out"]) == (drpc_url, 0, 0)
        assert (section["pending"], section["waiting"]) == (0, 0)
        assert (section["late"], section["duplicate"]) == (0, 0)
        latency = section["latency_ms"]
        assert latency["p50"] is not None and latency["max"] >= latency["p50"] > 0
        assert set(served["components"]) == {"exclaim"}  # the in-host ends have no entry

        with urllib.request.urlopen(running.url + "api/topology", timeout=10) as response:
            topology = json.loads(response.read())
        assert {c["id"]: c["in_host"] for c in topology["components"]} == {
            "drpc-request": "PrepareRequest(exclaim), in host",
            "exclaim": None,
            "drpc-result": "JoinResult, in host",
        }

        fresh_console(browser)
        browser.get(running.url)
        wait = WebDriverWait(browser, 30, poll_frequency=0.2)
        wait.until(lambda d: d.find_element(By.ID, "drpc-answered").text == str(len(words)))
        assert browser.find_element(By.ID, "drpc-url").text == drpc_url
        assert browser.find_element(By.ID, "drpc-functions").text == "exclaim"
        rejected = browser.find_element(By.ID, "drpc-rejected")
        assert rejected.text == "1" and "warn" in classes(rejected)
        failed = browser.find_element(By.ID, "drpc-failed")
        assert failed.text == "0" and "bad" not in classes(failed)
        in_host = browser.find_elements(By.CSS_SELECTOR, "#graph g.node.in-host")
        assert {n.get_attribute("data-id") for n in in_host} == IN_HOST
        wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, '#bolts tr[data-id="exclaim"]'))
        assert console_errors(browser) == []
    finally:
        assert running.stop() == 0
