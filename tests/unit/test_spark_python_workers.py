"""components/spark_spout/python_workers.py without Spark: `spark.pyspark.python` wins over
`PYSPARK_PYTHON` as under spark-submit, and an interpreter the driver cannot run itself is
refused before anything starts. That the executors then run the interpreter the conf names (and
a bare environment there fails the engine's first job) is tested on a real standalone cluster in
tests/integration/test_spark_standalone.py."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from components.spark_spout.python_workers import (
    DRIVER_PYTHON_ENV,
    PYTHON_ENV,
    PYTHON_KEY,
    all_in_driver,
    driver_cannot_run,
    driver_python_problem,
    set_workers_python,
    workers_python,
)
from components.spark_spout.session import start_session
from host.spark.command import spark as spark_command

WORDCOUNT = Path(__file__).resolve().parents[2] / "examples/transactional/wordcount-sqlite"


def test_the_conf_wins_over_the_variable_which_wins_over_this_interpreter() -> None:
    conf = {PYTHON_KEY: "/opt/env/bin/python"}
    env = {PYTHON_ENV: "/usr/bin/python3"}
    assert workers_python(conf, env) == "/opt/env/bin/python"
    assert workers_python({}, env) == "/usr/bin/python3"
    assert workers_python({}, {}) == sys.executable
    assert workers_python({PYTHON_KEY: ""}, env) == "/usr/bin/python3"  # an empty conf: unset


def test_setting_it_overrides_the_variable_and_keeps_the_drivers() -> None:
    env = {PYTHON_ENV: "/usr/bin/python3", DRIVER_PYTHON_ENV: "/usr/bin/python3.11"}
    assert set_workers_python({PYTHON_KEY: "./env/bin/python"}, env) == "./env/bin/python"
    assert env == {PYTHON_ENV: "./env/bin/python", DRIVER_PYTHON_ENV: "/usr/bin/python3.11"}
    fresh: dict[str, str] = {}
    set_workers_python({}, fresh)
    assert fresh == {PYTHON_ENV: sys.executable, DRIVER_PYTHON_ENV: sys.executable}


def _executable(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\n")
    path.chmod(0o755)
    return path


def test_a_relative_path_is_looked_up_from_the_drivers_directory(tmp_path: Path) -> None:
    assert driver_cannot_run("./env/bin/python", str(tmp_path), None) == (
        f"no such file from the driver's directory {tmp_path}"
    )
    _executable(tmp_path / "env" / "bin" / "python")
    assert driver_cannot_run("./env/bin/python", str(tmp_path), None) is None
    assert driver_cannot_run("env/bin/python", str(tmp_path), None) is None
    # an absolute path does not depend on the directory
    assert driver_cannot_run(str(tmp_path / "env/bin/python"), "/", None) is None


def test_a_directory_or_a_file_without_the_execute_bit_cannot_run(tmp_path: Path) -> None:
    (tmp_path / "env").mkdir()
    assert driver_cannot_run(str(tmp_path / "env"), "/", None) == (
        f"{tmp_path / 'env'} is not an executable file"
    )
    plain = tmp_path / "python"
    plain.write_text("")
    assert driver_cannot_run(str(plain), "/", None) == f"{plain} is not an executable file"


def test_a_bare_name_is_looked_up_on_the_path(tmp_path: Path) -> None:
    _executable(tmp_path / "bin" / "python-for-spark")
    path = str(tmp_path / "bin")
    assert driver_cannot_run("python-for-spark", "/", path) is None
    assert (
        driver_cannot_run("python-nowhere", "/", path) == "no 'python-nowhere' on the driver's PATH"
    )


def test_the_problem_names_where_the_interpreter_came_from(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    from_conf = driver_python_problem({PYTHON_KEY: "./env/bin/python"}, {})
    assert from_conf is not None
    assert from_conf.startswith(
        f"spark.pyspark.python './env/bin/python': no such file from the driver's directory "
        f"{tmp_path}. Spark starts Python workers in the driver with it too"
    )
    assert "unpacked as ./env" in from_conf and "docs/spark.md §6.2" in from_conf
    from_env = driver_python_problem({}, {PYTHON_ENV: "./env/bin/python"})
    assert from_env is not None and from_env.startswith(
        "PYSPARK_PYTHON (spark-submit sets it from spark.pyspark.python) './env/bin/python': "
    )
    assert driver_python_problem({}, {}) is None  # this interpreter, which runs


def test_the_command_refuses_it_before_anything_starts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`./env/bin/python` of spark.archives, with no ./env beside the driver: exit 2, nothing
    made, no session started."""
    monkeypatch.chdir(tmp_path)
    topology = str(WORDCOUNT / "topology.yaml")
    args = [topology, "--checkpoint", str(tmp_path / "checkpoint")]
    args += ["-c", "spark.archives=/srv/env.tar.gz#env", "-c", f"{PYTHON_KEY}=./env/bin/python"]
    result = CliRunner().invoke(spark_command, args)
    assert result.exit_code == 2, result.output
    assert "error: spark.pyspark.python './env/bin/python': no such file from the driver's " in (
        result.output
    )
    assert list(tmp_path.iterdir()) == []


def test_only_local_masters_run_every_python_worker_in_the_driver() -> None:
    assert all_in_driver("local") and all_in_driver("local[*]") and all_in_driver("local[2, 3]")
    assert not all_in_driver("local-cluster[2,1,1024]")
    assert not all_in_driver("spark://m:7077") and not all_in_driver("yarn")


def test_the_spark_spouts_local_session_refuses_it_before_spark_starts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """In local mode every Python worker is the driver's (the Spark spout's default master)."""
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ValueError) as caught:
        start_session({PYTHON_KEY: "./env/bin/python"}, "test")
    assert str(caught.value).startswith("spark.pyspark.python './env/bin/python': no such file")
    assert os.environ.get(PYTHON_ENV) != "./env/bin/python"  # nothing was set
