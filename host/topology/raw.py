"""Components as declared (by our YAML or the Python builder), before any check: what
`host.topology.raw_to_model.build_topology` turns into the frozen model, checking each value."""

from __future__ import annotations

from dataclasses import dataclass, field

from multilang.messages import DEFAULT_STREAM


@dataclass
class RawInput:
    """An input as given, checked when the topology is built."""

    source: object
    grouping: object
    fields: object = ()
    stream: object = DEFAULT_STREAM


@dataclass
class RawComponent:
    """A spout or bolt as given, checked when the topology is built."""

    id: object
    kind: str
    command: object
    outputs: object
    parallelism: object
    config: object
    cwd: object
    env: object
    serializer: object
    heartbeats: object
    activate: object
    inputs: list[RawInput] = field(default_factory=list)
    pipelining: object = None
    kafka: object = None  # a `kafka:` block: command, outputs and config come from it
    batch: object = None  # "spout", "bolt", "committer" or None (docs/transactional.md §3)
    # one of the model's IN_HOST_ROLES for a DRPC part run inside the host (docs/drpc.md §3):
    # no command, fixed outputs; `drpc_function` is the function it serves
    in_host: str | None = None
    drpc_function: object = None


def in_host_part(
    component_id: object,
    kind: str,
    role: str,
    *,
    function: object = None,
    parallelism: object = 1,
    config: object = None,
) -> RawComponent:
    """A DRPC part run inside the host, as declared: everything a process would need is left
    out (its command, directory, environment and outputs are the builder's to fill in)."""
    return RawComponent(
        component_id,
        kind,
        None,
        None,
        parallelism,
        config,
        None,
        None,
        "json",
        True,
        True,
        in_host=role,
        drpc_function=function,
    )
