"""The Spark driver starts spout processes from threads (host/spark/staged_spouts.py) while the
main thread talks to the JVM over py4j. A child started with a preexec_fn finalized py4j's idle
connections (held by the main thread's thread-local) in the child, and their finalizer shut the
sockets down for the driver too: the JVM reset the connection, and the next py4j call failed
("Connection reset by peer" at `readStream`) whenever one was in flight. That was the
intermittent loss of the JVM in tests/integration/test_spark_staged_spouts.py and
test_spark_plain_committer_file.py (docs/architecture.md, "Starting a process")."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
if __name__ == "__main__":  # script mode: the repository's packages first
    sys.path.insert(0, str(ROOT))

from host.runtime.process import Launcher  # noqa: E402
from tests.support.spark_runs import OUTPUT_TAIL, SPARK_CONF, WAIT_SECS  # noqa: E402

pytestmark = pytest.mark.spark


def connection_states(spark: Any) -> list[str]:
    """Each idle py4j connection of this thread's gateway client: "open" when nothing is waiting
    to be read on it, else what a peek found (b"" once shut down, an error once reset)."""
    states = []
    for conn in list(spark.sparkContext._gateway._gateway_client.deque):
        try:
            data = conn.socket.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT)
            states.append(f"readable: {data!r}")
        except BlockingIOError:
            states.append("open")
        except OSError as exc:
            states.append(f"{type(exc).__name__}: {exc}")
    return states


def check_in_a_driver(workdir: str) -> dict[str, Any]:
    """Script mode, in a process of its own (stopping a session would leave the test process's
    other Spark tests a dead context): a session, three processes started from threads, what
    the idle py4j connections looked like before and after, and whether Spark still answers."""
    from components.spark_spout.session import start_session

    spark = start_session({"spark.master": "local[1]", **SPARK_CONF}, "driver-threads")
    try:
        first = spark.range(3).count()
        before = connection_states(spark)
        statuses: list[int] = []

        def start_one() -> None:
            child = Launcher().start(["true"], workdir, dict(os.environ))
            statuses.append(child.popen.wait(60))
            child.close()

        for _ in range(3):
            thread = threading.Thread(target=start_one)
            thread.start()
            thread.join()
        after = connection_states(spark)
        try:
            last: Any = spark.range(5).count()
        except Exception as exc:  # what the bug gave: the JVM reset the connection
            last = f"{type(exc).__name__}: {str(exc)[:300]}"
        return {
            "first": first,
            "before": before,
            "statuses": statuses,
            "after": after,
            "last": last,
        }
    finally:
        spark.stop()


def test_a_process_started_from_a_thread_leaves_the_drivers_py4j_connections_alone(
    tmp_path: Path,
) -> None:
    out = subprocess.run(
        [sys.executable, __file__, "--check", str(tmp_path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=WAIT_SECS,
    )
    assert out.returncode == 0, (out.stdout + out.stderr)[-OUTPUT_TAIL:]
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result["first"] == 3
    # the precondition: idle connections, none shut down
    assert result["before"] and set(result["before"]) == {"open"}, result
    assert result["statuses"] == [0, 0, 0]
    assert result["after"] == result["before"], result
    assert result["last"] == 5, result


if __name__ == "__main__" and sys.argv[1:2] == ["--check"]:
    sys.path.insert(0, str(ROOT))
    print(json.dumps(check_in_a_driver(sys.argv[2])), flush=True)
