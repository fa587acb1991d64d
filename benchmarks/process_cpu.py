"""The CPU a run costs, by kind of process: this process and every process under it (Spark's JVMs
and Python workers, the components, a `host local` subprocess), sampled in a thread so that the
processes that exit during the run are counted up to their last sample.

    with ProcessCpu() as cpu:
        ...                      # the run
    cpu.seconds()                # {"jvm": 2.6, "python workers": 3.2, "components": 4.1, ...}

Processes alive at the start count from their CPU time then (a JVM started before the run), the
others from zero. A process's last 0.2 s before it exits may be missed: a run of seconds loses
little.
"""

from __future__ import annotations

import threading
from typing import Any

import psutil

SAMPLE_SECS = 0.2
KINDS = ("jvm", "python workers", "host", "driver", "components")


def kind_of(cmdline: list[str], is_root: bool) -> str:
    """What a process is, from its command line."""
    text = " ".join(cmdline)
    if is_root:
        return "driver"  # the benchmark's own process: Spark's driver, the engine
    if cmdline and cmdline[0].endswith("java"):
        return "jvm"
    if "pyspark" in text:
        return "python workers"  # pyspark.daemon and its workers, the data sources' runners
    if "-m host " in f"{text} ":
        return "host"
    return "components"


class ProcessCpu:
    def __init__(self) -> None:
        self.root = psutil.Process()
        self._first: dict[tuple[int, float], float] = {}
        self._last: dict[tuple[int, float], float] = {}
        self._kind: dict[tuple[int, float], str] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="process-cpu", daemon=True)

    def __enter__(self) -> ProcessCpu:
        self._sample(starting=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._stop.set()
        self._thread.join()
        self._sample(starting=False)

    def seconds(self) -> dict[str, float]:
        """CPU seconds by kind over the run."""
        out = dict.fromkeys(KINDS, 0.0)
        for key, last in self._last.items():
            out[self._kind[key]] += last - self._first[key]
        return out

    def _run(self) -> None:
        while not self._stop.wait(SAMPLE_SECS):
            self._sample(starting=False)

    def _sample(self, starting: bool) -> None:
        try:
            procs = [self.root, *self.root.children(recursive=True)]
        except psutil.Error:
            return
        for p in procs:
            try:
                key = (p.pid, p.create_time())
                times = p.cpu_times()
                if key not in self._kind:
                    self._kind[key] = kind_of(p.cmdline(), p.pid == self.root.pid)
            except psutil.Error:
                continue
            cpu = times.user + times.system
            self._first.setdefault(key, cpu if starting else 0.0)
            self._last[key] = cpu
