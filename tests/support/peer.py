"""A scripted host stand-in for testing one component process over its real pipes.

Used by the client-library conformance tests: start a real bash / Node / Python component, do the
handshake, write messages, read what it answers, with timeouts so a broken component fails the test
instead of hanging it. It speaks JSON unless given another serializer (`serializer="msgpack"`),
through the same `multilang.serializers` objects as the host: the same decoder, the same reduced
handshake context, and tuples with decimal ids written as the host writes them (cached prefix +
values + id).
"""

from __future__ import annotations

import os
import re
import selectors
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from multilang.codec import DEFAULT_MAX_FRAME
from multilang.messages import Handshake, Pid, SpoutCommand, TaskIds, TupleMessage
from multilang.paths import client_environment
from multilang.serializers import Serializer, serializer as serializer_named

HOST_BIN = str(Path(sys.executable).parent)
_HOST_TUPLE_ID = re.compile(r"0|[1-9][0-9]{0,19}")  # what the host's own tuple ids look like


def make_context(taskid: int = 3, componentid: str = "comp", outputs=None, sources=None,
                 targets=None) -> dict:
    outputs = outputs if outputs is not None else {"default": ["word"]}
    sources = sources if sources is not None else {"spout": {"default": ["sentence"]}}
    task_to_component = {"1": "spout", "2": "__acker", str(taskid): componentid}
    return {
        "taskid": taskid,
        "componentid": componentid,
        "task->component": task_to_component,
        "streams": list(outputs),
        "stream->outputfields": outputs,
        "stream->target->grouping": targets or {},
        "source->stream->grouping": {s: {st: {"type": "SHUFFLE"} for st in streams}
                                     for s, streams in sources.items()},
        "source->stream->fields": sources,
    }


class ComponentPeer:
    def __init__(self, argv: list[str], cwd: str | None = None, env: dict | None = None,
                 serializer: str | Serializer = "json"):
        self.serializer = (serializer_named(serializer) if isinstance(serializer, str)
                           else serializer)
        self.pid_dir = tempfile.mkdtemp(prefix="peer-pids-")
        full_env = client_environment(env)
        full_env["PATH"] = HOST_BIN + os.pathsep + full_env.get("PATH", "")
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, cwd=cwd, env=full_env,
                                     start_new_session=True)
        os.set_blocking(self.proc.stdout.fileno(), False)
        os.set_blocking(self.proc.stderr.fileno(), False)
        self.decoder = self.serializer.decoder(DEFAULT_MAX_FRAME)
        self.inbox: list = []
        self.stderr = b""
        self.sel = selectors.DefaultSelector()
        self.sel.register(self.proc.stdout, selectors.EVENT_READ, "out")
        self.sel.register(self.proc.stderr, selectors.EVENT_READ, "err")
        self.stdout_closed = False

    # -- writing ---------------------------------------------------------------------------------
    def send(self, message) -> None:
        self.send_raw(self.serializer.encode(message))

    def send_raw(self, data: bytes) -> None:
        self.proc.stdin.write(data)
        self.proc.stdin.flush()

    def handshake(self, conf: dict | None = None, context: dict | None = None,
                  timeout: float = 10) -> int:
        conf = {"topology.name": "test", "topology.debug": False, **(conf or {})}
        context = self.serializer.handshake_context(context or make_context())
        self.send(Handshake(self.pid_dir, conf, context))
        pid = self.read(timeout)
        assert isinstance(pid, Pid), f"expected the pid reply, got {pid!r}"
        deadline = time.monotonic() + timeout
        while str(pid.pid) not in os.listdir(self.pid_dir) and time.monotonic() < deadline:
            time.sleep(0.01)
        assert str(pid.pid) in os.listdir(self.pid_dir), "pid file not created"
        return pid.pid

    def tuple(self, id: str, values: list, comp: str = "spout", stream: str = "default",
              task: int = 1) -> None:
        if _HOST_TUPLE_ID.fullmatch(id) and int(id) < 2**64:
            ser = self.serializer  # the host's data path: these frames must be read the same
            self.send_raw(ser.tuple_frame(ser.tuple_prefix(comp, stream, task),
                                          ser.values(values), int(id)))
        else:
            self.send(TupleMessage(id, comp, stream, task, values))

    def heartbeat(self, id: str = "hb-1") -> None:
        self.send(TupleMessage(id, None, "__heartbeat", -1, []))

    def tick(self, id: str = "tick-1", freq: int = 1) -> None:
        self.send(TupleMessage(id, "__system", "__tick", -1, [freq]))

    def command(self, command: str, id="") -> None:
        self.send(SpoutCommand(command, id))

    def task_ids(self, tasks: list[int]) -> None:
        self.send(TaskIds(tasks))

    # -- reading ---------------------------------------------------------------------------------
    def _pump(self, timeout: float) -> None:
        for key, _ in self.sel.select(timeout):
            try:
                data = os.read(key.fileobj.fileno(), 65536)
            except BlockingIOError:
                continue
            if key.data == "err":
                if data:
                    self.stderr += data
                else:
                    self.sel.unregister(key.fileobj)
                continue
            if not data:
                self.sel.unregister(key.fileobj)
                self.stdout_closed = True
                continue
            self.inbox.extend(self.decoder.feed(data))

    def read(self, timeout: float = 10):
        """The next message, or AssertionError after `timeout` seconds."""
        deadline = time.monotonic() + timeout
        while not self.inbox:
            left = deadline - time.monotonic()
            if left <= 0 or (self.stdout_closed and not self.inbox):
                raise AssertionError(
                    f"no message within {timeout}s (exit={self.proc.poll()}); "
                    f"stderr: {self.stderr[-2000:]!r}")
            self._pump(min(left, 0.5))
        return self.inbox.pop(0)

    def read_until(self, kind, timeout: float = 10) -> list:
        """Messages up to and including the first of type `kind`."""
        out = []
        while True:
            msg = self.read(timeout)
            out.append(msg)
            if isinstance(msg, kind):
                return out

    def quiet(self, seconds: float = 0.3) -> list:
        """Whatever arrives within `seconds` (to check that nothing unexpected is written)."""
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            self._pump(max(0.0, deadline - time.monotonic()))
        out, self.inbox = self.inbox, []
        return out

    # -- ending ----------------------------------------------------------------------------------
    def close(self, timeout: float = 5) -> int:
        """Close stdin (clients exit on EOF), wait, kill the group if needed; the exit status."""
        try:
            self.proc.stdin.close()
        except BrokenPipeError:
            pass
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            return self.proc.wait()
        finally:
            self.sel.close()
            self.proc.stdout.close()
            self.proc.stderr.close()
            shutil.rmtree(self.pid_dir, ignore_errors=True)
