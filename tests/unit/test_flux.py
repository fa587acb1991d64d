"""host.topology.flux: Flux YAML -> the frozen Topology (the subset of docs/flux.md), and the errors for
what Flux or this host refuses. Fixture files are in tests/unit/flux/."""

from __future__ import annotations

import logging
import os
import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner

from host.cli import main
from host.errors import TopologyError
from host.runtime.context import grouping_json
from host.topology import load
from host.topology.component_config import component_settings, effective_config, tick_freq
from host.topology.flux import load_flux
from host.topology.flux_env import substitute_env
from host.topology.flux_java import BUILTINS, LOG_INFO_BOLT, TEST_WORD_COUNTER, TEST_WORD_SPOUT
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
    Grouping,
    Input,
)

FLUX = Path(__file__).parent / "flux"
SPOUT_CLASS = "org.apache.storm.flux.wrappers.spouts.FluxShellSpout"
BOLT_CLASS = "org.apache.storm.flux.wrappers.bolts.FluxShellBolt"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "spout.py").write_text("# dummy\n")
    (tmp_path / "bolt.py").write_text("# dummy\n")
    return tmp_path


def write(project: Path, text: str, name: str = "topology.yaml") -> Path:
    path = project / name
    path.write_text(textwrap.dedent(text))
    return path


# A small valid topology the error tests below change one thing in.
BASE = f"""\
name: t
spouts:
  - id: spout
    className: {SPOUT_CLASS}
    constructorArgs: [[python, spout.py], [word, n]]
bolts:
  - id: bolt
    className: {BOLT_CLASS}
    constructorArgs: [[python, bolt.py]]
streams:
  - from: spout
    to: bolt
    grouping: {{type: SHUFFLE}}
"""


def load_error(project: Path, text: str) -> TopologyError:
    path = write(project, text)
    with pytest.raises(TopologyError) as info:
        load(path)
    assert info.value.file is not None
    return info.value


# ---- groupings ----------------------------------------------------------------------------------


def test_every_grouping_type_and_stream_id():
    t = load(FLUX / "groupings.yaml")
    assert t.name == "groupings" and t.source == str(FLUX / "groupings.yaml")
    inputs = {c.id: c.inputs for c in t.bolts}
    assert inputs == {
        "shuffle": (Input("source", "default", Grouping(SHUFFLE)),),
        "local": (Input("source", "default", Grouping(LOCAL_OR_SHUFFLE)),),
        "fields": (Input("source", "default", Grouping(FIELDS, ("word", "n"))),),
        "global": (Input("source", "default", Grouping(GLOBAL)),),
        "all": (Input("source", "side", Grouping(ALL)),),
        "none": (Input("source", "default", Grouping(NONE)),),
        "direct": (Input("source", "side", Grouping(DIRECT)),),
        # CUSTOM PartialKeyGrouping with a Fields bean, and with no argument (first field)
        "partial": (Input("source", "default", Grouping(PARTIAL_KEY, ("word",))),),
        "partial-first": (Input("source", "default", Grouping(PARTIAL_KEY, ("word",))),),
    }
    assert t.component("source").outputs == {"default": ("word", "n"), "side": ("word",)}
    # the context shows them as Storm does
    assert grouping_json(inputs["global"][0].grouping) == {"type": "FIELDS", "fields": []}
    assert grouping_json(inputs["partial"][0].grouping) == {"type": "CUSTOM_SERIALIZED"}


def test_fields_grouping_on_no_fields_is_global_as_storm_encodes_it(project):
    t = load(write(project, BASE.replace("{type: SHUFFLE}", "{type: FIELDS, args: []}")))
    assert t.component("bolt").inputs[0].grouping == Grouping(GLOBAL)


def test_partial_key_given_a_plain_list_is_accepted_with_a_warning(project, caplog):
    text = BASE.replace(
        "{type: SHUFFLE}",
        "{type: CUSTOM, customClass: {className: "
        "org.apache.storm.grouping.PartialKeyGrouping, constructorArgs: [[n]]}}",
    )
    t = load(write(project, text))
    assert t.component("bolt").inputs[0].grouping == Grouping(PARTIAL_KEY, ("n",))
    assert "Storm's Flux rejects it" in caplog.text


@pytest.mark.parametrize(
    "grouping, problem",
    [
        ("{type: shuffle}", "case-sensitive: write SHUFFLE"),
        ("{type: PARTIAL_KEY}", "partial-key grouping is CUSTOM"),
        ("{type: FIELDS}", "FIELDS needs args"),
        ("{type: FIELDS, args: [nope]}", "field 'nope' is not in stream 'default'"),
        ("{type: SHUFFLE, streamId: missing}", "declares no stream 'missing'"),
        ("{type: CUSTOM}", "CUSTOM needs customClass"),
        (
            "{type: CUSTOM, customClass: {className: com.example.MyGrouping}}",
            "Java grouping class com.example.MyGrouping cannot run here",
        ),
        (
            "{type: CUSTOM, customClass: {className: org.apache.storm.grouping.PartialKeyGrouping, "
            "constructorArgs: [{ref: nowhere}]}}",
            "ref 'nowhere' names no bean in components",
        ),
    ],
)
def test_bad_groupings(project, grouping, problem):
    error = load_error(project, BASE.replace("{type: SHUFFLE}", grouping))
    assert problem in str(error)


def test_grouping_arguments_a_type_does_not_use_are_ignored_with_a_warning(project, caplog):
    t = load(write(project, BASE.replace("{type: SHUFFLE}", "{type: GLOBAL, args: [word]}")))
    assert t.component("bolt").inputs[0].grouping == Grouping(GLOBAL)
    assert "args ignored: only FIELDS uses args" in caplog.text


# ---- shell wrappers: constructors and configMethods ----------------------------------------------


def test_every_config_method_constructor_and_property(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)  # changeChildCWD(false): the directory the host runs in
    t = load(FLUX / "config_methods.yaml")
    spout, split, prop = (t.component(i) for i in ("two-args", "one-arg", "with-property"))
    # two-argument constructor + setNamedStream; argv exactly as written
    assert spout.kind == SPOUT
    assert spout.command == ("python", "-c", "print('never run')")
    assert spout.outputs == {"default": ("sentence",), "errors": ("reason",)}
    assert spout.cwd == str(tmp_path) and spout.parallelism == 2
    # one-argument constructor + setDefaultStream; setNamedStream again replaces the fields
    assert split.kind == BOLT and split.command == ("bash", "split.sh")
    assert split.outputs == {"default": ("word",), "lengths": ("word", "length")}
    # addComponentConfig with a scalar and a list; the config map wins over it
    assert split.config == {
        "topology.tick.tuple.freq.secs": 20,
        "publisher.data_paths": ["actions", "clicks"],
        "topology.subprocess.timeout.secs": 5,
        "per.component": True,
    }
    # the last setEnv replaces the earlier one; numbers become text; PATH is kept for the
    # supervisor, which appends it to the inherited PATH as Storm does
    assert split.env == {"PATH": "/opt/flux-test/bin", "SPLIT_MODE": "words", "PORT": "8080"}
    assert split.cwd == str(FLUX)  # changeChildCWD(true): the resources directory
    assert split.parallelism == 4  # numTasks: one subprocess per task
    assert prop.outputs == {"default": ("out",)} and prop.env == {"FROM_PROPERTY": "1"}
    assert prop.parallelism == 3
    assert prop.inputs == (Input("one-arg", "lengths", Grouping(SHUFFLE)),)
    # Storm drops topology-wide keys from component config; the topology's own keys reach all
    conf = effective_config(t, split)
    assert "topology.subprocess.timeout.secs" not in conf
    assert conf["publisher.data_paths"] == ["actions", "clicks"]
    assert conf["my.custom.key"] == "from-topology" and conf["topology.message.timeout.secs"] == 45
    assert tick_freq(t, split) == 20
    split_settings = component_settings(t, split)
    assert split_settings.tick_tuple_freq_secs == 20
    assert split_settings.message_timeout_secs == 45


@pytest.mark.parametrize(
    "change, problem",
    [
        ("constructorArgs: [[python, bolt.py]]", None),
        ("constructorArgs: [[python, bolt.py], []]", "empty list of fields"),
        ("constructorArgs: [[python, bolt.py], [a], [b]]", "constructorArgs must be"),
        ("constructorArgs: []", "constructorArgs must be"),
        ("constructorArgs: [python, bolt.py]", "must be a list of arguments"),
        ("constructorArgs: [[python, 3]]", "argument 1 must be a non-empty string"),
    ],
)
def test_constructor_arguments(project, change, problem):
    text = BASE.replace("constructorArgs: [[python, bolt.py]]", change)
    if problem is None:
        load(write(project, text))
    else:
        assert problem in str(load_error(project, text))


@pytest.mark.parametrize(
    "method, problem",
    [
        ("{name: setDefaultStream, args: [[]]}", "empty list of fields"),
        ("{name: setDefaultStream, args: [word]}", "must be a list of field names"),
        ("{name: setNamedStream, args: [[word]]}", "taking 1 argument(s)"),
        ("{name: setNamedStream, args: [7, [word]]}", "stream id must be a non-empty string"),
        ("{name: addComponentConfig, args: [my.key]}", "taking 1 argument(s)"),
        ("{name: addComponentConfig, args: [my.key, null]}", "may not be null"),
        (
            "{name: addComponentConfig, args: [topology.tick.tuple.freq.secs, often]}",
            "must be a positive integer",
        ),
        ("{name: setEnv, args: [[A, B]]}", "setEnv takes a mapping"),
        ("{name: setEnv, args: [{A: [1]}]}", "A must be a string"),
        ("{name: changeChildCWD, args: [no-thanks]}", "changeChildCWD takes true or false"),
        ("{name: setOutputFields, args: [[a]]}", "no configuration method 'setOutputFields'"),
        ("{name: setDefaultStream, args: [[a]], extra: 1}", "configMethods[0].extra"),
    ],
)
def test_bad_config_methods(project, method, problem):
    text = BASE.replace(
        "constructorArgs: [[python, bolt.py]]",
        f"constructorArgs: [[python, bolt.py]]\n    configMethods: [{method}]",
    )
    error = load_error(project, text)
    assert problem in str(error) and error.component == "bolt"


@pytest.mark.parametrize(
    "change, problem",
    [
        ("properties: [{name: env, ref: x}]", "ref 'x' names no bean"),
        ("properties: [{name: command, value: [a]}]", "no property 'command'"),
        (f"className: {SPOUT_CLASS}", "is a spout class listed under bolts"),
        ("parallelism: 0", "parallelism must be an integer >= 1"),
        ("numTasks: two", "numTasks must be an integer >= 1"),
    ],
)
def test_bad_component_entries(project, change, problem):
    text = BASE.replace(f"className: {BOLT_CLASS}", f"className: {BOLT_CLASS}\n    {change}")
    if change.startswith("className"):
        text = BASE.replace(f"className: {BOLT_CLASS}", change)
    assert problem in str(load_error(project, text))


# ---- parallelism and tasks ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "settings, tasks",
    [
        ("", 1),
        ("parallelism: 3", 3),
        ("parallelism: 2\n    numTasks: 5", 5),
        ("numTasks: 4", 4),
        ("numTasks: -1\n    parallelism: 2", 2),  # -1 is Flux's "unset"
        ("numTasks: 6\n    config: {topology.max.task.parallelism: 2}", 2),
    ],
)
def test_tasks_are_num_tasks_else_parallelism_capped_like_storm(project, settings, tasks):
    text = BASE.replace(
        "constructorArgs: [[python, bolt.py]]",
        f"constructorArgs: [[python, bolt.py]]\n    {settings}",
    )
    assert load(write(project, text)).component("bolt").parallelism == tasks


def test_topology_max_task_parallelism_caps_every_component(project):
    text = BASE.replace("name: t", "name: t\nconfig: {topology.max.task.parallelism: 2}")
    text = text.replace(
        "constructorArgs: [[python, bolt.py]]",
        "constructorArgs: [[python, bolt.py]]\n    parallelism: 8",
    )
    t = load(write(project, text))
    assert t.component("bolt").parallelism == 2 and t.component("spout").parallelism == 1


# ---- built-ins ----------------------------------------------------------------------------------


def test_builtins_map_to_python_modules():
    t = load(FLUX / "builtins.yaml")
    words, local, count, log = (t.component(i) for i in ("words", "local-words", "count", "log"))
    assert words.kind == SPOUT and words.command == BUILTINS[TEST_WORD_SPOUT].command
    assert words.command == ("python", "-m", "components.storm_builtins.test_word_spout")
    assert words.outputs == {"default": ("word",)} and words.parallelism == 3
    # TestWordSpout(false): isDistributed off sets topology.max.task.parallelism 1
    assert local.parallelism == 1 and local.config == {"topology.max.task.parallelism": 1}
    assert count.command == ("python", "-m", "components.storm_builtins.test_word_counter")
    assert count.outputs == {"default": ("word", "count")} and count.parallelism == 2
    assert log.command == ("python", "-m", "components.storm_builtins.log_info_bolt")
    assert log.outputs == {} and log.inputs == (Input("count", "default", Grouping(SHUFFLE)),)
    assert {c.cwd for c in t.components} == {str(FLUX)}


@pytest.mark.parametrize(
    "entry, problem",
    [
        (
            f"className: {LOG_INFO_BOLT}\n    constructorArgs: [true]",
            "no constructor of LogInfoBolt",
        ),
        (
            f"className: {TEST_WORD_COUNTER}\n    configMethods: [{{name: setDefaultStream, "
            f"args: [[a]]}}]",
            "no configuration method 'setDefaultStream' taking 1 argument(s) on TestWordCounter",
        ),
        (f"className: {TEST_WORD_SPOUT}", "is a spout, listed under bolts"),
    ],
)
def test_builtins_are_used_as_storm_defines_them(project, entry, problem):
    text = BASE.replace(f"className: {BOLT_CLASS}\n    constructorArgs: [[python, bolt.py]]", entry)
    assert problem in str(load_error(project, text))


def test_unknown_java_class_is_an_error_naming_component_and_class():
    with pytest.raises(TopologyError) as info:
        load(FLUX / "unknown_class.yaml")
    error = info.value
    assert error.component == "hdfs" and error.key == "className"
    assert "Java class org.apache.storm.hdfs.bolt.HdfsBolt cannot run here" in error.problem
    assert "LogInfoBolt, TestWordCounter, TestWordSpout" in error.problem


@pytest.mark.parametrize(
    "extra, problem",
    [
        ("topologySource: {className: com.example.Topo}", "com.example.Topo"),
        ("workerHooks:\n  - {id: h, className: com.example.Hook}", "com.example.Hook"),
    ],
)
def test_other_java_classes_are_errors(project, extra, problem):
    assert problem in str(load_error(project, BASE + extra + "\n"))


# ---- unknown keys -------------------------------------------------------------------------------


def test_unknown_component_key_is_an_error():
    with pytest.raises(TopologyError) as info:
        load(FLUX / "unknown_key.yaml")
    assert info.value.component == "spout" and info.value.key == "paralellism"
    assert info.value.file == str(FLUX / "unknown_key.yaml")
    assert "unknown key" in info.value.problem


@pytest.mark.parametrize(
    "old, new, key",
    [
        ("name: t", "name: t\ntopology: x", "topology"),
        ("    to: bolt", "    to: bolt\n    via: x", "streams[0].via"),
        ("{type: SHUFFLE}", "{type: SHUFFLE, stream: s}", "streams[0].grouping.stream"),
        (
            "{type: SHUFFLE}",
            "{type: CUSTOM, customClass: {className: "
            "org.apache.storm.grouping.PartialKeyGrouping, args: [a]}}",
            "streams[0].grouping.customClass.args",
        ),
        ("name: t", "name: t\nincludes: [{file: x.yaml, overide: true}]", "includes[0].overide"),
        (
            "name: t",
            "name: t\ncomponents: [{id: f, className: org.apache.storm.tuple.Fields, "
            "constructorArgs: [[a]], scope: x}]",
            "scope",
        ),
    ],
)
def test_unknown_keys_anywhere_are_errors(project, old, new, key):
    error = load_error(project, BASE.replace(old, new, 1))
    assert error.key == key and "unknown key" in error.problem


# ---- streams and left-out bolts -----------------------------------------------------------------


def test_bolts_no_stream_goes_to_are_left_out_with_a_warning(caplog):
    caplog.set_level(logging.WARNING, logger="host.topology.flux")
    t = load(FLUX / "left_out.yaml")
    assert [c.id for c in t.components] == ["spout", "used"]
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert any("unused, also-unused left out" in w for w in warnings)


def test_a_stream_from_a_left_out_bolt_is_an_error(project):
    text = BASE + textwrap.indent(
        textwrap.dedent("""\
        - from: orphan
          to: bolt
          grouping: {type: SHUFFLE}
    """),
        "  ",
    )
    text = text.replace(
        "bolts:\n",
        f"bolts:\n  - id: orphan\n    className: {BOLT_CLASS}\n"
        f"    constructorArgs: [[python, bolt.py], [x]]\n",
    )
    error = load_error(project, text)
    assert "'orphan'" in error.problem and "left out" in error.problem


@pytest.mark.parametrize(
    "old, new, problem",
    [
        ("to: bolt", "to: spout", "'spout' is a spout: only bolts receive streams"),
        ("to: bolt", "to: nobody", "'nobody' is not a bolt of this topology"),
        ("from: spout", "from: nobody", "'nobody' is not a spout or bolt"),
        ("    grouping: {type: SHUFFLE}\n", "", "grouping is required"),
        ("  - id: bolt", "  - id: spout", "a spout and a bolt have the same id"),
    ],
)
def test_bad_streams(project, old, new, problem):
    assert problem in str(load_error(project, BASE.replace(old, new)))


def test_two_spouts_with_one_id_are_an_error(project):
    text = BASE.replace(
        "bolts:",
        f"  - id: spout\n    className: {SPOUT_CLASS}\n"
        f"    constructorArgs: [[python, spout.py]]\nbolts:",
    )
    assert "declared twice" in str(load_error(project, text))


# ---- resources directory ------------------------------------------------------------------------


def test_a_jar_layout_runs_every_shell_component_in_resources():
    t = load(FLUX / "jar" / "topology.yaml")
    resources = str(FLUX / "jar" / "resources")
    assert t.component("packaged").cwd == resources  # a script
    assert t.component("module").cwd == resources  # `python -m pkg.bolt`: no script to look at
    assert t.component("log").cwd == str(FLUX / "jar")  # a built-in: a Java class in Storm


def test_validate_says_where_each_component_runs():
    result = CliRunner().invoke(main, ["validate", str(FLUX / "jar" / "topology.yaml")])
    assert result.exit_code == 0, result.output
    jar = FLUX / "jar"
    assert result.output.splitlines()[1:] == [
        f"  spout packaged: 1 task(s), runs in {jar / 'resources'}",
        f"  bolt module: 1 task(s), runs in {jar / 'resources'}",
        f"  bolt log: 1 task(s), runs in {jar}",
    ]


def test_resources_wins_even_over_a_script_beside_the_topology(project):
    (project / "resources").mkdir()
    (project / "resources" / "spout.py").write_text("# the packaged copy\n")
    (project / "resources" / "bolt.py").write_text("# the packaged copy\n")
    t = load(write(project, BASE))
    assert {c.cwd for c in t.components} == {str(project / "resources")}


def test_without_resources_components_run_beside_the_topology(project):
    t = load(write(project, BASE))
    assert {c.cwd for c in t.components} == {str(project)}


def test_a_script_left_beside_a_jar_layout_is_an_error_saying_where_it_goes(project):
    (project / "resources").mkdir()
    (project / "resources" / "spout.py").write_text("# packaged\n")
    error = load_error(project, BASE)  # bolt.py is only beside the topology file
    assert error.component == "bolt" and error.key == "constructorArgs"
    assert "'bolt.py' is beside the topology file but not in resources/" in error.problem


def test_missing_script_is_reported_in_the_resources_directory(project):
    (project / "bolt.py").unlink()
    error = load_error(project, BASE)
    assert error.component == "bolt" and "'bolt.py' does not exist" in error.problem


# ---- includes -----------------------------------------------------------------------------------


def test_includes_with_and_without_override(caplog):
    caplog.set_level(logging.WARNING, logger="host.topology.flux")
    t = load(FLUX / "with_includes.yaml")
    assert t.name == "override-name"  # override: true replaces the name
    # override: false adds new keys only; override: true replaces
    assert t.config == {"shared.key": "override", "main.only": 1, "keep.only": 2}
    assert [c.id for c in t.components] == ["spout", "kept", "replaced", "added"]
    assert t.component("kept").parallelism == 1  # the main file wins over override: false
    assert t.component("replaced").parallelism == 7  # override: true replaces, in place
    # streams of included files are appended
    assert t.component("added").inputs == (Input("spout", "default", Grouping(SHUFFLE)),)
    assert t.component("replaced").inputs == (Input("spout", "default", Grouping(GLOBAL)),)
    text = caplog.text
    assert "its includes are ignored" in text and "bolt 'kept' ignored: override is false" in text


@pytest.mark.parametrize(
    "include, problem",
    [
        ("{file: missing.yaml}", "does not exist"),
        ("{resource: true, file: /flux/common.yaml}", "Java classpath"),
        ("{file: other.yaml, override: maybe}", "must be true or false"),
    ],
)
def test_bad_includes(project, include, problem):
    write(project, "name: other\n", "other.yaml")
    assert problem in str(load_error(project, BASE + f"includes: [{include}]\n"))


def test_include_may_supply_the_name(project):
    write(project, "name: from-include\nconfig: {a: 1}\n", "common.yaml")
    text = BASE.replace("name: t\n", "includes: [{file: common.yaml}]\n")
    t = load(write(project, text))
    assert t.name == "from-include" and t.config == {"a": 1}


# ---- ${ENV-NAME} substitution -------------------------------------------------------------------


def test_env_substitution_when_asked(monkeypatch, caplog):
    monkeypatch.setenv("FLUX_TEST_NAME", "from-env")
    monkeypatch.setenv("FLUX_TEST_PARALLELISM", "3")
    monkeypatch.delenv("FLUX_TEST_UNSET_VARIABLE", raising=False)
    t = load(FLUX / "env.yaml", env_filter=True)
    assert t.name == "from-env" and t.component("bolt").parallelism == 3
    assert t.config["flux.test.both"] == "from-env-from-env"
    # unset variables are left as they are, with a warning
    assert t.config["flux.test.home"] == "${ENV-FLUX_TEST_UNSET_VARIABLE}"
    assert "FLUX_TEST_UNSET_VARIABLE is not set" in caplog.text


def test_no_env_substitution_without_the_flag(monkeypatch, caplog):
    monkeypatch.setenv("FLUX_TEST_PARALLELISM", "3")
    with pytest.raises(TopologyError) as info:
        load(FLUX / "env.yaml")
    assert info.value.key == "parallelism"
    assert "'${ENV-FLUX_TEST_PARALLELISM}'" in info.value.problem
    assert "pass -e/--env-filter" in caplog.text


def test_env_substitution_in_included_files(project, monkeypatch):
    monkeypatch.setenv("FLUX_TEST_INCLUDED", "included-value")
    write(project, "config:\n  from.include: ${ENV-FLUX_TEST_INCLUDED}\n", "common.yaml")
    t = load(write(project, BASE + "includes: [{file: common.yaml}]\n"), env_filter=True)
    assert t.config == {"from.include": "included-value"}


@pytest.mark.parametrize(
    "line, expected",
    [
        ("a: ${ENV-X}", "a: x-value"),
        ("a: ${ENV-X} ${ENV-X}", "a: x-value x-value"),  # every occurrence of the placeholder
        ("a: ${ENV-MISSING} ${ENV-X}", "a: ${ENV-MISSING} x-value"),  # the last one is matched
        ("a: ${ENV-X} ${ENV-MISSING}", "a: ${ENV-X} ${ENV-MISSING}"),  # ...so this stays
        ("a: ${some.property}", "a: ${some.property}"),  # properties files are not read
        ("a: $ENV-X", "a: $ENV-X"),
        # Flux's pattern is greedy up to the last '}' of the line: the variable is 'X}' here
        ("a: {b: ${ENV-X}}", "a: {b: ${ENV-X}}"),
    ],
)
def test_substitute_env_follows_flux_line_rules(line, expected):
    text = substitute_env(f"{line}\nb: 1\r\n", environ={"X": "x-value"})
    assert text == f"{expected}\nb: 1\r\n"


def test_validate_cli_takes_env_filter(monkeypatch):
    monkeypatch.setenv("FLUX_TEST_NAME", "cli-name")
    monkeypatch.setenv("FLUX_TEST_PARALLELISM", "2")
    runner = CliRunner()
    result = runner.invoke(main, ["validate", "-e", str(FLUX / "env.yaml")])
    assert result.exit_code == 0, result.output
    assert "topology 'cli-name', 1 spout(s), 1 bolt(s), 3 task(s)" in result.output
    result = runner.invoke(main, ["validate", str(FLUX / "env.yaml")])
    assert result.exit_code == 2 and "parallelism" in result.output


def test_validate_cli_on_a_flux_file():
    result = CliRunner().invoke(main, ["validate", str(FLUX / "builtins.yaml")])
    assert result.exit_code == 0, result.output
    assert "topology 'builtins', 2 spout(s), 2 bolt(s), 7 task(s)" in result.output


def test_builtin_modules_are_importable_from_any_directory(tmp_path):
    """`python -m components.storm_builtins.x` runs with the topology's directory as cwd: the
    project must be importable from anywhere (it is installed, editable)."""
    import subprocess
    import sys

    result = subprocess.run(
        [
            sys.executable,
            "-c",
            "import components.storm_builtins.test_word_counter as m; print(m.__name__)",
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=30,
        env={**os.environ, "PYTHONPATH": ""},
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "components.storm_builtins.test_word_counter"


def test_env_filter_also_applies_to_our_own_yaml(project, monkeypatch):
    monkeypatch.setenv("FLUX_TEST_NATIVE_NAME", "native-from-env")
    path = write(
        project,
        """\
        name: ${ENV-FLUX_TEST_NATIVE_NAME}
        spouts:
          spout: {command: [python, spout.py], outputs: [word]}
        bolts:
          bolt: {command: [python, bolt.py], inputs: {spout: shuffle}}
    """,
    )
    assert load(path, env_filter=True).name == "native-from-env"
    assert load(path).name == "${ENV-FLUX_TEST_NATIVE_NAME}"


@pytest.mark.parametrize(
    "name, expected",
    [
        (None, "json"),
        ("org.apache.storm.multilang.JsonSerializer", "json"),
        ("backtype.storm.multilang.JsonSerializer", "json"),
        ("com.yelp.pyleus.serializer.MessagePackSerializer", "msgpack"),
    ],
)
def test_multilang_serializer_applies_to_shell_components_only(tmp_path, name, expected):
    (tmp_path / "s.py").write_text("")
    config = {} if name is None else {"topology.multilang.serializer": name}
    doc = {
        "name": "t",
        "config": config,
        "spouts": [{"id": "words", "className": "org.apache.storm.testing.TestWordSpout"}],
        "bolts": [
            {
                "id": "shell",
                "className": BOLT_CLASS,
                "constructorArgs": [["python", "s.py"], ["word"]],
            }
        ],
        "streams": [{"from": "words", "to": "shell", "grouping": {"type": "SHUFFLE"}}],
    }
    topology = load_flux(doc, file=str(tmp_path / "t.yaml"), base_dir=tmp_path)
    assert topology.component("shell").serializer == expected
    assert topology.component("words").serializer == "json"  # a built-in: Storm's Java class


def test_unknown_multilang_serializer_is_an_error(tmp_path):
    doc = {
        "name": "t",
        "config": {"topology.multilang.serializer": "com.example.Thrift"},
        "spouts": [{"id": "words", "className": "org.apache.storm.testing.TestWordSpout"}],
    }
    with pytest.raises(TopologyError, match="unknown serializer"):
        load_flux(doc, file="t.yaml", base_dir=tmp_path)
