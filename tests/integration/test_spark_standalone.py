"""docs/spark.md §6.3's standalone recipes, tried on a real Spark standalone cluster: a master and
a worker started with the pip package's `spark-class` (separate JVMs, as on a cluster's hosts;
here all on 127.0.0.1), the worker's executors starting Python workers with
`spark.pyspark.python`. The transactional word count runs through both recipes:
`python -m host spark --master spark://…` and `spark-submit` with the engine's module file. Each
run's counts equal the input's, and the components' stderr lines are in the executors' stderr
files under the worker's directory, tagged (§6.4).

A spark:// master gets the component directories shipped (§6.1, host/spark/shipping.py): every
spout read and bolt task in the executors runs in the executor's unpacked copy of the topology's
directory. The worker runs in a mount namespace of its own where one directory, `hidden/`, is an
empty tmpfs: a topology copied there is seen by the driver and not by the executors, as on
another host, and runs all the same; a checkpoint put there is refused before the query starts
(the executors do not see it: host/spark/shared_checkpoint.py), and a stop while that check
waits for executors that cannot start ends the command.

What a one-host cluster cannot show: other hosts' environments (§6.2).
"""

from __future__ import annotations

import json
import os
import shlex
import signal
import socket
import subprocess
import sys
import tarfile
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from host.spark.shared_checkpoint import CHECK_DESCRIPTION
from host.spark.shipping import archive_name
from tests.support.spark_runs import (
    JAVA_OPTS,
    OUTPUT_TAIL,
    ROOT,
    WAIT_SECS,
    expected_counts,
    run_ok,
    stored_counts,
    wordcount_copy,
)

pytestmark = pytest.mark.spark

BATCHES = 4  # the word count's input: 2,000 lines per file, 500 per file per batch
WORKER_MEMORY = "2g"
EXECUTOR_MEMORY = "512m"
STARTED = "process started in"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def _spark_bin(name: str) -> str:
    """A script of the pip package's Spark distribution (bin/spark-class, bin/spark-submit)."""
    import pyspark

    path = Path(pyspark.__file__).parent / "bin" / name
    assert path.exists(), f"{path}: not in the pyspark package"
    return str(path)


def _hiding(directory: Path) -> list[str]:
    """A command prefix that runs the rest in a mount namespace of its own where `directory` is
    an empty tmpfs (as root; otherwise in a user namespace too, where the kernel allows it)."""
    unshare = ["unshare", "--mount", "--propagation", "private"]
    if os.geteuid() != 0:
        unshare = ["unshare", "--user", "--map-root-user", "--mount"]
    script = 'mount -t tmpfs tmpfs "$0" && exec "$@"'
    probe = subprocess.run([*unshare, "sh", "-c", script, str(directory), "true"], check=False)
    assert probe.returncode == 0, f"{unshare}: cannot hide {directory} from the worker"
    return [*unshare, "sh", "-c", script, str(directory)]


def _master_state(ui_port: int) -> dict[str, Any]:
    """The standalone master's own status page, as JSON ({} while it does not answer yet)."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{ui_port}/json/", timeout=2) as reply:
            state: dict[str, Any] = json.loads(reply.read())
            return state
    except (OSError, ValueError):
        return {}


def _wait(check: Any, what: str, procs: list[subprocess.Popen[bytes]]) -> None:
    deadline = time.monotonic() + WAIT_SECS
    while not check():
        for p in procs:
            assert p.poll() is None, f"{what}: {p.args} exited with {p.returncode}"
        assert time.monotonic() < deadline, f"{what}: not in {WAIT_SECS}s"
        time.sleep(0.2)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """A standalone master and one worker (2 cores), both on 127.0.0.1, until the module ends."""
    base = tmp_path_factory.mktemp("standalone")
    hidden = base / "hidden"  # empty to the worker and its executors (_hiding)
    hidden.mkdir()
    port, ui, worker_ui = _free_port(), _free_port(), _free_port()
    env = {
        **os.environ,
        "SPARK_DAEMON_MEMORY": "256m",
        "SPARK_DAEMON_JAVA_OPTS": JAVA_OPTS,
        "SPARK_LOCAL_IP": "127.0.0.1",
        "SPARK_LOG_DIR": str(base / "logs"),
    }
    spark_class = _spark_bin("spark-class")
    started: list[subprocess.Popen[bytes]] = []

    def daemon(args: list[str], log: str, prefix: list[str]) -> subprocess.Popen[bytes]:
        with open(base / log, "wb") as out:
            p = subprocess.Popen(
                [*prefix, spark_class, *args],
                env=env,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # its JVM and whatever it starts: one group to stop
            )
        started.append(p)
        return p

    try:
        daemon(
            ["org.apache.spark.deploy.master.Master", "--host", "127.0.0.1"]
            + ["--port", str(port), "--webui-port", str(ui)],
            "master.log",
            [],
        )
        _wait(lambda: _master_state(ui).get("status") == "ALIVE", "the master", started)
        url = f"spark://127.0.0.1:{port}"
        daemon(
            ["org.apache.spark.deploy.worker.Worker", url, "--host", "127.0.0.1"]
            + ["--cores", "2", "--memory", WORKER_MEMORY, "--webui-port", str(worker_ui)]
            + ["--work-dir", str(base / "work")],
            "worker.log",
            _hiding(hidden),
        )
        _wait(lambda: _master_state(ui).get("aliveworkers") == 1, "the worker", started)
        worker = started[-1].pid  # unshare and sh exec: the worker's JVM, in its namespace
        yield {"url": url, "ui": ui, "work": base / "work", "hidden": hidden, "worker": worker}
    finally:
        for p in started:
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGTERM)
        for p in started:
            try:
                p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait(timeout=30)


def _cluster_conf(cluster: dict[str, Any]) -> list[str]:
    """§6.3's options for an environment installed at the same path on every host (here: this
    interpreter's), sized for the one worker."""
    return [
        f"-cspark.pyspark.python={sys.executable}",
        f"-cspark.executor.memory={EXECUTOR_MEMORY}",
        "-cspark.cores.max=2",
        "-cspark.ui.enabled=false",
        f"-cspark.executor.extraJavaOptions={JAVA_OPTS}",
        f"-cspark.driver.extraJavaOptions={JAVA_OPTS}",
        "-cspark.sql.shuffle.partitions=2",
    ]


def _tagged_stderr_lines(work: Path, app_id: str) -> list[str]:
    """The lines of the app's executors' stderr files that the engine tagged (§6.4)."""
    files = sorted((work / app_id).glob("*/stderr"))
    assert files, f"no executor stderr under {work / app_id}"
    return [
        line
        for f in files
        for line in f.read_text(errors="replace").splitlines()
        if "host.spark:" in line and " pid=" in line
    ]


def _executor_tasks(topology: Path) -> set[str]:
    """ "lines[<task>]", "split[<task>]" and "count[<task>]" for every task of the spout (whose
    reads run in the executors) and of the two bolts, as `host local` numbers them."""
    from host.runtime.context import assign_tasks
    from host.topology.files import load

    tasks = assign_tasks(load(topology))
    return {f"{c}[{t}]" for c in ("lines", "split", "count") for t in tasks.tasks_of(c)}


def _app_ids(cluster: dict[str, Any]) -> set[str]:
    state = _master_state(cluster["ui"])
    return {a["id"] for a in state.get("completedapps", []) + state.get("activeapps", [])}


def _check_run(cluster: dict[str, Any], example: Path, out: str, before: set[str]) -> None:
    assert f"txid {BATCHES} committed" in out, out[-OUTPUT_TAIL:]
    assert "Traceback" not in out, out[-OUTPUT_TAIL:]  # the stop at --max-batches is quiet
    assert stored_counts(example / "counts.db") == expected_counts(example)
    (app_id,) = _app_ids(cluster) - before  # the run was an application of this cluster
    tagged = _tagged_stderr_lines(cluster["work"], app_id)
    # the spout's reads and the bolts ran in this cluster's executors, and what they wrote to
    # stderr is there, tagged with the component and task: every task, with its task id as under
    # `host local`
    started = {
        line.split("host.spark: ", 1)[1].split(" pid=")[0]: line.split(f"{STARTED} ", 1)[1]
        for line in tagged
        if STARTED in line
    }
    assert set(started) == _executor_tasks(example / "topology.yaml"), tagged[:20]
    # each in its executor's unpacked copy of the topology's directory, shipped by the driver
    assert f"shipping {example} to the executors as {archive_name(str(example))}" in out
    for task, cwd in started.items():
        where = Path(cwd)
        assert where.name == archive_name(str(example)), (task, cwd)
        assert where.parent.parent == cluster["work"] / app_id, (task, cwd)  # <app>/<executor>/


def _example(parent: Path) -> Path:
    """A copy of the transactional word count whose spout and bolts write a line to stderr as they
    start, with their working directory: the bolts' scripts, and for the spout (a module of
    ours) a script of the copy's own that runs it."""
    example = wordcount_copy(parent, "wordcount")
    said = f'import os, sys\nprint("{STARTED}", os.getcwd(), file=sys.stderr, flush=True)\n'
    for name in ("split", "count"):
        path = example / f"{name}.py"
        path.write_text(said + path.read_text())
    spout = (
        "import runpy\nrunpy.run_module('components.transactional_files', run_name='__main__')\n"
    )
    (example / "lines.py").write_text(said + spout)
    topology = example / "topology.yaml"
    module = "command: [python, -m, components.transactional_files]"
    assert module in topology.read_text()
    topology.write_text(topology.read_text().replace(module, "command: [python, lines.py]"))
    return example


def _host_spark_command(
    cluster: dict[str, Any], example: Path, checkpoint: Path, conf: list[str] | None = None
) -> list[str]:
    """§6.3's first recipe: `python -m host spark … --master spark://…`, for BATCHES
    micro-batches, with `conf` (else _cluster_conf)."""
    return (
        [sys.executable, "-m", "host", "spark", str(example / "topology.yaml")]
        + ["--master", cluster["url"], "--checkpoint", str(checkpoint)]
        + ["--trigger", "0.5", "--max-batches", str(BATCHES)]
        + (_cluster_conf(cluster) if conf is None else conf)
    )


def _host_spark(cluster: dict[str, Any], example: Path, checkpoint: Path) -> str:
    """_host_spark_command run to its end, exit 0; its output."""
    return run_ok(_host_spark_command(cluster, example, checkpoint), WAIT_SECS * 2)


def _host_spark_fails(
    cluster: dict[str, Any], example: Path, checkpoint: Path, conf: list[str] | None = None
) -> tuple[int, str]:
    """_host_spark_command run to its end: its exit status and its output."""
    result = subprocess.run(
        _host_spark_command(cluster, example, checkpoint, conf),
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=WAIT_SECS * 2,
    )
    return result.returncode, result.stdout + result.stderr


def test_host_spark_with_a_standalone_master(cluster: dict[str, Any], tmp_path: Path) -> None:
    example = _example(tmp_path)
    before = _app_ids(cluster)
    out = _host_spark(cluster, example, tmp_path / "checkpoint")
    _check_run(cluster, example, out, before)


def test_spark_submit_with_a_standalone_master(cluster: dict[str, Any], tmp_path: Path) -> None:
    example = _example(tmp_path)
    before = _app_ids(cluster)
    import host.spark.command as command

    submit = [
        _spark_bin("spark-submit"),
        "--master",
        cluster["url"],
        "--conf",
        f"spark.pyspark.python={sys.executable}",
        "--conf",
        f"spark.pyspark.driver.python={sys.executable}",
        command.__file__,
        str(example / "topology.yaml"),
        "--master",
        cluster["url"],
        "--checkpoint",
        str(tmp_path / "checkpoint"),
        "--trigger",
        "0.5",
        "--max-batches",
        str(BATCHES),
        *_cluster_conf(cluster),
    ]
    result = subprocess.run(submit, cwd=ROOT, capture_output=True, text=True, timeout=WAIT_SECS * 2)
    out = result.stdout + result.stderr
    assert result.returncode == 0, out[-OUTPUT_TAIL:]
    _check_run(cluster, example, out, before)


def test_the_executors_run_a_topology_they_cannot_see(
    cluster: dict[str, Any], tmp_path: Path
) -> None:
    """As on another host: the worker does not see the topology's directory, the driver ships it
    (host.spark.ship: auto, a spark:// master), and the executors run their copies."""
    example = _example(cluster["hidden"])
    worker_view = Path(f"/proc/{cluster['worker']}/root") / example.relative_to("/")
    assert (example / "topology.yaml").exists()  # the driver's view
    assert worker_view.parent.is_dir() and not any(worker_view.parent.iterdir())  # the worker's
    before = _app_ids(cluster)
    out = _host_spark(cluster, example, tmp_path / "checkpoint")
    _check_run(cluster, example, out, before)


def test_a_checkpoint_the_executors_cannot_see_is_refused_before_a_micro_batch(
    cluster: dict[str, Any], tmp_path: Path
) -> None:
    """The checkpoint where the driver sees it and the executors do not (each host's own /tmp,
    a mount missing on the executor hosts): refused with exit 2 once the session is up, naming
    the checkpoint and the executors' host, before the query runs a micro-batch (docs/spark.md
    §6.1). Without the check the executors failed the first micro-batch with `no stored
    metadata for txid 1`, four tries and three restarts later."""
    example = _example(tmp_path)
    checkpoint = cluster["hidden"] / "unseen-checkpoint"
    worker_view = Path(f"/proc/{cluster['worker']}/root") / cluster["hidden"].relative_to("/")
    assert not any(worker_view.iterdir())  # the worker's view of its parent: empty
    returncode, out = _host_spark_fails(cluster, example, checkpoint)
    assert returncode == 2, out[-OUTPUT_TAIL:]
    assert (
        f"error: the executors do not see the checkpoint {checkpoint} as the driver does: the "
        f"token the driver wrote to {checkpoint / 'driver-token'} is not there for them (on "
        f"{socket.gethostname()}: no such file)"
    ) in out, out[-OUTPUT_TAIL:]
    assert (checkpoint / "driver-token").is_file()  # the driver's side of it
    assert "committed" not in out and "Traceback" not in out, out[-OUTPUT_TAIL:]
    assert not (checkpoint / "query" / "offsets").exists()  # the query never started
    assert not (example / "counts.db").exists()


def _conf_with_python(cluster: dict[str, Any], python: str, *more: str) -> list[str]:
    """_cluster_conf with `spark.pyspark.python` naming `python` instead."""
    conf = [c for c in _cluster_conf(cluster) if not c.startswith("-cspark.pyspark.python=")]
    return [*conf, f"-cspark.pyspark.python={python}", *more]


def _packed_environment(tmp_path: Path) -> tuple[Path, Path]:
    """A stand-in for a packed environment (conda-pack's): an archive whose `bin/python` records
    where it runs ("<working directory> <its arguments>", one line each time, in the returned
    log) and then runs this interpreter."""
    log = tmp_path / "env-python.log"
    source = tmp_path / "env-source" / "bin"
    source.mkdir(parents=True)
    python = source / "python"
    python.write_text(
        f'#!/bin/sh\necho "$(pwd) $*" >> {shlex.quote(str(log))}\n'
        f'exec {shlex.quote(sys.executable)} "$@"\n'
    )
    python.chmod(0o755)
    archive = tmp_path / "env.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        tar.add(source, arcname="bin")
    return archive, log


def test_the_executors_run_the_environment_spark_archives_ships(
    cluster: dict[str, Any], tmp_path: Path
) -> None:
    """§6.3's standalone recipe with a packed environment: `-c spark.archives=env.tar.gz#env -c
    spark.pyspark.python=./env/bin/python` through `python -m host spark` (the engine sets
    PYSPARK_PYTHON from the conf, as spark-submit does). The executors run their Python workers
    with the archive's interpreter, in their unpacked copy; so does the driver (Spark plans the
    Python data sources in the driver with the same path), from its own directory, where the user
    unpacked the archive too (§6.2)."""
    example = _example(tmp_path)
    archive, log = _packed_environment(tmp_path)
    driver_dir = tmp_path / "driver"
    (driver_dir / "env").mkdir(parents=True)
    with tarfile.open(archive) as tar:
        tar.extractall(driver_dir / "env", filter="data")
    before = _app_ids(cluster)
    conf = _conf_with_python(cluster, "./env/bin/python", f"-cspark.archives={archive}#env")
    command = _host_spark_command(cluster, example, tmp_path / "checkpoint", conf)
    out = run_ok(command, WAIT_SECS * 2, cwd=driver_dir)
    _check_run(cluster, example, out, before)
    (app_id,) = _app_ids(cluster) - before
    runs = [line.split(" ", 1) for line in log.read_text().splitlines()]
    where = {Path(cwd) for cwd, _ in runs}
    executors = {w for w in where if w.parent == cluster["work"] / app_id}  # <app>/<executor>
    assert executors, runs[:20]
    for w in executors:  # each ran the archive's copy, unpacked in its own directory
        assert (w / "env" / "bin" / "python").read_text() == (
            tmp_path / "env-source" / "bin" / "python"
        ).read_text()
    assert any(
        cwd == str(executor) and "pyspark.daemon" in args
        for cwd, args in runs
        for executor in executors
    ), runs[:20]
    # and the driver's planning of the data sources, from the driver's directory
    assert any(cwd == str(driver_dir) and "plan_data_source_read" in args for cwd, args in runs), (
        runs[:20]
    )


def test_executors_whose_python_lacks_the_project_fail_the_first_job_clearly(
    cluster: dict[str, Any], tmp_path: Path
) -> None:
    """spark.pyspark.python naming an interpreter without this project (a bare venv, as an
    executor host with Python and nothing installed): the executors' first job, the checkpoint
    check, cannot unpickle its function; the command says so in one line and exits 1 before the
    query starts (host/spark/shared_checkpoint.py CheckFailed). Before the engine passed the
    conf on, the executors ran the driver's interpreter and this went unnoticed."""
    bare = tmp_path / "bare"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(bare)], check=True)
    python = bare / "bin" / "python"
    probe = subprocess.run(
        [str(python), "-c", "import host"], cwd=bare, capture_output=True, text=True
    )
    assert probe.returncode != 0 and "No module named 'host'" in probe.stderr  # the precondition
    example = _example(tmp_path)
    checkpoint = tmp_path / "checkpoint"
    conf = _conf_with_python(cluster, str(python))
    returncode, out = _host_spark_fails(cluster, example, checkpoint, conf)
    assert returncode == 1, out[-OUTPUT_TAIL:]
    errors = [line for line in out.splitlines() if line.startswith("error: ")]
    assert errors == [
        f"error: the executors could not run the check that they see the checkpoint "
        f"{checkpoint}: ModuleNotFoundError: No module named 'host' (the executors' Python "
        f"workers run {python}, which must have this project installed: docs/spark.md §6.2)"
    ], out[-OUTPUT_TAIL:]
    # (Spark's own warnings above it show each try's traceback, as Spark logs them)
    assert "committed" not in out, out[-OUTPUT_TAIL:]
    assert not (checkpoint / "query" / "offsets").exists()  # the query never started
    assert not (example / "counts.db").exists()


def _running_jobs(ui_port: int) -> list[dict[str, Any]]:
    """The driver's running jobs, from its web UI's REST API ([] while it does not answer)."""
    base = f"http://127.0.0.1:{ui_port}/api/v1/applications"
    try:
        with urllib.request.urlopen(base, timeout=2) as reply:
            apps = json.loads(reply.read())
        jobs: list[dict[str, Any]] = []
        for app in apps:
            with urllib.request.urlopen(f"{base}/{app['id']}/jobs", timeout=2) as reply:
                jobs += [j for j in json.loads(reply.read()) if j.get("status") == "RUNNING"]
        return jobs
    except (OSError, ValueError):
        return []


def test_a_stop_while_no_executor_has_come_up_ends_the_command(
    cluster: dict[str, Any], tmp_path: Path
) -> None:
    """SIGTERM while the check's job waits for executors that never come (each would need more
    memory than the worker has): the command ends at once, cleanly, nothing committed. The
    check's job runs in a thread of its own for this: py4j's call would hold the main thread."""
    example = _example(tmp_path)
    # no application of an earlier test holds the worker's cores any more (the master marks a
    # finished application shortly after its driver ends)
    _wait(lambda: _granted_cores(cluster) == 0, "the worker's cores free", [])
    ui = _free_port()
    conf = [c for c in _cluster_conf(cluster) if "executor.memory" not in c and ".ui." not in c]
    conf += ["-cspark.executor.memory=4g", "-cspark.ui.enabled=true", f"-cspark.ui.port={ui}"]
    log = tmp_path / "driver.log"
    with open(log, "w") as out:
        driver = subprocess.Popen(
            [sys.executable, "-m", "host", "spark", str(example / "topology.yaml")]
            + ["--master", cluster["url"], "--checkpoint", str(tmp_path / "checkpoint"), *conf],
            cwd=ROOT,
            stdout=out,
            stderr=subprocess.STDOUT,
            text=True,
        )
    try:
        # the driver waits in the check's job, which no executor will ever run
        _wait(
            lambda: any(
                j.get("description") == CHECK_DESCRIPTION
                and str(j.get("jobGroup")).endswith(f"-{driver.pid}")  # the engine's group
                for j in _running_jobs(ui)
            ),
            "the check's job",
            [driver],
        )
        assert driver.poll() is None and _granted_cores(cluster) == 0  # and no executor came
        driver.send_signal(signal.SIGTERM)
        returncode = driver.wait(timeout=60)
    finally:
        if driver.poll() is None:
            driver.kill()
            driver.wait()
    out = log.read_text()
    assert returncode == 0, out[-OUTPUT_TAIL:]
    assert "SIGTERM: stopping" in out, out[-OUTPUT_TAIL:]
    assert "stopped: 0 micro-batch(es) committed" in out, out[-OUTPUT_TAIL:]
    assert "see the checkpoint:" not in out  # the check never ended, and was not reported
    assert not (example / "counts.db").exists()


def _granted_cores(cluster: dict[str, Any]) -> int:
    """The cores the master has granted its running applications (their executors' cores)."""
    state = _master_state(cluster["ui"])
    return sum(int(a.get("cores", 0)) for a in state.get("activeapps", []))
