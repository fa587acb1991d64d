"""The checkpoint is one directory for the driver and every executor (docs/spark.md §6.1): the
executors read the batch metadata the driver stores and write their tasks' own beside it, with
plain file calls. Two ways to get that wrong, each caught before the query starts:

* a URL (`hdfs://…`, `s3a://…`): plain file calls cannot open one, and `os.path.abspath` would
  silently make it a local directory named `hdfs:` (host/topology/setting_checks.py
  `directory_path`, for `--checkpoint`, `--state-dir` and `host.state.dir`);
* a path that the executors do not see as the driver does (each host's own `/tmp`, a mount the
  executor hosts lack, files they may not read): each side would read a directory of its own,
  and the first micro-batch would fail in an executor with no stored metadata, four tries and
  three query restarts later, with nothing saying why. The driver writes a fresh token into the
  checkpoint at every start, and one small Spark job reads it back in the executors
  (`check_executors_see`); an executor's read that finds no stored metadata or staged rows says
  whether it sees the token (`unshared_reason`), which covers an executor that joined after the
  check.
"""

from __future__ import annotations

import os
import socket
import time
import uuid
from collections.abc import Callable, Iterable, Iterator
from functools import partial
from typing import Any

from components.files import write_atomically
from components.spark_spout.python_workers import all_in_driver
from host.errors import HostError, TopologyError
from host.spark.spark_calls import first_line, until_stopped

TOKEN_FILE = "driver-token"  # <checkpoint>/driver-token: the running driver's token
SHARED_DOC = "docs/spark.md §6.1"
# the check's tasks per executor core: more tasks than cores spread the job over more of the
# executors that are up (Spark places tasks where cores are free; it promises no executor a task)
TASKS_PER_CORE = 2
CHECK_DESCRIPTION = "checking the executors see the checkpoint"  # the job's, in Spark's UI


class UnsharedCheckpoint(TopologyError):
    """The executors do not see the checkpoint the driver writes; the message says where. A
    TopologyError: the command's usage is wrong (exit 2), and no micro-batch has run."""


class CheckFailed(HostError):
    """The executors could not run the check at all (exit 1)."""


def write_token(checkpoint: str) -> str:
    """A new token at <checkpoint>/driver-token (durably: an executor reads it over NFS)."""
    token = uuid.uuid4().hex
    os.makedirs(checkpoint, exist_ok=True)
    write_atomically(os.path.join(checkpoint, TOKEN_FILE), token.encode("ascii"))
    return token


def read_token(path: str) -> tuple[str | None, str | None]:
    """(the token at `path`, None) or (None, what is wrong: missing, unreadable)."""
    try:
        with open(path, encoding="ascii") as fh:
            return fh.read().strip(), None
    except FileNotFoundError:
        return None, "no such file"
    except (OSError, ValueError) as exc:  # ValueError: not ASCII, so not our token
        return None, f"cannot read it ({getattr(exc, 'strerror', None) or exc})"


def look(path: str, token: str) -> tuple[str, int, str | None]:
    """What this process sees at the token's `path`: (host name, pid, what is wrong or None)."""
    seen, problem = read_token(path)
    if problem is None and seen != token:
        problem = "another driver's token (another directory)"
    return socket.gethostname(), os.getpid(), problem


def _look_in_partition(path: str, token: str, items: Iterable[Any]) -> Iterator[Any]:
    for _ in items:
        pass
    yield look(path, token)


def unseen(
    sights: Iterable[tuple[str, int, str | None]], checkpoint: str
) -> UnsharedCheckpoint | None:
    """The error for the check's answers, or None when every task saw the token."""
    wrong = sorted({(host, problem) for host, _, problem in sights if problem is not None})
    if not wrong:
        return None
    where = "; ".join(f"on {host}: {problem}" for host, problem in wrong[:3])
    more = f" (and {len(wrong) - 3} more)" if len(wrong) > 3 else ""
    return UnsharedCheckpoint(
        f"the executors do not see the checkpoint {checkpoint} as the driver does: the token "
        f"the driver wrote to {os.path.join(checkpoint, TOKEN_FILE)} is not there for them "
        f"({where}{more}); the executors read and write the batches' state in it, so on a "
        "cluster --checkpoint must be a directory that the driver and every executor host "
        f"mount at the same path, readable and writable by the user the executors run as "
        f"({SHARED_DOC})"
    )


def probes_executors(master: str) -> bool:
    """Whether `check_executors_see` runs for `master`: any but `local` and `local[…]`, whose
    one JVM is the driver's. (`local-cluster[…]`'s executors share this host's paths, and its
    runs prove that the check passes there.)"""
    return not all_in_driver(master)


def check_executors_see(
    sc: Any,
    checkpoint: str,
    token: str,
    job_group: str,
    stopping: Callable[[], bool],
    poll_secs: float,
    echo: Callable[[str], None],
) -> None:
    """Read `token` (written by `write_token`) back in the executors, in one job of
    TASKS_PER_CORE tasks per core in `job_group`, and say so through `echo`. Raises
    UnsharedCheckpoint (exit 2) when a task did not see it, CheckFailed (exit 1) when the job
    itself failed (the executors' environment: no `host` to import, say). Once `stopping()`,
    cancels the job and returns: a SIGTERM while no executor has come up yet must still end
    the command."""
    started = time.monotonic()
    path = os.path.join(checkpoint, TOKEN_FILE)
    tasks = max(2, int(sc.defaultParallelism)) * TASKS_PER_CORE

    def read_back() -> list[tuple[str, int, str | None]]:
        """Each task's sight of the token."""
        # a job group is the thread's (PySpark's pinned threads): set in the job's own
        sc.setJobGroup(job_group, CHECK_DESCRIPTION, interruptOnCancel=True)
        rdd = sc.parallelize(range(tasks), tasks)
        return rdd.mapPartitions(partial(_look_in_partition, path, token)).collect()

    try:
        sights = until_stopped(read_back, "checkpoint check", stopping, poll_secs)
    except Exception as exc:
        line = first_line(exc)
        if "ModuleNotFoundError" in line:  # their interpreter lacks the project, most likely
            line += (
                f" (the executors' Python workers run {sc.pythonExec}, which must have this "
                f"project installed: docs/spark.md §6.2)"
            )
        raise CheckFailed(
            f"the executors could not run the check that they see the checkpoint {checkpoint}: "
            f"{line}"
        ) from None
    if sights is None:
        sc.cancelJobGroup(job_group)
        return
    error = unseen(sights, checkpoint)
    if error is not None:
        raise error
    processes = {(host, pid) for host, pid, _ in sights}
    hosts = {host for host, _ in processes}
    echo(
        f"the executors see the checkpoint: {len(sights)} tasks in {len(processes)} Python "
        f"worker(s) on {len(hosts)} host(s) read the driver's token "
        f"({time.monotonic() - started:.2f}s)"
    )


def unshared_reason(root: str) -> str:
    """What to add to "no stored metadata (or staged rows) in `root`", a directory in the
    checkpoint, read in an executor: that it sees no driver's token in `root` or any directory
    above it, when so. The driver writes one into the checkpoint before the query starts, so that
    executor does not see the driver's checkpoint (one that joined after `check_executors_see`).
    Empty when it does."""
    directory = os.path.abspath(root)
    while True:
        token, _ = read_token(os.path.join(directory, TOKEN_FILE))
        if token is not None:
            return ""
        parent = os.path.dirname(directory)
        if parent == directory:
            break
        directory = parent
    return (
        f"; this executor on {socket.gethostname()} finds no driver's token ({TOKEN_FILE}) in "
        f"{root} or above it: it does not see the driver's checkpoint, which must be a directory "
        f"that the driver and every executor host mount at the same path ({SHARED_DOC})"
    )
