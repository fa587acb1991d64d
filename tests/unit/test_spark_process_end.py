"""host/spark/process_end.py: how the Spark engine's component processes end, on real processes
started by the host's Launcher (each the leader of a process group of its own)."""

from __future__ import annotations

import os
import signal
import time

from host.runtime.process import Launcher
from host.spark.process_end import end_gently, kill_now, release, wait_exit
from host.spark.stderr_tags import TaggedLog


def _start(script: str, tmp_path):
    return Launcher().start(["bash", "-c", script], str(tmp_path), dict(os.environ))


def _alive(pid: int) -> bool:
    """Running (a zombie, killed and not yet reaped by whoever adopted it, is not)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            state = f.read().rpartition(")")[2].split()[0]
    except FileNotFoundError:
        return False
    return state != "Z"


def test_a_process_that_ends_on_end_of_input_gets_no_signal(tmp_path):
    child = _start("cat > /dev/null; echo bye >&2", tmp_path)
    end_gently(child, 30.0)  # well past what cat takes: it must not come to a signal
    assert child.exit_status == 0
    log = TaggedLog("c", 1)
    release(child, log, "", remove_dir=False)
    assert list(log.tail) == ["bye"]


def test_one_that_ignores_end_of_input_and_sigterm_is_killed_after_two_graces(tmp_path):
    ready = tmp_path / "ready"
    child = _start(f"trap '' TERM; touch {ready}; while :; do sleep 0.05; done", tmp_path)
    while not ready.exists():  # the trap is set before the signals come
        time.sleep(0.01)
    started = time.monotonic()
    end_gently(child, 0.2)
    assert child.exit_status == -signal.SIGKILL
    assert time.monotonic() - started >= 0.4  # stdin's grace, then SIGTERM's


def test_release_kills_what_the_process_left_in_its_group_and_removes_its_pid_directory(tmp_path):
    pid_dir = tmp_path / "pids"
    pid_dir.mkdir()
    grandchild_pid = tmp_path / "grandchild"
    # a process that writes its pid file (the handshake's pidDir), starts a grandchild and exits
    child = _start(f"touch {pid_dir}/$$; sleep 600 & echo $! > {grandchild_pid}", tmp_path)
    assert wait_exit(child, 30.0) and child.exit_status == 0
    orphan = int(grandchild_pid.read_text())
    assert (pid_dir / str(child.pid)).exists() and _alive(orphan)

    release(child, TaggedLog("c", 1), str(pid_dir), remove_dir=True)
    assert not pid_dir.exists()
    deadline = time.monotonic() + 30
    while _alive(orphan) and time.monotonic() < deadline:  # the signal is delivered at once; the
        time.sleep(0.01)  # deadline only bounds a failure
    assert not _alive(orphan)


def test_a_shared_pid_directory_stays(tmp_path):
    pid_dir = tmp_path / "shared"
    pid_dir.mkdir()
    (pid_dir / "12345678").write_text("")  # another process's file
    child = _start(f"touch {pid_dir}/$$; exec cat > /dev/null", tmp_path)
    while not (pid_dir / str(child.pid)).exists():
        time.sleep(0.01)
    end_gently(child, 30.0)
    release(child, TaggedLog("c", 1), str(pid_dir), remove_dir=False)
    assert sorted(os.listdir(pid_dir)) == ["12345678"]


def test_kill_now_gives_no_grace(tmp_path):
    child = _start("exec sleep 600", tmp_path)
    started = time.monotonic()
    kill_now(child)
    assert child.exit_status == -signal.SIGKILL
    assert time.monotonic() - started < 30.0  # not sleep's 600 s
