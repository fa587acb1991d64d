"""The host's end of a batch spout task (docs/transactional.md §4.3): no `next`, `ack` or
`fail`; instead `batch_init` (task 0: the next batch's metadata), `batch_emit` (every task: emit
the attempt's share) and `batch_commit`, one at a time, each ended by `sync`. What the commands
are and when they are due is the batch layer's business (host/batch/layer.py); this link queues
them, writes them in lock-step and hands each answer back.
"""

from __future__ import annotations

from collections import deque
from typing import TYPE_CHECKING, Any

from host.batch.wire import COMMIT, INIT
from host.runtime.link import Fault
from host.runtime.spout_link import SpoutLink
from multilang.messages import Emit, Sync, UnknownCommand

if TYPE_CHECKING:
    from host.batch.layer import BatchLayer


class SpoutCommand:
    """A batch command for one task: its kind, the attempt (None for `batch_init`: the txid it
    asks about) and its bytes, or None when they are made as it is written (a `batch_emit`
    carries the task's metadata of the txid before, which its previous command reports); `meta`
    is what the spout reported with `batch_meta`."""

    __slots__ = ("kind", "attempt", "txid", "frame", "meta", "reported")

    def __init__(self, kind: str, attempt: Any, txid: int, frame: bytes | None = None) -> None:
        self.kind = kind
        self.attempt = attempt
        self.txid = txid
        self.frame = frame
        self.meta: Any = None
        self.reported = False


class BatchSpoutLink(SpoutLink):
    layer: BatchLayer  # set by the layer when it is built
    index = 0  # its position among its component's tasks

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.queue: deque[SpoutCommand] = deque()
        self.current: SpoutCommand | None = None

    def attach(self, stdin_fd: int) -> None:
        """A new process: what was queued for the task (replays of the attempts its predecessor
        failed, queued since its death) is for this one."""
        super().attach(stdin_fd)
        self.current = None

    def drop_in_flight(self) -> None:
        super().drop_in_flight()
        self.queue = deque()
        self.current = None

    # Storm's transactional emitter is a bolt and never gets `activate`: neither do these
    def activate(self) -> None:
        pass

    def deactivate(self) -> None:
        pass

    def may_next(self, ignore_idle: bool = False) -> bool:
        return False

    @property
    def waiting(self) -> bool:
        return self.current is not None

    def next_wanted_at(self) -> float | None:
        """When the coordinator task is to be asked again for a batch it was not ready to give."""
        if not self.running or self.current is not None or self.index != 0:
            return None
        return self.layer.init_wanted_at()

    def send(self, command: SpoutCommand) -> None:
        self.queue.append(command)
        self.pump()

    def pump(self) -> None:
        if not self.running or self.current is not None or self.paused:
            return  # paused: a bolt it feeds has a full queue (backpressure)
        if not self.queue and self.index == 0:
            self.layer.poll_init(self)  # may open a replay, whose command is written meanwhile
            if self.current is not None:
                return
        if self.queue:
            command = self.current = self.queue.popleft()
            if command.frame is None:
                command.frame = self.layer.emit_frame(self, command)
            self.out.append(command.frame)
            self.path.dirty.add(self)
            self.await_since = self.command_at = self.path.now
            self.sync_reported = False

    def handle(self, messages: Any) -> None:
        path = self.path
        try:
            for m in messages:
                typ = type(m)
                try:
                    if typ is Emit:
                        self.layer.spout_emit(self, m)
                    elif typ is Sync:
                        command, self.current = self.current, None
                        if command is not None:
                            self.layer.spout_synced(self, command)
                    elif typ is UnknownCommand and m.command == "batch_meta":
                        self._meta(m)
                    else:
                        self.common(m, typ)
                except Fault as fault:
                    if not path.strict:
                        raise
                    self.misuse(fault)
        finally:
            self.await_since = path.now if self.current is not None else None
        self.pump()

    def _meta(self, m: UnknownCommand) -> None:
        command = self.current
        if command is None or command.kind == COMMIT:
            raise Fault("sent `batch_meta` outside batch_init and batch_emit", str(m.raw), m)
        if "meta" not in m.raw:
            raise Fault("sent `batch_meta` without `meta`", str(m.raw), m)
        txid = m.raw.get("txid")
        if txid is not None and (type(txid) is not int or command.kind != INIT):
            raise Fault(
                "`txid` in `batch_meta` must be an integer, and only answers batch_init",
                str(m.raw),
                m,
            )
        command.meta = m.raw
        command.reported = True
