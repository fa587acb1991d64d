"""Component processes kept across micro-batches in a Python worker that Spark reuses
(`spark.python.worker.reuse`, on by default), and ended with the worker (docs/spark.md).

`shared_process(topology, component_id, task_id)` returns this worker's process for that task,
starting it on first use and replacing one that broke (a failed run discards its process) or died
while idle. Processes end:
* when the worker exits normally: `close_all` runs at exit (stdin closed, then SIGTERM, SIGKILL);
* on SIGTERM: the same, then the worker's own SIGTERM handling (default: it dies);
* when the worker is SIGKILLed (a cancelled task: PySpark's daemon kills its worker) or leaves
  with `os._exit` (PySpark's daemon children do): the kernel's parent-death signal kills each
  component (host/runtime/process.py), and its process group goes with its pipes.
The parent-death signal is sent when the *thread* that started the process ends: start processes
from a thread that lives as long as the worker (PySpark runs tasks on the worker's main thread).

A worker forked from a process that had a cache (PySpark's daemon forks its workers) does not
own the parent's processes: the cache is emptied, without closing them, on first use in the child.
"""

from __future__ import annotations

import atexit
import hashlib
import os
import signal
import stat
import tempfile
import time
from types import FrameType
from typing import Any

from host.spark.component_process import ComponentProcess
from host.topology.model import Topology

CLOSE_GRACE_SECS = 1.0  # at exit: for stdin EOF, then for SIGTERM, before SIGKILL

_cache: dict[tuple[str, str, int], ComponentProcess] = {}
_owner = os.getpid()
_pid_dir: str | None = None
_installed = False
_atexit_registered = False
_previous_sigterm: Any = None


def topology_key(topology: Topology) -> str:
    """The same for equal topologies (a topology unpickled again for each Spark task is equal)."""
    return hashlib.sha1(repr(topology).encode("utf-8", "backslashreplace")).hexdigest()


def shared_process(
    topology: Topology, component_id: str, task_id: int, **options: Any
) -> ComponentProcess:
    """This worker's process for (topology, component, task); `options` go to ComponentProcess
    when one is created (a process that is reused keeps its handshake)."""
    _adopt_fork()
    _install()
    key = (topology_key(topology), component_id, task_id)
    proc = _cache.get(key)
    if proc is not None and proc.child is not None and not proc.usable:
        proc.kill()
    if proc is None or proc.broken:
        proc = ComponentProcess(
            topology, component_id, task_id, pid_dir=_shared_pid_dir(), **options
        )
        _cache[key] = proc
    return proc


def cached_processes() -> list[ComponentProcess]:
    _adopt_fork()
    return list(_cache.values())


def close_all(grace: float = CLOSE_GRACE_SECS) -> None:
    """End every cached process, all at once: stdin closed, `grace` seconds to exit, SIGTERM to
    the process groups still running, `grace` more, then SIGKILL."""
    _adopt_fork()
    procs = [p for p in _cache.values() if p.child is not None]
    _cache.clear()
    for p in procs:
        assert p.child is not None
        p.child.close_stdin()
    for sig in (signal.SIGTERM, signal.SIGKILL):
        deadline = time.monotonic() + grace
        for p in procs:
            _reap_until(p, deadline)
        running = [p for p in procs if p.child is not None and p.child.poll() is None]
        if not running:
            break
        for p in running:
            assert p.child is not None
            p.child.signal_group(sig)
    for p in procs:
        p.kill()  # reaps, drains stderr, closes the pipes, removes its pid file


def _reap_until(proc: ComponentProcess, deadline: float) -> None:
    child = proc.child
    if child is None:
        return
    try:
        child.exit_status = child.popen.wait(max(0.0, deadline - time.monotonic()))
    except Exception:  # subprocess.TimeoutExpired: still running
        pass


def _shared_pid_dir() -> str:
    """One directory for every worker of this user: a worker that leaves with `os._exit` or is
    SIGKILLed runs no clean-up, so a directory per worker would pile up. Used only if it is
    ours (not a symlink, our uid, mode 0700); else a private one."""
    global _pid_dir
    if _pid_dir is None or not os.path.isdir(_pid_dir):
        path = os.path.join(tempfile.gettempdir(), f"multilang-spark-{os.getuid()}")
        try:
            os.mkdir(path, 0o700)
        except FileExistsError:
            pass
        info = os.lstat(path)
        ours = stat.S_ISDIR(info.st_mode) and info.st_uid == os.getuid()
        _pid_dir = path if ours and stat.S_IMODE(info.st_mode) == 0o700 else tempfile.mkdtemp()
    return _pid_dir


def _adopt_fork() -> None:
    """In a forked child, the parent's processes are not ours to use or end."""
    global _owner, _pid_dir, _installed
    if os.getpid() != _owner:
        _owner = os.getpid()
        _cache.clear()
        _pid_dir = None
        _installed = False


def _install() -> None:
    global _installed, _atexit_registered, _previous_sigterm
    if _installed:
        return
    _installed = True
    if not _atexit_registered:  # inherited by a forked child, where _at_exit checks the owner
        _atexit_registered = True
        atexit.register(_at_exit)
    try:
        previous = signal.getsignal(signal.SIGTERM)
        if previous is signal.SIG_IGN or previous is _on_sigterm:
            return  # a worker that ignores SIGTERM keeps its processes too
        signal.signal(signal.SIGTERM, _on_sigterm)
        _previous_sigterm = previous
    except ValueError:  # not the main thread: atexit and the parent-death signal remain
        pass


def _at_exit() -> None:
    if os.getpid() == _owner:
        close_all()


def _on_sigterm(signum: int, frame: FrameType | None) -> None:
    close_all(grace=0.5)
    previous = _previous_sigterm
    if callable(previous):
        previous(signum, frame)
        return
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    os.kill(os.getpid(), signal.SIGTERM)
