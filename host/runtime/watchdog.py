"""A watchdog process that ends what a run started, however the host ends (SIGKILL included).

Each component runs in its own process group, and the kernel kills every direct child when the host
dies (PR_SET_PDEATHSIG, see host.runtime.process); but a process that a component started itself (a
grandchild) and that does not read the protocol pipes would run on for ever. So every component
process gets `MULTILANG_HOST_RUN=<token>` in its environment, which its own children inherit, and the
host starts this watchdog in a session of its own with a pipe from the host on its stdin. When that
pipe closes (the host finished, or died), the watchdog SIGKILLs every process of this user whose
environment carries the token and removes the run's pid directory. A process that clears its
environment escapes it; nothing else does, not even one that started a new session.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys

ENV = "MULTILANG_HOST_RUN"
SWEEP_PASSES = 5  # a process being killed may just have forked: look again


class Watchdog:
    """The host's handle: `close()` at the end of a run, after the host stopped its children."""

    def __init__(self, token: str, pid_dir: str):
        self.token = token
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "host.runtime.watchdog", token, pid_dir],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            start_new_session=True,
            close_fds=True,
        )

    def close(self, timeout: float = 5.0) -> None:
        """Let the watchdog sweep (what a crashed incarnation left behind) and wait for it."""
        try:
            if self.proc.stdin is not None:
                self.proc.stdin.close()
        except OSError:
            pass
        try:
            self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def sweep(token: str) -> int:
    """SIGKILL every process whose environment has ENV=token; returns how many."""
    import psutil  # only needed once the host is gone

    me = os.getpid()
    killed = 0
    for _ in range(SWEEP_PASSES):
        doomed = []
        for p in psutil.process_iter():
            if p.pid == me:
                continue
            try:
                if p.environ().get(ENV) == token:
                    p.kill()
                    doomed.append(p)
            except psutil.Error:  # gone, another user's, or a zombie
                continue
        if not doomed:
            break
        killed += len(doomed)
        psutil.wait_procs(doomed, timeout=1)
    return killed


def main(argv: list[str]) -> int:
    token, pid_dir = argv
    # Ctrl-C in the host's terminal is the host's business (it stops gracefully, then closes us)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    while True:
        try:
            if not os.read(0, 4096):
                break
        except InterruptedError:
            continue
        except OSError:
            break
    sweep(token)
    shutil.rmtree(pid_dir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
