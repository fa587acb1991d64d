"""What a bolt task owes a Spark partition's run, and when it stops owing it (docs/spark.md §4.3,
docs/protocol.md §4.5, §4.7): pure bookkeeping, no process and no I/O, the time given by the
caller. host/spark/component_process.py writes and reads the pipes and keeps one `PendingTuples`
per process; this holds what it wrote and has not had answered, and judges what the bolt will
never answer:

- **input tuples in flight** (`in_flight`: id -> frame, for reports), at most `window` of them;
- **ticks** (`ticks`), awaited as input tuples are but taking no room in the window, so a sink that
  holds a window's worth of tuples until a tick still gets one;
- **a batch's finish** (`finish_id`), awaited until the run ends;
- **heartbeats** (`beats`), each of which, once answered, says what the bolt has read past.

Forgotten, as `host local` forgets a tuple no spout tuple tracks: a tick the bolt read past and
answered nothing since (`synced`), ticks owed alone for the message timeout (`expire_ticks`), and
the input tuples of a bolt that never acks (`synced`, judged on tuples a tick came after when the
bolt has ticks: `judged_as_any`). A late answer or anchor of something forgotten is let through.

The hot path works on `in_flight`, `next_id`, `written`, `answers` and `progressed` inline, with
no call per tuple (ComponentProcess._fill writes a batch of tuples; BoltOutput's `_handle` and
`_fast_frames`, host/spark/bolt_output.py, read their acks); `tuple_written` and `answered` are
that same bookkeeping one tuple at a time: the rules the hot path follows, and what the unit
tests drive.
"""

from __future__ import annotations

from collections import deque
from enum import Enum
from typing import NamedTuple

HEARTBEAT_SECS = 1.0  # Storm's ShellBolt writes one a second (docs/protocol.md §4.7)
MAX_BEATS = 8  # heartbeats written and not yet answered: no more are written


class Beat(NamedTuple):
    """A heartbeat written and not yet answered: what had been written before it, and how many
    answers had come, when it was written (`synced` reads them once its `sync` comes)."""

    id: int
    written: int  # input tuples written before it
    ticked: int  # input tuples written before the last tick written before it
    answers: int  # acks and fails read before it was written, ticks' included


class Other(Enum):
    """What an ack or fail of no input tuple in flight answered (`answered_other`)."""

    INPUT = "an input tuple in flight"  # not an other: what `answered` says of those
    FINISH = "the batch's finish"
    TICK = "a tick in flight"
    LATE = "something forgotten"  # let through
    STRAY = "nothing pending"  # never written, or already answered: a fault


class PendingTuples:
    """One process's awaited tuples, ticks, finish and heartbeats, over all its runs (ids are a
    count per process, as unique is all Storm asks). Not thread-safe."""

    def __init__(self, *, window: int, timeout: float, ticking: bool, heartbeats: bool) -> None:
        self.window = window  # host.bolt.max.in.flight: input tuples in flight at most
        self.timeout = timeout  # topology.message.timeout.secs
        self.ticking = ticking  # the bolt gets ticks (topology.tick.tuple.freq.secs)
        self.heartbeats = heartbeats  # the component answers heartbeats (its `heartbeats:`)
        self.in_flight: dict[str, bytes] = {}  # input tuple id -> its frame, written, unanswered
        self.ticks: dict[str, bytes] = {}  # tick id -> its frame, written and not answered
        self.finish_id: str | None = None  # the finish written and not yet acked
        self.beats: deque[Beat] = deque()  # the heartbeats not yet answered, oldest first
        self.next_id = 0  # the last id given
        self.written = 0  # input tuples written in the process's life
        self.ticked = 0  # input tuples written before the last tick
        self.answers = 0  # acks and fails in the process's life, ticks' included
        self.tick_answers = 0  # acks and fails of ticks (in `answers` too)
        self.forgotten = 0  # input tuples forgotten (never-acking bolt)
        self.ticks_forgotten = 0
        self.progressed = False  # something read or forgotten since the clock last looked
        self.progress_at = 0.0  # when the bolt last made progress, or nothing was owed
        self.run_started = 0.0
        self.next_beat = 0.0

    # -- writing ---------------------------------------------------------------------------------
    def new_id(self) -> int:
        self.next_id += 1
        return self.next_id

    def start_run(self, now: float) -> None:
        self.run_started = self.progress_at = now

    def tuple_written(self, frame: bytes) -> str:
        """An input tuple written: its id. (ComponentProcess._fill does the same inline.)"""
        self.next_id += 1
        tid = str(self.next_id)
        self.in_flight[tid] = frame
        self.written += 1
        return tid

    def tick_written(self, tid: str, frame: bytes) -> None:
        """A tick written with id `tid` (from `new_id`): awaited, outside the window."""
        self.ticks[tid] = frame
        self.ticked = self.written

    def finish_written(self) -> int:
        """The batch's finish written: its id, awaited."""
        fid = self.new_id()
        self.finish_id = str(fid)
        return fid

    # -- reading ---------------------------------------------------------------------------------
    def answered(self, tid: object) -> tuple[Other, bytes]:
        """An ack or fail of `tid` read: what it answered, and that tuple's frame (for an input
        tuple or a tick). (BoltOutput's `_handle` and `_fast_frames` do the same inline.)"""
        self.answers += 1
        frame = self.in_flight.pop(tid, None)  # type: ignore[call-overload]
        if frame is not None:
            return Other.INPUT, frame
        return self.answered_other(tid)

    def answered_other(self, tid: object) -> tuple[Other, bytes]:
        """An ack or fail of no input tuple in flight (already counted in `answers`): the
        finish's, a tick's, a forgotten tuple's (let through), or nothing's (a fault)."""
        if type(tid) is str:
            if tid == self.finish_id:
                self.finish_id = None
                return Other.FINISH, b""
            frame = self.ticks.pop(tid, None)
            if frame is not None:
                self.tick_answers += 1
                return Other.TICK, frame
        if self.forgotten or self.ticks_forgotten:
            return Other.LATE, b""
        return Other.STRAY, b""

    def may_anchor(self, anchor: object) -> bool:
        """Whether an emit may be anchored to `anchor`, which is no input tuple in flight (the
        caller looked there first, inline): the finish, a tick in flight, or anything once
        tuples or ticks were forgotten (a late emit of a forgotten one)."""
        return (
            anchor == self.finish_id
            or anchor in self.ticks
            or self.forgotten > 0
            or self.ticks_forgotten > 0
        )

    @property
    def settled(self) -> bool:
        """Nothing owed: no input tuple, tick or finish awaited."""
        return not self.in_flight and not self.ticks and self.finish_id is None

    # -- what the bolt will not answer -----------------------------------------------------------
    def synced(self, now: float) -> list[str]:
        """A heartbeat answered: the bolt has read everything written before it (components
        read their input in order), so what it did not answer of that, it will not answer, as
        host local judges a tuple no spout tuple tracks (docs/protocol.md §4.5):
        - ticks written before the heartbeat, if it answered nothing since the heartbeat was
          written (a bolt still acking may yet ack them): forgotten, and returned;
        - if it has never acked or failed an input tuple, every input tuple written before the
          heartbeat: a bolt that does not ack (storm.rb's Bolt, our Python `Bolt`), whose tuples
          are forgotten, else its partition would never end. A bolt with ticks is judged so
          only on tuples followed by a tick it read past: one that buffers until a tick (a
          Parquet sink) is silent until then, and must not be taken for a bolt that never
          acks (`judged_as_any`)."""
        if not self.beats:
            return []
        beat = self.beats.popleft()
        doomed = []
        if self.ticks and self.answers == beat.answers:
            doomed = self.forget_ticks(beat.id)
        judged = beat.written if self.judged_as_any(now) else beat.ticked
        in_flight = self.in_flight
        if self.answers == self.tick_answers and judged > self.forgotten and in_flight:
            for tid in list(in_flight)[: judged - self.forgotten]:
                del in_flight[tid]
            self.forgotten = judged
            self.progressed = True
        return doomed

    def judged_as_any(self, now: float) -> bool:
        """Whether a bolt that has never answered an input tuple is judged on every tuple it
        read past, not only on those a tick came after: one without ticks; one already found
        not to ack (tuples forgotten); or one whose run has waited for an answer as long as
        `host local` waits for an untracked tuple's (topology.message.timeout.secs), so that a
        bolt with a long tick period that never acks is not waited for until its next tick.
        (A sink's tuples forgotten so are still flushed before the run ends: it acks its end
        tick only after what the tick made it write.)"""
        return not self.ticking or self.forgotten > 0 or now - self.run_started >= self.timeout

    def forget_ticks(self, before: int | None) -> list[str]:
        """Forget the ticks in flight written before the message with id `before` (None: all),
        and return them; their late acks are then let through, as a forgotten tuple's are."""
        ticks = self.ticks
        doomed = [t for t in ticks if before is None or int(t) < before]
        for tid in doomed:
            del ticks[tid]
        if doomed:
            self.ticks_forgotten += len(doomed)
            self.progressed = True
        return doomed

    # -- the clock -------------------------------------------------------------------------------
    def owing(self, now: float) -> bool:
        """Whether anything is owed. Moves the progress clock to `now` when the bolt made progress
        since the last look, or when nothing is owed (the timeout counts from there)."""
        if self.progressed:
            self.progressed = False
            self.progress_at = now
        if self.in_flight or self.finish_id is not None or self.ticks:
            return True
        self.progress_at = now
        return False

    def overdue(self, now: float) -> bool:
        """Whether what is owed has gone without progress for longer than the message timeout."""
        return now - self.progress_at > self.timeout

    def expire_ticks(self, now: float) -> list[str] | None:
        """Overdue: if only ticks are owed they are forgotten, as host local forgets a tuple no
        spout tuple tracks once it has been in flight this long (docs/protocol.md §4.5), and
        returned; None if an input tuple or the finish is owed (the run has timed out)."""
        if self.in_flight or self.finish_id is not None:
            return None
        doomed = self.forget_ticks(None)
        self.progress_at = now
        return doomed

    def beat_due(self, now: float, input_done: bool) -> bool:
        """Whether to write a heartbeat now: one a second (HEARTBEAT_SECS), or at once as a probe
        when its answer can decide something (`synced`): the input tuples of a bolt that has
        never acked one, with the window full or the input all written (a bolt with ticks: those
        a tick came after), or, once the input is written and answered, ticks. Never more than
        MAX_BEATS unanswered; none to a component with `heartbeats: false`."""
        if not self.heartbeats or len(self.beats) >= MAX_BEATS:
            return False
        if now >= self.next_beat:
            return True
        if self.beats:
            return False
        if input_done and not self.in_flight and self.ticks:
            return True
        window_full = input_done or len(self.in_flight) >= self.window
        never_answered = self.answers == self.tick_answers  # no input tuple acked or failed
        judged = self.written if self.judged_as_any(now) else self.ticked
        return never_answered and window_full and judged > self.forgotten

    def beat_written(self, now: float) -> int:
        """A heartbeat written now: its id, its answer awaited (`synced`)."""
        self.next_beat = now + HEARTBEAT_SECS
        hid = self.new_id()
        self.beats.append(Beat(hid, self.written, self.ticked, self.answers))
        return hid
