"""A linear DRPC topology as declared (docs/drpc.md §3.2; Storm's `LinearDRPCTopologyBuilder`):
a function and its bolts in order, each with the grouping it is fed with. `expand` turns it into
the components the host runs: `drpc-request` (in the host), the bolts, each fed by the one
before on its default stream, and `drpc-result` (in the host), fed by the last.

Our YAML's `drpc:` block (`host.topology.native`) and the Python builder's `linear_drpc`
(`LinearDRPCDeclarer`, below) both come here.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from host.errors import TopologyError
from host.topology.model import (
    ALL,
    BATCH_BOLT,
    BOLT,
    DIRECT,
    DRPC_REQUEST,
    DRPC_REQUEST_ID,
    DRPC_RESULT,
    DRPC_RESULT_ID,
    FIELDS,
    GLOBAL,
    LOCAL_OR_SHUFFLE,
    NONE,
    PARTIAL_KEY,
    SHUFFLE,
    SPOUT,
)
from host.topology.raw import RawComponent, RawInput, in_host_part

RESERVED_IDS = (DRPC_REQUEST_ID, DRPC_RESULT_ID)


@dataclass
class LinearBolt:
    """One bolt of the chain as given: the bolt (without inputs), how it is fed (a grouping and
    its fields; none given: shuffle) and whether it is told when it has all of a request."""

    raw: RawComponent
    groupings: list[tuple[object, object]] = field(default_factory=list)
    finish_batch: object = False


def expand(
    function: object, bolts: Sequence[LinearBolt], *, file: str | None
) -> list[RawComponent]:
    """The chain's components, in order: drpc-request, the bolts, drpc-result. The function and
    the bolts' own values are checked when the topology is built."""
    if not bolts:
        raise TopologyError(
            "a linear DRPC topology needs at least one bolt, e.g. "
            "'drpc: {function: exclaim, bolts: [{id: exclaim, command: [...], outputs: [id, "
            "result]}]}'",
            file=file,
            key="drpc.bolts",
        )
    components = [in_host_part(DRPC_REQUEST_ID, SPOUT, DRPC_REQUEST, function=function)]
    previous: object = DRPC_REQUEST_ID
    for bolt in bolts:
        component = str(bolt.raw.id)
        where = {"file": file, "component": component}
        if bolt.raw.id in RESERVED_IDS:
            raise TopologyError(
                f"{bolt.raw.id!r} is the id of a part the host adds to a linear DRPC topology "
                f"({' and '.join(RESERVED_IDS)}); give the bolt another id",
                key="id",
                **where,
            )
        if len(bolt.groupings) > 1:
            raise TopologyError(
                "a bolt of a linear DRPC topology is fed by the bolt before it with one "
                f"grouping; {len(bolt.groupings)} were given",
                key="grouping",
                **where,
            )
        if not isinstance(bolt.finish_batch, bool):
            raise TopologyError(
                f"finish_batch must be true or false, got {bolt.finish_batch!r}",
                key="finish_batch",
                **where,
            )
        grouping, fields = bolt.groupings[0] if bolt.groupings else (SHUFFLE, ())
        raw = copy.copy(bolt.raw)
        raw.inputs = [RawInput(previous, grouping, fields)]
        raw.batch = BATCH_BOLT if bolt.finish_batch else None
        components.append(raw)
        previous = raw.id
    result = in_host_part(DRPC_RESULT_ID, BOLT, DRPC_RESULT)
    result.inputs = [RawInput(previous, SHUFFLE)]
    components.append(result)
    return components


# ---- the Python builder's side ------------------------------------------------------------------


def _field_list(fields: tuple[object, ...]) -> object:
    """`fields("a", "b")` and `fields(["a", "b"])` mean the same."""
    if len(fields) == 1 and isinstance(fields[0], (list, tuple)):
        return fields[0]
    return fields


class LinearBoltDeclarer:
    """What `LinearDRPCDeclarer.bolt` returns: how the bolt is fed by the one before it (Storm's
    `LinearDRPCInputDeclarer`), e.g. `.fields("id", "follower")`; shuffle when none is said."""

    def __init__(self, bolt: LinearBolt):
        self._bolt = bolt

    def grouping(self, grouping: str, fields: Sequence[str] = ()) -> LinearBoltDeclarer:
        """Any grouping by name."""
        self._bolt.groupings.append((grouping, fields))
        return self

    def shuffle(self) -> LinearBoltDeclarer:
        return self.grouping(SHUFFLE)

    def fields(self, *fields: str | Sequence[str]) -> LinearBoltDeclarer:
        self._bolt.groupings.append((FIELDS, _field_list(fields)))
        return self

    def partial_key(self, *fields: str | Sequence[str]) -> LinearBoltDeclarer:
        self._bolt.groupings.append((PARTIAL_KEY, _field_list(fields)))
        return self

    def all(self) -> LinearBoltDeclarer:
        return self.grouping(ALL)

    def global_(self) -> LinearBoltDeclarer:
        return self.grouping(GLOBAL)

    def none(self) -> LinearBoltDeclarer:
        return self.grouping(NONE)

    def direct(self) -> LinearBoltDeclarer:
        return self.grouping(DIRECT)

    def local_or_shuffle(self) -> LinearBoltDeclarer:
        return self.grouping(LOCAL_OR_SHUFFLE)


class LinearDRPCDeclarer:
    """What `TopologyBuilder.linear_drpc(function)` returns: add the bolts in order.

    ```
    drpc = b.linear_drpc("reach")
    drpc.bolt("tweeters", ["python3", "tweeters.py"], outputs=["id", "tweeter"], parallelism=2)
    drpc.bolt("distinct", ["python3", "distinct.py"], outputs=["id", "count"],
              finish_batch=True).fields("id", "follower")
    ```
    """

    def __init__(self, function: object):
        self.function = function
        self.bolts: list[LinearBolt] = []

    def bolt(
        self,
        id: str,
        command: Sequence[str],
        outputs: Sequence[str] | Mapping[str, Sequence[str]] | None = None,
        parallelism: int = 1,
        *,
        config: Mapping[str, object] | None = None,
        cwd: str | None = None,
        env: Mapping[str, str] | None = None,
        serializer: str = "json",
        heartbeats: bool = True,
        finish_batch: bool = False,
    ) -> LinearBoltDeclarer:
        """The next bolt: fed by the one before (the first by drpc-request's [request, args]);
        its default stream carries the request id first. `finish_batch=True`: it speaks
        batch/1 and is told once it has all of a request (docs/drpc.md §3.2)."""
        raw = RawComponent(
            id,
            BOLT,
            command,
            outputs,
            parallelism,
            config,
            cwd,
            env,
            serializer,
            heartbeats,
            True,
        )
        bolt = LinearBolt(raw, finish_batch=finish_batch)
        self.bolts.append(bolt)
        return LinearBoltDeclarer(bolt)
