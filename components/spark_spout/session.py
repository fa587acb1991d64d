"""Starting Spark quietly, and calling the user's job.

The SparkSession runs in the spout's own process (the driver), started on a background thread so
the spout keeps answering the host while the JVM starts. Spark's console output is kept down:
our log4j2 configuration (root logger WARN, a few start-up warnings that say nothing actionable
at ERROR, one line per event on stderr), progress bars off. Every `spark.*` key of the component
config except `spark.spout.*` goes to the SparkSession builder, so `spark.master` moves the work
to a cluster without a code change.
"""

from __future__ import annotations

import importlib
import inspect
import os
import shutil
import sys
import tempfile
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from .python_workers import all_in_driver, driver_python_problem, set_workers_python

if TYPE_CHECKING:  # pyspark is imported when a session starts: it is slow to import
    from pyspark.sql import SparkSession

DEFAULTS = {
    "spark.master": "local[*]",
    "spark.ui.showConsoleProgress": "false",
    # Spark's TIMESTAMP as an annotated UTC instant, which Arrow reads with its time zone
    # (the default INT96 comes back as a naive timestamp)
    "spark.sql.parquet.outputTimestampType": "TIMESTAMP_MICROS",
}

LOG4J2 = """\
# written by components.spark_spout: Spark's log at WARN, one line per event, on stderr
rootLogger.level = {level}
rootLogger.appenderRef.stderr.ref = stderr
appender.stderr.type = Console
appender.stderr.name = stderr
appender.stderr.target = SYSTEM_ERR
appender.stderr.layout.type = PatternLayout
appender.stderr.layout.pattern = spark %p %c{{1}}: %m%n%ex
{quiet}
"""
# start-up and streaming warnings that need no action from the user
QUIET_LOGGERS = (
    "org.apache.hadoop.util.NativeCodeLoader",
    "org.apache.spark.util.Utils",
    "org.apache.spark.sql.execution.streaming.ResolveWriteToStream",
    "org.apache.spark.sql.execution.streaming.runtime.ResolveWriteToStream",
    "org.apache.spark.scheduler.DAGScheduler",
    "org.apache.spark.sql.execution.streaming.CheckpointFileManager",
    "org.apache.spark.sql.execution.streaming.checkpointing.CheckpointFileManager",
)


def ensure_java_home() -> str | None:
    """JAVA_HOME for PySpark's launcher: kept if set, else derived from `java` on PATH."""
    home = os.environ.get("JAVA_HOME")
    if home:
        return home
    java = shutil.which("java")
    if not java:
        return None
    home = os.path.dirname(os.path.dirname(os.path.realpath(java)))
    os.environ["JAVA_HOME"] = home
    return home


def _log4j_file(level: str) -> str:
    quiet = "\n".join(
        f"logger.q{i}.name = {name}\nlogger.q{i}.level = error"
        for i, name in enumerate(QUIET_LOGGERS)
    )
    fd, path = tempfile.mkstemp(prefix="spark-spout-log4j2-", suffix=".properties")
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write(LOG4J2.format(level=level.lower(), quiet=quiet))
    return path


def session_settings(
    spark_conf: Mapping[str, str], app_name: str, log4j_file: str | None = None
) -> dict[str, str]:
    """The builder's settings: our defaults, then the user's `spark.*` keys, with our log4j2
    file appended to the driver's Java options."""
    settings = {**DEFAULTS, "spark.app.name": app_name, **spark_conf}
    if log4j_file:
        java_opts = settings.get("spark.driver.extraJavaOptions", "")
        settings["spark.driver.extraJavaOptions"] = (
            f"{java_opts} -Dlog4j2.configurationFile=file:{log4j_file}".strip()
        )
    return settings


def start_session(
    spark_conf: Mapping[str, str], app_name: str, log_level: str = "WARN"
) -> SparkSession:
    """A SparkSession with `spark_conf` applied (see the module docstring)."""
    ensure_java_home()
    master = {**DEFAULTS, **spark_conf}["spark.master"]
    problem = driver_python_problem(spark_conf, os.environ) if all_in_driver(master) else None
    if problem is not None:  # (the engine checks it with any master: host/spark/session_settings)
        raise ValueError(problem)
    # spark.pyspark.python as spark-submit passes it on (components/spark_spout/python_workers.py)
    set_workers_python(spark_conf, os.environ)
    from pyspark.sql import SparkSession

    log4j_file = _log4j_file(log_level)
    try:
        builder = SparkSession.builder
        for key, value in session_settings(spark_conf, app_name, log4j_file).items():
            builder = builder.config(key, value)
        spark = builder.getOrCreate()
    finally:
        os.unlink(log4j_file)  # read once, when the JVM started
    spark.sparkContext.setLogLevel(log_level)
    return spark


def load_callable(spec: str) -> Callable:
    """`package.module:function` -> the function. The component's cwd (the topology's
    directory) is importable, so a job file next to the topology needs no packaging."""
    module_name, _, attr = spec.partition(":")
    cwd = os.getcwd()
    if cwd not in sys.path:
        sys.path.insert(0, cwd)
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise ValueError(
            f"spark.spout.job {spec!r}: cannot import {module_name!r} (from {cwd}): {exc}"
        ) from None
    fn: Any = module
    for part in attr.split("."):
        fn = getattr(fn, part, None)
        if fn is None:
            raise ValueError(f"spark.spout.job {spec!r}: {module_name} has no {attr!r}")
    if not callable(fn):
        raise ValueError(f"spark.spout.job {spec!r} is not callable")
    return fn


def call_job(fn: Callable, spark: Any, conf: Mapping) -> Any:
    """Call `fn(spark)`, or `fn(spark, conf)` when it takes two parameters (to read its own
    settings from the component config)."""
    try:
        params = [
            p
            for p in inspect.signature(fn).parameters.values()
            if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
        ]
    except (TypeError, ValueError):
        params = []
    return fn(spark, conf) if len(params) >= 2 else fn(spark)
