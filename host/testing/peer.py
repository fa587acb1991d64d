"""The scripted host stand-in for one component process (`ComponentPeer`), the handshake context
it sends (`make_context`), and the system tuples a test feeds a bolt (`tick`, `heartbeat`)."""

from __future__ import annotations

import builtins
import os
import re
import selectors
import shutil
import signal
import subprocess
import tempfile
import time
from typing import IO, Any

from host.topology.commands import host_bin_dir
from multilang import shell_frames as frames
from multilang.codec import DEFAULT_MAX_FRAME, EncodeError, Framer, ProtocolError, dumps, to_wire
from multilang.messages import (
    ACKER_COMPONENT,
    HEARTBEAT_STREAM,
    SYSTEM_COMPONENT,
    SYSTEM_TASK,
    TICK_STREAM,
    Handshake,
    Pid,
    SpoutCommand,
    TaskIds,
    TupleMessage,
)
from multilang.paths import client_environment
from multilang.serializers import Serializer
from multilang.serializers import serializer as serializer_named

_HOST_TUPLE_ID = re.compile(r"0|-?[1-9][0-9]{0,18}")  # what the host's own tuple ids look like
MessageKind = type | tuple[type, ...]  # what `read_until` waits for, as isinstance takes it


def make_context(
    taskid: int = 3,
    componentid: str = "comp",
    outputs: dict[str, list[str]] | None = None,
    sources: dict[str, dict[str, list[str]]] | None = None,
    targets: dict[str, dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """A handshake context for one task, in the shape Storm sends (docs/protocol.md §3.2):
    `outputs` stream -> fields, `sources` component -> stream -> fields,
    `targets` stream -> component -> grouping."""
    outputs = outputs if outputs is not None else {"default": ["word"]}
    sources = sources if sources is not None else {"spout": {"default": ["sentence"]}}
    task_to_component = {"1": "spout", "2": ACKER_COMPONENT, str(taskid): componentid}
    return {
        "taskid": taskid,
        "componentid": componentid,
        "task->component": task_to_component,
        "streams": list(outputs),
        "stream->outputfields": outputs,
        "stream->target->grouping": targets or {},
        "source->stream->grouping": {
            s: {st: {"type": "SHUFFLE"} for st in streams} for s, streams in sources.items()
        },
        "source->stream->fields": sources,
    }


def tick(freq: int = 1, id: str | None = None) -> TupleMessage:
    """A tick tuple, for `run_component`'s tuples."""
    return TupleMessage(id or "", SYSTEM_COMPONENT, TICK_STREAM, SYSTEM_TASK, [freq])


def heartbeat(id: str | None = None) -> TupleMessage:
    """A heartbeat tuple, for `run_component`'s tuples (answered with `sync`, not acked)."""
    return TupleMessage(id or "", None, HEARTBEAT_STREAM, SYSTEM_TASK, [])


class ComponentPeer:
    """Starts one real component process (with the client-library environment the host gives
    every component) and exchanges messages with it over its real pipes, with timeouts so that a
    broken component fails a test instead of hanging it. Speaks JSON unless given another
    serializer (`serializer="msgpack"`), through the same `multilang.serializers` objects as the
    host: the same decoder, the same reduced handshake context, and tuples with decimal ids
    written as the host writes them (cached prefix + values + id).

    Everything written and read is also kept in `transcript` (`->` host to component, `<-`
    component to host, `   ` notes such as stderr lines), in the format of `tests/transcripts/`.
    """

    def __init__(
        self,
        argv: list[str],
        cwd: str | None = None,
        env: dict[str, str] | None = None,
        serializer: str | Serializer = "json",
        shell_frames: bool = False,
    ):
        """`shell_frames`: offer `shell-frames/1` as the host does (multilang/shell_frames.py);
        a bash component of ours takes it in its pid reply, and from then on what is sent to it
        is written as shell frames (its transcript shows the JSON form). Off by default, so that
        a JSON transcript shows exactly what was written (and `send_raw` can send bad JSON)."""
        self.serializer = (
            serializer_named(serializer) if isinstance(serializer, str) else serializer
        )
        self.argv = list(argv)
        self.pid_dir = tempfile.mkdtemp(prefix="peer-pids-")
        self.extensions: tuple[str, ...] = ()  # set by `handshake`
        full_env = client_environment(env)
        full_env["PATH"] = host_bin_dir() + os.pathsep + full_env.get("PATH", "")
        self.shell_frames = False  # set by `handshake` when the component took them
        if shell_frames and self.serializer.name == "json":
            full_env[frames.OFFER_ENV] = frames.EXT
        self.transcript: list[str] = []
        self._json = self.serializer.name == "json"
        self._tee = Framer(DEFAULT_MAX_FRAME) if self._json else None
        self._stderr_partial = b""
        try:
            self.proc = subprocess.Popen(
                argv,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                cwd=cwd,
                env=full_env,
                start_new_session=True,
            )
        except OSError:
            shutil.rmtree(self.pid_dir, ignore_errors=True)
            raise
        stdin, stdout, stderr = self.proc.stdin, self.proc.stdout, self.proc.stderr
        assert stdin is not None and stdout is not None and stderr is not None  # all pipes
        self._stdin: IO[bytes] = stdin
        self._stdout: IO[bytes] = stdout
        self._stderr: IO[bytes] = stderr
        os.set_blocking(stdout.fileno(), False)
        os.set_blocking(stderr.fileno(), False)
        self.decoder = self.serializer.decoder(DEFAULT_MAX_FRAME)
        self.inbox: list[Any] = []
        self.stderr = b""
        self.sel = selectors.DefaultSelector()
        self.sel.register(stdout, selectors.EVENT_READ, "out")
        self.sel.register(stderr, selectors.EVENT_READ, "err")
        self.stdout_closed = False

    # -- transcript ------------------------------------------------------------------------------
    def note(self, text: str) -> None:
        """Add a note (not a message) to the transcript."""
        self.transcript.append(f"   {text}")

    def _sent(self, data: bytes, message: Any = None) -> None:
        if message is not None and (not self._json or self.shell_frames):
            try:
                self.transcript.append(f"-> {dumps(to_wire(message))}")
            except (EncodeError, KeyError):
                self.transcript.append(f"-> {message!r}")
            return
        framer = Framer(max(DEFAULT_MAX_FRAME, len(data) + 1))
        for payload in framer.feed(data):
            self.transcript.append(f"-> {payload.decode('utf-8', 'replace')}")
        if framer.pending:
            self.transcript.append(f"-> {framer.pending!r} (no `end` line)")

    def _received(self, data: bytes, messages: list[Any]) -> None:
        if self._tee is None:
            for m in messages:
                try:
                    self.transcript.append(f"<- {dumps(to_wire(m))}")
                except (EncodeError, KeyError):
                    self.transcript.append(f"<- {m!r}")
            return
        try:
            payloads = self._tee.feed(data)
        except ProtocolError as exc:
            self.transcript.append(f"<- {exc.raw!r} ({exc.reason})")
            return
        for payload in payloads:
            self.transcript.append(f"<- {payload.decode('utf-8', 'replace')}")

    def _stderr_lines(self, data: bytes) -> None:
        data = self._stderr_partial + data
        *lines, self._stderr_partial = data.split(b"\n")
        for line in lines:
            text = line.rstrip(b"\r").decode("utf-8", "replace")
            self.note(f"stderr: {text}")

    # -- writing ---------------------------------------------------------------------------------
    def send(self, message: Any) -> None:
        data = self.serializer.encode(message)
        self._write(data)
        self._sent(data, message)

    def send_raw(self, data: bytes) -> None:
        self._write(data)
        self._sent(data)

    def _write(self, data: bytes) -> None:
        self._stdin.write(data)
        self._stdin.flush()

    def handshake(
        self,
        conf: dict[str, Any] | None = None,
        context: dict[str, Any] | None = None,
        timeout: float = 10,
    ) -> int:
        conf = {"topology.name": "test", "topology.debug": False, **(conf or {})}
        context = self.serializer.handshake_context(context or make_context())
        self.send(Handshake(self.pid_dir, conf, context))
        pid = self.read(timeout)
        assert isinstance(pid, Pid), f"expected the pid reply, got {pid!r}"
        self.wait_pid_file(pid.pid, timeout)
        assert str(pid.pid) in os.listdir(self.pid_dir), "pid file not created"
        self.extensions = pid.ext  # what its pid reply announced (docs/protocol.md)
        shell = frames.taken(pid.ext) if self.serializer.name == "json" else None
        if shell is not None:
            self.serializer = shell  # what it reads is still JSON
            self.shell_frames = True
        return pid.pid

    def wait_pid_file(self, pid: int, timeout: float = 10) -> bool:
        deadline = time.monotonic() + timeout
        while str(pid) not in os.listdir(self.pid_dir) and time.monotonic() < deadline:
            time.sleep(0.01)
        return str(pid) in os.listdir(self.pid_dir)

    def tuple(
        self,
        id: str,
        values: list[Any],
        comp: str | None = "spout",
        stream: str = "default",
        task: int = 1,
    ) -> None:
        if _HOST_TUPLE_ID.fullmatch(id) and -(2**63) <= int(id) < 2**63:
            ser = self.serializer  # the host's data path: these frames must be read the same
            data = ser.tuple_frame(
                ser.tuple_prefix(comp, stream, task), ser.values(values), int(id)
            )
            self._write(data)
            self._sent(data, TupleMessage(id, comp, stream, task, values))
        else:
            self.send(TupleMessage(id, comp, stream, task, values))

    def tuples(
        self,
        tuples: list[builtins.tuple[int, list[Any]]],
        comp: str | None = "spout",
        stream: str = "default",
        task: int = 1,
    ) -> bytes:
        """Several tuples (host-style int ids, values) in one write, as the host's data path
        writes what it routed to a task in one loop turn: through the serializer's
        `join_frames` (shell frames join them for a library that reads joined frames).
        Returns the bytes written."""
        ser = self.serializer
        prefix = ser.tuple_prefix(comp, stream, task)
        data = ser.join_frames([ser.tuple_frame(prefix, ser.values(v), i) for i, v in tuples])
        self._write(data)
        if self._json and not self.shell_frames:
            self._sent(data)
        else:
            for i, v in tuples:
                self._sent(data, TupleMessage(str(i), comp, stream, task, v))
        return data

    def heartbeat(self, id: str = "hb-1") -> None:
        self.send(heartbeat(id))

    def tick(self, id: str = "tick-1", freq: int = 1) -> None:
        self.send(tick(freq, id))

    def command(self, command: str, id: Any = "") -> None:
        self.send(SpoutCommand(command, id))

    def task_ids(self, tasks: list[int]) -> None:
        self.send(TaskIds(tasks))

    # -- reading ---------------------------------------------------------------------------------
    def _pump(self, timeout: float) -> None:
        for key, _ in self.sel.select(timeout):
            try:
                data = os.read(key.fd, 65536)
            except BlockingIOError:
                continue
            if key.data == "err":
                if data:
                    self.stderr += data
                    self._stderr_lines(data)
                else:
                    self.sel.unregister(key.fileobj)
                    if self._stderr_partial:
                        self._stderr_lines(b"\n")
                continue
            if not data:
                self.sel.unregister(key.fileobj)
                self.stdout_closed = True
                continue
            try:
                messages = self.decoder.feed(data)
            except ProtocolError as exc:
                self._received(data, exc.decoded)  # the transcript shows the bad bytes too
                raise
            self._received(data, messages)
            self.inbox.extend(messages)

    def poll(self, timeout: float = 10) -> Any:
        """The next message, or None when none arrives within `timeout` seconds (or stdout is
        closed). Raises ProtocolError for bytes that break the protocol."""
        deadline = time.monotonic() + timeout
        while not self.inbox:
            left = deadline - time.monotonic()
            if left <= 0 or self.stdout_closed:
                return None
            self._pump(min(left, 0.5))
        return self.inbox.pop(0)

    def read(self, timeout: float = 10) -> Any:
        """The next message, or AssertionError after `timeout` seconds."""
        msg = self.poll(timeout)
        if msg is None:
            raise AssertionError(
                f"no message within {timeout}s (exit={self.proc.poll()}); "
                f"stderr: {self.stderr[-2000:]!r}"
            )
        return msg

    def read_until(self, kind: MessageKind, timeout: float = 10) -> list[Any]:
        """Messages up to and including the first of type `kind`."""
        out = []
        while True:
            msg = self.read(timeout)
            out.append(msg)
            if isinstance(msg, kind):
                return out

    def quiet(self, seconds: float = 0.3) -> list[Any]:
        """Whatever arrives within `seconds` (to check that nothing unexpected is written)."""
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            self._pump(max(0.0, deadline - time.monotonic()))
        out, self.inbox = self.inbox, []
        return out

    # -- ending ----------------------------------------------------------------------------------
    def close_stdin(self) -> None:
        """Close the component's stdin: the host's way of telling it to stop."""
        try:
            self._stdin.close()
        except OSError:  # a broken pipe: it is gone already
            pass

    def close(self, timeout: float = 5) -> int:
        """Close stdin (clients exit on EOF), wait, kill the group if needed; the exit status."""
        self.close_stdin()
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            return self.proc.wait()
        finally:
            self.sel.close()
            self._stdout.close()
            self._stderr.close()
            shutil.rmtree(self.pid_dir, ignore_errors=True)

    def kill_group(self) -> None:
        """SIGKILL what is left of the component's process group (its own children)."""
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
