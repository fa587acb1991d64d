"""Transactional topology files (docs/transactional.md §3): the `transactional:` and `batch:` keys
of our YAML and the Python builder, the batch group, every validation error, the state directory,
`validate`'s output and the Flux export's refusal."""

from __future__ import annotations

import copy
import graphlib
import os
import subprocess
import sys
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from host.errors import TopologyError
from host.topology import TopologyBuilder, load
from host.topology.batch_group import (
    PLAIN,
    batch_group,
    batch_spout,
    downstream,
    feeds,
    find_cycle,
    role,
)
from host.topology.export import export_flux
from host.topology.model import BOLT, SHUFFLE, SPOUT, Component, Grouping, Input, Topology
from host.topology.overrides import with_overrides
from host.topology.settings import STATE_DIR, Settings, settings_for, state_dir

ROOT = Path(__file__).resolve().parents[2]

# ---- helpers ------------------------------------------------------------------------------------


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A topology directory with the scripts the documents below refer to."""
    for name in ("numbers.py", "partial.sh", "sum.js", "other.py", "log.py"):
        (tmp_path / name).write_text("# dummy\n")
    return tmp_path


def doc() -> dict:
    """docs/transactional.md §3's example, plus a plain member (`log`)."""
    return {
        "name": "global-count",
        "transactional": {"id": "global-count"},
        "config": {"topology.max.spout.pending": 3},
        "spouts": {
            "numbers": {
                "command": ["python3", "numbers.py"],
                "outputs": ["n"],
                "batch": "spout",
                "parallelism": 2,
            }
        },
        "bolts": {
            "partial": {
                "command": ["bash", "partial.sh"],
                "outputs": ["txid", "count"],
                "batch": "bolt",
                "parallelism": 3,
                "inputs": {"numbers": "shuffle"},
            },
            "sum": {
                "command": ["node", "sum.js"],
                "outputs": ["total"],
                "batch": "committer",
                "inputs": {"partial": "global"},
            },
            "log": {"command": ["python3", "log.py"], "inputs": {"sum": "shuffle"}},
        },
    }


def write(project: Path, document: object, name: str = "topology.yaml") -> Path:
    path = project / name
    path.write_text(yaml.safe_dump(document, sort_keys=False))
    return path


def load_error(project: Path, document: object) -> tuple[TopologyError, Path]:
    path = write(project, document)
    with pytest.raises(TopologyError) as info:
        load(path)
    return info.value, path


def with_(mutate: Callable[[dict], object]) -> Callable[[], dict]:
    def make() -> dict:
        d = doc()
        mutate(d)
        return d

    return make


def spouts(d: dict) -> dict:
    return d["spouts"]


def bolts(d: dict) -> dict:
    return d["bolts"]


def add_other_spout(d: dict) -> None:
    spouts(d)["other"] = {"command": ["python3", "other.py"], "outputs": ["x"]}


# ---- loading ------------------------------------------------------------------------------------


def test_yaml_form_loads_roles_id_and_batch_group(project):
    topology = load(write(project, doc()))
    assert topology.transactional_id == "global-count"
    assert topology.config["topology.transactional.id"] == "global-count"
    assert [(c.id, c.batch) for c in topology.components] == [
        ("numbers", "spout"),
        ("partial", "bolt"),
        ("sum", "committer"),
        ("log", None),
    ]
    spout = batch_spout(topology)
    assert spout is not None and spout.id == "numbers"
    assert batch_group(topology) == ("numbers", "partial", "sum", "log")
    assert [role(topology.component(m)) for m in batch_group(topology)] == [
        "spout",
        "bolt",
        "committer",
        PLAIN,
    ]
    assert feeds(topology, "sum") == ("partial",)
    assert feeds(topology, "numbers") == ()


def test_ordinary_topology_is_not_transactional(project):
    d = doc()
    del d["transactional"]
    for body in (*spouts(d).values(), *bolts(d).values()):
        body.pop("batch", None)
    topology = load(write(project, d))
    assert topology.transactional_id is None
    assert batch_spout(topology) is None
    assert batch_group(topology) == ()
    assert all(c.batch is None for c in topology.components)


def test_same_id_in_config_and_transactional_is_fine(project):
    d = doc()
    d["config"]["topology.transactional.id"] = "global-count"
    assert load(write(project, d)).transactional_id == "global-count"


def test_id_in_config_alone_makes_the_topology_transactional(project):
    d = doc()
    del d["transactional"]
    d["config"]["topology.transactional.id"] = "from-config"
    assert load(write(project, d)).transactional_id == "from-config"


def builder() -> TopologyBuilder:
    b = TopologyBuilder("global-count", config={"topology.max.spout.pending": 3})
    b.transactional("global-count")
    b.spout("numbers", ["python3", "numbers.py"], ["n"], 2, batch="spout")
    b.bolt("partial", ["bash", "partial.sh"], ["txid", "count"], 3, batch="bolt").shuffle("numbers")
    b.bolt("sum", ["node", "sum.js"], ["total"], batch="committer").global_("partial")
    b.bolt("log", ["python3", "log.py"]).shuffle("sum")
    return b


def test_builder_form_builds_the_same_topology(project):
    from_yaml = load(write(project, doc()))
    built = builder().build(project)
    assert replace(built, source=from_yaml.source) == from_yaml
    assert built.transactional_id == "global-count"


def test_builder_does_not_change_the_config_it_was_given(project):
    config = {"topology.max.spout.pending": 3}
    b = TopologyBuilder("t", config=config).transactional("t-id")
    b.spout("numbers", ["python3", "numbers.py"], ["n"], batch="spout")
    assert b.build(project).transactional_id == "t-id"
    assert config == {"topology.max.spout.pending": 3}


def test_python_topology_file_with_builder(project):
    (project / "topo.py").write_text(
        "from host.topology import TopologyBuilder\n"
        "b = TopologyBuilder('py-count').transactional('py-count')\n"
        "b.spout('numbers', ['python3', 'numbers.py'], ['n'], batch='spout')\n"
        "b.bolt('sum', ['node', 'sum.js'], batch='committer').global_('numbers')\n"
        "topology = b\n"
    )
    topology = load(project / "topo.py")
    assert topology.transactional_id == "py-count"
    assert batch_group(topology) == ("numbers", "sum")
    assert topology.component("sum").batch == "committer"


@pytest.mark.parametrize(
    ("make", "words"),
    [
        (
            lambda b: b.spout("s", ["python3", "numbers.py"], ["n"], batch="sink"),
            "batch must be one of spout, bolt, committer",
        ),
        (
            lambda b: b.spout("s", ["python3", "numbers.py"], ["n"], batch="committer"),
            "'batch: committer' is for bolts",
        ),
    ],
)
def test_builder_errors_name_the_component(project, make, words):
    b = TopologyBuilder("t").transactional("t")
    make(b)
    with pytest.raises(TopologyError) as info:
        b.build(project, source="topo.py")
    assert info.value.component == "s"
    assert info.value.key == "batch"
    assert words in info.value.problem
    assert str(info.value).startswith("topo.py: component 's': key 'batch': ")


def test_builder_transactional_id_must_be_a_string(project):
    b = TopologyBuilder("t").transactional(5)  # type: ignore[arg-type]
    b.spout("numbers", ["python3", "numbers.py"], ["n"], batch="spout")
    with pytest.raises(TopologyError, match="transactional id must be a non-empty string"):
        b.build(project)


# ---- validation errors --------------------------------------------------------------------------

# (case id, document, component named, key named, words of the problem)
ERRORS = [
    (
        "batch without transactional",
        with_(lambda d: d.pop("transactional")),
        "numbers",
        "batch",
        "'batch: spout' needs a transactional topology: add 'transactional: {id: NAME}'",
    ),
    (
        "batch bolts without batch spout",
        with_(lambda d: spouts(d)["numbers"].pop("batch")),
        "partial",
        "batch",
        "'batch: bolt' needs a transactional batch spout under `host local` (a spout with "
        "'batch: spout'), and no spout here has one; on Spark every spout is transactional",
    ),
    (
        "transactional without batch spout",
        with_(
            lambda d: [
                body.pop("batch", None) for body in (*spouts(d).values(), *bolts(d).values())
            ]
        ),
        None,
        "transactional",
        "needs exactly one spout with 'batch: spout' (the spout that opens the batches); "
        "none has it. The spouts are: numbers; on Spark every spout is transactional",
    ),
    (
        "two batch spouts",
        with_(
            lambda d: (
                add_other_spout(d),
                spouts(d)["other"].update(batch="spout"),
            )
        ),
        "other",
        "batch",
        "a second batch spout ('numbers' is the first)",
    ),
    (
        "batch bolt not downstream of the batch spout",
        with_(
            lambda d: (
                add_other_spout(d),
                bolts(d)["partial"].update(inputs={"other": "shuffle"}),
            )
        ),
        "partial",
        "inputs",
        "a 'batch: bolt' bolt must be downstream of the batch spout 'numbers'",
    ),
    (
        "member fed from outside the group",
        with_(
            lambda d: (
                add_other_spout(d),
                bolts(d)["partial"].update(inputs={"numbers": "shuffle", "other": "shuffle"}),
            )
        ),
        "partial",
        "inputs.other",
        "is also fed by 'other', which is not: every tuple a member receives must belong to a "
        "batch. Subscribe it only to members of the group (numbers, partial, sum, log)",
    ),
    (
        "plain member fed from outside the group",
        with_(
            lambda d: (
                add_other_spout(d),
                bolts(d)["log"].update(inputs={"sum": "shuffle", "other": "shuffle"}),
            )
        ),
        "log",
        "inputs.other",
        "is also fed by 'other'",
    ),
    (
        "committer without inputs",
        with_(lambda d: bolts(d)["sum"].pop("inputs")),
        "sum",
        "inputs",
        "a committer must have inputs",
    ),
    (
        "batch bolt speaking msgpack",
        with_(lambda d: bolts(d)["partial"].update(serializer="msgpack")),
        "partial",
        "serializer",
        "a 'batch: bolt' component speaks JSON",
    ),
    (
        "batch spout speaking msgpack",
        with_(lambda d: spouts(d)["numbers"].update(serializer="msgpack")),
        "numbers",
        "serializer",
        "remove 'serializer: msgpack'",
    ),
    (
        "cycle in the batch group",
        with_(
            lambda d: (
                bolts(d)["log"].update(outputs=["line"]),
                bolts(d)["partial"]["inputs"].update(log="shuffle"),
            )
        ),
        "partial",
        "inputs",
        "the batch group has a cycle: partial -> sum -> log -> partial",
    ),
    (
        "bolt subscribing to itself",
        with_(lambda d: bolts(d)["partial"]["inputs"].update(partial={"fields": ["txid"]})),
        "partial",
        "inputs",
        "the batch group has a cycle: partial -> partial",
    ),
    (
        "batch spout with parallelism 0",
        with_(lambda d: spouts(d)["numbers"].update(parallelism=0)),
        "numbers",
        "parallelism",
        "parallelism must be an integer >= 1, got 0",
    ),
    (
        "unknown batch value",
        with_(lambda d: bolts(d)["sum"].update(batch="commiter")),
        "sum",
        "batch",
        "batch must be one of spout, bolt, committer (or left out for an ordinary component), "
        "got 'commiter'",
    ),
    (
        "batch not a string",
        with_(lambda d: bolts(d)["sum"].update(batch=True)),
        "sum",
        "batch",
        "batch must be one of spout, bolt, committer",
    ),
    (
        "batch: spout on a bolt",
        with_(lambda d: bolts(d)["partial"].update(batch="spout")),
        "partial",
        "batch",
        "'batch: spout' is for the spout that opens the batches: a bolt takes 'batch: bolt' or "
        "'batch: committer'",
    ),
    (
        "batch: bolt on a spout",
        with_(lambda d: spouts(d)["numbers"].update(batch="bolt")),
        "numbers",
        "batch",
        "'batch: bolt' is for bolts: a spout is either the batch spout",
    ),
    (
        "unknown key under transactional",
        with_(lambda d: d["transactional"].update(name="x")),
        None,
        "transactional.name",
        "unknown key; allowed keys are: id",
    ),
    (
        "transactional without id",
        with_(lambda d: d.update(transactional={})),
        None,
        "transactional.id",
        "transactional needs an id",
    ),
    (
        "transactional not a mapping",
        with_(lambda d: d.update(transactional="global-count")),
        None,
        "transactional",
        "transactional must be a mapping, e.g. 'transactional: {id: word-count}'",
    ),
    (
        "empty transactional",
        with_(lambda d: d.update(transactional=None)),
        None,
        "transactional",
        "transactional must be a mapping",
    ),
    (
        "id not a string",
        with_(lambda d: d.update(transactional={"id": 12})),
        None,
        "transactional.id",
        "the transactional id must be a non-empty string, got 12",
    ),
    (
        "id with a slash",
        with_(lambda d: d.update(transactional={"id": "a/b"})),
        None,
        "topology.transactional.id",
        "may not be . or .. nor contain / \\ or NUL (found /)",
    ),
    (
        "id ..",
        with_(lambda d: d.update(transactional={"id": ".."})),
        None,
        "topology.transactional.id",
        "names the directory of the batches' state",
    ),
    (
        "id in config alone not a string",
        with_(
            lambda d: (
                d.pop("transactional"),
                d["config"].update({"topology.transactional.id": 3}),
            )
        ),
        None,
        "topology.transactional.id",
        "the transactional id must be a non-empty string, got 3",
    ),
    (
        "config gives another id",
        with_(lambda d: d["config"].update({"topology.transactional.id": "other"})),
        None,
        "topology.transactional.id",
        "the config gives another transactional id ('other')",
    ),
    (
        "component config gives another id",
        with_(lambda d: bolts(d)["sum"].update(config={"topology.transactional.id": "x"})),
        "sum",
        "topology.transactional.id",
        "a component's config cannot give another transactional id ('x'; the topology's is "
        "'global-count')",
    ),
]


@pytest.mark.parametrize(
    ("make", "component", "key", "words"),
    [case[1:] for case in ERRORS],
    ids=[case[0] for case in ERRORS],
)
def test_validation_error_names_file_component_and_key(project, make, component, key, words):
    error, path = load_error(project, make())
    assert error.file == str(path)
    assert error.component == component
    assert error.key == key
    assert words in error.problem
    assert str(error).startswith(str(path) + ": ")
    if component is not None:
        assert f"component '{component}'" in str(error)


def test_a_component_config_may_repeat_the_id(project):
    d = doc()
    bolts(d)["sum"]["config"] = {"topology.transactional.id": "global-count"}
    assert load(write(project, d)).component("sum").config == {
        "topology.transactional.id": "global-count"
    }


def test_a_bolt_outside_the_group_may_be_fed_by_other_spouts(project):
    """Only the batch group is constrained: an ordinary flow beside it is fine."""
    d = doc()
    add_other_spout(d)
    bolts(d)["side"] = {"command": ["python3", "log.py"], "inputs": {"other": "shuffle"}}
    topology = load(write(project, d))
    assert "side" not in batch_group(topology)
    assert "other" not in batch_group(topology)


def test_a_cycle_outside_the_group_is_storms_business(project):
    d = doc()
    add_other_spout(d)
    bolts(d)["a"] = {
        "command": ["python3", "log.py"],
        "outputs": ["x"],
        "inputs": {"other": "shuffle", "b": "shuffle"},
    }
    bolts(d)["b"] = {"command": ["python3", "log.py"], "outputs": ["x"], "inputs": {"a": "shuffle"}}
    assert batch_group(load(write(project, d))) == ("numbers", "partial", "sum", "log")


# ---- the batch group's graph --------------------------------------------------------------------


def _hand_made(edges: list[tuple[int, int]], bolts_n: int) -> Topology:
    """Spout `s` feeds bolt b0; `edges` (i, j) subscribe bj to bi. Not validated."""
    inputs: dict[int, list[Input]] = {j: [] for j in range(bolts_n)}
    inputs[0].append(Input("s", "default", Grouping(SHUFFLE)))
    for i, j in edges:
        if all(inp.source != f"b{i}" for inp in inputs[j]):
            inputs[j].append(Input(f"b{i}", "default", Grouping(SHUFFLE)))
    components = [Component("s", SPOUT, ("x",), {"default": ("v",)}, batch="spout")] + [
        Component(f"b{j}", BOLT, ("x",), {"default": ("v",)}, tuple(inputs[j]))
        for j in range(bolts_n)
    ]
    return Topology("t", tuple(components), {"topology.transactional.id": "t"})


@settings(max_examples=200, deadline=None)
@given(
    st.integers(min_value=1, max_value=7).flatmap(
        lambda n: st.tuples(
            st.just(n),
            st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1)), max_size=12),
        )
    )
)
def test_batch_group_is_what_the_spout_reaches_and_cycles_are_found(case):
    n, edges = case
    topology = _hand_made(edges, n)
    # reachable from b0 by following edges, the plain way
    reached = {0}
    changed = True
    while changed:
        changed = False
        for i, j in edges:
            if i in reached and j not in reached:
                reached.add(j)
                changed = True
    members = batch_group(topology)
    assert members == ("s", *(f"b{j}" for j in range(n) if j in reached))
    assert downstream(topology, "s") == frozenset(members) - {"s"}
    sorter = graphlib.TopologicalSorter(
        {m: set(feeds(topology, m)) & set(members) for m in members}
    )
    try:
        sorter.prepare()
        acyclic = True
    except graphlib.CycleError:
        acyclic = False
    cycle = find_cycle(topology, members)
    assert (cycle is None) == acyclic
    if cycle is not None:  # a real cycle: closed, and every step is a subscription
        assert cycle[0] == cycle[-1]
        for a, b in zip(cycle, cycle[1:], strict=False):
            assert a in feeds(topology, b)


# ---- the state directory ------------------------------------------------------------------------


def test_state_dir_setting_is_read_and_checked():
    assert Settings.from_config({}).state_dir is None
    assert Settings.from_config({STATE_DIR: "/var/x"}).state_dir == "/var/x"
    with pytest.raises(TopologyError, match="must be a non-empty path, got ''"):
        Settings.from_config({STATE_DIR: ""})


def test_state_dir_is_a_directory_path_not_a_url(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # where abspath would have made a directory "hdfs:"
    for url in ("hdfs://nn:8020/state", "s3a://bucket/state", "file://host/state"):
        scheme = url.split("://")[0]
        with pytest.raises(TopologyError, match=f"not a {scheme}:// URL"):
            Settings.from_config({STATE_DIR: url})
    assert state_dir(Settings.from_config({STATE_DIR: "file:///srv/state"})) == "/srv/state"
    assert list(tmp_path.iterdir()) == []


def test_state_dir_configured_is_absolute(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert state_dir(Settings.from_config({STATE_DIR: "/srv/state"})) == "/srv/state"
    assert state_dir(Settings.from_config({STATE_DIR: "rel/st"})) == str(tmp_path / "rel" / "st")
    assert state_dir(Settings.from_config({STATE_DIR: "~/st"})) == str(tmp_path / "home" / "st")


def test_state_dir_default_follows_xdg_then_home(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "xdg"))
    assert state_dir(Settings.from_config({})) == str(tmp_path / "xdg" / "multilang-host")
    monkeypatch.setenv("XDG_STATE_HOME", "relative/ignored")  # the XDG spec: only absolute ones
    expected = str(tmp_path / "home" / ".local" / "state" / "multilang-host")
    assert state_dir(Settings.from_config({})) == expected
    monkeypatch.delenv("XDG_STATE_HOME")
    assert state_dir(Settings.from_config({})) == expected


def test_state_dir_of_a_topology_and_from_overrides(project, monkeypatch):
    monkeypatch.setenv("XDG_STATE_HOME", str(project / "xdg"))
    topology = load(write(project, doc()))
    assert state_dir(topology) == str(project / "xdg" / "multilang-host")
    overridden = with_overrides(topology, {STATE_DIR: str(project / "st")})
    assert state_dir(overridden) == str(project / "st")
    assert settings_for(overridden).state_dir == str(project / "st")
    with pytest.raises(TopologyError, match="must be a non-empty path, got 5"):
        with_overrides(topology, {STATE_DIR: 5})


def test_state_dir_is_topology_wide(project):
    d = doc()
    bolts(d)["sum"]["config"] = {STATE_DIR: "/x"}
    error, _ = load_error(project, d)
    assert error.component == "sum" and error.key == STATE_DIR
    assert "is topology-wide" in error.problem


# ---- command line and export --------------------------------------------------------------------


def run_host(*args: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "host", *args],
        cwd=cwd,
        env={**os.environ, **env, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_cli_validate_prints_id_batch_group_and_state_dir(project):
    path = write(project, doc())
    env = {"XDG_STATE_HOME": str(project / "xdg"), "HOME": str(project / "home")}
    result = run_host("validate", str(path), cwd=project, env=env)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    default_dir = project / "xdg" / "multilang-host"
    assert lines[-4:] == [
        "  transactional id: global-count",
        "  batch group: numbers (spout), partial (bolt), sum (committer), log (plain)",
        f"  state directory: {default_dir}",
        f"  its state: {default_dir / 'transactional' / 'global-count'}",
    ]

    result = run_host("validate", "--state-dir", "st", str(path), cwd=project, env=env)
    assert result.returncode == 0, result.stderr
    assert f"  state directory: {project / 'st'}" in result.stdout.splitlines()

    result = run_host("validate", "-c", f"{STATE_DIR}=/srv/from-c", str(path), cwd=project, env=env)
    assert "  state directory: /srv/from-c" in result.stdout.splitlines()


def test_cli_validate_ordinary_topology_prints_nothing_transactional(project):
    d = doc()
    del d["transactional"]
    for body in (*spouts(d).values(), *bolts(d).values()):
        body.pop("batch", None)
    result = run_host("validate", str(write(project, d)), cwd=project, env={})
    assert result.returncode == 0, result.stderr
    assert "transactional" not in result.stdout and "batch group" not in result.stdout


def test_cli_validate_reports_a_bad_batch_group(project):
    d = doc()
    bolts(d)["sum"].pop("inputs")
    path = write(project, d)
    result = run_host("validate", str(path), cwd=project, env={})
    assert result.returncode == 2
    assert result.stderr.startswith(
        f"error: {path}: component 'sum': key 'inputs': a committer must have inputs"
    )


def test_cli_local_takes_state_dir(project):
    result = run_host("local", "--help", cwd=project, env={})
    assert result.returncode == 0
    assert "--state-dir DIR" in result.stdout


def test_export_refuses_a_transactional_topology(project):
    topology = load(write(project, doc()))
    with pytest.raises(TopologyError) as info:
        export_flux(topology)
    assert info.value.component == "numbers" and info.value.key == "batch"
    assert "a transactional topology cannot be exported to Flux" in info.value.problem
    assert "do not speak batch/1" in info.value.problem


def test_export_still_writes_an_ordinary_topology(project):
    d = copy.deepcopy(doc())
    del d["transactional"]
    for body in (*spouts(d).values(), *bolts(d).values()):
        body.pop("batch", None)
    assert "FluxShellSpout" in export_flux(load(write(project, d)))
