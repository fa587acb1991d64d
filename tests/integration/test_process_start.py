"""Starting a component's process from a process with other threads (host/runtime/process.py,
docs/architecture.md "Starting a process"): no Python runs in the child between fork and exec,
and the child still dies with the thread that started it and gets the launcher's niceness.

A preexec_fn made CPython finalize, in the child, what the other threads' thread-locals held: in
the Spark driver that was py4j's idle connections, whose finalizer shut the JVM's sockets down
for the driver too (tests/integration/test_spark_driver_threads.py checks that case with a real
Spark session)."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from host.runtime import process
from host.runtime.process import Child, Launcher

ROOT = Path(__file__).resolve().parents[2]
WAIT_SECS = 60


@contextlib.contextmanager
def started_in_thread(launcher: Launcher, argv: list[str], cwd: str) -> Iterator[Child]:
    """`launcher.start` called from a thread of its own (so this process has two threads), the
    thread kept alive inside the block: the child's parent-death signal is tied to it."""
    out: dict[str, Any] = {}
    started, done = threading.Event(), threading.Event()

    def run() -> None:
        try:
            out["child"] = launcher.start(argv, cwd, dict(os.environ))
        except BaseException as exc:  # handed to the caller
            out["error"] = exc
        started.set()
        done.wait()

    thread = threading.Thread(target=run)
    thread.start()
    started.wait()
    try:
        if "error" in out:
            raise out["error"]
        yield out["child"]
    finally:
        done.set()
        thread.join()


def reap(child: Child) -> int:
    status = child.popen.wait(WAIT_SECS)
    child.close()
    return status


class Finalized:
    """Appends the pid it is finalized in to `path`."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def __del__(self) -> None:
        with open(self.path, "a") as f:
            f.write(f"{os.getpid()}\n")


def test_no_python_runs_in_the_child_of_a_threaded_launcher(tmp_path: Path) -> None:
    marks = tmp_path / "finalized"
    local = threading.local()
    local.held = Finalized(marks)  # the main thread's: stale in a child forked by another thread
    with started_in_thread(Launcher(), ["true"], str(tmp_path)) as child:
        assert reap(child) == 0
    # a preexec_fn would have finalized it in the child: one line, the child's pid
    assert not marks.exists(), marks.read_text()
    del local.held
    assert marks.read_text().split() == [str(os.getpid())]  # the precondition: it does write


def test_a_missing_command_is_refused_as_popen_refuses_it(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="no-such-command"):
        with started_in_thread(Launcher(), ["no-such-command", "x"], str(tmp_path)):
            pass
    (tmp_path / "script").write_text("#!/bin/sh\nexit 0\n")  # not executable
    with pytest.raises(PermissionError, match="script"):
        with started_in_thread(Launcher(), ["./script"], str(tmp_path)):
            pass
    (tmp_path / "script").chmod(0o755)
    with started_in_thread(Launcher(), ["./script"], str(tmp_path)) as child:
        assert reap(child) == 0


def test_the_launchers_niceness_is_set_from_the_parent(tmp_path: Path) -> None:
    launcher = Launcher()
    launcher.nice = 5
    with started_in_thread(launcher, ["sleep", "30"], str(tmp_path)) as child:
        try:
            ours = os.getpriority(os.PRIO_PROCESS, 0)
            assert os.getpriority(os.PRIO_PROCESS, child.pid) == min(19, ours + 5)
        finally:
            child.popen.kill()
            reap(child)


STARTER = """\
import os, sys, threading
sys.path.insert(0, {root!r})
from host.runtime.process import Launcher

def run():
    child = Launcher().start(["sleep", "300"], "/", dict(os.environ))
    print(child.pid, flush=True)
    threading.Event().wait()

threading.Thread(target=run, daemon=True).start()
threading.Event().wait()
"""


def test_the_child_dies_with_its_threaded_parent(tmp_path: Path) -> None:
    script = tmp_path / "starter.py"
    script.write_text(STARTER.format(root=str(ROOT)))
    parent = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, text=True)
    try:
        assert parent.stdout is not None
        pid = int(parent.stdout.readline())
        assert Path(f"/proc/{pid}").exists()
    finally:
        parent.send_signal(signal.SIGKILL)
        parent.wait(WAIT_SECS)
    deadline = time.monotonic() + WAIT_SECS
    while Path(f"/proc/{pid}").exists() and _state(pid) != "Z":
        assert time.monotonic() < deadline, f"sleep {pid} outlived its SIGKILLed parent"
        time.sleep(0.05)


def _state(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return "gone"


def test_a_child_whose_parent_died_before_setpriv_set_the_signal_ends_itself() -> None:
    """The race the parent-death signal leaves open (the launcher killed between the fork and
    setpriv's prctl): the `sh` line between setpriv and the command runs the command only while
    its parent is still the launcher's process. Played here with the launcher's pid given as
    another process's (what the child sees once it was handed to a new parent)."""
    check = [
        "/bin/sh",
        "-c",
        process._PARENT_CHECK,  # the line itself is what is tested
        "sh",
    ]
    orphan = subprocess.run([*check, "1", "echo", "ran"], capture_output=True, text=True)
    assert (orphan.returncode, orphan.stdout) == (1, "")
    ours = subprocess.run(
        [*check, str(os.getpid()), "echo", "ran"], capture_output=True, text=True, check=False
    )
    assert (ours.returncode, ours.stdout) == (0, "ran\n")
