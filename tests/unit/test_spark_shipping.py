"""host/spark/shipping.py without Spark: which directories go to a cluster's executors, what their
archives hold, and where an executor runs a component (docs/spark.md §6.1). The executors' side on
a real standalone cluster, a directory its worker cannot see: tests/integration/
test_spark_standalone.py."""

from __future__ import annotations

import os
import stat
import tarfile
from dataclasses import replace
from pathlib import Path

import pytest

from host.errors import TopologyError
from host.spark.shipping import (
    archive_name,
    components_in,
    directories,
    executor_dir,
    launch_dir,
    pack,
    pack_directories,
    ships,
)
from host.topology.model import BOLT, SPOUT, Component, Topology
from host.topology.settings import SPARK_SHIP, SPARK_SHIP_MAX_MB, settings_for


def _topology(cwds: dict[str, str], config: dict | None = None) -> Topology:
    spout, *bolts = cwds
    comps = [Component(spout, SPOUT, ("python", "s.py"), {"default": ("x",)}, cwd=cwds[spout])]
    comps += [Component(b, BOLT, ("python", "b.py"), {}, (), cwd=cwds[b]) for b in bolts]
    return Topology("t", tuple(comps), dict(config or {}), source="/topologies/t.yaml")


def test_auto_ships_to_any_master_but_a_local_one() -> None:
    t = _topology({"s": "/a"})
    for master in ("spark://m:7077", "yarn", "k8s://https://api:6443", "mesos://m:5050"):
        assert ships(t, master), master
    for master in ("local", "local[*]", "local[2]", "local-cluster[2,1,1024]"):
        assert not ships(t, master), master
    assert ships(replace(t, config={SPARK_SHIP: True}), "local[2]")
    assert not ships(replace(t, config={SPARK_SHIP: False}), "spark://m:7077")


def test_the_settings_are_checked() -> None:
    with pytest.raises(TopologyError, match=SPARK_SHIP):
        settings_for(_topology({"s": "/a"}, {SPARK_SHIP: "sometimes"}))
    with pytest.raises(TopologyError, match=SPARK_SHIP_MAX_MB):
        settings_for(_topology({"s": "/a"}, {SPARK_SHIP_MAX_MB: 0}))
    assert settings_for(_topology({"s": "/a"}, {SPARK_SHIP_MAX_MB: 1.5})).spark_ship_max_bytes == (
        1536 * 1024
    )


def test_a_directory_inside_another_goes_with_it() -> None:
    t = _topology(
        {"s": "/top", "a": "/top/resources", "b": "/top/resources/", "c": "/other", "d": "/top2"}
    )
    assert directories(t) == ["/other", "/top", "/top2"]  # /top2 is not inside /top
    assert components_in(t, "/top") == ["s", "a", "b"]


def test_archive_names_are_fixed_by_the_path_and_do_not_meet() -> None:
    assert archive_name("/x/wordcount") == archive_name("/x/wordcount/")
    assert archive_name("/x/wordcount") != archive_name("/y/wordcount")
    assert archive_name("/x/word count").startswith("multilang-word_count-")
    assert archive_name("/x/wordcount").endswith(".tar.gz")


def _tree(root: Path) -> None:
    (root / "sub").mkdir(parents=True)
    (root / "run.sh").write_text("#!/bin/sh\necho hi\n")
    (root / "run.sh").chmod(0o755)
    (root / "sub" / "data.txt").write_text("data\n")
    (root / "link.txt").symlink_to("sub/data.txt")
    for skipped in (".git", "__pycache__", ".venv", "checkpoint", "sub/state"):
        (root / skipped).mkdir(parents=True)
        (root / skipped / "f").write_text("not shipped\n")


def test_an_archive_holds_the_tree_with_its_modes_and_links(tmp_path: Path) -> None:
    top = tmp_path / "top"
    _tree(top)
    out = tmp_path / "out"
    out.mkdir()
    skip = [str(top / "checkpoint"), str(top / "sub" / "state")]
    packed = pack(str(top), str(out), skip=skip, max_bytes=1 << 20)
    assert packed.archive == str(out / archive_name(str(top)))
    assert (packed.files, packed.bytes) == (2, len("#!/bin/sh\necho hi\n") + len("data\n"))
    with tarfile.open(packed.archive) as tar:
        members = {m.name: m for m in tar.getmembers()}
        assert set(members) == {"run.sh", "sub", "sub/data.txt", "link.txt"}
        assert members["run.sh"].mode & stat.S_IXUSR
        assert members["link.txt"].issym() and members["link.txt"].linkname == "sub/data.txt"
        unpacked = tmp_path / "unpacked"
        tar.extractall(unpacked, filter="tar")
    assert (unpacked / "link.txt").read_text() == "data\n"
    assert os.access(unpacked / "run.sh", os.X_OK)


def test_a_directory_too_big_is_refused_naming_the_file_the_components_and_the_key(
    tmp_path: Path,
) -> None:
    top = tmp_path / "top"
    top.mkdir()
    (top / "big.bin").write_bytes(b"x" * 2048)
    t = _topology({"s": str(top), "b": str(top)}, {SPARK_SHIP_MAX_MB: 1 / 1024})  # 1 KiB
    out = tmp_path / "out"
    with pytest.raises(TopologyError) as caught:
        pack_directories(t, str(out), [], print)
    text = str(caught.value)
    assert text.startswith("/topologies/t.yaml: key 'host.spark.ship.max.mb'"), text
    assert f"shipping {top}, where b, s run" in text and "host.spark.ship: false" in text
    assert not out.exists()  # nothing half-written left behind


def test_pack_directories_announces_each_archive(tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    for d in (a, b / "res"):
        d.mkdir(parents=True)
        (d / "f.py").write_text("pass\n")
    said: list[str] = []
    packed = pack_directories(
        _topology({"s": str(a), "x": str(b), "y": str(b / "res")}),
        str(tmp_path / "out"),
        [],
        said.append,
    )
    assert [p.directory for p in packed] == [str(a), str(b)]
    assert said == [
        f"shipping {a} to the executors as {archive_name(str(a))} (1 files, 0.0 MB)",
        f"shipping {b} to the executors as {archive_name(str(b))} (1 files, 0.0 MB)",
    ]


def test_an_executor_runs_a_component_in_the_copy_of_its_directory_or_of_an_ancestor(
    tmp_path: Path,
) -> None:
    files = tmp_path / "spark-files"
    (files / archive_name("/top") / "resources").mkdir(parents=True)
    copy = files / archive_name("/top")
    assert executor_dir("/top", str(files)) == str(copy)
    assert executor_dir("/top/resources", str(files)) == str(copy / "resources")
    assert executor_dir("/top/a/b", str(files)) == str(copy / "a" / "b")
    # nothing shipped: the same path as on the driver (host.spark.ship off, a shared mount)
    assert executor_dir("/elsewhere/x", str(files)) == "/elsewhere/x"
    assert executor_dir("/", str(files)) == "/"


def test_outside_a_spark_task_a_component_runs_where_it_was_loaded() -> None:
    assert launch_dir("/top/resources") == "/top/resources"  # the driver's own processes


@pytest.mark.parametrize(
    ("master", "config", "said"),
    [
        (
            None,
            {},
            "shipped to the executors as archives when the master is not local "
            "(host.spark.ship: auto)",
        ),
        (
            "spark://m:7077",
            {},
            "shipped to the executors as archives (host.spark.ship: auto, master spark://m:7077)",
        ),
        (
            None,
            {"spark.master": "yarn"},
            "shipped to the executors as archives (host.spark.ship: auto, master yarn)",
        ),
        (
            "local[2]",
            {},
            "not shipped: the executors run on this host (host.spark.ship: auto, master local[2])",
        ),
        (
            "spark://m:7077",
            {SPARK_SHIP: False},
            "not shipped: every executor host needs them at these paths (host.spark.ship: false)",
        ),
        (
            "local[2]",
            {SPARK_SHIP: True},
            "shipped to the executors as archives (host.spark.ship: true)",
        ),
    ],
)
def test_explain_says_whether_the_directories_are_shipped(master, config, said) -> None:
    from host.spark.explain import explain
    from host.spark.plan import plan
    from host.topology.files import load

    root = Path(__file__).resolve().parents[2]
    example = str(root / "examples" / "transactional" / "wordcount-sqlite" / "topology.yaml")
    loaded = load(example)
    topology = replace(loaded, config={**loaded.config, **config})
    lines = explain(plan(topology), master).splitlines()
    shipping = [line for line in lines if line.startswith("  component directories: ")]
    directory = os.path.dirname(os.path.abspath(example))
    assert shipping == [
        f"  component directories: {directory} (lines, split, count, store): {said}"
    ]
