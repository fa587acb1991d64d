"""The protocol side of the Spark spout: emits rows, tracks them, replays, dead-letters and
checkpoints. Everything here runs on the thread that runs the multilang loop, which is the only
writer to the host; sources hand rows over through `sources.Handoff` (see there)."""

from __future__ import annotations

import datetime
import json
import os
import sys
import time
from collections import deque
from typing import Any, TextIO

from multilang import WARN, Spout

from . import checkpoint as ckpt
from .checkpoint import Checkpoint, order_of, to_ranges
from .config import DEAD_STREAM, ConfigError, SpoutConfig, from_conf, transactional_requested
from .segments import Chunk, End, Fatal, Handoff, Segment, staged
from .sources import SOURCES, Source


class _SegmentState:
    """Progress of one segment: a byte per row (0 = not done, 1 = acked, 2 = dead-lettered)."""

    __slots__ = ("segment", "key", "rows", "bitmap", "done", "complete")

    def __init__(self, segment: Segment, saved: dict | None):
        self.segment = segment
        self.key = segment.key
        self.rows = segment.rows
        self.bitmap = bytearray(segment.rows)
        self.done = ckpt.fill(self.bitmap, saved["done"]) if saved else 0
        self.complete = self.done >= self.rows


class SparkSpout(Spout):
    """See the package docstring for what it does and how it is configured."""

    def _pid_reply(self) -> bytes:
        # the handshake is read and the pid not answered yet: the reply says whether this task
        # speaks batch/1, so the transactional switch is read here (transactional.py)
        if transactional_requested(self.conf):
            from .transactional import TransactionalSparkSpout

            return TransactionalSparkSpout.take_over(self)
        if "batch" in self.context:  # the host will refuse the reply: say what to set
            print(
                "spark spout: declared `batch: spout`; set spark.spout.transactional: true "
                "(with spark.spout.source: streaming) to run it as a transactional spout",
                file=sys.stderr,
                flush=True,
            )
        return super()._pid_reply()

    def initialize(self, conf: dict, context: dict) -> None:
        try:
            self.cfg: SpoutConfig = from_conf(conf, context)
        except ConfigError as exc:
            raise ConfigError(f"spark spout {self.component_id}: {exc}") from None
        cfg = self.cfg
        ckpt.ensure_dir(cfg.checkpoint_dir)
        self.checkpoint: Checkpoint = ckpt.load(cfg.checkpoint_dir, cfg.source, cfg.fingerprint())
        self.fields = list(cfg.fields)
        self.handoff = Handoff(cfg.read_ahead)
        self.open: dict[str, _SegmentState] = {}  # segments under way, in feed order
        self.inflight: dict[tuple, list] = {}  # (key, offset) -> values, emitted not done
        self.attempts: dict[tuple, int] = {}  # (key, offset) -> failures so far
        self.replay: deque[tuple] = deque()  # failed, waiting to be emitted again
        self.rows: list[list] = []  # the chunk being emitted
        self.pos = 0
        self.chunk_start = 0
        self.state: _SegmentState | None = None
        self.source_ended = False
        self.dirty = False
        self.last_save = time.monotonic()
        self.acks_since_check = 0
        self.dead_file: TextIO | None = None
        self.started = time.monotonic()
        self.first_emit_logged = False
        self.finished_logged = self.checkpoint.finished
        app = f"spark-spout-{self.component_id or 'spout'}"
        self.source: Source = SOURCES[cfg.source](cfg, conf, self.checkpoint, self.handoff, app)
        if cfg.needs_spark and not self._staged_already():
            self.log("starting Spark…")
        if self.checkpoint.acked or self.checkpoint.watermark:
            self.log(
                f"resuming from {os.path.join(cfg.checkpoint_dir, ckpt.FILE_NAME)}: "
                f"{self.checkpoint.acked} rows acked, {self.checkpoint.dead} dead-lettered"
            )
        self.source.start()

    def _staged_already(self) -> bool:
        if self.cfg.source != "dataframe":
            return False
        return staged(self.source.staging_uri()) is not None  # type: ignore[attr-defined]

    # ---- protocol hooks -------------------------------------------------------------------------
    def next_tuple(self) -> None:
        self._service()
        budget = min(self.cfg.rows_per_next, self.cfg.max_pending - len(self.inflight))
        emit = self.emit
        inflight = self.inflight
        replay = self.replay
        while budget > 0:
            if replay:
                msg_id = replay.popleft()
                values = inflight.get(msg_id)
                if values is not None:
                    emit(values, id=list(msg_id))
                    budget -= 1
                continue
            rows = self.rows
            pos = self.pos
            if pos >= len(rows):
                if not self._next_chunk():
                    break
                continue
            state = self.state
            assert state is not None  # set with the rows of every chunk
            bitmap, key, base = state.bitmap, state.key, self.chunk_start
            end = min(len(rows), pos + budget)
            while pos < end:
                offset = base + pos
                if not bitmap[offset]:
                    values = rows[pos]
                    inflight[(key, offset)] = values
                    emit(values, id=[key, offset])
                    budget -= 1
                pos += 1
            self.pos = pos
        if not self.first_emit_logged and inflight:
            self.first_emit_logged = True
            self.log(f"first row emitted {time.monotonic() - self.started:.1f}s after start")
        self._maybe_finish()
        self._maybe_save()

    def ack(self, msg_id: Any) -> None:
        # the hot path: one dict pop and a byte in the segment's bitmap per acked row
        try:
            key, offset = msg_id
        except (TypeError, ValueError):
            return  # not an id we emit
        if self.inflight.pop((key, offset), None) is None:
            return  # not ours (an id from before a restart), or a duplicate
        if self.attempts:
            self.attempts.pop((key, offset), None)
        self.checkpoint.acked += 1
        state = self.open.get(key)
        if state is not None and not state.bitmap[offset]:
            state.bitmap[offset] = 1
            state.done += 1
            if state.done >= state.rows:
                state.complete = True
                self._segment_complete(state)
                self._maybe_finish()
        self.dirty = True
        self.acks_since_check += 1
        if self.acks_since_check >= 256:  # the clock is read once per 256 acks, not per ack
            self.acks_since_check = 0
            self._maybe_save()

    def fail(self, msg_id: Any) -> None:
        row_id = self._id(msg_id)
        values = self.inflight.get(row_id)
        if values is None:
            return
        attempts = self.attempts.get(row_id, 0) + 1
        self.attempts[row_id] = attempts
        if attempts > self.cfg.retries:
            self._dead_letter(row_id, values, attempts)
            self._maybe_finish()
        else:
            self.replay.append(row_id)
        self._maybe_save()

    def deactivate(self) -> None:
        self._save()

    def close(self) -> None:
        self.source.stop()
        self._save()
        if self.dead_file is not None:
            self.dead_file.close()

    # ---- rows in and out ------------------------------------------------------------------------
    @staticmethod
    def _id(msg_id: Any) -> tuple:
        key, offset = msg_id
        return key, int(offset)

    def _next_chunk(self) -> bool:
        """Take the next chunk from the source; False when none is ready."""
        while True:
            item = self.handoff.take()
            if item is None:
                return False
            if type(item) is Chunk:
                state = self._state_for(item.segment)
                if not item.rows:
                    continue
                self.state, self.rows, self.pos, self.chunk_start = state, item.rows, 0, item.start
                return True
            if type(item) is End:
                self.source_ended = True
                continue
            if type(item) is Fatal:
                self._die(item.message)

    def _state_for(self, segment: Segment) -> _SegmentState:
        state = self.open.get(segment.key)
        if state is None or state.segment is not segment:
            state = _SegmentState(segment, self.checkpoint.segments.get(segment.key))
            self.open[segment.key] = state
            if state.complete:
                self._segment_complete(state)
        return state

    def _mark_done(self, key: str, offset: int, mark: int) -> None:
        state = self.open.get(key)
        if state is None or state.bitmap[offset]:
            return
        state.bitmap[offset] = mark
        state.done += 1
        self.dirty = True
        if state.done >= state.rows:
            state.complete = True
            self._segment_complete(state)

    def _segment_complete(self, state: _SegmentState) -> None:
        """Move the watermark over the completed prefix, checkpoint, then release anyone waiting
        for these segments (a micro-batch may be committed by Spark only after our checkpoint)."""
        released = []
        for key in list(self.open):
            first = self.open[key]
            if not first.complete:
                break
            del self.open[key]
            self.checkpoint.segments.pop(key, None)
            if self.checkpoint.watermark is None or order_of(key) > order_of(
                self.checkpoint.watermark
            ):
                self.checkpoint.watermark = key
            released.append(first.segment)
        self.dirty = True
        self._save()
        for segment in released:
            segment.done.set()

    def _dead_letter(self, row_id: tuple, values: list, attempts: int) -> None:
        key, offset = row_id
        reason = (
            f"failed {attempts} times: the retry budget (spark.spout.retries="
            f"{self.cfg.retries}) is spent"
        )
        record = {
            "key": key,
            "offset": offset,
            "row": dict(zip(self.fields, values)),
            "reason": reason,
            "attempts": attempts,
            "time": datetime.datetime.now(datetime.UTC).isoformat(),
        }
        if self.dead_file is None:
            fd = os.open(self.cfg.dead_letter, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
            self.dead_file = os.fdopen(fd, "a", encoding="utf-8")
        self.dead_file.write(json.dumps(record, ensure_ascii=False) + "\n")
        self.dead_file.flush()
        os.fsync(self.dead_file.fileno())  # on disk before the checkpoint says the row is done
        self.log(f"row [{key}, {offset}] dead-lettered to {self.cfg.dead_letter}: {reason}", WARN)
        if self.cfg.dead_fields is not None:
            self.emit([record[f] for f in self.cfg.dead_fields], stream=DEAD_STREAM)
        del self.inflight[row_id]
        self.attempts.pop(row_id, None)
        self.checkpoint.dead += 1
        self._mark_done(key, offset, 2)

    # ---- housekeeping ---------------------------------------------------------------------------
    def _service(self) -> None:
        logs = self.handoff.logs
        while not logs.empty():
            message, level = logs.get_nowait()
            self.log(message, level)

    def _maybe_finish(self) -> None:
        """Marks the checkpoint finished once the source has ended and every row is done. Called
        after the last row's ack too, not only from next_tuple, so that a stop right after it still
        finds the checkpoint finished."""
        if not self.source_ended and self.pos >= len(self.rows) and not self.handoff.items.empty():
            self._next_chunk()  # takes the End queued behind the last chunk (or the next chunk)
        if (
            self.source_ended
            and not self.open
            and not self.inflight
            and not self.replay
            and self.pos >= len(self.rows)
            and self.handoff.items.empty()
        ):
            if not self.checkpoint.finished:
                self.checkpoint.finished = self.cfg.source == "dataframe"
                self.dirty = True
                self._save()
            if not self.finished_logged:
                self.finished_logged = True
                self.log(
                    f"all rows done: {self.checkpoint.acked} acked, "
                    f"{self.checkpoint.dead} dead-lettered"
                )

    def _maybe_save(self) -> None:
        if self.dirty and time.monotonic() - self.last_save >= self.cfg.checkpoint_interval:
            self._save()

    def _save(self) -> None:
        if not self.dirty:
            return
        segments = {}
        for key, state in self.open.items():
            if state.done:
                segments[key] = {"rows": state.rows, "done": to_ranges(state.bitmap)}
        # segments of the loaded checkpoint that the source has not fed again yet stay as they were
        watermark = self.checkpoint.watermark
        for key, saved in self.checkpoint.segments.items():
            if (
                key not in segments
                and key not in self.open
                and (watermark is None or order_of(key) > order_of(watermark))
            ):
                segments[key] = saved
        self.checkpoint.segments = segments
        ckpt.save(self.cfg.checkpoint_dir, self.checkpoint)
        self.dirty = False
        self.last_save = time.monotonic()

    def _die(self, message: str) -> None:
        """A problem no retry fixes: report it and exit 1 (the host restarts us with back-off
        and, if it keeps happening, stops the topology with the message in its report)."""
        print(f"spark spout: {message}", file=sys.stderr, flush=True)
        self.error(message)
        try:
            self._save()
        finally:
            try:
                self.flush()  # our client's buffered output: the error must reach the host
            finally:
                os._exit(1)


def main() -> None:
    SparkSpout().run()
