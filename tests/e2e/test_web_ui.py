"""The web UI end to end: `python -m host local examples/wordcount/topology.yaml --ui 0` as a real
subprocess, its page in real headless Chromium (Debian's chromium and chromium-driver, which
`make tools` installs) driven by selenium with the driver given explicitly, so selenium-manager
never tries to download anything."""

from __future__ import annotations

import os
import re
import selectors
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

os.environ.setdefault("SE_OFFLINE", "true")  # before selenium is imported: no downloads

from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

ROOT = Path(__file__).resolve().parents[2]
WORDCOUNT = ROOT / "examples" / "wordcount" / "topology.yaml"
CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
COMPONENTS = {"sentences", "split", "count", "report"}
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

    def __init__(self, *args: str):
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "host", "local", str(WORDCOUNT), "--ui", "0", *args],
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
