"""host/spark/spark_calls.py: `first_line`, the one line the driver prints for a Spark error, from
the shapes Spark's errors take (their text copied from real runs: the standalone cluster's bare
interpreter, tests/integration/test_spark_standalone.py); and the calls made in a thread of their
own, `bounded` and `until_stopped` (the checkpoint check's wait, on a real cluster in
test_spark_standalone's stop test)."""

from __future__ import annotations

import threading

import pytest

from host.spark.spark_calls import bounded, first_line, until_stopped

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


def test_until_stopped_gives_the_calls_result_or_raises_what_it_raised() -> None:
    assert until_stopped(lambda: [1, 2], "job", lambda: False, 0.01) == [1, 2]

    def fails() -> None:
        raise RuntimeError("An exception was thrown")

    with pytest.raises(RuntimeError, match="An exception was thrown"):
        until_stopped(fails, "job", lambda: False, 0.01)


def test_until_stopped_returns_none_at_a_stop_while_the_call_still_waits() -> None:
    release = threading.Event()
    stop = threading.Event()

    def waits() -> str:
        stop.set()  # the stop comes while the call is under way
        release.wait()
        return "done"

    assert until_stopped(waits, "job", stop.is_set, 0.01) is None
    assert not release.is_set()  # it returned without the call's end
    release.set()


def test_bounded_reports_a_failure_and_a_call_that_does_not_end() -> None:
    said: list[str] = []

    def fails() -> None:
        raise RuntimeError("Job aborted\nmore")

    bounded(fails, 5, "stopping Spark", said.append)
    release = threading.Event()
    bounded(release.wait, 0.01, "stopping the query", said.append)
    release.set()
    assert said == [
        "stopping Spark failed: Job aborted",
        "stopping the query did not end within 0.01s: going on without it",
    ]
