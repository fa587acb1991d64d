"""DRPC topologies (docs/drpc.md §3): Storm's DRPCSpout and ReturnResults in Flux, our YAML and
the Python builder; the linear form (`drpc:`, `linear_drpc`); every validation error (each naming
the file, the component and the key); the DRPC settings; the Flux export; the graph's labels and
`validate`'s lines."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pytest
import yaml

from host.errors import TopologyError
from host.topology import TopologyBuilder, load
from host.topology.batch_group import PLAIN, batch_group, batch_spout, role
from host.topology.config_check import check_config
from host.topology.drpc_info import drpc_lines, drpc_url
from host.topology.export import export_flux
from host.topology.graph import in_host_label, to_dot
from host.topology.model import (
    BATCH_BOLT,
    BATCH_SPOUT,
    BOLT,
    DRPC_REQUEST,
    DRPC_RESULT,
    DRPC_SPOUT,
    FIELDS,
    RETURN_RESULTS,
    SHUFFLE,
    SPOUT,
    Component,
    Grouping,
    Input,
    Topology,
)
from host.topology.setting_checks import parse_bind
from host.topology.settings import Settings, settings_for
from host.topology.validation import validate

DATA = Path(__file__).parent / "topologies" / "drpc"
SCRIPTS = ("exclaim.sh", "tweeters.py", "followers.js", "distinct.py", "total.py")


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A topology directory with the scripts the documents below run."""
    for name in SCRIPTS:
        shutil.copy(DATA / name, tmp_path / name)
    return tmp_path


def write(project: Path, doc: dict | str, name: str = "topology.yaml") -> Path:
    path = project / name
    path.write_text(doc if isinstance(doc, str) else yaml.safe_dump(doc, sort_keys=False))
    return path


def refused(path: Path) -> TopologyError:
    with pytest.raises(TopologyError) as info:
        load(path)
    return info.value


def where(error: TopologyError) -> tuple[str | None, str | None, str | None]:
    return error.file, error.component, error.key


def without_source(t: Topology) -> Topology:
    return replace(t, source=None)


# ---- documents ----------------------------------------------------------------------------------


def flux_doc() -> dict:
    """docs/drpc.md §3.1's Flux example."""
    return yaml.safe_load((DATA / "exclaim.flux.yaml").read_text())


def native_doc() -> dict:
    """The same in our YAML."""
    return yaml.safe_load((DATA / "exclaim.yaml").read_text())


def linear_doc() -> dict:
    """docs/drpc.md §3.2's example."""
    return yaml.safe_load((DATA / "reach.yaml").read_text())


# ---- Flux ---------------------------------------------------------------------------------------


def test_flux_drpc_spout_and_return_results_run_in_the_host():
    t = load(DATA / "exclaim.flux.yaml")
    spout, bolt, answer = t.components
    assert spout == Component(
        id="drpc",
        kind=SPOUT,
        command=(),
        outputs={"default": ("args", "return-info")},
        parallelism=2,
        cwd=str(DATA),
        in_host=DRPC_SPOUT,
        drpc_function="exclaim",
    )
    assert bolt.command == ("bash", "exclaim.sh") and bolt.in_host is None
    assert answer == Component(
        id="return",
        kind=BOLT,
        command=(),
        outputs={},
        inputs=(Input("exclaim", "default", Grouping(SHUFFLE)),),
        cwd=str(DATA),
        in_host=RETURN_RESULTS,
    )
    assert t.drpc_functions == ("exclaim",)
    assert t.linear_drpc is None and not t.is_linear_drpc
    assert batch_group(t) == ()  # not transactional, not linear


def test_flux_parallelism_num_tasks_and_config_map_apply_to_drpc_parts(project):
    doc = flux_doc()
    doc["spouts"][0].update({"numTasks": 3, "config": {"topology.max.spout.pending": 5}})
    t = load(write(project, doc))
    assert t.component("drpc").parallelism == 3
    assert t.component("drpc").config == {"topology.max.spout.pending": 5}


@pytest.mark.parametrize(
    "args, problem",
    [
        (["exclaim", "local"], "no constructor of DRPCSpout takes 2 argument(s)"),
        ([], "DRPCSpout has no constructor without arguments"),
        ([5], "a DRPC function's name must be a non-empty string, got 5"),
        ([""], "a DRPC function's name must be a non-empty string, got ''"),
        (["a/b"], "cannot contain '/'"),
        (["two words"], "cannot contain whitespace"),
        ([["exclaim"]], "must be a non-empty string"),
    ],
)
def test_flux_drpc_spout_refuses_bad_constructor_args(project, args, problem):
    doc = flux_doc()
    doc["spouts"][0]["constructorArgs"] = args
    path = write(project, doc)
    error = refused(path)
    assert where(error) == (str(path), "drpc", "constructorArgs")
    assert problem in error.problem


def test_flux_drpc_spout_with_a_local_drpc_bean_is_refused_as_local_mode(project):
    doc = flux_doc()
    doc["components"] = [{"id": "local", "className": "org.apache.storm.LocalDRPC"}]
    doc["spouts"][0]["constructorArgs"] = ["exclaim", {"ref": "local"}]
    path = write(project, doc)
    error = refused(path)
    assert where(error) == (str(path), "drpc", "constructorArgs")
    assert "ILocalDRPC is Storm's local mode" in error.problem


def test_flux_drpc_classes_listed_under_the_wrong_kind(project):
    doc = flux_doc()
    doc["bolts"][1]["className"] = "org.apache.storm.drpc.DRPCSpout"
    doc["bolts"][1]["constructorArgs"] = ["exclaim"]
    path = write(project, doc)
    error = refused(path)
    assert where(error) == (str(path), "return", "className")
    assert "is a spout, listed under bolts" in error.problem


def test_flux_return_results_takes_no_arguments(project):
    doc = flux_doc()
    doc["bolts"][1]["constructorArgs"] = ["x"]
    path = write(project, doc)
    error = refused(path)
    assert where(error) == (str(path), "return", "constructorArgs")
    assert "it has only ReturnResults()" in error.problem


def test_flux_return_results_fed_by_one_field_is_refused(project):
    doc = flux_doc()
    doc["bolts"][0]["constructorArgs"] = [["bash", "exclaim.sh"], ["result"]]
    path = write(project, doc)
    error = refused(path)
    assert where(error) == (str(path), "return", "inputs.exclaim")
    assert "field 0 as the result and field 1 as the return-info" in error.problem


# ---- our YAML -----------------------------------------------------------------------------------


def test_native_form_is_the_flux_form():
    native = load(DATA / "exclaim.yaml")
    flux = load(DATA / "exclaim.flux.yaml")
    assert without_source(native) == without_source(flux)


@pytest.mark.parametrize(
    "change, component, key, problem",
    [
        (
            lambda d: d["spouts"]["drpc"].update(command=["bash", "x.sh"]),
            "drpc",
            "command",
            "unknown key for a part that runs inside the host",
        ),
        (
            lambda d: d["spouts"]["drpc"].update(outputs=["a"]),
            "drpc",
            "outputs",
            "unknown key for a part that runs inside the host",
        ),
        (
            lambda d: d["spouts"]["drpc"].update(batch="spout"),
            "drpc",
            "batch",
            "unknown key",
        ),
        (lambda d: d["spouts"]["drpc"].update(drpc_spout=""), "drpc", "drpc_spout", "non-empty"),
        (lambda d: d["spouts"]["drpc"].update(drpc_spout="a/b"), "drpc", "drpc_spout", "'/'"),
        (
            lambda d: d["spouts"]["drpc"].update(drpc_spout="a\tb"),
            "drpc",
            "drpc_spout",
            "whitespace",
        ),
        (lambda d: d["spouts"]["drpc"].update(drpc_spout=7), "drpc", "drpc_spout", "got 7"),
        (
            lambda d: d["spouts"]["drpc"].update(parallelism=0),
            "drpc",
            "parallelism",
            "integer >= 1",
        ),
        (
            lambda d: d["spouts"]["drpc"].update(config={"drpc.http.port": 1}),
            "drpc",
            "drpc.http.port",
            "is topology-wide",
        ),
        (
            lambda d: d["bolts"]["return"].update(return_results=False),
            "return",
            "return_results",
            "return_results takes true",
        ),
        (lambda d: d["bolts"]["return"].pop("inputs"), "return", "inputs", "ReturnResults has no"),
        (
            lambda d: d["bolts"]["return"].update(outputs=["x"]),
            "return",
            "outputs",
            "unknown key for a part that runs inside the host",
        ),
        (
            lambda d: d["bolts"]["exclaim"].update(outputs=["result"]),
            "return",
            "inputs.exclaim",
            "declares 1 field(s) (result)",
        ),
        (
            lambda d: d["bolts"]["exclaim"].update(drpc_spout="exclaim"),
            "exclaim",
            "drpc_spout",
            "unknown key",
        ),
    ],
)
def test_native_drpc_errors(
    project: Path, change: Callable[[dict], None], component: str, key: str, problem: str
) -> None:
    doc = native_doc()
    change(doc)
    path = write(project, doc)
    error = refused(path)
    assert where(error) == (str(path), component, key)
    assert problem in error.problem


def test_several_drpc_spouts_share_a_topology(project):
    doc = native_doc()
    doc["spouts"]["other"] = {"drpc_spout": "shout"}
    doc["spouts"]["again"] = {"drpc_spout": "exclaim"}
    doc["bolts"]["exclaim"]["inputs"] = {"drpc": "shuffle", "other": "shuffle", "again": "shuffle"}
    t = load(write(project, doc))
    assert t.drpc_functions == ("exclaim", "shout")


def test_a_drpc_topology_is_not_transactional(project):
    doc = native_doc()
    doc["transactional"] = {"id": "exclaim"}
    path = write(project, doc)
    error = refused(path)
    assert where(error) == (str(path), None, "topology.transactional.id")
    assert "a topology with DRPC parts is not transactional ('drpc' is one)" in error.problem


# ---- the linear form ----------------------------------------------------------------------------


def test_linear_form_expands_to_the_chain():
    t = load(DATA / "reach.yaml")
    assert [c.id for c in t.components] == [
        "drpc-request",
        "tweeters",
        "followers",
        "distinct",
        "total",
        "drpc-result",
    ]
    request, tweeters, followers, distinct, total, result = t.components
    assert request == Component(
        id="drpc-request",
        kind=SPOUT,
        command=(),
        outputs={"default": ("request", "args")},
        cwd=str(DATA),
        in_host=DRPC_REQUEST,
        drpc_function="reach",
    )
    assert tweeters.inputs == (Input("drpc-request", "default", Grouping(SHUFFLE)),)
    assert tweeters.parallelism == 2 and tweeters.batch is None
    assert followers.inputs == (Input("tweeters", "default", Grouping(SHUFFLE)),)
    assert distinct.inputs == (Input("followers", "default", Grouping(FIELDS, ("id", "follower"))),)
    assert distinct.batch == BATCH_BOLT and total.batch == BATCH_BOLT
    assert result == Component(
        id="drpc-result",
        kind=BOLT,
        command=(),
        outputs={},
        inputs=(Input("total", "default", Grouping(SHUFFLE)),),
        cwd=str(DATA),
        in_host=DRPC_RESULT,
    )
    assert t.linear_drpc == "reach" and t.is_linear_drpc and t.drpc_functions == ("reach",)
    assert t.transactional_id is None
    assert settings_for(t).drpc_request_timeout_secs == 30.0


def test_linear_chain_is_the_batch_group_opened_by_drpc_request():
    t = load(DATA / "reach.yaml")
    spout = batch_spout(t)
    assert spout is not None and spout.id == "drpc-request"
    assert batch_group(t) == tuple(c.id for c in t.components)
    roles = {m: role(t.component(m)) for m in batch_group(t)}
    assert roles == {
        "drpc-request": BATCH_SPOUT,
        "tweeters": PLAIN,
        "followers": PLAIN,
        "distinct": BATCH_BOLT,
        "total": BATCH_BOLT,
        "drpc-result": PLAIN,
    }


def test_linear_builder_is_the_linear_yaml():
    assert without_source(load(DATA / "reach.py")) == without_source(load(DATA / "reach.yaml"))


def _bolt(doc: dict, index: int) -> dict:
    return doc["drpc"]["bolts"][index]


@pytest.mark.parametrize(
    "change, component, key, problem",
    [
        (lambda d: d.update(spouts={}), None, "spouts", "has no 'spouts:'"),
        (lambda d: d.update(bolts={}), None, "bolts", "has no 'bolts:'"),
        (
            lambda d: d.update(transactional={"id": "reach"}),
            None,
            "transactional",
            "it is not transactional",
        ),
        (
            lambda d: d["config"].update({"topology.transactional.id": "reach"}),
            None,
            "topology.transactional.id",
            "is not transactional",
        ),
        (lambda d: d.update(drpc="reach"), None, "drpc", "drpc must be a mapping"),
        (lambda d: d["drpc"].pop("function"), None, "drpc.function", "needs the function"),
        (lambda d: d["drpc"].update(extra=1), None, "drpc.extra", "unknown key"),
        (
            lambda d: d["drpc"].update(function="re ach"),
            "drpc-request",
            "drpc.function",
            "whitespace",
        ),
        (lambda d: d["drpc"].update(function=""), "drpc-request", "drpc.function", "non-empty"),
        (lambda d: d["drpc"].update(bolts=[]), None, "drpc.bolts", "at least one bolt"),
        (lambda d: d["drpc"].update(bolts={}), None, "drpc.bolts", "must be a list"),
        (lambda d: d["drpc"]["bolts"].append("x"), None, "drpc.bolts[4]", "a mapping"),
        (lambda d: _bolt(d, 1).pop("id"), None, "drpc.bolts[1].id", "needs an id"),
        (
            lambda d: _bolt(d, 1).update(id="drpc-result"),
            "drpc-result",
            "id",
            "is the id of a part the host adds",
        ),
        (
            lambda d: _bolt(d, 1).update(inputs={"tweeters": "shuffle"}),
            "followers",
            "inputs",
            "not 'inputs:'",
        ),
        (lambda d: _bolt(d, 1).update(kafka={}), "followers", "kafka", "unknown key"),
        (lambda d: _bolt(d, 1).update(batch="bolt"), "followers", "batch", "unknown key"),
        (
            lambda d: _bolt(d, 1).update(grouping={"grouping": "shuffle", "stream": "s"}),
            "followers",
            "grouping.stream",
            "takes no stream",
        ),
        (
            lambda d: _bolt(d, 1).update(grouping="scatter"),
            "followers",
            "inputs.tweeters",
            "unknown grouping 'scatter'",
        ),
        (lambda d: _bolt(d, 1).update(grouping=5), "followers", "grouping", "give a grouping"),
        (
            lambda d: _bolt(d, 2).update(finish_batch="yes"),
            "distinct",
            "finish_batch",
            "must be true or false",
        ),
        (
            lambda d: _bolt(d, 2).update(serializer="msgpack"),
            "distinct",
            "serializer",
            "'finish_batch: true' bolt speaks batch/1",
        ),
        (
            lambda d: _bolt(d, 0).update(outputs=[]),
            "tweeters",
            "outputs",
            "the request id first",
        ),
        (lambda d: _bolt(d, 0).pop("outputs"), "tweeters", "outputs", "declared: none"),
        (
            lambda d: _bolt(d, 3).update(outputs=["id"]),
            "total",
            "outputs",
            "the request id and the result",
        ),
        (lambda d: _bolt(d, 0).pop("command"), "tweeters", "command", "missing command"),
        (
            lambda d: _bolt(d, 1).update(id="tweeters"),
            "tweeters",
            "id",
            "duplicate component id",
        ),
    ],
)
def test_linear_errors(
    project: Path, change: Callable[[dict], None], component: str | None, key: str, problem: str
) -> None:
    doc = linear_doc()
    change(doc)
    path = write(project, doc)
    error = refused(path)
    assert where(error) == (str(path), component, key)
    assert problem in error.problem


def test_linear_plain_bolts_may_speak_msgpack(project):
    doc = linear_doc()
    _bolt(doc, 0)["serializer"] = "msgpack"
    assert load(write(project, doc)).component("tweeters").serializer == "msgpack"


# ---- the Python builder -------------------------------------------------------------------------


def test_builder_drpc_spout_and_return_results_are_the_yaml_form():
    b = TopologyBuilder("exclaim")
    b.drpc_spout("drpc", "exclaim", parallelism=2)
    b.bolt("exclaim", ["bash", "exclaim.sh"], outputs=["result", "return-info"]).shuffle("drpc")
    b.return_results("return").shuffle("exclaim")
    built = b.build(base_dir=DATA)
    assert without_source(built) == without_source(load(DATA / "exclaim.yaml"))


def test_builder_errors_name_the_component_and_key():
    b = TopologyBuilder("exclaim")
    b.drpc_spout("drpc", "a/b")
    with pytest.raises(TopologyError) as info:
        b.build(base_dir=DATA, source="t.py")
    assert where(info.value) == ("t.py", "drpc", "drpc_spout")

    b = TopologyBuilder("reach")
    b.spout("extra", ["python3", "tweeters.py"], outputs=["x"])
    b.linear_drpc("reach").bolt("tweeters", ["python3", "tweeters.py"], outputs=["id", "r"])
    with pytest.raises(TopologyError) as info:
        b.build(base_dir=DATA, source="t.py")
    assert where(info.value) == ("t.py", "extra", "drpc")

    b = TopologyBuilder("reach").transactional("reach")
    b.linear_drpc("reach").bolt("tweeters", ["python3", "tweeters.py"], outputs=["id", "r"])
    with pytest.raises(TopologyError) as info:
        b.build(base_dir=DATA, source="t.py")
    assert where(info.value) == ("t.py", None, "transactional")

    b = TopologyBuilder("reach")
    drpc = b.linear_drpc("reach")
    drpc.bolt("tweeters", ["python3", "tweeters.py"], outputs=["id", "r"]).shuffle().global_()
    with pytest.raises(TopologyError) as info:
        b.build(base_dir=DATA, source="t.py")
    assert where(info.value) == ("t.py", "tweeters", "grouping")


# ---- topologies made by hand --------------------------------------------------------------------


def _part(id: str, role: str, **changes: object) -> Component:
    """An in-host part as a runtime test would write it by hand."""
    kinds = {DRPC_SPOUT: SPOUT, RETURN_RESULTS: BOLT, DRPC_REQUEST: SPOUT, DRPC_RESULT: BOLT}
    outputs: dict[str, dict[str, tuple[str, ...]]] = {
        DRPC_SPOUT: {"default": ("args", "return-info")},
        DRPC_REQUEST: {"default": ("request", "args")},
    }
    functions = {DRPC_SPOUT: "f", DRPC_REQUEST: "f"}
    c = Component(
        id,
        kinds[role],
        (),
        outputs.get(role, {}),
        in_host=role,
        drpc_function=functions.get(role),
    )
    return replace(c, **changes)  # type: ignore[arg-type]


def _user_bolt(id: str, source: str, outputs: tuple[str, ...] = ("id", "result")) -> Component:
    return Component(
        id,
        BOLT,
        ("python3", "total.py"),
        {"default": outputs},
        (Input(source, "default", Grouping(SHUFFLE)),),
        cwd=str(DATA),
    )


def _shuffle(source: str) -> tuple[Input, ...]:
    return (Input(source, "default", Grouping(SHUFFLE)),)


def _linear(*middle: Component, **config: object) -> Topology:
    last = middle[-1].id if middle else "drpc-request"
    return Topology(
        "t",
        (
            _part("drpc-request", DRPC_REQUEST),
            *middle,
            _part("drpc-result", DRPC_RESULT, inputs=_shuffle(last)),
        ),
        dict(config),
        source="t.yaml",
    )


def test_hand_made_topologies_with_drpc_parts_validate():
    validate(_linear(_user_bolt("a", "drpc-request")))
    validate(
        Topology(
            "t",
            (
                _part("s", DRPC_SPOUT),
                _part("r", RETURN_RESULTS, inputs=_shuffle("s")),
            ),
        )
    )


@pytest.mark.parametrize(
    "topology, component, key, problem",
    [
        (
            Topology("t", (_part("s", DRPC_SPOUT, command=("python3", "x.py")),), source="t.yaml"),
            "s",
            "command",
            "runs inside the host: it has no command",
        ),
        (
            Topology("t", (_part("r", RETURN_RESULTS, kind=SPOUT),), source="t.yaml"),
            "r",
            "kind",
            "is a bolt, declared here as a spout",
        ),
        (
            Topology("t", (_part("s", DRPC_SPOUT, outputs={"default": ("x",)}),), source="t.yaml"),
            "s",
            "outputs",
            "declares default: (args, return-info)",
        ),
        (
            Topology("t", (_part("s", DRPC_SPOUT, batch="spout"),), source="t.yaml"),
            "s",
            "batch",
            "takes no 'batch:'",
        ),
        (
            Topology(
                "t", (replace(_part("s", DRPC_SPOUT), in_host="drpc-thing"),), source="t.yaml"
            ),
            "s",
            "in_host",
            "in_host must be one of",
        ),
        (
            Topology(
                "t",
                (
                    Component(
                        "s",
                        SPOUT,
                        ("python3", "x.py"),
                        {"default": ("x",)},
                        cwd=str(DATA),
                        drpc_function="f",
                    ),
                ),
                source="t.yaml",
            ),
            "s",
            "drpc_function",
            "this component runs a command",
        ),
        (
            Topology(
                "t",
                (
                    _part("s", DRPC_SPOUT),
                    _part("r", RETURN_RESULTS, inputs=_shuffle("s"), drpc_function="f"),
                ),
                source="t.yaml",
            ),
            "r",
            "drpc_function",
            "serves no function of its own",
        ),
        (
            Topology(
                "t",
                (
                    _part("drpc-request", DRPC_REQUEST),
                    _user_bolt("a", "drpc-request"),
                    _part("r", RETURN_RESULTS, inputs=_shuffle("a")),
                ),
                source="t.yaml",
            ),
            None,
            "drpc",
            "exactly one drpc-result part",
        ),
        (
            _linear(_user_bolt("a", "drpc-request"), _user_bolt("b", "drpc-request")),
            "drpc-request",
            "drpc.bolts",
            "feeds 'a', 'b'",
        ),
        (
            _linear(),
            None,
            "drpc.bolts",
            "at least one bolt",
        ),
        (
            replace(
                _linear(_user_bolt("a", "drpc-request")),
                components=(
                    _part("drpc-request", DRPC_REQUEST, parallelism=2),
                    _user_bolt("a", "drpc-request"),
                    _part("drpc-result", DRPC_RESULT, inputs=_shuffle("a")),
                ),
            ),
            "drpc-request",
            "parallelism",
            "runs as one task, got 2",
        ),
        (
            replace(
                _linear(_user_bolt("a", "drpc-request")),
                components=(
                    _part("drpc-request", DRPC_REQUEST),
                    Component(
                        "other", SPOUT, ("python3", "x.py"), {"default": ("x",)}, cwd=str(DATA)
                    ),
                    _user_bolt("a", "drpc-request"),
                    _part("drpc-result", DRPC_RESULT, inputs=_shuffle("a")),
                ),
            ),
            "other",
            "spouts",
            "has no spouts of its own",
        ),
        (
            _linear(
                replace(_user_bolt("a", "drpc-request"), batch="committer"),
            ),
            "a",
            "batch",
            "not 'batch: committer'",
        ),
        (
            Topology(
                "t",
                (
                    _part("s", DRPC_SPOUT),
                    replace(_user_bolt("a", "s"), batch="bolt"),
                    _part("r", RETURN_RESULTS, inputs=_shuffle("a")),
                ),
                source="t.yaml",
            ),
            "a",
            "batch",
            "needs a transactional topology",
        ),
    ],
)
def test_hand_made_drpc_errors(
    topology: Topology, component: str | None, key: str, problem: str
) -> None:
    with pytest.raises(TopologyError) as info:
        validate(topology)
    assert (info.value.component, info.value.key) == (component, key)
    assert problem in info.value.problem


# ---- settings -----------------------------------------------------------------------------------


def test_drpc_settings_defaults():
    s = Settings.from_config({})
    assert (s.drpc_bind, s.drpc_port) == ("127.0.0.1", 3774)
    assert s.drpc_request_timeout_secs == 600.0
    assert isinstance(s.drpc_request_timeout_secs, float)
    assert (s.drpc_max_body, s.drpc_max_pending, s.drpc_max_connections) == (1048576, 1024, 1024)


def test_drpc_settings_read_set_values():
    s = Settings.from_config(
        {
            "drpc.http.port": 8080,
            "drpc.request.timeout.secs": 2.5,
            "drpc.max_buffer_size": 10,
            "host.drpc.bind": "0.0.0.0",
            "host.drpc.max.pending": 3,
            "host.drpc.max.connections": 4,
        }
    )
    assert (s.drpc_bind, s.drpc_port, s.drpc_request_timeout_secs) == ("0.0.0.0", 8080, 2.5)
    assert (s.drpc_max_body, s.drpc_max_pending, s.drpc_max_connections) == (10, 3, 4)
    # the bind's port wins over drpc.http.port; 0 is any free port
    both = Settings.from_config({"drpc.http.port": 8080, "host.drpc.bind": "localhost:0"})
    assert (both.drpc_bind, both.drpc_port) == ("localhost", 0)
    v6 = Settings.from_config({"host.drpc.bind": "[::1]:9000"})
    assert (v6.drpc_bind, v6.drpc_port) == ("::1", 9000)


@pytest.mark.parametrize(
    "key, value, problem",
    [
        ("drpc.http.port", 70000, "must be a port, 0 to 65535"),
        ("drpc.http.port", -1, "must be a port"),
        ("drpc.http.port", "3774", "must be a port"),
        ("drpc.http.port", True, "must be a port"),
        ("drpc.request.timeout.secs", 0, "must be a number > 0"),
        ("drpc.request.timeout.secs", "600", "must be a number > 0"),
        ("drpc.max_buffer_size", 0, "must be a positive integer"),
        ("drpc.max_buffer_size", 1.5, "must be a positive integer"),
        ("host.drpc.bind", 3774, "must be HOST or HOST:PORT"),
        ("host.drpc.bind", "", "with a host"),
        ("host.drpc.bind", "127.0.0.1:99999", "must be 0 to 65535"),
        ("host.drpc.bind", "127.0.0.1:http", "must be 0 to 65535"),
        ("host.drpc.bind", "my host", "is not a host name or address"),
        ("host.drpc.bind", "[::1", "without ']'"),
        ("host.drpc.bind", "[::1]x", "must be [IPV6] or [IPV6]:PORT"),
        ("host.drpc.max.pending", 0, "must be a positive integer"),
        ("host.drpc.max.connections", -5, "must be a positive integer"),
    ],
)
def test_drpc_settings_refuse_bad_values(key, value, problem):
    with pytest.raises(TopologyError) as info:
        check_config({key: value}, file="t.yaml")
    assert (info.value.file, info.value.key) == ("t.yaml", key)
    assert problem in info.value.problem
    with pytest.raises(TopologyError):
        Settings.from_config({key: value})


def test_storms_other_drpc_keys_are_still_accepted(project):
    conf = {"drpc.servers": ["a", "b"], "drpc.port": 3772, "drpc.invocations.port": 3773}
    assert check_config(conf) == conf
    doc = native_doc()
    doc["config"] = conf
    assert load(write(project, doc)).config == conf


def test_parse_bind():
    assert parse_bind("127.0.0.1") == ("127.0.0.1", None)
    assert parse_bind("localhost:80") == ("localhost", 80)
    assert parse_bind("::1") == ("::1", None)
    assert parse_bind("[::]") == ("::", None)
    with pytest.raises(ValueError, match="not a host name"):
        parse_bind("a/b")


# ---- export -------------------------------------------------------------------------------------


def test_flux_file_round_trips_through_export(project):
    first = load(DATA / "exclaim.flux.yaml")
    exported = project / "exported.flux.yaml"
    exported.write_text(export_flux(first, base_dir=project))
    doc = yaml.safe_load(exported.read_text())
    assert doc["spouts"] == [
        {
            "id": "drpc",
            "className": "org.apache.storm.drpc.DRPCSpout",
            "constructorArgs": ["exclaim"],
            "parallelism": 2,
        }
    ]
    assert doc["bolts"][1] == {
        "id": "return",
        "className": "org.apache.storm.drpc.ReturnResults",
        "parallelism": 1,
    }
    again = load(exported)
    assert again.components == tuple(replace(c, cwd=str(project)) for c in first.components)


def test_native_drpc_round_trips_through_export(project):
    first = load(write(project, native_doc()))
    again = load(write(project, export_flux(first), "again.flux.yaml"))
    assert without_source(again) == without_source(first)


def test_export_refuses_a_linear_drpc_topology():
    with pytest.raises(TopologyError) as info:
        export_flux(load(DATA / "reach.yaml"))
    assert where(info.value) == (str(DATA / "reach.yaml"), None, "drpc")
    assert "Flux has no LinearDRPCTopologyBuilder" in info.value.problem


def test_export_refuses_config_on_a_drpc_part(project):
    doc = native_doc()
    doc["spouts"]["drpc"]["config"] = {"topology.max.spout.pending": 5}
    path = write(project, doc)
    with pytest.raises(TopologyError) as info:
        export_flux(load(path))
    assert where(info.value) == (str(path), "drpc", "config")


# ---- display ------------------------------------------------------------------------------------


def test_graph_labels_the_parts_run_in_the_host():
    flux = load(DATA / "exclaim.flux.yaml")
    assert in_host_label(flux.component("drpc")) == "DRPCSpout(exclaim), in host"
    assert in_host_label(flux.component("return")) == "ReturnResults, in host"
    assert in_host_label(flux.component("exclaim")) is None
    assert "DRPCSpout(exclaim), in host" in to_dot(flux)
    linear = load(DATA / "reach.yaml")
    assert in_host_label(linear.component("drpc-request")) == "PrepareRequest(reach), in host"
    assert in_host_label(linear.component("drpc-result")) == "JoinResult, in host"


def test_validate_lines(project):
    assert drpc_lines(load(DATA / "exclaim.yaml")) == [
        "DRPC functions: exclaim, served on http://127.0.0.1:3774"
    ]
    assert drpc_lines(load(DATA / "reach.yaml")) == [
        "DRPC functions: reach, served on http://127.0.0.1:3774",
        "linear DRPC chain: drpc-request -> tweeters -> followers -> distinct (finish_batch) "
        "-> total (finish_batch) -> drpc-result",
    ]
    doc = native_doc()
    doc["config"] = {"host.drpc.bind": "::1", "drpc.http.port": 0}
    assert drpc_lines(load(write(project, doc))) == [
        "DRPC functions: exclaim, served on a free port of ::1 (port 0)"
    ]
    doc["config"] = {"host.drpc.bind": "[::1]:8000"}
    assert drpc_lines(load(write(project, doc))) == [
        "DRPC functions: exclaim, served on http://[::1]:8000"
    ]
    assert drpc_lines(load(Path(__file__).parent / "topologies" / "wordcount.yaml")) == []
    assert drpc_url("0.0.0.0", 1) == "http://0.0.0.0:1"
