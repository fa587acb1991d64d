"""`topology.debug: true`: the host's log gets a line for each emit, each tuple a bolt task is
given, each ack and fail of a bolt, and each spout tuple acked or failed to its spout, with what
Storm's executor logs for them (`Task.getOutgoingTasks`, `Executor.accept`,
`BoltOutputCollectorImpl.ack` / `fail`, `SpoutExecutor.ackSpoutMsg` / `failSpoutMsg`). Per
component, as Storm honours the key in a component's own config (docs/contracts.md).

`install` runs once, before the run: it wraps the data path's and the debugged links' methods on
their instances. With the key off everywhere it wraps nothing, so debug costs nothing then; with it
on for one component, the other components pay one set lookup per emit and per spout outcome.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from host.runtime.bolt_link import BoltLink
from host.runtime.spout_link import SpoutLink
from host.topology.component_config import component_settings
from host.topology.model import Topology
from multilang.codec import END, EncodeError, dumps, shorten
from multilang.messages import Ack, Emit, Fail

if TYPE_CHECKING:
    from host.runtime.acker import Outcome
    from host.runtime.data_path import DataPath
    from host.runtime.link import Link

log = logging.getLogger("host")

SHOWN_BYTES = 1000  # of a tuple as written to a bolt (then its size)
REMEMBERED = 100_000  # per bolt task: tuples written and not yet acked whose text is kept


def debugged(topology: Topology) -> set[str]:
    """The components whose effective config sets `topology.debug`."""
    return {c.id for c in topology.components if component_settings(topology, c).debug}


def install(topology: Topology, path: DataPath) -> None:
    """Log what the debugged components do; nothing at all when none is."""
    components = debugged(topology)
    if not components:
        return
    path.bolt_emit = _emits(path.bolt_emit, components)  # type: ignore[method-assign,assignment]
    path.spout_emit = _emits(path.spout_emit, components)  # type: ignore[method-assign,assignment]
    spout_tasks = {
        task
        for task, link in path.links.items()
        if isinstance(link, SpoutLink) and link.cid in components
    }
    outcomes = _outcomes(path, path.spout_outcomes, spout_tasks)
    path.spout_outcomes = outcomes  # type: ignore[method-assign]
    for link in path.links.values():
        if isinstance(link, BoltLink) and link.cid in components:
            _bolt(link)


def _json(value: Any) -> str:
    try:
        return dumps(value)
    except EncodeError:
        return repr(value)


def _emits(emit: Callable[[Any, Emit], None], components: set[str]) -> Callable[[Any, Emit], None]:
    """Storm's "Emitting" lines: the emitting task, its component, the stream and the values
    (and the anchors or the message id, which Storm's line leaves out)."""

    def logged(link: Link, m: Emit) -> None:
        if link.cid in components:
            what = "Emitting tuple" if m.task is None else f"Emitting direct to task {m.task}"
            extra = f" anchors={_json(list(m.anchors))}" if m.anchors else ""
            if m.id is not None:
                extra += f" message id={_json(m.id)}"
            log.info(
                "%s: task=%d component=%s stream=%s values=%s%s",
                what,
                link.task,
                link.cid,
                m.stream,
                _json(m.values),
                extra,
            )
        emit(link, m)

    return logged


def _outcomes(
    path: DataPath, outcomes: Callable[..., None], spout_tasks: set[int]
) -> Callable[..., None]:
    """Storm's "SPOUT Acking" / "SPOUT Failing" lines: each spout tuple acked or failed to its
    spout, with the reason of a fail as Storm names it (TIMEOUT, FAIL-STREAM)."""

    def logged(done: list[Outcome], ok: bool, timed_out: bool = False) -> None:
        for o in done:
            if o.spout_task in spout_tasks:
                link = path.links[o.spout_task]
                if ok:
                    latency = "" if o.latency is None else f" latency={o.latency * 1000:.1f}ms"
                    log.info(
                        "SPOUT Acking message id=%s: task=%d component=%s%s",
                        _json(o.msg_id),
                        o.spout_task,
                        link.cid,
                        latency,
                    )
                else:
                    log.info(
                        "SPOUT Failing message id=%s: task=%d component=%s REASON: %s",
                        _json(o.msg_id),
                        o.spout_task,
                        link.cid,
                        "TIMEOUT" if timed_out else "FAIL-STREAM",
                    )
        outcomes(done, ok, timed_out)

    return logged


def _bolt(link: BoltLink) -> None:
    """Storm's "Processing received" line for each tuple the bolt task is given (as written to
    it: source, stream, source task, values and id), and its "BOLT ack" / "BOLT fail" lines,
    with the milliseconds since the tuple was written."""
    texts: dict[int, str] = {}  # tuple id -> the tuple as written, until acked or failed
    offer, handle = link.offer, link.handle

    def offered(tid: int, roots: tuple, frame: bytes) -> None:
        text = shorten(frame[: -len(END)] if frame.endswith(END) else frame, SHOWN_BYTES)
        log.info("Processing received tuple for task %d (%s): %s", link.task, link.cid, text)
        if len(texts) >= REMEMBERED:
            del texts[next(iter(texts))]  # the oldest: a bolt that does not ack
        texts[tid] = text
        offer(tid, roots, frame)

    def handled(messages: Any) -> None:
        for m in messages:
            typ = type(m)
            if typ is Ack or typ is Fail:
                try:
                    key = int(m.id) if type(m.id) is str else None
                except ValueError:
                    key = None
                entry = None if key is None else link.in_flight.get(key)
                if entry is not None:
                    log.info(
                        "BOLT %s task=%d (%s) time=%.1fms tuple: %s",
                        "ack" if typ is Ack else "fail",
                        link.task,
                        link.cid,
                        (link.path.now - entry[2]) * 1000,
                        texts.pop(key, f"id {m.id}"),  # type: ignore[arg-type]
                    )
            handle((m,))  # one at a time: the lines of its emits come in the order written

    link.offer = offered  # type: ignore[method-assign]
    link.inline_offer = False  # every tuple through `offered`, not DataPath.send_copies's shortcut
    link.handle = handled  # type: ignore[method-assign]
