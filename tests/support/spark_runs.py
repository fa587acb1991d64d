"""What the Spark engine's integration tests (tests/integration/test_spark_*.py) share: the Spark
settings their runs start with, the `host.spark.command` command line, subprocesses run from the
repository's root (a test file run as a script, a driver, `host local`), waiting while one runs,
and reading the SQLite tables a run leaves (the committers' rows and audit tables, the
transactional word count's counts)."""

from __future__ import annotations

import collections
import json
import shutil
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from host.topology.model import Topology

ROOT = Path(__file__).resolve().parents[2]
WORDCOUNT_SQLITE = ROOT / "examples" / "transactional" / "wordcount-sqlite"
CLUSTER = "local-cluster[2,1,1024]"  # Spark's multi-process test cluster: two executor JVMs
LOCAL = "local[2]"
WAIT_SECS = 240  # generous: other test runs share the two cores
# quick JVMs: the C1 compiler only and the serial GC (tests/integration/components/spark/support.py)
JAVA_OPTS = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"
SPARK_CONF: dict[str, str] = {
    "spark.ui.enabled": "false",
    "spark.executor.extraJavaOptions": JAVA_OPTS,
    "spark.driver.extraJavaOptions": JAVA_OPTS,
}
OUTPUT_TAIL = 5000  # how much of a failed process's output an assertion message shows


# ---- command lines and subprocesses -------------------------------------------------------------


def conf_args(conf: Mapping[str, str] = SPARK_CONF) -> list[str]:
    """The Spark settings `conf` as the command's options: `-c<key>=<value>` each, in order."""
    return [f"-c{k}={v}" for k, v in conf.items()]


def spark_command(
    topology: Path, checkpoint: Path, master: str, *args: str, conf: Mapping[str, str] = SPARK_CONF
) -> list[str]:
    """The command line that runs `topology` on the Spark engine (`host.spark.command`, what
    `python -m host spark` runs) on `master`, with `checkpoint`, a 0.5 s trigger, the settings
    `conf`, then `args`."""
    return [
        sys.executable,
        "-m",
        "host.spark.command",
        str(topology),
        "--master",
        master,
        "--checkpoint",
        str(checkpoint),
        "--trigger",
        "0.5",
        *conf_args(conf),
        *args,
    ]


def host_local_command(topology: Path, state: Path) -> list[str]:
    """The command line that runs `topology` under `python -m host local` with `state` as its
    state directory."""
    return [sys.executable, "-m", "host", "local", str(topology), "--state-dir", str(state)]


def run_ok(cmd: list[str], timeout: float, cwd: Path = ROOT) -> str:
    """Runs `cmd` in `cwd` to its end (at most `timeout` seconds), asserts that it exited 0 (the
    message: the end of its output); returns its stdout followed by its stderr."""
    result = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=timeout)
    out = result.stdout + result.stderr
    assert result.returncode == 0, out[-OUTPUT_TAIL:]
    return out


def run_spark(
    topology: Path, checkpoint: Path, master: str, *args: str, conf: Mapping[str, str] = SPARK_CONF
) -> str:
    """Runs `spark_command(...)` to its end (at most WAIT_SECS * 2), asserting exit status 0;
    returns its stdout followed by its stderr."""
    return run_ok(spark_command(topology, checkpoint, master, *args, conf=conf), WAIT_SECS * 2)


def start(cmd: list[str]) -> subprocess.Popen[str]:
    """Starts `cmd` in ROOT, stdout and stderr in one text pipe; returns the process."""
    return subprocess.Popen(
        cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )


def kill(proc: subprocess.Popen[str]) -> None:
    """SIGKILLs `proc` (nothing cleaned up) and reaps it, its output read and dropped."""
    proc.kill()
    proc.communicate(timeout=60)


def wait_for(
    check: Callable[[], bool],
    proc: subprocess.Popen[str],
    what: str,
    *,
    secs: float = WAIT_SECS,
    poll: float = 0.1,
) -> None:
    """Returns once `check()` is true, checking every `poll` seconds; fails, naming `what`, when
    `secs` have passed first, and with `proc`'s output when `proc` exits first."""
    deadline = time.monotonic() + secs
    while not check():
        assert proc.poll() is None, f"exited early:\n{proc.communicate()[0][-OUTPUT_TAIL:]}"
        assert time.monotonic() < deadline, f"{what}: not in {secs:g}s"
        time.sleep(poll)


def run_host_local_until(
    topology: Path, state: Path, done: Callable[[], bool]
) -> subprocess.CompletedProcess[str]:
    """Runs `topology` under `host local` until `done()` (wait_for, WAIT_SECS), then SIGTERMs
    it; returns the ended process: its exit status and its output (stdout and stderr)."""
    proc = start(host_local_command(topology, state))
    try:
        wait_for(done, proc, "host local")
    finally:
        proc.terminate()
        out, _ = proc.communicate(timeout=60)
    return subprocess.CompletedProcess(proc.args, proc.returncode, out)


# ---- a test file run as a script -------------------------------------------------------------------


def run_shared_runs(script: str, runs: list[dict[str, Any]], base: Path) -> tuple[Any, str]:
    """Runs `script --shared-runs <spec> <results>` (a test file's script mode that runs every
    run of the spec in one SparkSession) with `runs` as the spec, in `base`, at most
    WAIT_SECS * 4, asserting exit status 0; returns the results it wrote and its output."""
    spec, results = base / "spec.json", base / "results.json"
    spec.write_text(json.dumps(runs))
    out = run_ok([sys.executable, script, "--shared-runs", str(spec), str(results)], WAIT_SECS * 4)
    return json.loads(results.read_text()), out


def runs_in_one_session(
    spec_path: str,
    results_path: str,
    conf: Mapping[str, Any],
    app_name: str,
    run_one: Callable[[dict[str, Any], Any], dict[str, Any]],
) -> None:
    """Script mode: every run of the spec file (a JSON list of runs, each with a "name"), one
    after the other in one SparkSession started with `conf`; writes {name: run_one(run,
    session)} as JSON to `results_path`. Returns nothing."""
    from components.spark_spout.session import start_session

    spark = start_session(dict(conf), app_name)
    results = {}
    try:
        for run in json.loads(Path(spec_path).read_text()):
            results[run["name"]] = run_one(run, spark)
    finally:
        spark.stop()
    Path(results_path).write_text(json.dumps(results))


def engine_run(topology: Topology, run: dict[str, Any], spark: Any) -> dict[str, Any]:
    """One SparkEngine run of `topology` in the session `spark`, with run["checkpoint"], a 0.5 s
    trigger, until run["max_batches"]; returns {"committed": n, "restarts": n}."""
    from host.spark.engine import SparkEngine
    from host.spark.plan import plan

    engine = SparkEngine(
        plan(topology),
        run["checkpoint"],
        trigger_secs=0.5,
        max_batches=run["max_batches"],
        spark=spark,
    )
    engine.run()
    return {"committed": engine.committed, "restarts": engine.restarts}


def load_as_committer(path: str, config: Mapping[str, Any]) -> Topology:
    """The topology file at `path` with its `store` bolt made a committer (validation lets
    `batch: committer` only into a topology with a batch spout; the Spark engine runs one after
    any spout) and `config` over its own; returns that topology."""
    import dataclasses

    from host.topology.files import load
    from host.topology.model import COMMITTER

    topology = load(path)
    components = tuple(
        dataclasses.replace(c, batch=COMMITTER) if c.id == "store" else c
        for c in topology.components
    )
    return dataclasses.replace(
        topology, components=components, config={**topology.config, **config}
    )


def start_driver(script: str, spec: dict[str, Any], path: Path) -> subprocess.Popen[str]:
    """Writes `spec` as JSON to `path` and starts `script --drive <path>` (a test file's script
    mode: one engine run of the spec, `drive_main`); returns the process."""
    path.write_text(json.dumps(spec))
    return start([sys.executable, script, "--drive", str(path)])


def drive_main(drive: Callable[[dict[str, Any]], dict[str, Any]], spec_path: str) -> None:
    """Script mode `--drive`: in ROOT, with the host's INFO log on stderr, runs `drive` on the
    JSON spec at `spec_path` and prints its result as one JSON line. Returns nothing."""
    import logging
    import os

    os.chdir(ROOT)
    sys.path.insert(0, str(ROOT))
    logging.basicConfig(stream=sys.stderr, format="%(levelname)s %(name)s: %(message)s")
    logging.getLogger("host").setLevel(logging.INFO)
    print(json.dumps(drive(json.loads(Path(spec_path).read_text()))), flush=True)


# ---- what a run left in SQLite ----------------------------------------------------------------------


def query(db: Path, sql: str) -> list[tuple[Any, ...]]:
    """The rows `sql` selects in the SQLite file `db`; [] while the file or its tables do not
    exist yet (the committer has not created them)."""
    if not db.exists():
        return []
    try:
        with sqlite3.connect(db, timeout=10) as conn:
            return conn.execute(sql).fetchall()
    except sqlite3.Error:
        return []


def applied_tuples(db: Path) -> list[tuple[int, int]]:
    """(txid, tuples) per txid the SQLite committer (components/sqlite_committer) applied, from
    its audit table `audit`, in txid order; [] before that table exists."""
    return [(t, n) for t, n in query(db, "SELECT txid, tuples FROM audit ORDER BY txid")]


def wordcount_copy(parent: Path, name: str) -> Path:
    """A copy of examples/transactional/wordcount-sqlite at `parent/name`, without a counts.db;
    returns its directory."""
    example = parent / name
    shutil.copytree(WORDCOUNT_SQLITE, example)
    (example / "counts.db").unlink(missing_ok=True)
    return example


def expected_counts(example: Path) -> dict[str, int]:
    """word -> occurrences in the word count copy's input files (`example`/data/*.txt)."""
    return dict(
        collections.Counter(
            word
            for path in sorted((example / "data").glob("*.txt"))
            for line in path.read_text(encoding="utf-8").splitlines()
            for word in line.split()
        )
    )


def stored_counts(db: Path) -> dict[str, int]:
    """word -> count, as the word count stored it in `db`; {} before its table exists."""
    try:
        with sqlite3.connect(db) as conn:
            return dict(conn.execute("SELECT word, count FROM counts"))
    except sqlite3.Error:
        return {}


def applied_attempts(db: Path) -> dict[int, int]:
    """txid -> the attempt the word count's committer applied, from its audit table in `db`
    (an error if there is none)."""
    with sqlite3.connect(db) as conn:
        return dict(conn.execute("SELECT txid, attempt FROM audit"))
