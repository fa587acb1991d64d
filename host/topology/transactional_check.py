"""Checking a transactional topology before anything starts (docs/transactional.md §3): the
`batch:` roles, the transactional id, the one batch spout, and the batch group's shape. Called
from `host.topology.validation.validate`; every problem is a TopologyError naming the file, the
component and what to change.
"""

from __future__ import annotations

from host.errors import TopologyError
from host.topology.batch_group import batch_group, batch_spout, feeds, find_cycle
from host.topology.model import (
    BATCH_BOLT,
    BATCH_ROLES,
    BATCH_SPOUT,
    COMMITTER,
    SPOUT,
    TRANSACTIONAL_ID,
    Component,
    Topology,
)

# the id names a directory: <state dir>/transactional/<id>/ (docs/transactional.md §3)
_FORBIDDEN_ID_CHARS = "/\\\0"
_HOW_TO_DECLARE = (
    "add 'transactional: {id: NAME}' at the top level of the topology file "
    '(Python builder: builder.transactional("NAME"))'
)


def batch_problem(value: object, kind: str) -> str | None:
    """What is wrong with a component's `batch:` value for a component of `kind`, or None."""
    if value is None:
        return None
    if not isinstance(value, str) or value not in BATCH_ROLES:
        return (
            f"batch must be one of {', '.join(BATCH_ROLES)} (or left out for an ordinary "
            f"component), got {value!r}"
        )
    if kind == SPOUT and value != BATCH_SPOUT:
        return (
            f"'batch: {value}' is for bolts: a spout is either the batch spout "
            f"('batch: spout') or has no 'batch:'"
        )
    if kind != SPOUT and value == BATCH_SPOUT:
        return (
            "'batch: spout' is for the spout that opens the batches: a bolt takes "
            "'batch: bolt' or 'batch: committer' (or no 'batch:' to be a plain member)"
        )
    return None


def check_batch(value: object, kind: str, *, file: str | None, component: str) -> str | None:
    """A component's `batch:` value, if it is one for a component of `kind`."""
    problem = batch_problem(value, kind)
    if problem:
        raise TopologyError(problem, file=file, component=component, key="batch")
    return value if isinstance(value, str) else None


def check_batch_component(c: Component, file: str | None) -> None:
    """What one component's declaration says wrong about its `batch:` role (before the checks
    that need the whole topology)."""
    check_batch(c.batch, c.kind, file=file, component=c.id)
    if c.batch is None:
        return
    where = {"file": file, "component": c.id}
    if c.serializer != "json":
        raise TopologyError(
            f"a 'batch: {c.batch}' component speaks JSON: the batch/1 extension is defined for "
            f"'serializer: json' only; remove 'serializer: {c.serializer}'",
            key="serializer",
            **where,
        )
    if c.batch == COMMITTER and not c.inputs:
        raise TopologyError(
            "a committer must have inputs: it commits what members of the batch group send it; "
            "subscribe it to the batch spout or a bolt downstream of it, e.g. "
            "'inputs: {partial: global}'",
            key="inputs",
            **where,
        )


def check_transactional(topology: Topology) -> None:
    """The rules of docs/transactional.md §3 that need the whole topology; the components'
    references are already checked (`validate` runs this after them)."""
    file = topology.source
    declared = topology.config.get(TRANSACTIONAL_ID)
    if declared is not None:
        _check_id(declared, file)
    batch_components = [c for c in topology.components if c.batch is not None]
    if declared is None:
        # a linear DRPC topology's finish-batch bolts: each request is a batch, with no stored
        # state and so no id (docs/drpc.md §3.2); `host.topology.drpc_check` checks them
        if batch_components and not topology.is_linear_drpc:
            c = batch_components[0]
            raise TopologyError(
                f"'batch: {c.batch}' needs a transactional topology: {_HOW_TO_DECLARE}; "
                f"NAME keys the batches' stored state",
                file=file,
                component=c.id,
                key="batch",
            )
        return
    _check_one_batch_spout(topology, file)
    members = batch_group(topology)
    _check_no_cycle(topology, members, file)
    _check_members(topology, members, file)
    _check_component_ids(topology, declared, file)


def _check_id(value: object, file: str | None) -> None:
    where = {"file": file, "key": TRANSACTIONAL_ID}
    if not isinstance(value, str) or not value.strip():
        raise TopologyError(
            f"the transactional id must be a non-empty string, got {value!r} "
            f"('transactional: {{id: NAME}}'; quote it in YAML)",
            **where,
        )
    bad = sorted({ch for ch in value if ch in _FORBIDDEN_ID_CHARS}, key=repr)
    if bad or value in (".", ".."):
        shown = " ".join(repr(ch)[1:-1] for ch in bad) if bad else value
        raise TopologyError(
            f"the transactional id {value!r} names the directory of the batches' state "
            f"(<state dir>/transactional/<id>/): it may not be . or .. nor contain / \\ or NUL "
            f"(found {shown})",
            **where,
        )


def _check_one_batch_spout(topology: Topology, file: str | None) -> None:
    spouts = [c for c in topology.spouts if c.batch == BATCH_SPOUT]
    if not spouts:
        raise TopologyError(
            f"a transactional topology needs exactly one spout with 'batch: spout' (the spout "
            f"that opens the batches); none has it. The spouts are: "
            f"{', '.join(c.id for c in topology.spouts)}",
            file=file,
            key="transactional",
        )
    if len(spouts) > 1:
        raise TopologyError(
            f"a second batch spout ({spouts[0].id!r} is the first): a transactional topology "
            f"has exactly one spout with 'batch: spout'; remove it from all but one",
            file=file,
            component=spouts[1].id,
            key="batch",
        )


def _check_no_cycle(topology: Topology, members: tuple[str, ...], file: str | None) -> None:
    cycle = find_cycle(topology, members)
    if cycle is not None:
        raise TopologyError(
            f"the batch group has a cycle: {' -> '.join(cycle)}; a member finishes an attempt "
            f"only once everything that feeds it has (docs/transactional.md §2.5), so a cycle "
            f"would never finish: remove one of these subscriptions",
            file=file,
            component=cycle[0],
            key="inputs",
        )


def _check_members(topology: Topology, members: tuple[str, ...], file: str | None) -> None:
    spout = batch_spout(topology)
    assert spout is not None  # _check_one_batch_spout ran
    inside = set(members)
    for c in topology.components:
        if c.batch in (BATCH_BOLT, COMMITTER) and c.id not in inside:
            raise TopologyError(
                f"a 'batch: {c.batch}' bolt must be downstream of the batch spout "
                f"{spout.id!r}, and nothing it subscribes to is: subscribe it to {spout.id!r} "
                f"or to a bolt downstream of it (or drop 'batch: {c.batch}')",
                file=file,
                component=c.id,
                key="inputs",
            )
    for member in members:
        for source in feeds(topology, member):
            if source not in inside:
                raise TopologyError(
                    f"is in the batch group (downstream of the batch spout {spout.id!r}) and is "
                    f"also fed by {source!r}, which is not: every tuple a member receives must "
                    f"belong to a batch. Subscribe it only to members of the group "
                    f"({', '.join(members)}), or give {source!r}'s stream to a bolt outside it",
                    file=file,
                    component=member,
                    key=f"inputs.{source}",
                )


def _check_component_ids(topology: Topology, declared: str, file: str | None) -> None:
    """Storm lets a component's config set the transactional id; here there is one per
    topology, and a component saying otherwise would be sent a different id than the one its
    state is stored under."""
    for c in topology.components:
        own = c.config.get(TRANSACTIONAL_ID)
        if own is not None and own != declared:
            raise TopologyError(
                f"a component's config cannot give another transactional id ({own!r}; the "
                f"topology's is {declared!r}): remove it from the component's config",
                file=file,
                component=c.id,
                key=TRANSACTIONAL_ID,
            )


def with_transactional_id(config: object, transactional_id: object, *, file: str | None) -> object:
    """`config` with `topology.transactional.id` set from a native file's `transactional:` or
    the builder's `transactional(id)`. A config that already gives another id is an error; a
    config that is not a mapping is returned as it is, for `check_config` to report."""
    if not isinstance(transactional_id, str) or not transactional_id:
        raise TopologyError(
            f"the transactional id must be a non-empty string, got {transactional_id!r} "
            f"(quote it in YAML)",
            file=file,
            key="transactional.id",
        )
    if not isinstance(config, dict):
        return config
    given = config.get(TRANSACTIONAL_ID)
    if given is not None and given != transactional_id:
        raise TopologyError(
            f"the config gives another transactional id ({given!r}) than 'transactional: "
            f"{{id: {transactional_id}}}': give it once, with 'transactional:'",
            file=file,
            key=TRANSACTIONAL_ID,
        )
    return {**config, TRANSACTIONAL_ID: transactional_id}
