"""host/spark/spark_calls.py `first_line`: the one line the driver prints for a Spark error, from
the shapes Spark's errors take (their text copied from real runs: the standalone cluster's bare
interpreter, tests/integration/test_spark_standalone.py)."""

from __future__ import annotations

from host.spark.spark_calls import first_line

WORKER_FAILED = """An exception was thrown from the Python worker: Traceback (most recent call last):
  File "/venv/lib/python3.11/site-packages/pyspark/python/lib/pyspark.zip/pyspark/worker.py", line 4197, in invoke_udf
    func, profiler, deserializer, serializer = read_command(pickleSer, init_info.udf_info)
                                               ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^
  File "/venv/lib/python3.11/site-packages/pyspark/python/lib/pyspark.zip/pyspark/serializers.py", line 483, in loads
    return cloudpickle.loads(obj, encoding=encoding)
           ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^
ModuleNotFoundError: No module named 'host'
 SQLSTATE: 38000
"""  # noqa: E501


def test_a_python_workers_exception_is_the_line_that_ends_its_traceback() -> None:
    assert first_line(RuntimeError(WORKER_FAILED)) == "ModuleNotFoundError: No module named 'host'"


def test_of_chained_tracebacks_the_last_ones_exception() -> None:
    chained = (
        "An exception was thrown from the Python worker:\nTraceback (most recent call last):\n"
        "  File \"a.py\", line 1, in f\nKeyError: 'x'\n\nDuring handling of the above exception, "
        'another exception occurred:\n\nTraceback (most recent call last):\n  File "a.py", '
        "line 3, in f\nValueError: no x\n"
    )
    assert first_line(RuntimeError(chained)) == "ValueError: no x"


def test_one_of_our_errors_wins_wherever_it_is() -> None:
    ours = WORKER_FAILED.replace(
        "ModuleNotFoundError: No module named 'host'",
        "host.errors.ComponentFailed: count[3] pid=7: crashed",
    )
    assert first_line(RuntimeError(ours)) == "host.errors.ComponentFailed: count[3] pid=7: crashed"


def test_without_a_traceback_the_first_line() -> None:
    assert first_line(RuntimeError("Job aborted\nmore")) == "Job aborted"
    assert first_line(RuntimeError("")) == "RuntimeError"
    # a traceback header with nothing after it: the first line still
    assert first_line(RuntimeError("it broke\nTraceback (most recent call last):")) == "it broke"
