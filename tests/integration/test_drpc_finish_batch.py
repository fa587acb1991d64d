"""Linear DRPC's finish-batch (docs/drpc.md §3.2) with the batch bolt of each client library:
requests -> a plain Python bolt splitting the numbers (parallelism 3) -> a finish-batch bolt in
Python, Node or bash (parallelism 2, fields grouping on the request) that sums a request's
numbers once it has all of them. Every task of the sum gets every request's finish; the one that
holds the request's numbers answers, the other says nothing (tests/integration/components/drpc/).
"""

from __future__ import annotations

import re
import signal
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from host.drpc.client import DRPCClient

COMPONENTS = Path(__file__).parent / "components" / "drpc"
COMMANDS = {
    "python": f"[{sys.executable}, sum.py]",
    "node": "[node, sum.js]",
    "bash": "[bash, sum.sh]",
}
LISTENING = re.compile(r"DRPC server listening on (http://\S+)")


def topology(tmp_path: Path, language: str) -> Path:
    path = tmp_path / f"sum-{language}.yaml"
    path.write_text(
        f"""
name: sum-{language}
drpc:
  function: sum
  bolts:
    - id: numbers
      command: [{sys.executable}, numbers.py]
      cwd: {COMPONENTS}
      outputs: [request, n]
      parallelism: 3
    - id: sum
      command: {COMMANDS[language]}
      cwd: {COMPONENTS}
      outputs: [request, total]
      parallelism: 2
      grouping: {{fields: [request]}}
      finish_batch: true
config:
  drpc.request.timeout.secs: 60
"""
    )
    return path


@pytest.mark.parametrize("language", sorted(COMMANDS))
def test_finish_batch_once_per_request_in_every_language(tmp_path: Path, language: str) -> None:
    host = subprocess.Popen(
        [sys.executable, "-m", "host", "local", str(topology(tmp_path, language))]
        + ["--drpc-bind", "127.0.0.1:0", "--quiet"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        assert host.stdout is not None
        url = None
        deadline = time.monotonic() + 60
        while url is None and time.monotonic() < deadline:
            line = host.stdout.readline()
            assert line, "the host ended before it listened"
            found = LISTENING.search(line)
            url = found.group(1) if found else None
        assert url is not None, "the host never said where it listens"

        def call(numbers: list[int]) -> str:
            with DRPCClient(url, timeout=60) as client:
                return client.execute("sum", " ".join(map(str, numbers)))

        cases = [list(range(k, k + 1 + k % 7)) for k in range(60)]
        with ThreadPoolExecutor(8) as pool:
            answers = list(pool.map(call, cases))
        # each request's numbers went to one sum task (fields grouping on the request): it
        # answers with their sum; its sibling, which got none of them, stays silent
        assert answers == [f"{language}:{sum(c)}" for c in cases]
    finally:
        host.send_signal(signal.SIGTERM)
        out, _ = host.communicate(timeout=60)
    assert host.returncode == 0, out
    assert "restarts=0 errors=0" in out
