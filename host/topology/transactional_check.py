"""Checking a transactional topology before anything starts (docs/transactional.md §3): the
`batch:` roles, the transactional id, the one batch spout, and the batch group's shape. Called
from `host.topology.validation.validate`; every problem is a TopologyError naming the file, the
component and what to change.
"""

from __future__ import annotations

from host.errors import TopologyError
from host.topology.batch_group import batch_group, batch_spout, downstream, feeds, find_cycle
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
from host.topology.targets import LOCAL, SPARK, Target

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


def check_transactional(topology: Topology, target: Target = LOCAL) -> None:
    """The rules of docs/transactional.md §3 that need the whole topology; the components'
    references are already checked (`validate` runs this after them). `target`: the runtime the
    topology is validated for; on Spark a topology without a batch spout is transactional all
    the same (`_spark_batch_group`)."""
    file = topology.source
    declared = topology.config.get(TRANSACTIONAL_ID)
    if declared is not None:
        _check_id(declared, file)
    batch_components = [c for c in topology.components if c.batch is not None]
    if declared is None and (not batch_components or topology.is_linear_drpc):
        # not transactional; or a linear DRPC topology's finish-batch bolts: each request is a
        # batch, with no stored state and so no id (docs/drpc.md §3.2), `drpc_check` checks them
        return
    if target == SPARK and batch_spout(topology) is None:
        members = _spark_batch_group(topology)
        opener = _spouts_words(topology)
    else:
        _check_batch_spout(topology, declared, batch_components, file)
        members = batch_group(topology)
        spout = batch_spout(topology)
        assert spout is not None  # _check_batch_spout ran
        opener = f"the batch spout {spout.id!r}"
    _check_no_cycle(topology, members, file)
    _check_members(topology, members, opener, file)
    if declared is not None:
        _check_component_ids(topology, declared, file)


def _spark_batch_group(topology: Topology) -> tuple[str, ...]:
    """On Spark, with no batch spout: every spout's micro-batches are the transactions (a plain
    spout staged in the driver, a Kafka source, the Spark spout's input: docs/spark.md
    §4.6-4.8), so the batch group is the spouts and everything downstream of them, in the
    topology's component order."""
    spouts = {c.id for c in topology.spouts}
    reached = spouts.union(*(downstream(topology, s) for s in spouts))
    return tuple(c.id for c in topology.components if c.id in reached)


def _spouts_words(topology: Topology) -> str:
    """What opens the batches on Spark when no spout is the batch spout, for the messages."""
    ids = [c.id for c in topology.spouts]
    return f"the spout {ids[0]!r}" if len(ids) == 1 else f"one of the spouts {', '.join(ids)}"


def _check_batch_spout(
    topology: Topology, declared: object, batch_components: list[Component], file: str | None
) -> None:
    """The one batch spout, and the id a batch spout's state is kept under."""
    if batch_spout(topology) is None and batch_components and not _has_drpc_parts(topology):
        raise _needs_batch_spout(topology, batch_components[0])
    if declared is None:
        c = batch_components[0]
        raise TopologyError(
            f"'batch: {c.batch}' needs a transactional topology: {_HOW_TO_DECLARE}; "
            f"NAME keys the batches' stored state",
            file=file,
            component=c.id,
            key="batch",
        )
    _check_one_batch_spout(topology, file)


def _needs_batch_spout(topology: Topology, c: Component) -> TopologyError:
    """A batch bolt or committer with no batch spout to open its batches: `host local` cannot
    run it, `host spark` can (every spout is transactional there)."""
    return TopologyError(
        f"'batch: {c.batch}' needs a transactional batch spout under `host local` (a spout "
        f"with 'batch: spout'), and no spout here has one; {_runs_on_spark(topology)}",
        file=topology.source,
        component=c.id,
        key="batch",
    )


def _runs_on_spark(topology: Topology) -> str:
    """The hint for a file `host spark` accepts as it is: the command to run, with its path."""
    file = topology.source
    command = f"python -m host spark {file}" if file else "python -m host spark"
    return (
        f"on Spark every spout is transactional (each micro-batch one transaction), so "
        f"`{command}` runs this topology as it is"
    )


def _has_drpc_parts(topology: Topology) -> bool:
    """DRPC requests are served by `host local` only (docs/spark.md §2.5): no Spark hint."""
    return any(c.in_host is not None for c in topology.components)


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
            f"{', '.join(c.id for c in topology.spouts)}"
            + ("" if _has_drpc_parts(topology) else f"; {_runs_on_spark(topology)}"),
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


def _check_members(
    topology: Topology, members: tuple[str, ...], opener: str, file: str | None
) -> None:
    """Batch bolts and committers are in the batch group, and the group is fed only from
    inside; `opener` names what opens the batches (the batch spout, or on Spark the spouts)."""
    inside = set(members)
    for c in topology.components:
        if c.batch in (BATCH_BOLT, COMMITTER) and c.id not in inside:
            raise TopologyError(
                f"a 'batch: {c.batch}' bolt must be downstream of {opener}, and nothing it "
                f"subscribes to is: subscribe it to {opener} or to a bolt downstream of it (or "
                f"drop 'batch: {c.batch}')",
                file=file,
                component=c.id,
                key="inputs",
            )
    for member in members:
        for source in feeds(topology, member):
            if source not in inside:
                raise TopologyError(
                    f"is in the batch group (downstream of {opener}) and is "
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
