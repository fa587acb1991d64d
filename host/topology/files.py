"""`load(path)`: a topology file of any kind -> the validated Topology. `.py` files are run
(`host.topology.python_file`); YAML files are ours (`host.topology.native`) or Flux
(`host.topology.flux`), told apart by their keys."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TypeGuard

from host.errors import TopologyError
from host.topology.flux import load_flux
from host.topology.flux_env import substitute_env
from host.topology.model import Topology
from host.topology.native import from_document
from host.topology.python_file import load_python
from host.topology.targets import LOCAL, Target
from host.topology.yaml_text import parse_yaml_text, read_text


def load(
    path: str | os.PathLike[str], env_filter: bool = False, *, target: Target = LOCAL
) -> Topology:
    """Load and validate a topology file: `.yaml`/`.yml` (our format; Flux is detected by its
    keys) or `.py` (a Python file defining a module-level `topology`, a Topology or a
    TopologyBuilder). Raises TopologyError for anything wrong with it. `env_filter`: replace
    `${ENV-NAME}` in YAML files with environment variable NAME before parsing (Flux's `-e`).
    `target`: the runtime that is to run it, `host local` unless said (`host.topology.targets`:
    `host spark` runs batch bolts and committers downstream of a plain spout)."""
    path = Path(path)
    if not path.exists():
        raise TopologyError("no such file", file=str(path))
    if not path.is_file():
        raise TopologyError("is not a file", file=str(path))
    if path.suffix == ".py":
        return load_python(path, _base_dir(path), target)
    if path.suffix in (".yaml", ".yml"):
        return _load_yaml(path, env_filter, target)
    raise TopologyError(
        f"unknown kind of topology file '{path.suffix}': expected .yaml, .yml "
        f"(our format or Flux) or .py (a Python file that builds the topology)",
        file=str(path),
    )


def _base_dir(path: Path) -> Path:
    return Path(os.path.abspath(path.parent))


def _load_yaml(path: Path, env_filter: bool, target: Target) -> Topology:
    text = read_text(path)
    if env_filter:
        text = substitute_env(text, file=str(path))
    doc = parse_yaml_text(text, file=str(path))
    if is_flux(doc):
        return load_flux(
            doc, file=str(path), base_dir=_base_dir(path), env_filter=env_filter, target=target
        )
    return from_document(doc, file=str(path), base_dir=_base_dir(path), target=target)


def is_flux(doc: object) -> TypeGuard[dict[object, object]]:
    """Whether a parsed YAML document is a Flux topology rather than ours: Flux lists its spouts
    and bolts (each with a `className`) and wires them with `streams`; ours maps ids to
    components and declares inputs on the bolts."""
    if not isinstance(doc, dict):
        return False
    if any(key in doc for key in ("streams", "topologySource", "includes")):
        return True
    return any(
        isinstance(doc.get(key), list)
        and any(isinstance(item, dict) and "className" in item for item in doc[key])
        for key in ("spouts", "bolts")
    )
