"""What the engine asks of Spark's session (docs/spark.md §3): its settings from the topology and
`--master`, and the PySpark it needs."""

from __future__ import annotations

import os

from components.spark_spout.python_workers import driver_python_problem
from host.errors import HostError, TopologyError
from host.spark.plan import Plan

DEFAULT_MASTER = "local[*]"
MASTER_KEY = "spark.master"
SPARK_OWN_KEYS = "spark.spout."  # the Spark spout's settings, not Spark's
MIN_PYSPARK = (4, 2)  # DataSourceStreamReader.latestOffset(start, limit)
KILL_TIMEOUT_KEY, KILL_TIMEOUT = "spark.python.task.killTimeout", "200ms"


def spark_settings(plan: Plan, master: str | None) -> dict[str, str]:
    """The topology's `spark.*` config keys (not the Spark spout's `spark.spout.*`); `--master`
    wins over `spark.master`, which wins over local[*]. A cancelled task's Python worker, and the
    components it drives, are killed 200 ms after Spark notices the cancel unless the topology
    says otherwise (Spark's 2 s default leaves them alive up to 4 s: docs/spark.md §4.4)."""
    out = {KILL_TIMEOUT_KEY: KILL_TIMEOUT}
    out.update(
        (k, str(v))
        for k, v in plan.topology.config.items()
        if k.startswith("spark.") and not k.startswith(SPARK_OWN_KEYS)
    )
    out[MASTER_KEY] = master or out.get(MASTER_KEY) or DEFAULT_MASTER
    return out


def check_driver_python(settings: dict[str, str]) -> None:
    """Refuse, before anything starts, an interpreter for the Python workers that the driver
    cannot run itself (components/spark_spout/python_workers.py, docs/spark.md §6.2)."""
    problem = driver_python_problem(settings, os.environ)
    if problem is not None:
        raise TopologyError(problem)


def check_pyspark() -> None:
    import pyspark

    version = tuple(int(p) for p in pyspark.__version__.split(".")[:2] if p.isdigit())
    if version < MIN_PYSPARK:
        raise HostError(
            f"the Spark engine needs PySpark {'.'.join(map(str, MIN_PYSPARK))} or later (its "
            f"streaming Python data source API); this is {pyspark.__version__}"
        )
