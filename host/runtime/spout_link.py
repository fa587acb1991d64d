"""The host's end of a spout task: the commands it is sent (`next`, `ack`, `fail`, `activate`,
`deactivate`), their `sync`s, its emits, its pending cap and its idle back-off.

Storm's `ShellSpout` writes one command and waits for its `sync` before the next, and that is
what every spout gets here unless its library says, in its pid reply, that it answers commands
strictly in order (the `pipeline/1` extension; or the component's `pipelining` switch says so):
storm.js, for one, runs each command as it arrives and syncs whenever its callback ends, so two
commands in flight would run two `nextTuple`s at once. A pipelining spout is kept up to
`host.spout.next.depth` exchanges ahead, an exchange being one `next` or one batch of up to
`host.spout.ack.batch` queued `ack` / `fail` commands; `activate` and `deactivate` always go
alone. Syncs are matched to commands in order (docs/protocol.md §5). `topology.max.spout.pending`
caps the spout tuples pending in the acker per task, counting what the `next`s in flight are
expected to emit. A spout whose `next` emits nothing is asked again after a back-off (up to
`host.spout.idle.max.sleep.ms`), so an idle topology costs next to nothing.
"""

from __future__ import annotations

import logging
from collections import deque
from typing import Any

from host.observe.metrics import ComponentStats
from host.runtime.data_path import DataPath
from host.runtime.idle_backoff import IdleBackoff
from host.runtime.link import Fault, Link
from host.runtime.task_log import TaskLog
from host.topology.model import Component
from multilang.codec import EncodeError
from multilang.messages import PIPELINE_EXT, Emit, SpoutCommand, Sync
from multilang.serializers import Serializer
from multilang.shell_frames import ShellFrames

# a `next` is written ahead of the previous one's sync only while the `next`s in flight are
# expected to emit fewer tuples than this: enough to keep a one-tuple-per-`next` spout busy, while
# a spout that emits batches per `next` is kept one batch ahead
AHEAD_TUPLES = 200


class SpoutLink(Link):
    is_spout = True

    def __init__(
        self,
        path: DataPath,
        component: Component,
        task: int,
        ser: Serializer,
        stats: ComponentStats,
        log: TaskLog,
        *,
        max_pending: int | None,
        pipelining: bool | None,
        next_depth: int,
        ack_batch: int,
        idle_max_sleep: float,
    ) -> None:
        super().__init__(path, component, task, ser, stats, log)
        # lock-step commands, encoded once; compared by identity in `outstanding`
        self.next_frame = ser.encode(SpoutCommand("next", ""))
        self.activate_frame = ser.encode(SpoutCommand("activate", ""))
        self.deactivate_frame = ser.encode(SpoutCommand("deactivate", ""))
        self.max_pending = max_pending  # topology.max.spout.pending
        # None: pipeline if the library announces `pipeline/1`; True / False: the component's
        # switch, whatever it announces (see `negotiate`)
        self.pipelining = pipelining
        self.pipelined_depth = next_depth
        self.pipelined_ack_batch = ack_batch
        # this process's limits: lock-step (1, 1) until its pid reply says otherwise
        self.next_depth = 1
        self.ack_batch = 1
        self.paused = False  # a downstream bolt's queue is full: no `next`
        # commands written and not yet answered by `sync`, oldest first
        self.outstanding: deque[bytes] = deque()
        self.commands: deque[bytes] = deque()  # ack / fail / activate / deactivate, not yet written
        self.nexts_out = 0  # `next`s among the outstanding
        self.acks_out = 0  # `ack`s and `fail`s among them
        # what its last `next` that emitted emitted: the estimate of what each `next` in flight
        # will emit (0: none emitted yet, so none is written ahead)
        self.emits_per_next = 0
        self.emitted_in_exchange = 0
        self.backoff = IdleBackoff(idle_max_sleep)  # an idle spout's, host/runtime/idle_backoff.py
        self.next_at = 0.0  # an idle spout's next `next`, by the clock
        self.command_at = 0.0  # when the oldest outstanding command was written
        self.sync_reported = False  # --strict: "no sync" said once per exchange

    def attach(self, stdin_fd: int) -> None:
        super().attach(stdin_fd)
        self.outstanding.clear()
        self.commands.clear()
        self.nexts_out = self.acks_out = self.emits_per_next = 0
        self.backoff.reset()
        self.next_at = 0.0
        self.next_depth = self.ack_batch = 1  # a new process: lock-step until its pid reply

    def use_serializer(self, ser: Serializer) -> bool:
        """The lock-step commands are encoded again; queued commands were written in JSON, the
        handshake's serializer, and are rewritten (the other way cannot be: False)."""
        old, self.ser = self.ser, ser
        if old is ser:
            return True
        self.next_frame = ser.encode(SpoutCommand("next", ""))
        self.activate_frame = ser.encode(SpoutCommand("activate", ""))
        self.deactivate_frame = ser.encode(SpoutCommand("deactivate", ""))
        if self.commands:
            if not isinstance(ser, ShellFrames) or isinstance(old, ShellFrames):
                return False
            self.commands = deque(ser.from_json(c) for c in self.commands)
        return True

    def negotiate(self, ext: tuple[str, ...]) -> None:
        """Its pid reply came with these extensions: pipeline commands or keep to lock-step."""
        on = PIPELINE_EXT in ext if self.pipelining is None else self.pipelining
        if on:
            self.next_depth, self.ack_batch = self.pipelined_depth, self.pipelined_ack_batch
        else:
            self.next_depth = self.ack_batch = 1

    @property
    def pipelined(self) -> bool:
        return self.next_depth > 1 or self.ack_batch > 1

    @property
    def waiting(self) -> bool:
        """It owes a `sync`."""
        return bool(self.outstanding)

    # -- what it writes --------------------------------------------------------------------------
    def handle(self, messages: Any) -> None:
        path = self.path
        try:
            for m in messages:
                typ = type(m)
                try:
                    if typ is Emit:
                        path.spout_emit(self, m)
                        if self.outstanding:
                            self.emitted_in_exchange += 1
                    elif typ is Sync:
                        self._sync()
                    else:
                        self.common(m, typ)
                except Fault as fault:
                    if not path.strict:
                        raise
                    self.misuse(fault)
        finally:
            self.await_since = path.now if self.outstanding else None

    def _sync(self) -> None:
        if not self.outstanding:
            return  # a stray sync: nothing to end
        now = self.path.now
        self.command_at = now
        self.sync_reported = False
        done = self.outstanding.popleft()
        if done is self.next_frame:
            self.nexts_out -= 1
            if self.emitted_in_exchange:
                self.emits_per_next = self.emitted_in_exchange
            # the back-off learns of every answered `next`: an empty one delays the next ask
            # (docs/protocol.md §5.1), an emitting one ends the wait
            again = self.backoff.synced(self.emitted_in_exchange > 0, now)
            if again is not None:
                self.next_at = again
        elif done is not self.activate_frame and done is not self.deactivate_frame:
            self.acks_out -= 1
        self.emitted_in_exchange = 0  # emits from now on belong to the next outstanding command

    # -- commands --------------------------------------------------------------------------------
    def outcome(self, command: str, msg_id: Any) -> None:
        """Queue the `ack` or `fail` of one of its tuples."""
        if self.stdin_fd is None:
            return  # dead: its tuples were dropped with it
        try:
            self.commands.append(self.ser.spout_command(command, msg_id))
        except EncodeError:  # the id came from JSON, so this cannot happen; be loud
            self.log.line(logging.ERROR, f"cannot encode message id {msg_id!r}")

    def activate(self) -> None:
        """The pid reply came: `activate` goes first, before any queued command."""
        if self.component.activate and not self.path.stopping:
            self.commands.appendleft(self.activate_frame)

    def deactivate(self) -> None:
        if self.running and self.component.activate:
            self.commands.append(self.deactivate_frame)

    def may_next(self, ignore_idle: bool = False) -> bool:
        if self.path.stopping or self.paused:
            return False
        limit = self.max_pending
        # every `next` already written will likely emit what the last one did (so that
        # max.spout.pending 1 keeps meaning one tuple at a time): count that as pending already
        if limit is not None and (
            self.path.acker.pending(self.task) + self.nexts_out * self.emits_per_next >= limit
        ):
            return False
        return ignore_idle or self.path.now >= self.next_at

    def next_wanted_at(self) -> float | None:
        """When an idle spout with nothing in flight is to be asked again (None: not waiting for
        the clock)."""
        if (
            self.running
            and not self.outstanding
            and self.next_at > self.path.now
            and self.may_next(ignore_idle=True)
        ):
            return self.next_at
        return None

    def pump(self) -> None:
        """Write its next commands, if any are due (see the module's docstring)."""
        out = self.outstanding
        activate, deactivate = self.activate_frame, self.deactivate_frame
        if out and (out[0] is activate or out[0] is deactivate):
            return  # written alone: nothing else until its sync
        commands = self.commands
        was_idle = not out
        wrote = False
        if commands:
            first = commands[0]
            if first is activate or first is deactivate:
                if out:
                    return  # it waits for what is in flight, then goes alone
                commands.popleft()
                out.append(first)
                self.out.append(first)
                self._wrote_command()
                return
            if not self.acks_out and self.nexts_out < self.next_depth:
                while (
                    commands
                    and self.acks_out < self.ack_batch
                    and commands[0] is not activate
                    and commands[0] is not deactivate
                ):
                    data = commands.popleft()
                    out.append(data)
                    self.out.append(data)
                    self.acks_out += 1
                wrote = True
        if not commands:  # queued acks go first: they free room under max.spout.pending
            depth, window = self.next_depth, self.backoff.window
            while (
                self.nexts_out + (1 if self.acks_out else 0) < depth
                and self.nexts_out < window
                and (not self.nexts_out or 0 < self.nexts_out * self.emits_per_next < AHEAD_TUPLES)
                and self.may_next()
            ):
                out.append(self.next_frame)
                self.out.append(self.next_frame)
                self.backoff.wrote()
                self.nexts_out += 1
                wrote = True
        if wrote and was_idle:
            self._wrote_command()
        elif wrote:
            self.path.dirty.add(self)

    def _wrote_command(self) -> None:
        """A spout with nothing in flight was written a command: from now on it owes a sync."""
        now = self.path.now
        self.emitted_in_exchange = 0
        self.await_since = self.command_at = now
        self.sync_reported = False
        self.path.dirty.add(self)

    def drop_in_flight(self) -> None:
        """Its process died: the commands written or queued to it are void."""
        self.commands.clear()
        self.outstanding.clear()
        self.nexts_out = self.acks_out = 0
