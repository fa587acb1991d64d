"""The directories components run in, shipped to a cluster's executors (docs/spark.md §6.1).

Storm copies a topology's jar to every worker host and runs each shell component in the jar's
unpacked `resources/` (ShellBolt / ShellSpout's working directory), so no host needs the
submitter's paths. The same holds here with `host.spark.ship` on (`auto`: whenever the master is
not a local one): before Spark starts, the driver packs every directory a component runs in into
a .tar.gz (`pack`), and adds it with `SparkContext.addArchive`, which Spark unpacks into each
executor's SparkFiles directory. A component process started inside a Spark task then runs in
that copy (`launch_dir`); one the driver starts itself (a plain spout, a coordinator, a commit in
the driver) runs in the original.

An archive's name is fixed by the directory's absolute path (`archive_name`), so an executor
needs nothing but the path the topology already carries: `executor_dir` takes the copy of the
directory, or of its nearest shipped ancestor (a component whose `cwd` is a subdirectory of
another's is shipped inside it).
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import tarfile
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

from host.errors import TopologyError
from host.topology import settings as cfg
from host.topology.model import Topology

AUTO = "auto"
LOCAL_MASTERS = ("local", "local[", "local-cluster[")  # executors on the driver's own host
ARCHIVE_PREFIX = "multilang-"
ARCHIVE_SUFFIX = ".tar.gz"
# never worth a copy on other hosts: version control, caches, and a virtualenv (its scripts name
# the driver's interpreter by its absolute path)
SKIPPED_NAMES = frozenset(
    {".git", ".hg", ".svn", "__pycache__", ".mypy_cache", ".pytest_cache", ".ruff_cache", ".venv"}
)


def is_local(master: str) -> bool:
    return master == "local" or master.startswith(LOCAL_MASTERS)


def ships(topology: Topology, master: str) -> bool:
    """Whether the component directories go to the executors: `host.spark.ship`, where `auto`
    means a master that is not local (`local`, `local[N]`, `local-cluster[…]` share the driver's
    paths)."""
    setting = cfg.settings_for(topology).spark_ship
    return not is_local(master) if setting == AUTO else bool(setting)


def directories(topology: Topology) -> list[str]:
    """The directories to ship: every component's working directory, less those inside another
    one, sorted. In-host parts (DRPC's) have no process and no directory."""
    dirs = sorted(
        {os.path.normpath(c.cwd) for c in topology.components if c.command},
    )
    kept: list[str] = []
    for d in dirs:  # sorted: a directory comes right after its ancestors
        if not any(_inside(d, k) for k in kept):
            kept.append(d)
    return kept


def components_in(topology: Topology, directory: str) -> list[str]:
    """The ids of the components that run in `directory` or below it."""
    return [c.id for c in topology.components if c.command and _inside(c.cwd, directory)]


def _inside(path: str, directory: str) -> bool:
    return path == directory or path.startswith(directory.rstrip(os.sep) + os.sep)


def archive_name(directory: str) -> str:
    """The archive's file name, and the name of its unpacked copy in an executor's SparkFiles
    directory: the directory's base name (for people reading the executor's files) and a hash of
    its absolute path (so two directories of one base name do not meet)."""
    path = os.path.normpath(directory)
    slug = re.sub(r"[^A-Za-z0-9_.-]", "_", os.path.basename(path)) or "root"
    digest = hashlib.sha256(path.encode()).hexdigest()[:12]
    return f"{ARCHIVE_PREFIX}{slug}-{digest}{ARCHIVE_SUFFIX}"


@dataclass(frozen=True)
class Packed:
    directory: str
    archive: str  # the .tar.gz written
    files: int
    bytes: int  # the files' sizes before compression


def pack(
    directory: str,
    dest_dir: str,
    *,
    skip: Iterable[str],
    max_bytes: int,
    file: str | None = None,
    components: Iterable[str] = (),
) -> Packed:
    """Write `directory`'s tree into `dest_dir/archive_name(directory)`, members relative to it,
    modes kept (a `./run.sh` command stays executable), symbolic links as links. Leaves out
    SKIPPED_NAMES and the absolute paths in `skip` (the checkpoint, the state directory) and
    whatever sits inside them. TopologyError when the files pass `max_bytes` (a component's
    `cwd` that is someone's home directory, say), naming the topology's `file`, the
    `components` that run there, the directory and the settings."""
    skipped = [os.path.normpath(s) for s in skip]
    target = os.path.join(dest_dir, archive_name(directory))
    files = size = 0
    with tarfile.open(target, "w:gz", compresslevel=1) as tar:
        for path, rel in _tree(directory, skipped):
            info = tar.gettarinfo(path, arcname=rel)
            if info.isfile():
                files += 1
                size += info.size
                if size > max_bytes:
                    raise TopologyError(
                        f"shipping {directory}, where {', '.join(sorted(components))} run, to "
                        f"the executors: its files pass {cfg.SPARK_SHIP_MAX_MB} "
                        f"({max_bytes / (1024 * 1024):g} MB); give the components a directory "
                        f"of their own (their `cwd`), raise the limit, or set "
                        f"{cfg.SPARK_SHIP}: false where every host mounts {directory} "
                        f"(docs/spark.md §6.1)",
                        file=file,
                        key=cfg.SPARK_SHIP_MAX_MB,
                    )
                with open(path, "rb") as f:
                    tar.addfile(info, f)
            elif info.isdir() or info.issym():
                tar.addfile(info)
    return Packed(directory, target, files, size)


def pack_directories(
    topology: Topology, dest_dir: str, skip: Iterable[str], echo: Callable[[str], None]
) -> list[Packed]:
    """Every directory to ship (`directories`) packed into `dest_dir`, each announced with `echo`;
    on an error (`pack`'s TopologyError), nothing is left in `dest_dir`."""
    os.makedirs(dest_dir, exist_ok=True)
    limit = cfg.settings_for(topology).spark_ship_max_bytes
    packed = []
    try:
        for d in directories(topology):
            where = components_in(topology, d)
            p = pack(
                d, dest_dir, skip=skip, max_bytes=limit, file=topology.source, components=where
            )
            echo(
                f"shipping {d} to the executors as {os.path.basename(p.archive)} "
                f"({p.files} files, {p.bytes / (1024 * 1024):.1f} MB)"
            )
            packed.append(p)
    except BaseException:
        shutil.rmtree(dest_dir, ignore_errors=True)
        raise
    return packed


def _tree(directory: str, skipped: list[str]) -> Iterator[tuple[str, str]]:
    """(path, path relative to `directory`) of every entry below it, parents first."""
    for root, dirs, names in os.walk(directory):
        keep = []
        for d in sorted(dirs):
            full = os.path.join(root, d)
            if d in SKIPPED_NAMES or any(_inside(full, s) for s in skipped):
                continue
            yield full, os.path.relpath(full, directory)
            if not os.path.islink(full):  # os.walk does not follow links: neither do we
                keep.append(d)
        dirs[:] = keep
        for name in sorted(names):
            full = os.path.join(root, name)
            if name in SKIPPED_NAMES or any(_inside(full, s) for s in skipped):
                continue
            if os.path.isfile(full) or os.path.islink(full):  # not sockets, fifos
                yield full, os.path.relpath(full, directory)


def executor_dir(cwd: str, files_root: str) -> str:
    """Where a component of working directory `cwd` runs in an executor whose SparkFiles
    directory is `files_root`: in the shipped copy of `cwd` or of its nearest ancestor that was
    shipped; in `cwd` itself when none was (`host.spark.ship` off: the same paths everywhere)."""
    path = os.path.normpath(cwd)
    rel = ""
    while True:
        copy = os.path.join(files_root, archive_name(path))
        if os.path.isdir(copy):
            return os.path.join(copy, rel) if rel else copy
        parent = os.path.dirname(path)
        if parent == path:
            return cwd
        rel = os.path.join(os.path.basename(path), rel) if rel else os.path.basename(path)
        path = parent


def launch_dir(cwd: str) -> str:
    """The directory to start a component of working directory `cwd` in, here: inside a Spark
    task, the shipped copy (`executor_dir`); elsewhere (the driver's own threads) `cwd`."""
    from pyspark import SparkFiles, TaskContext

    if TaskContext.get() is None:
        return cwd
    return executor_dir(cwd, os.path.abspath(SparkFiles.getRootDirectory()))
