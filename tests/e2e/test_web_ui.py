"""The web UI end to end: `python -m host local examples/wordcount/topology.yaml --ui 0` as a real
subprocess, its page in real headless Chromium (Debian's chromium and chromium-driver, which
`make tools` installs) driven by selenium with the driver given explicitly, so selenium-manager
never tries to download anything. The batches section (docs/transactional.md §6) is checked with
the UI's own server (real HTTP, real browser) serving made-up snapshots, so that every figure is
known."""

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
import urllib.request
from pathlib import Path

import psutil
import pytest

os.environ.setdefault("SE_OFFLINE", "true")  # before selenium is imported: no downloads

from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

from host.observe.snapshot import Snapshot
from host.observe.web.server import WebUI
from host.topology import TopologyBuilder
from tests.support.batch_snapshot import batches
from tests.support.typed_dict_check import typed_dict_problems
from tests.unit.test_view import snapshot

ROOT = Path(__file__).resolve().parents[2]
WORDCOUNT = ROOT / "examples" / "wordcount" / "topology.yaml"
CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
COMPONENTS = {"sentences", "split", "count", "report"}
TX_COMPONENTS = ROOT / "tests" / "integration" / "components" / "python" / "tx"
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
    rows = browser.find_elements(By.CSS_SELECTOR, "#detail #tasks tbody tr")
    assert len(rows) == 2  # parallelism 2

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
        row = browser.find_element(By.CSS_SELECTOR, f'#{table} tbody tr[data-txid="{txid}"]')
        tds = row.find_elements(By.TAG_NAME, "td")
        return {td.get_attribute("data-key"): td.text for td in tds}

    assert cells("open-attempts", 42) == {
        "txid": "42",
        "attempt": "2",
        "phase": "committing",
        "age_s": "1.8",
        "tuples": "300",
        "finished": "5 / 6",
    }
    assert cells("open-attempts", 43)["phase"] == "processing"
    recent = browser.find_elements(By.CSS_SELECTOR, "#recent-batches tbody tr")
    assert [r.get_attribute("data-txid") for r in recent] == [str(t) for t in range(41, 29, -1)]
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
        recent = browser.find_elements(By.CSS_SELECTOR, "#recent-batches tbody tr")
        assert [r.get_attribute("data-txid") for r in recent] == [str(t) for t in range(9, 0, -1)]
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
