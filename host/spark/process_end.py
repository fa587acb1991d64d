"""How the Spark engine's component processes end (the bolts' and the spouts' alike,
component_process.py, spout_process.py, batch_spout_process.py): gently (stdin closed, libraries
exit on EOF; then SIGTERM; then SIGKILL, docs/protocol.md §4.10) or at once, and then released.

A process leads a process group of its own (host/runtime/process.py's Launcher): SIGKILL goes to
the whole group, so that nothing it started outlives it. The pid file it wrote in the handshake's
pidDir (Storm's protocol) is removed, so that the directory does not fill up: the bolts' is one
directory shared by every Python worker of the user (process_cache.py).
"""

from __future__ import annotations

import os
import signal

from host.runtime.process import Child
from host.spark.stderr_tags import TaggedLog


def wait_exit(child: Child, timeout: float | None) -> bool:
    """Whether the process exited within `timeout` seconds (None: as long as it takes)."""
    try:
        child.exit_status = child.popen.wait(timeout)
    except Exception:  # subprocess.TimeoutExpired
        return False
    return True


def end_gently(child: Child, grace: float) -> None:
    """stdin closed, then SIGTERM, then SIGKILL to its group, `grace` seconds each; returns once
    it has exited."""
    child.close_stdin()
    if wait_exit(child, grace):
        return
    child.signal_group(signal.SIGTERM)
    if wait_exit(child, grace):
        return
    kill_now(child)


def kill_now(child: Child) -> None:
    """SIGKILL to its group (a broken task gets no grace); returns once it has exited."""
    child.signal_group(signal.SIGKILL)
    wait_exit(child, None)


def release(child: Child, log: TaggedLog, pid_dir: str, remove_dir: bool) -> None:
    """After the process exited: what its group started killed, its last stderr logged, its
    pipes closed, its pid file removed, and `pid_dir` too when `remove_dir` (the process's own
    directory, not one shared by an executor's processes)."""
    child.signal_group(signal.SIGKILL)
    log.drain(child.stderr_fd)
    child.close()
    if not pid_dir:
        return
    try:
        os.unlink(os.path.join(pid_dir, str(child.pid)))
    except OSError:
        pass
    if remove_dir:
        try:
            os.rmdir(pid_dir)
        except OSError:
            pass
