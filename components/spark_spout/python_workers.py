"""Which interpreter Spark's Python workers run, for a session started in this process.

PySpark's SparkContext takes it from the `PYSPARK_PYTHON` environment variable alone
(pyspark/core/context.py, `pythonExec`); spark-submit sets that variable from the
`spark.pyspark.python` conf before it starts a Python driver (Spark's deploy/PythonRunner). A
driver started without spark-submit (`python -m host spark`, the Spark spout) does the same here,
so the conf means what it means under spark-submit: it wins over the variable, which wins over
this process's own interpreter.

The same path runs Python workers in the driver too, from the driver's working directory: Spark 4
plans a Python data source there (its lookup, creation and read planning run as Python workers
started with the data source's `pythonExec`, which is the SparkContext's), and in local mode every
task's worker is the driver's. A relative path such as `./env/bin/python` (an environment shipped
with `spark.archives`, unpacked in each executor's working directory) resolves in the driver's
working directory, where Spark does not unpack the archive (it goes under SparkFiles' root): the
driver must have it there too. `driver_python_problem` says so before a session starts,
instead of leaving it to the first Python worker's "Cannot run program" (docs/spark.md §6.2):
always for the Spark engine, whose sources are Python data sources; for the Spark spout, whose
job may use no Python in the driver on a cluster, in local mode only.
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Mapping, MutableMapping

PYTHON_KEY = "spark.pyspark.python"
PYTHON_ENV = "PYSPARK_PYTHON"
DRIVER_PYTHON_ENV = "PYSPARK_DRIVER_PYTHON"


def workers_python(spark_conf: Mapping[str, str], environ: Mapping[str, str]) -> str:
    """`spark.pyspark.python`, else `PYSPARK_PYTHON`, else this interpreter (which has the
    project installed, for local mode)."""
    return spark_conf.get(PYTHON_KEY) or environ.get(PYTHON_ENV) or sys.executable


def set_workers_python(spark_conf: Mapping[str, str], environ: MutableMapping[str, str]) -> str:
    """Set `PYSPARK_PYTHON` (read by the SparkContext when it starts) to `workers_python`, and
    `PYSPARK_DRIVER_PYTHON` to this interpreter unless set (the driver is this process); the
    interpreter set."""
    python = workers_python(spark_conf, environ)
    environ[PYTHON_ENV] = python
    environ.setdefault(DRIVER_PYTHON_ENV, sys.executable)
    return python


def all_in_driver(master: str) -> bool:
    """Whether every Python worker of `master` runs in the driver's JVM: `local` and
    `local[…]` (`local-cluster[…]` has executor JVMs, in directories of their own)."""
    return master == "local" or master.startswith("local[")


def driver_cannot_run(python: str, cwd: str, path: str | None) -> str | None:
    """Why the driver, in `cwd` with `path` as its PATH, cannot start `python` as Spark would
    (a relative path from `cwd`, a bare name through `path`); None when it can."""
    if os.sep not in python:
        if shutil.which(python, path=path) is None:
            return f"no {python!r} on the driver's PATH"
        return None
    where = python if os.path.isabs(python) else os.path.join(cwd, python)
    if not os.path.exists(where):
        return f"no such file from the driver's directory {cwd}"
    if os.path.isdir(where) or not os.access(where, os.X_OK):
        return f"{where} is not an executable file"
    return None


def driver_python_problem(spark_conf: Mapping[str, str], environ: Mapping[str, str]) -> str | None:
    """The error to stop with, before a session starts, when the driver cannot run the
    interpreter its Python workers will run (see the module docstring); None when it can."""
    python = workers_python(spark_conf, environ)
    reason = driver_cannot_run(python, os.getcwd(), environ.get("PATH"))
    if reason is None:
        return None
    source = (
        PYTHON_KEY
        if spark_conf.get(PYTHON_KEY)
        else f"{PYTHON_ENV} (spark-submit sets it from {PYTHON_KEY})"
    )
    return (
        f"{source} {python!r}: {reason}. Spark starts Python workers in the driver with it too "
        "(Spark 4 plans Python data sources there, from the driver's working directory), so the "
        "driver must be able to run it: use a path that exists on the driver and every executor "
        "host, or, for an environment shipped with spark.archives (…#env and ./env/bin/python), "
        "start the driver in a directory where the same archive is unpacked as ./env "
        "(docs/spark.md §6.2)"
    )
