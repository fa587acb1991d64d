"""Where the client libraries for other languages live, and the environment that finds them."""

from __future__ import annotations

import os
from pathlib import Path

_HERE = Path(__file__).resolve().parent

BASH_LIBRARY = _HERE / "bash" / "multilang.sh"
NODE_PATH_DIR = _HERE / "node"  # holds the `multilang` CommonJS package


def client_environment(base: dict[str, str] | None = None) -> dict[str, str]:
    """`base` (default: os.environ) plus MULTILANG_SH and NODE_PATH for our bash and Node clients.
    NODE_PATH keeps what the user had, after ours."""
    env = dict(os.environ if base is None else base)
    env["MULTILANG_SH"] = str(BASH_LIBRARY)
    node_path = env.get("NODE_PATH")
    env["NODE_PATH"] = str(NODE_PATH_DIR) + (os.pathsep + node_path if node_path else "")
    return env
