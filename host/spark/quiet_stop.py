"""The engine's own end of a query, kept out of the logs: a stop asked for (SIGTERM, Ctrl-C,
`--max-batches`) ends the query by raising StopRequested inside `foreachBatch`, so that Spark does
not record the micro-batch and runs it again next time (docs/spark.md §4.4). Spark and py4j would
log that as an error with a traceback; it is none. Also the log level the engine gives Spark's
trigger executor while a query runs."""

from __future__ import annotations

import logging
from typing import Any, NoReturn

from host.spark.spark_calls import set_log_levels

STREAMING = "org.apache.spark.sql.execution.streaming.runtime."
# "falling behind" each time a micro-batch outlasts the trigger interval: no action to take
QUIET_AT_START = {STREAMING + "ProcessingTimeExecutor": "ERROR"}
# the query's end by our own StopRequested is logged as an error with a traceback: it is not one
QUIET_AT_STOP = {STREAMING + "MicroBatchExecution": "OFF", STREAMING + "StreamExecution": "OFF"}
# py4j's Python side logs what a `foreachBatch` call raised, traceback and all, as an ERROR;
# StopRequested is no error (seen under spark-submit, whose logging shows py4j's records)
PY4J_LOGGER = "py4j.clientserver"


class StopRequested(Exception):
    """Raised in `foreachBatch` when a stop was asked for: the micro-batch is not recorded as
    done by Spark, so it runs again (same txid, next attempt) when the query starts again."""


class _QuietStopFilter(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return not (record.exc_info and isinstance(record.exc_info[1], StopRequested))


_QUIET_STOP = _QuietStopFilter()


def stop_query_quietly(spark: Any) -> NoReturn:
    """End the query from inside `foreachBatch` without Spark recording the micro-batch, and
    without an error in the logs."""
    set_log_levels(spark, QUIET_AT_STOP)
    logging.getLogger(PY4J_LOGGER).addFilter(_QUIET_STOP)  # once: a filter is added once
    raise StopRequested("the engine is stopping")
