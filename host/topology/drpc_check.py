"""Checking a topology's DRPC parts before anything starts (docs/drpc.md §3): the function names,
the in-host components (Storm's `DRPCSpout` and `ReturnResults`, a linear topology's
`drpc-request` and `drpc-result`), and the shape of a linear DRPC topology. Called from
`host.topology.validation.validate`; every problem is a TopologyError naming the file, the
component and the key.

The in-host parts run inside the host, not as processes, so they have no command, and what they
declare is fixed (`IN_HOST_OUTPUTS`): the runtime relies on both.
"""

from __future__ import annotations

from host.errors import TopologyError
from host.topology.model import (
    BATCH_BOLT,
    DRPC_REQUEST,
    DRPC_RESULT,
    DRPC_SPOUT,
    IN_HOST_KINDS,
    IN_HOST_OUTPUTS,
    IN_HOST_ROLES,
    RETURN_RESULTS,
    TRANSACTIONAL_ID,
    Component,
    Topology,
)
from multilang.messages import DEFAULT_STREAM

# the key a function is given under, per role, for messages: a native spout's `drpc_spout:`, a
# linear topology's `drpc: {function: ...}` (Flux checks its `constructorArgs` itself)
FUNCTION_KEYS = {DRPC_SPOUT: "drpc_spout", DRPC_REQUEST: "drpc.function"}
# what the parts stand for, for messages
PART_NAMES = {
    DRPC_SPOUT: "a DRPC spout (Storm's DRPCSpout)",
    RETURN_RESULTS: "a return-results bolt (Storm's ReturnResults)",
    DRPC_REQUEST: "a linear DRPC topology's drpc-request",
    DRPC_RESULT: "a linear DRPC topology's drpc-result",
}


def function_problem(value: object) -> str | None:
    """What is wrong with a DRPC function's name, or None. It is the path segment of
    `/drpc/{func}/...` (docs/drpc.md §1), so it has no `/`, and no whitespace."""
    if not isinstance(value, str) or not value:
        return f"a DRPC function's name must be a non-empty string, got {value!r}"
    if "/" in value:
        return (
            f"a DRPC function's name cannot contain '/' (it is one path segment of "
            f"/drpc/FUNCTION/ARGS), got {value!r}"
        )
    if any(ch.isspace() for ch in value) or not value.isprintable():
        return f"a DRPC function's name cannot contain whitespace, got {value!r}"
    return None


def check_function(value: object, *, file: str | None, component: str, key: str) -> str:
    """A DRPC function's name, if it is one (see `function_problem`)."""
    problem = function_problem(value)
    if problem:
        raise TopologyError(problem, file=file, component=component, key=key)
    assert isinstance(value, str)
    return value


# ---- one component ------------------------------------------------------------------------------


def check_in_host_component(c: Component, file: str | None) -> None:
    """An in-host part's declaration, or a `drpc_function` on a component that is not one; the
    command, cwd and launch checks do not apply to these (`validate` skips them)."""
    where = {"file": file, "component": c.id}
    if c.in_host is None:
        if c.drpc_function is not None:
            raise TopologyError(
                "only a DRPC spout or a linear DRPC topology's drpc-request serves a function; "
                "this component runs a command",
                key="drpc_function",
                **where,
            )
        return
    if c.in_host not in IN_HOST_ROLES:
        raise TopologyError(
            f"in_host must be one of {', '.join(IN_HOST_ROLES)} (or None for a component that "
            f"runs a command), got {c.in_host!r}",
            key="in_host",
            **where,
        )
    part = PART_NAMES[c.in_host]
    if c.command:
        raise TopologyError(
            f"{part} runs inside the host: it has no command", key="command", **where
        )
    if c.kind != IN_HOST_KINDS[c.in_host]:
        raise TopologyError(
            f"{part} is a {IN_HOST_KINDS[c.in_host]}, declared here as a {c.kind}",
            key="kind",
            **where,
        )
    if dict(c.outputs) != IN_HOST_OUTPUTS[c.in_host]:
        fixed = IN_HOST_OUTPUTS[c.in_host]
        declares = (
            ", ".join(f"{s}: ({', '.join(f)})" for s, f in fixed.items()) if fixed else "nothing"
        )
        raise TopologyError(
            f"{part} declares {declares}; it cannot declare {dict(c.outputs)}",
            key="outputs",
            **where,
        )
    if c.batch is not None:
        raise TopologyError(
            f"{part} runs inside the host and takes no 'batch:'", key="batch", **where
        )
    if c.in_host in FUNCTION_KEYS:
        check_function(c.drpc_function, file=file, component=c.id, key=FUNCTION_KEYS[c.in_host])
    elif c.drpc_function is not None:
        raise TopologyError(
            f"{part} serves no function of its own (the request names it)",
            key="drpc_function",
            **where,
        )
    if c.in_host == RETURN_RESULTS and not c.inputs:
        raise TopologyError(
            "ReturnResults has no inputs: subscribe it to the bolt that emits "
            "[result, return-info], e.g. 'inputs: {exclaim: shuffle}'",
            key="inputs",
            **where,
        )


def check_linear_bolt(c: Component, file: str | None, *, last: bool) -> None:
    """A user bolt of a linear DRPC topology (docs/drpc.md §3.2), before the references between
    components are checked: its default stream carries the request id first, and the last
    bolt's also the result; `finish_batch` means batch/1, which is JSON only."""
    where = {"file": file, "component": c.id}
    if c.batch is not None and c.batch != BATCH_BOLT:
        raise TopologyError(
            f"a bolt of a linear DRPC topology is a plain bolt or a finish-batch one "
            f"('finish_batch: true'), not 'batch: {c.batch}'",
            key="batch",
            **where,
        )
    if c.batch == BATCH_BOLT and c.serializer != "json":
        raise TopologyError(
            f"a 'finish_batch: true' bolt speaks batch/1, which is defined for "
            f"'serializer: json' only; remove 'serializer: {c.serializer}'",
            key="serializer",
            **where,
        )
    fields = c.outputs.get(DEFAULT_STREAM) if isinstance(c.outputs, dict) else None
    if not isinstance(fields, (list, tuple)):
        fields = ()
    wanted = 2 if last else 1
    if len(fields) < wanted:
        what = (
            "the request id and the result, e.g. [id, result]: it is the last bolt, whose "
            "tuples drpc-result answers with"
            if last
            else "the request id first, e.g. [id, word]: the next bolt is fed with it"
        )
        raise TopologyError(
            f"its default stream must declare {what} (declared: {', '.join(fields) or 'none'})",
            key="outputs",
            **where,
        )


def last_linear_bolt(topology: Topology) -> str | None:
    """The id of the bolt feeding a linear topology's drpc-result (its first input), if any."""
    for c in topology.components:
        if c.in_host == DRPC_RESULT and c.inputs:
            return c.inputs[0].source
    return None


# ---- the whole topology -------------------------------------------------------------------------


def check_drpc(topology: Topology) -> None:
    """The rules that need the whole topology; run after the components' references are
    checked, before the transactional rules."""
    parts = [c for c in topology.components if c.in_host is not None]
    if not parts:
        return
    file = topology.source
    if topology.config.get(TRANSACTIONAL_ID) is not None:
        raise TopologyError(
            f"a topology with DRPC parts is not transactional ({parts[0].id!r} is one): remove "
            f"'transactional:' ({TRANSACTIONAL_ID}); a linear DRPC topology's requests are "
            f"batches without it (docs/drpc.md §3.2)",
            file=file,
            key=TRANSACTIONAL_ID,
        )
    for c in parts:
        if c.in_host == RETURN_RESULTS:
            _check_return_results_sources(topology, c)
    if topology.is_linear_drpc:
        _check_linear(topology)


def _check_return_results_sources(topology: Topology, c: Component) -> None:
    for inp in c.inputs:
        fields = topology.component(inp.source).outputs.get(inp.stream, ())
        if len(fields) < 2:
            raise TopologyError(
                f"ReturnResults takes a tuple's field 0 as the result and field 1 as the "
                f"return-info; stream {inp.stream!r} of {inp.source!r} declares "
                f"{len(fields)} field(s) ({', '.join(fields) or 'none'})",
                file=topology.source,
                component=c.id,
                key=f"inputs.{inp.source}",
            )


def _check_linear(topology: Topology) -> None:
    """drpc-request -> bolt -> ... -> bolt -> drpc-result, each fed only by the one before on
    its default stream, and nothing else (docs/drpc.md §3.2): the runtime finishes a request
    along this chain."""
    file = topology.source
    request = _the_one(topology, DRPC_REQUEST)
    result = _the_one(topology, DRPC_RESULT)
    for c in topology.components:
        where = {"file": file, "component": c.id}
        if c.in_host in (DRPC_SPOUT, RETURN_RESULTS):
            raise TopologyError(
                f"a linear DRPC topology ('drpc:') answers through drpc-result; "
                f"{PART_NAMES[c.in_host]} belongs to a topology without 'drpc:'",
                key="drpc",
                **where,
            )
        if c.is_spout and c is not request:
            raise TopologyError(
                "a linear DRPC topology has no spouts of its own: its requests come from "
                "drpc-request ('drpc:' excludes 'spouts:')",
                key="spouts",
                **where,
            )
    for end in (request, result):
        if end.parallelism != 1:
            raise TopologyError(
                f"{PART_NAMES[end.in_host or '']} runs as one task, got {end.parallelism}",
                file=file,
                component=end.id,
                key="parallelism",
            )
    subscribers: dict[str, list[str]] = {}
    for c in topology.bolts:
        for inp in c.inputs:
            subscribers.setdefault(inp.source, []).append(c.id)
    chain = [request.id]
    while chain[-1] != result.id:
        following = subscribers.get(chain[-1], [])
        if len(following) != 1:
            raise TopologyError(
                f"in a linear DRPC topology each component feeds exactly the next one; "
                f"{chain[-1]!r} feeds {', '.join(map(repr, following)) or 'nothing'}",
                file=file,
                component=chain[-1],
                key="drpc.bolts",
            )
        bolt = topology.component(following[0])
        where = {"file": file, "component": bolt.id}
        sources = {inp.source for inp in bolt.inputs}
        if len(bolt.inputs) != 1 or sources != {chain[-1]}:
            raise TopologyError(
                f"in a linear DRPC topology a bolt is fed only by the one before it "
                f"({chain[-1]!r}), on one stream",
                key="inputs",
                **where,
            )
        if bolt.inputs[0].stream != DEFAULT_STREAM:
            raise TopologyError(
                f"a bolt of a linear DRPC topology is fed by the default stream of the one "
                f"before, not {bolt.inputs[0].stream!r}",
                key=f"inputs.{chain[-1]}",
                **where,
            )
        chain.append(bolt.id)
    if len(chain) < 3:
        raise TopologyError(
            "a linear DRPC topology needs at least one bolt between drpc-request and "
            "drpc-result ('drpc: {function: ..., bolts: [...]}')",
            file=file,
            key="drpc.bolts",
        )
    outside = [c.id for c in topology.components if c.id not in chain]
    if outside:
        raise TopologyError(
            "is not on the linear DRPC chain "
            f"({' -> '.join(chain)}): a topology with 'drpc:' has only those bolts",
            file=file,
            component=outside[0],
            key="inputs",
        )


def _the_one(topology: Topology, role: str) -> Component:
    found = [c for c in topology.components if c.in_host == role]
    if len(found) != 1:
        other = DRPC_RESULT if role == DRPC_REQUEST else DRPC_REQUEST
        raise TopologyError(
            f"a linear DRPC topology has exactly one {role} part (and one {other}); "
            f"found {len(found)}{': ' + ', '.join(c.id for c in found) if found else ''}",
            file=topology.source,
            component=found[1].id if len(found) > 1 else None,
            key="drpc",
        )
    return found[0]
