"""The Spark driver starts spout processes from threads (host/spark/staged_source.py) while the
main thread talks to the JVM over py4j. A child started with a preexec_fn finalized py4j's idle
connections (held by the main thread's thread-local) in the child, and their finalizer shut the
sockets down for the driver too: the JVM reset the connection, and the next py4j call failed
("Connection reset by peer" at `readStream`) whenever one was in flight. That was the
intermittent loss of the JVM in tests/integration/test_spark_staged_spouts.py and
test_spark_plain_committer_file.py (docs/architecture.md, "Starting a process")."""

from __future__ import annotations

import os
import socket
import threading
from typing import Any

import pytest

from host.runtime.process import Launcher
from tests.support.spark_runs import SPARK_CONF

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


def test_a_process_started_from_a_thread_leaves_the_drivers_py4j_connections_alone(
    tmp_path: Any,
) -> None:
    from components.spark_spout.session import start_session

    spark = start_session({"spark.master": "local[1]", **SPARK_CONF}, "driver-threads")
    try:
        assert spark.range(3).count() == 3
        before = connection_states(spark)
        assert before and set(before) == {"open"}, before  # the precondition: idle connections
        statuses: list[int] = []

        def start_one() -> None:
            child = Launcher().start(["true"], str(tmp_path), dict(os.environ))
            statuses.append(child.popen.wait(60))
            child.close()

        for _ in range(3):
            thread = threading.Thread(target=start_one)
            thread.start()
            thread.join()
        assert statuses == [0, 0, 0]
        assert connection_states(spark) == before
        assert spark.range(5).count() == 5
    finally:
        spark.stop()
