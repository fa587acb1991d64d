"""Storm's DRPC classes as a Flux file names them (docs/drpc.md §3.1): `DRPCSpout` and
`ReturnResults`. Neither runs as a process: the host serves DRPC itself and runs them inside it,
so a Flux file gets a Component with no command (`in_host`), built the way Flux builds objects
(`host.topology.flux_beans`)."""

from __future__ import annotations

from dataclasses import dataclass

from host.topology.drpc_check import function_problem
from host.topology.flux_beans import Args, ArgumentError, JavaClass
from host.topology.model import BOLT, DRPC_SPOUT, RETURN_RESULTS, SPOUT

DRPC_SPOUT_CLASS = "org.apache.storm.drpc.DRPCSpout"
RETURN_RESULTS_CLASS = "org.apache.storm.drpc.ReturnResults"


@dataclass(frozen=True)
class InHostPart:
    """What constructing one of the classes means: the part of the host it stands for, and the
    function a DRPCSpout serves."""

    role: str
    kind: str
    function: str | None = None

    @property
    def class_name(self) -> str:
        return DRPC_SPOUT_CLASS if self.role == DRPC_SPOUT else RETURN_RESULTS_CLASS


def _new_drpc_spout(args: Args) -> InHostPart:
    """DRPCSpout(String function). Its other constructor, (String function, ILocalDRPC drpc), is
    Storm's local mode, refused by having no entry: this host is the DRPC server."""
    (function,) = args
    problem = function_problem(function)
    if problem:
        raise ArgumentError(f"DRPCSpout(String function): {problem}")
    assert isinstance(function, str)
    return InHostPart(DRPC_SPOUT, SPOUT, function)


def _new_return_results(args: Args) -> InHostPart:
    return InHostPart(RETURN_RESULTS, BOLT)


DRPC_CLASSES: dict[str, JavaClass] = {
    DRPC_SPOUT_CLASS: JavaClass(
        DRPC_SPOUT_CLASS,
        {1: _new_drpc_spout},
        constructor_usage=(
            "constructorArgs must be [FUNCTION] (DRPCSpout(String function)); the form with an "
            "ILocalDRPC is Storm's local mode, and this host serves DRPC itself (docs/drpc.md)"
        ),
    ),
    RETURN_RESULTS_CLASS: JavaClass(
        RETURN_RESULTS_CLASS,
        {0: _new_return_results},
        constructor_usage="it has only ReturnResults()",
    ),
}
