"""host.topology: loading our YAML and Python files, the builder, and validation errors."""

from __future__ import annotations

import copy
import os
import stat
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from host.errors import TopologyError
from host.topology import TopologyBuilder, load, validate
from host.topology.commands import find_executable, host_bin_dir
from host.topology.files import is_flux
from host.topology.model import (
    ALL,
    BOLT,
    DIRECT,
    FIELDS,
    GLOBAL,
    LOCAL_OR_SHUFFLE,
    NONE,
    PARTIAL_KEY,
    SHUFFLE,
    SPOUT,
    Component,
    Grouping,
    Input,
    Topology,
)
from host.topology.native import from_document

FIXTURES = Path(__file__).parent / "topologies"


# ---- helpers ------------------------------------------------------------------------------------


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A topology directory with the scripts the documents below refer to."""
    (tmp_path / "spout.py").write_text("# dummy\n")
    (tmp_path / "bolt.py").write_text("# dummy\n")
    run = tmp_path / "run.sh"
    run.write_text("#!/usr/bin/env bash\n")
    run.chmod(run.stat().st_mode | stat.S_IXUSR)
    (tmp_path / "noexec.sh").write_text("#!/usr/bin/env bash\n")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "inner.py").write_text("# dummy\n")
    (tmp_path / "plain-file").write_text("")
    return tmp_path


def base_doc() -> dict:
    return {
        "name": "t",
        "spouts": {"s": {"command": ["python", "spout.py"], "outputs": ["word", "n"]}},
        "bolts": {
            "b": {"command": ["python", "bolt.py"], "outputs": ["out"], "inputs": {"s": "shuffle"}}
        },
    }


def write(project: Path, doc: object, name: str = "topology.yaml") -> Path:
    path = project / name
    path.write_text(doc if isinstance(doc, str) else yaml.safe_dump(doc, sort_keys=False))
    return path


def load_doc(project: Path, doc: object) -> Topology:
    return load(write(project, doc))


def load_error(project: Path, doc: object) -> TopologyError:
    path = write(project, doc)
    with pytest.raises(TopologyError) as info:
        load(path)
    return info.value


def spout(doc: dict) -> dict:
    return doc["spouts"]["s"]


def bolt(doc: dict) -> dict:
    return doc["bolts"]["b"]


def with_(mutate):
    def make():
        doc = base_doc()
        mutate(doc)
        return doc

    return make


# ---- every validation error names file, component and key ---------------------------------------

# (case id, document, component named in the error, key named in the error, words of the problem)
ERRORS = [
    ("missing name", with_(lambda d: d.pop("name")), None, "name", "missing topology name"),
    ("empty name", with_(lambda d: d.update(name="  ")), None, "name", "missing topology name"),
    (
        "name not a string",
        with_(lambda d: d.update(name=12)),
        None,
        "name",
        "the topology name must be a string, got 12",
    ),
    (
        "name with a dot",
        with_(lambda d: d.update(name="word.count")),
        None,
        "name",
        "may not contain .",
    ),
    (
        "unknown top-level key",
        with_(lambda d: d.update(spuots={})),
        None,
        "spuots",
        "allowed keys are: name, config, spouts, bolts",
    ),
    (
        "unknown component key",
        with_(lambda d: bolt(d).update(paralelism=2)),
        "b",
        "paralelism",
        "allowed keys are: command, outputs, inputs, parallelism",
    ),
    (
        "activate on a bolt",
        with_(lambda d: bolt(d).update(activate=False)),
        "b",
        "activate",
        "unknown key",
    ),
    (
        "unknown source",
        with_(lambda d: bolt(d).update(inputs={"nowhere": "shuffle"})),
        "b",
        "inputs.nowhere",
        "unknown component 'nowhere'; the components are: b, s",
    ),
    (
        "undeclared stream",
        with_(lambda d: bolt(d).update(inputs={"s": {"grouping": "shuffle", "stream": "other"}})),
        "b",
        "inputs.s",
        "'s' declares no stream 'other'; its streams are: default",
    ),
    (
        "source without outputs",
        with_(lambda d: spout(d).pop("outputs")),
        "b",
        "inputs.s",
        "give it outputs",
    ),
    (
        "fields not in stream",
        with_(lambda d: bolt(d).update(inputs={"s": {"fields": ["nope"]}})),
        "b",
        "inputs.s",
        "field 'nope' is not in stream 'default' of 's', whose fields are: word, n",
    ),
    (
        "partial_key field not in stream",
        with_(lambda d: bolt(d).update(inputs={"s": {"partial_key": ["word", "x"]}})),
        "b",
        "inputs.s",
        "field 'x' is not in stream",
    ),
    (
        "fields grouping without fields",
        with_(lambda d: bolt(d).update(inputs={"s": "fields"})),
        "b",
        "inputs.s",
        "fields grouping needs fields",
    ),
    (
        "partial_key without fields",
        with_(lambda d: bolt(d).update(inputs={"s": "partial_key"})),
        "b",
        "inputs.s",
        "partial_key grouping needs fields",
    ),
    (
        "empty fields list",
        with_(lambda d: bolt(d).update(inputs={"s": {"grouping": "fields", "fields": []}})),
        "b",
        "inputs.s",
        "fields grouping needs fields",
    ),
    (
        "shuffle with fields",
        with_(lambda d: bolt(d).update(inputs={"s": {"grouping": "shuffle", "fields": ["word"]}})),
        "b",
        "inputs.s",
        "shuffle grouping takes no fields",
    ),
    (
        "unknown grouping",
        with_(lambda d: bolt(d).update(inputs={"s": "scatter"})),
        "b",
        "inputs.s",
        "unknown grouping 'scatter'; groupings are: shuffle, fields, all, global",
    ),
    (
        "grouping not a string",
        with_(lambda d: bolt(d).update(inputs={"s": 5})),
        "b",
        "inputs.s",
        "give a grouping",
    ),
    (
        "grouping mapping without grouping",
        with_(lambda d: bolt(d).update(inputs={"s": {"stream": "default"}})),
        "b",
        "inputs.s",
        "say how to group",
    ),
    (
        "unknown input key",
        with_(lambda d: bolt(d).update(inputs={"s": {"grouping": "shuffle", "steam": "x"}})),
        "b",
        "inputs.s.steam",
        "allowed keys are: grouping, fields, partial_key, stream",
    ),
    (
        "partial_key with grouping",
        with_(lambda d: bolt(d).update(inputs={"s": {"grouping": "all", "partial_key": ["n"]}})),
        "b",
        "inputs.s",
        "do not combine",
    ),
    (
        "subscribed twice",
        with_(lambda d: bolt(d).update(inputs={"s": ["shuffle", {"fields": ["word"]}]})),
        "b",
        "inputs.s",
        "subscribes twice to stream 'default' of 's'",
    ),
    (
        "inputs not a mapping",
        with_(lambda d: bolt(d).update(inputs=["s"])),
        "b",
        "inputs",
        "inputs must be a mapping",
    ),
    (
        "parallelism 0",
        with_(lambda d: bolt(d).update(parallelism=0)),
        "b",
        "parallelism",
        "parallelism must be an integer >= 1, got 0",
    ),
    (
        "parallelism string",
        with_(lambda d: bolt(d).update(parallelism="2")),
        "b",
        "parallelism",
        "got '2'",
    ),
    (
        "parallelism float",
        with_(lambda d: spout(d).update(parallelism=1.5)),
        "s",
        "parallelism",
        "got 1.5",
    ),
    (
        "parallelism bool",
        with_(lambda d: spout(d).update(parallelism=True)),
        "s",
        "parallelism",
        "got True",
    ),
    ("missing command", with_(lambda d: bolt(d).pop("command")), "b", "command", "missing command"),
    ("empty command", with_(lambda d: bolt(d).update(command=[])), "b", "command", "is empty"),
    (
        "shell string command",
        with_(lambda d: bolt(d).update(command="python bolt.py --x 'a b'")),
        "b",
        "command",
        "not a string: commands run without a shell, so write [python, bolt.py, --x, a b]",
    ),
    (
        "command with a number",
        with_(lambda d: bolt(d).update(command=["python", "bolt.py", 3])),
        "b",
        "command",
        "argument 2 must be a non-empty string, got 3",
    ),
    (
        "command mapping",
        with_(lambda d: bolt(d).update(command={"python": "bolt.py"})),
        "b",
        "command",
        "must be a list of arguments",
    ),
    (
        "spout and bolt with one id",
        with_(lambda d: d["bolts"].update(s=d["bolts"].pop("b"))),
        "s",
        "id",
        "duplicate component id: a spout and a bolt are both called 's'",
    ),
    (
        "reserved id",
        with_(lambda d: d["bolts"].update(__acker=d["bolts"].pop("b"))),
        "__acker",
        "id",
        "reserved",
    ),
    (
        "non-string id",
        with_(lambda d: d["bolts"].update({7: d["bolts"].pop("b")})),
        "7",
        "id",
        "component ids must be non-empty strings",
    ),
    (
        "spout with inputs",
        with_(lambda d: spout(d).update(inputs={"b": "shuffle"})),
        "s",
        "inputs",
        "a spout takes no inputs",
    ),
    (
        "bolt without inputs",
        with_(lambda d: bolt(d).pop("inputs")),
        "b",
        "inputs",
        "bolt has no inputs",
    ),
    (
        "bolt with empty inputs",
        with_(lambda d: bolt(d).update(inputs={})),
        "b",
        "inputs",
        "bolt has no inputs",
    ),
    ("no spouts", with_(lambda d: d.pop("spouts")), None, "spouts", "no spouts"),
    (
        "spouts as a list",
        with_(lambda d: d.update(spouts=[{"id": "s"}])),
        None,
        "spouts",
        "a list is Flux's form",
    ),
    (
        "component not a mapping",
        with_(lambda d: d["bolts"].update(b="python bolt.py")),
        "b",
        None,
        "a bolt is a mapping",
    ),
    (
        "executable not on PATH",
        with_(lambda d: bolt(d).update(command=["no-such-program-3f9a", "bolt.py"])),
        "b",
        "command",
        "executable 'no-such-program-3f9a' not found on PATH",
    ),
    (
        "relative executable missing",
        with_(lambda d: bolt(d).update(command=["./missing.sh"])),
        "b",
        "command",
        "'./missing.sh' does not exist (relative to the component's directory",
    ),
    (
        "relative executable not executable",
        with_(lambda d: bolt(d).update(command=["./noexec.sh"])),
        "b",
        "command",
        "is not executable: chmod +x it, or run it through its interpreter, e.g. [bash, ",
    ),
    (
        "executable is a directory",
        with_(lambda d: bolt(d).update(command=["./sub"])),
        "b",
        "command",
        "is a directory",
    ),
    (
        "script argument missing",
        with_(lambda d: bolt(d).update(command=["python", "gone.py"])),
        "b",
        "command",
        "script 'gone.py' does not exist in the component's directory",
    ),
    (
        "script relative to cwd",
        with_(lambda d: bolt(d).update(cwd="sub")),
        "b",
        "command",
        "script 'bolt.py' does not exist",
    ),
    ("cwd missing", with_(lambda d: bolt(d).update(cwd="nope")), "b", "cwd", "does not exist"),
    (
        "cwd is a file",
        with_(lambda d: bolt(d).update(cwd="plain-file")),
        "b",
        "cwd",
        "is not a directory",
    ),
    (
        "cwd not a string",
        with_(lambda d: bolt(d).update(cwd=3)),
        "b",
        "cwd",
        "cwd must be a directory path",
    ),
    (
        "max.spout.pending 0",
        with_(lambda d: d.update(config={"topology.max.spout.pending": 0})),
        None,
        "topology.max.spout.pending",
        "must be a positive integer, got 0",
    ),
    (
        "max.spout.pending string",
        with_(lambda d: d.update(config={"topology.max.spout.pending": "10"})),
        None,
        "topology.max.spout.pending",
        "must be a positive integer, got '10'",
    ),
    (
        "message timeout float",
        with_(lambda d: d.update(config={"topology.message.timeout.secs": 2.5})),
        None,
        "topology.message.timeout.secs",
        "positive integer",
    ),
    (
        "debug not a bool",
        with_(lambda d: d.update(config={"topology.debug": "yes"})),
        None,
        "topology.debug",
        "must be true or false",
    ),
    (
        "acker executors negative",
        with_(lambda d: d.update(config={"topology.acker.executors": -1})),
        None,
        "topology.acker.executors",
        "must be an integer >= 0",
    ),
    (
        "unknown host key",
        with_(lambda d: d.update(config={"host.restart.maximum": 3})),
        None,
        "host.restart.maximum",
        "unknown host setting; the host's settings are: ",
    ),
    (
        "backoff max below initial",
        with_(
            lambda d: d.update(
                config={"host.restart.backoff.initial.secs": 5, "host.restart.backoff.max.secs": 1}
            )
        ),
        None,
        "host.restart.backoff.max.secs",
        "must be >= host.restart.backoff.initial.secs",
    ),
    (
        "config not a mapping",
        with_(lambda d: d.update(config=["a"])),
        None,
        "config",
        "config must be a mapping",
    ),
    (
        "config value not JSON",
        with_(lambda d: d.update(config={"my.key": {1: "a"}})),
        None,
        "my.key",
        "mapping keys must be strings",
    ),
    (
        "component tick negative",
        with_(lambda d: bolt(d).update(config={"topology.tick.tuple.freq.secs": -1})),
        "b",
        "topology.tick.tuple.freq.secs",
        "must be a positive integer",
    ),
    (
        "component sets a topology-wide key",
        with_(lambda d: bolt(d).update(config={"topology.subprocess.timeout.secs": 5})),
        "b",
        "topology.subprocess.timeout.secs",
        "is topology-wide",
    ),
    (
        "component sets a host key",
        with_(lambda d: spout(d).update(config={"host.restart.max": 1})),
        "s",
        "host.restart.max",
        "is topology-wide",
    ),
    (
        "component config not a mapping",
        with_(lambda d: bolt(d).update(config=[1])),
        "b",
        "config",
        "config must be a mapping",
    ),
    (
        "bad serializer",
        with_(lambda d: bolt(d).update(serializer="pickle")),
        "b",
        "serializer",
        "serializer must be one of json, msgpack",
    ),
    (
        "heartbeats not a bool",
        with_(lambda d: bolt(d).update(heartbeats="no")),
        "b",
        "heartbeats",
        "must be true or false",
    ),
    (
        "activate not a bool",
        with_(lambda d: spout(d).update(activate=1)),
        "s",
        "activate",
        "must be true or false",
    ),
    (
        "env not a mapping",
        with_(lambda d: bolt(d).update(env=["A=1"])),
        "b",
        "env",
        "env must be a mapping",
    ),
    (
        "env value a list",
        with_(lambda d: bolt(d).update(env={"A": [1]})),
        "b",
        "env",
        "A must be a string",
    ),
    ("env value a bool", with_(lambda d: bolt(d).update(env={"A": True})), "b", "env", "quote it"),
    (
        "outputs a string",
        with_(lambda d: bolt(d).update(outputs="out")),
        "b",
        "outputs",
        "outputs must be a list of field names",
    ),
    (
        "stream fields not a list",
        with_(lambda d: bolt(d).update(outputs={"errors": "why"})),
        "b",
        "outputs.errors",
        "must be a list of field names",
    ),
    (
        "field declared twice",
        with_(lambda d: bolt(d).update(outputs=["a", "b", "a"])),
        "b",
        "outputs.default",
        "field 'a' is declared twice",
    ),
    (
        "empty field name",
        with_(lambda d: bolt(d).update(outputs=["a", ""])),
        "b",
        "outputs.default",
        "field names must be non-empty strings",
    ),
    (
        "reserved stream",
        with_(lambda d: bolt(d).update(outputs={"__tick": ["a"]})),
        "b",
        "outputs.__tick",
        "reserved",
    ),
]


@pytest.mark.parametrize("case, make, component, key, problem", ERRORS, ids=[e[0] for e in ERRORS])
def test_validation_error_names_file_component_and_key(
    project, case, make, component, key, problem
):
    path = project / "topology.yaml"
    error = load_error(project, make())
    assert (error.file, error.component, error.key) == (str(path), component, key)
    assert problem in error.problem
    message = str(error)
    assert message.startswith(str(path))
    if component is not None:
        assert f"component '{component}'" in message
    if key is not None:
        assert f"key '{key}'" in message


def test_every_case_starts_from_a_valid_document(project):
    assert [c.id for c in load_doc(project, base_doc()).components] == ["s", "b"]


def test_duplicate_yaml_key_is_an_error_with_its_line(project):
    text = (
        "name: t\nspouts:\n  s: {command: [python, spout.py], outputs: [w]}\nbolts:\n"
        "  b: {command: [python, bolt.py], inputs: {s: shuffle}}\n"
        "  b: {command: [python, bolt.py], inputs: {s: all}}\n"
    )
    with pytest.raises(TopologyError) as info:
        load(write(project, text))
    assert info.value.file == str(project / "topology.yaml")
    assert "line 6" in info.value.problem and "duplicate key 'b'" in info.value.problem
    assert "first at line 5" in info.value.problem


def test_yaml_syntax_error_names_file_and_line():
    path = FIXTURES / "syntax_error.yaml"
    with pytest.raises(TopologyError) as info:
        load(path)
    assert info.value.file == str(path)
    assert info.value.problem.startswith("YAML syntax error at line 4, column 1")


@pytest.mark.parametrize(
    "text, problem",
    [
        ("", "the topology file is empty"),
        ("- a\n- b\n", "this file holds a list"),
    ],
)
def test_document_that_is_not_a_mapping(project, text, problem):
    error = load_error(project, text)
    assert problem in error.problem


def test_missing_file_and_unknown_suffix(project):
    with pytest.raises(TopologyError, match="no such file"):
        load(project / "absent.yaml")
    with pytest.raises(TopologyError, match="is not a file"):
        load(project / "sub")
    with pytest.raises(TopologyError, match=r"unknown kind of topology file '\.json'"):
        load(write(project, "{}", name="t.json"))


# ---- the native format --------------------------------------------------------------------------


def test_wordcount_fixture_loads_into_the_model():
    path = FIXTURES / "wordcount.yaml"
    t = load(path)
    assert t.name == "wordcount" and t.source == str(path)
    assert t.config == {"topology.max.spout.pending": 1000, "topology.message.timeout.secs": 30}
    assert [(c.id, c.kind) for c in t.components] == [
        ("sentences", SPOUT),
        ("split", BOLT),
        ("count", BOLT),
        ("report", BOLT),
    ]
    sentences, split, count, report = t.components
    assert sentences.command == ("python", "sentences.py")
    assert sentences.outputs == {"default": ("sentence",)}
    assert split.parallelism == 2
    assert split.inputs == (Input("sentences", "default", Grouping(SHUFFLE)),)
    assert count.outputs == {"default": ("word", "count"), "errors": ("reason",)}
    assert count.inputs == (Input("split", "default", Grouping(FIELDS, ("word",))),)
    assert count.config == {"topology.tick.tuple.freq.secs": 5, "my.custom.key": "hello"}
    assert count.env == {"KEY": "value", "PORT": "8080"}  # numbers become text
    assert report.outputs == {}
    assert report.inputs == (
        Input("count", "errors", Grouping(GLOBAL)),
        Input("count", "default", Grouping(ALL)),
    )
    fixtures = os.path.abspath(FIXTURES)
    assert [c.cwd for c in t.components] == [fixtures] * 3 + [os.path.join(fixtures, "subdir")]
    assert all(
        (c.serializer, c.heartbeats, c.activate) == ("json", True, True) for c in t.components
    )


GROUPING_FORMS = [
    ("shuffle", [Input("s", "default", Grouping(SHUFFLE))]),
    ("SHUFFLE", [Input("s", "default", Grouping(SHUFFLE))]),
    ("all", [Input("s", "default", Grouping(ALL))]),
    ("global", [Input("s", "default", Grouping(GLOBAL))]),
    ("none", [Input("s", "default", Grouping(NONE))]),
    ("direct", [Input("s", "default", Grouping(DIRECT))]),
    ("local_or_shuffle", [Input("s", "default", Grouping(LOCAL_OR_SHUFFLE))]),
    ({"fields": ["word"]}, [Input("s", "default", Grouping(FIELDS, ("word",)))]),
    ({"fields": "word"}, [Input("s", "default", Grouping(FIELDS, ("word",)))]),
    ({"fields": ["n", "word"]}, [Input("s", "default", Grouping(FIELDS, ("n", "word")))]),
    ({"partial_key": ["word"]}, [Input("s", "default", Grouping(PARTIAL_KEY, ("word",)))]),
    ({"grouping": "fields", "fields": ["n"]}, [Input("s", "default", Grouping(FIELDS, ("n",)))]),
    (
        {"grouping": "partial_key", "fields": ["n"]},
        [Input("s", "default", Grouping(PARTIAL_KEY, ("n",)))],
    ),
    ({"grouping": "global", "stream": "errors"}, [Input("s", "errors", Grouping(GLOBAL))]),
    (
        {"fields": ["reason"], "stream": "errors"},
        [Input("s", "errors", Grouping(FIELDS, ("reason",)))],
    ),
    (
        ["shuffle", {"grouping": "direct", "stream": "errors"}],
        [Input("s", "default", Grouping(SHUFFLE)), Input("s", "errors", Grouping(DIRECT))],
    ),
]


@pytest.mark.parametrize("spec, inputs", GROUPING_FORMS, ids=[repr(g[0]) for g in GROUPING_FORMS])
def test_every_grouping_form(project, spec, inputs):
    doc = base_doc()
    spout(doc)["outputs"] = {"default": ["word", "n"], "errors": ["reason"]}
    bolt(doc)["inputs"] = {"s": spec}
    assert list(load_doc(project, doc).component("b").inputs) == inputs


@pytest.mark.parametrize(
    "outputs, expected",
    [
        (["a", "b"], {"default": ("a", "b")}),
        (
            {"default": ["a"], "errors": ["reason", "code"]},
            {"default": ("a",), "errors": ("reason", "code")},
        ),
        ({"only": ["x"]}, {"only": ("x",)}),
        ([], {"default": ()}),
        (None, {}),
    ],
)
def test_outputs_forms(project, outputs, expected):
    doc = base_doc()
    if outputs is None:
        bolt(doc).pop("outputs")
    else:
        bolt(doc)["outputs"] = outputs
    assert load_doc(project, doc).component("b").outputs == expected


def test_component_options(project):
    doc = base_doc()
    spout(doc).update(
        serializer="msgpack",
        heartbeats=False,
        activate=False,
        parallelism=3,
        env={"A": "1"},
        config={"topology.max.spout.pending": 5, "app.x": [1]},
    )
    bolt(doc).update(
        command=["./run.sh", "--flag", "http://x/y.js", "-m", "x.py"],
        cwd=str(project),
        config={"topology.bolts.window.length.count": 10},
    )
    t = load_doc(project, doc)
    s, b = t.components
    assert (s.serializer, s.heartbeats, s.activate, s.parallelism) == ("msgpack", False, False, 3)
    assert s.config == {"topology.max.spout.pending": 5, "app.x": [1]}
    assert b.command == ("./run.sh", "--flag", "http://x/y.js", "-m", "x.py")
    assert b.cwd == str(project)


def test_script_check_looks_only_at_path_like_arguments(project):
    doc = base_doc()
    bolt(doc)["command"] = ["python", "-c", "import x.py", "--out=result.py", "sub/inner.py"]
    assert load_doc(project, doc).component("b").command[-1] == "sub/inner.py"


def test_custom_and_null_config_values_are_accepted(project):
    doc = base_doc()
    doc["config"] = {
        "topology.max.spout.pending": None,
        "my.app.url": "http://x",
        "topology.myapp.threshold": 0.5,
    }
    assert load_doc(project, doc).config["topology.myapp.threshold"] == 0.5


def test_config_dates_are_refused_because_components_get_json(project):
    error = load_error(project, "name: t\nconfig: {my.start: 2024-01-01}\n")
    assert error.key == "my.start" and "quote it" in error.problem


# ---- Flux detection -----------------------------------------------------------------------------


def test_flux_file_goes_to_the_flux_loader():
    # the fixture names a script that is not there: the Flux loader's own validation says so
    path = FIXTURES / "flux.yaml"
    with pytest.raises(TopologyError) as info:
        load(path)
    assert info.value.file == str(path)
    assert info.value.component == "sentence-spout"
    assert "randomsentence.js" in info.value.problem


@pytest.mark.parametrize(
    "doc, flux",
    [
        ({"name": "x", "spouts": [{"id": "s", "className": "FluxShellSpout"}]}, True),
        ({"name": "x", "bolts": [{"id": "b", "className": "FluxShellBolt"}]}, True),
        ({"name": "x", "streams": []}, True),
        ({"name": "x", "includes": [{"file": "a.yaml"}]}, True),
        ({"name": "x", "spouts": [{"id": "s"}]}, False),
        (base_doc(), False),
        (None, False),
        (["spouts"], False),
    ],
)
def test_is_flux(doc, flux):
    assert is_flux(doc) is flux


# ---- Python topology files ----------------------------------------------------------------------


def test_python_file_with_a_builder():
    path = FIXTURES / "builder_topology.py"
    t = load(path)
    assert t.name == "wordcount-py" and t.source == str(path)
    assert t.config == {"topology.max.spout.pending": 10}
    assert [c.id for c in t.components] == ["sentences", "split", "count"]
    assert t.component("count").inputs == (Input("split", "default", Grouping(FIELDS, ("word",))),)
    assert {c.cwd for c in t.components} == {os.path.abspath(FIXTURES)}


def test_python_file_that_builds_itself_resolves_paths_against_the_file(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)  # not the file's directory: build() must not use the cwd
    path = FIXTURES / "built_topology.py"
    t = load(path)
    assert t.source == str(path)
    assert t.component("report").cwd == os.path.join(os.path.abspath(FIXTURES), "subdir")
    assert t.component("report").inputs == (Input("sentences", "default", Grouping(GLOBAL)),)


@pytest.mark.parametrize(
    "name, key, problem",
    [
        ("no_topology.py", "topology", "must define a module-level `topology`"),
        ("wrong_type.py", "topology", "must be a TopologyBuilder or a Topology, not dict"),
        ("raises.py", None, "running the file failed at line 4: RuntimeError: boom"),
    ],
)
def test_python_file_errors(name, key, problem):
    path = FIXTURES / name
    with pytest.raises(TopologyError) as info:
        load(path)
    assert (info.value.file, info.value.key) == (str(path), key)
    assert problem in info.value.problem


def test_topology_error_inside_a_python_file_names_that_file():
    path = FIXTURES / "bad_in_builder.py"
    with pytest.raises(TopologyError) as info:
        load(path)
    error = info.value
    assert (error.file, error.component, error.key) == (str(path), "split", "inputs.nowhere")


def test_python_syntax_error(project):
    path = write(project, "topology = (\n", name="broken.py")
    with pytest.raises(TopologyError, match="Python syntax error at line 1") as info:
        load(path)
    assert info.value.file == str(path)


def test_python_file_with_a_hand_made_topology(project):
    source = (
        "from host.topology.model import Component, Grouping, Input, Topology\n"
        "topology = Topology('manual', (\n"
        "    Component('s', 'spout', ('python', 'spout.py'), {'default': ('w',)}),\n"
        "    Component('b', 'bolt', ('python', 'inner.py'), cwd='sub',\n"
        "              inputs=(Input('s', 'default', Grouping('shuffle')),)),\n"
        "))\n"
    )
    t = load(write(project, source, name="manual.py"))
    assert t.source == str(project / "manual.py")
    assert [c.cwd for c in t.components] == [str(project), str(project / "sub")]


def test_python_file_can_import_its_neighbours(project):
    (project / "helpers.py").write_text("COMMAND = ['python', 'spout.py']\n")
    source = (
        "from helpers import COMMAND\nfrom host.topology import TopologyBuilder\n"
        "b = TopologyBuilder('n')\nb.spout('s', COMMAND, outputs=['x'])\ntopology = b\n"
    )
    assert load(write(project, source, name="neighbours.py")).component("s").command == (
        "python",
        "spout.py",
    )


# ---- the builder --------------------------------------------------------------------------------


def test_builder_example_from_the_docs():
    b = TopologyBuilder("wordcount", config={"topology.max.spout.pending": 1000})
    b.spout("sentences", ["python", "sentences.py"], outputs=["sentence"])
    b.bolt("split", ["bash", "split.sh"], outputs=["word"], parallelism=2).shuffle("sentences")
    b.bolt("count", ["node", "count.js"], outputs=["word", "count"], parallelism=2).fields(
        "split", "word"
    )
    t = b.build(base_dir=FIXTURES)
    assert t.name == "wordcount" and t.source is None
    assert [(c.id, c.kind, c.parallelism) for c in t.components] == [
        ("sentences", SPOUT, 1),
        ("split", BOLT, 2),
        ("count", BOLT, 2),
    ]
    assert t.component("split").command == ("bash", "split.sh")
    assert t.component("count").inputs == (Input("split", "default", Grouping(FIELDS, ("word",))),)


def test_builder_grouping_methods():
    b = TopologyBuilder("g")
    b.spout("s", ["python", "sentences.py"], outputs={"default": ["a", "b"], "x": ["c"]})
    b.spout("t", ["python", "sentences.py"], outputs=["a"])
    (b.bolt("all", ["python", "sentences.py"]).shuffle("s").fields("s", "c", stream="x").all("t"))
    b.bolt("more", ["python", "sentences.py"]).global_("s").none("s", stream="x").direct("t")
    b.bolt("rest", ["python", "sentences.py"]).local_or_shuffle("s").partial_key(
        "s", ["c"], stream="x"
    )
    b.bolt("generic", ["python", "sentences.py"]).grouping("s", "fields", ["a", "b"])
    t = b.build(base_dir=FIXTURES)
    assert t.component("all").inputs == (
        Input("s", "default", Grouping(SHUFFLE)),
        Input("s", "x", Grouping(FIELDS, ("c",))),
        Input("t", "default", Grouping(ALL)),
    )
    assert t.component("more").inputs == (
        Input("s", "default", Grouping(GLOBAL)),
        Input("s", "x", Grouping(NONE)),
        Input("t", "default", Grouping(DIRECT)),
    )
    assert t.component("rest").inputs == (
        Input("s", "default", Grouping(LOCAL_OR_SHUFFLE)),
        Input("s", "x", Grouping(PARTIAL_KEY, ("c",))),
    )
    assert t.component("generic").inputs == (Input("s", "default", Grouping(FIELDS, ("a", "b"))),)
    assert t.component("s").outputs == {"default": ("a", "b"), "x": ("c",)}


def test_builder_errors_are_raised_by_build_and_name_the_source():
    b = TopologyBuilder("e")
    b.spout("s", ["python", "sentences.py"], outputs=["a"])
    b.bolt("b", ["python", "sentences.py"]).fields("s", "zzz")
    with pytest.raises(TopologyError) as info:
        b.build(base_dir=FIXTURES, source="my_topology.py")
    assert (info.value.file, info.value.component, info.value.key) == (
        "my_topology.py",
        "b",
        "inputs.s",
    )
    with pytest.raises(TopologyError) as info:
        b.build(base_dir=FIXTURES)
    assert info.value.file is None and str(info.value).startswith("component 'b'")


def test_builder_default_base_dir_is_the_current_directory(monkeypatch):
    monkeypatch.chdir(FIXTURES / "subdir")
    b = TopologyBuilder("here")
    b.spout("s", ["python", "report.py"], outputs=["a"])
    assert b.build().component("s").cwd == os.path.abspath(FIXTURES / "subdir")


def test_built_topology_does_not_change_with_the_builder():
    config = {"topology.debug": True, "app.list": [1]}
    b = TopologyBuilder("frozen", config=config)
    b.spout("s", ["python", "sentences.py"], outputs=["a"], config={"app.x": [1]})
    t = b.build(base_dir=FIXTURES)
    config["app.list"].append(2)
    b.config["topology.debug"] = False
    b.bolt("b", ["python", "sentences.py"]).shuffle("s")
    assert t.config == {"topology.debug": True, "app.list": [1]}
    assert [c.id for c in t.components] == ["s"]
    assert len(b.build(base_dir=FIXTURES).components) == 2


def test_validate_flux_style_component_config_is_not_strict():
    s = Component(
        "s",
        SPOUT,
        ("python", "sentences.py"),
        {"default": ("a",)},
        cwd=str(FIXTURES),
        config={"topology.shellbolt.max.pending": 3},
    )
    t = Topology("flux-like", (s,))
    validate(t, strict_config=False)
    with pytest.raises(TopologyError, match="topology-wide"):
        validate(t)


# ---- executable lookup --------------------------------------------------------------------------


def test_bare_names_are_found_in_the_host_bin_directory_first():
    found = find_executable("python", "/")
    assert found == os.path.join(host_bin_dir(), "python")


def test_relative_program_is_resolved_against_the_cwd(project):
    assert find_executable("./run.sh", str(project)) == str(project / "run.sh")
    assert find_executable("./noexec.sh", str(project)) is None
    assert find_executable("./run.sh", str(project / "sub")) is None


def test_component_env_path_is_searched_last(project):
    bindir = project / "bin"
    bindir.mkdir()
    tool = bindir / "my-tool-x1"
    tool.write_text("#!/bin/sh\n")
    tool.chmod(0o755)
    assert find_executable("my-tool-x1", "/") is None
    assert find_executable("my-tool-x1", "/", {"PATH": str(bindir)}) == str(tool)


# ---- property: YAML and the builder agree -------------------------------------------------------

FIELD_NAMES = ["a", "b", "c", "d"]
ids = st.from_regex(r"[A-Za-z][A-Za-z0-9_-]{0,6}", fullmatch=True)


@st.composite
def native_documents(draw) -> dict:
    """A random valid topology in our YAML form (components run a fixture script)."""
    names = draw(st.lists(ids, min_size=1, max_size=6, unique=True))
    n_spouts = draw(st.integers(1, len(names)))
    outputs = {}
    for name in names:
        streams = draw(
            st.lists(st.sampled_from(["default", "s1", "s2"]), min_size=1, max_size=3, unique=True)
        )
        outputs[name] = {
            s: draw(st.lists(st.sampled_from(FIELD_NAMES), min_size=1, unique=True))
            for s in streams
        }
    doc = {"name": draw(ids), "spouts": {}, "bolts": {}}
    for i, name in enumerate(names):
        body = {
            "command": ["python", "sentences.py"],
            "outputs": outputs[name],
            "parallelism": draw(st.integers(1, 4)),
        }
        if i < n_spouts:
            doc["spouts"][name] = body
            continue
        pairs = [(src, s) for src in names for s in outputs[src]]
        chosen = draw(st.lists(st.sampled_from(pairs), min_size=1, max_size=3, unique=True))
        inputs: dict = {}
        for src, stream in chosen:
            grouping = draw(
                st.sampled_from(
                    [
                        "shuffle",
                        "all",
                        "global",
                        "none",
                        "direct",
                        "local_or_shuffle",
                        "fields",
                        "partial_key",
                    ]
                )
            )
            spec: dict = {"grouping": grouping, "stream": stream}
            if grouping in ("fields", "partial_key"):
                spec["fields"] = draw(
                    st.lists(st.sampled_from(outputs[src][stream]), min_size=1, unique=True)
                )
            inputs.setdefault(src, []).append(spec)
        body["inputs"] = inputs
        doc["bolts"][name] = body
    return doc


def build_with_builder(doc: dict) -> Topology:
    b = TopologyBuilder(doc["name"])
    for name, body in doc["spouts"].items():
        b.spout(name, body["command"], body["outputs"], body["parallelism"])
    for name, body in doc["bolts"].items():
        declarer = b.bolt(name, body["command"], body["outputs"], body["parallelism"])
        for src, specs in body["inputs"].items():
            for spec in specs:
                declarer.grouping(src, spec["grouping"], spec.get("fields", ()), spec["stream"])
    return b.build(base_dir=FIXTURES)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(native_documents())
def test_random_valid_topologies_load_the_same_from_yaml_and_the_builder(doc):
    from_yaml = from_document(
        yaml.safe_load(yaml.safe_dump(copy.deepcopy(doc), sort_keys=False)), base_dir=FIXTURES
    )
    assert from_yaml == build_with_builder(doc)
    assert len(from_yaml.spouts) == len(doc["spouts"])


# ---- the modules of host/topology/ --------------------------------------------------------------

LOADER_MODULES = {"files", "native", "builder", "python_file", "yaml_text", "export", "graph"}


def topology_imports() -> dict[str, set[str]]:
    """host/topology/ module -> the host/topology/ modules it imports (at any level)."""
    import ast

    package = Path(__file__).parents[2] / "host" / "topology"
    modules = {p.stem for p in package.glob("*.py")} - {"__init__"}
    graph = {}
    for name in modules:
        tree = ast.parse((package / f"{name}.py").read_text())
        graph[name] = {
            node.module.split(".")[2]
            for node in ast.walk(tree)
            if isinstance(node, ast.ImportFrom)
            and node.module
            and node.module.startswith("host.topology.")
        }
    return graph


def reachable(graph: dict[str, set[str]], start: str) -> set[str]:
    seen: set[str] = set()
    todo = [start]
    while todo:
        for module in graph[todo.pop()] - seen:
            seen.add(module)
            todo.append(module)
    return seen


def test_topology_modules_import_no_cycle_and_the_model_no_loader():
    graph = topology_imports()
    assert {m for m in graph if m in reachable(graph, m)} == set()
    loaders = LOADER_MODULES | {m for m in graph if m.startswith("flux")}
    for module in ("model", "settings", "config_check", "validation", "commands"):
        assert reachable(graph, module) & loaders == set(), module
