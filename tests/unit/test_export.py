"""host.topology.export: Topology -> Flux YAML. Round trips: our YAML -> Flux -> loaded again gives the same
frozen Topology (modulo `source`), and so does Flux -> Topology -> Flux -> Topology."""

from __future__ import annotations

import logging
import shutil
import textwrap
from dataclasses import replace
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from host.cli import main
from host.errors import TopologyError
from host.topology import load
from host.topology.export import export_flux
from host.topology.flux_document import (
    COMPONENT_KEYS,
    CONFIG_METHOD_KEYS,
    GROUPING_KEYS,
    STREAM_KEYS,
    TOPOLOGY_KEYS,
)
from host.topology.model import BOLT, SPOUT, Topology

FLUX = Path(__file__).parent / "flux"

NATIVE = """\
name: round-trip
config:
  topology.max.spout.pending: 100
  topology.message.timeout.secs: 20
  my.app.list: [a, b]
spouts:
  source:
    command: [python, spout.py, --rate, "10"]
    outputs: {default: [word, n], side: [word], alerts: [level, text]}
    parallelism: 2
    config: {topology.max.spout.pending: 5, my.app.flag: true}
    env: {PATH: /opt/extra/bin, MODE: fast}
  packaged:
    command: [python, packaged.py]
    outputs: [x]
  counter-source:
    command: [python, -m, components.storm_builtins.test_word_spout]
    outputs: [word]
    parallelism: 2
bolts:
  shuffle:
    command: [bash, split.sh]
    outputs: [word]
    parallelism: 3
    inputs: {source: shuffle, packaged: local_or_shuffle}
  fields:
    command: [python, bolt.py]
    outputs: {default: [word, count], totals: [total]}
    inputs:
      source: {fields: [word, n]}
      shuffle: {grouping: all}
  partial:
    command: [python, bolt.py]
    inputs:
      source: [{partial_key: [word]}, {partial_key: [word], stream: side}]
      fields: {grouping: global, stream: totals}
  others:
    command: [python, bolt.py]
    config: {topology.tick.tuple.freq.secs: 3, my.app.paths: [p1, p2], my.app.nested: {k: v}}
    inputs:
      source: {grouping: direct, stream: alerts}
      fields: none
  count:
    command: [python, -m, components.storm_builtins.test_word_counter]
    outputs: [word, count]
    parallelism: 2
    inputs: {counter-source: {fields: [word]}, shuffle: {fields: [word]}}
  log:
    command: [python, -m, components.storm_builtins.log_info_bolt]
    inputs: {count: shuffle}
"""


@pytest.fixture
def project(tmp_path: Path) -> Path:
    for name in ("spout.py", "bolt.py"):
        (tmp_path / name).write_text("# dummy\n")
    split = tmp_path / "split.sh"
    split.write_text("#!/usr/bin/env bash\n")
    (tmp_path / "packaged.py").write_text("# dummy\n")
    return tmp_path


def without_source(t: Topology) -> Topology:
    return replace(t, source=None)


def round_trip(t: Topology, directory: Path, name: str = "exported.flux.yaml") -> Topology:
    path = directory / name
    path.write_text(export_flux(t))
    return load(path)


def test_native_to_flux_and_back_is_the_same_topology(project, caplog):
    (project / "topology.yaml").write_text(NATIVE)
    native = load(project / "topology.yaml")
    again = round_trip(native, project)
    assert again.source == str(project / "exported.flux.yaml")
    assert without_source(again) == without_source(native)
    assert [c.id for c in again.components] == [c.id for c in native.components]
    # nothing was dropped, and the partial-key form is the one Storm's Flux accepts
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]


def test_flux_fixtures_survive_a_round_trip(tmp_path, monkeypatch):
    copy = tmp_path / "flux"
    shutil.copytree(FLUX, copy)
    monkeypatch.chdir(tmp_path)  # config_methods.yaml runs one spout in the host's directory
    for name in (
        "groupings.yaml",
        "config_methods.yaml",
        "builtins.yaml",
        "jar/topology.yaml",
        "with_includes.yaml",
    ):
        first = load(copy / name)
        again = round_trip(first, (copy / name).parent, f"again-{Path(name).name}")
        assert without_source(again) == without_source(first), name


def exported_doc(project: Path, text: str) -> dict:
    (project / "topology.yaml").write_text(textwrap.dedent(text))
    return yaml.safe_load(export_flux(load(project / "topology.yaml")))


def test_export_uses_only_what_storm_flux_knows(project):
    doc = exported_doc(project, NATIVE)
    assert set(doc) <= set(TOPOLOGY_KEYS)
    for entry in doc["spouts"] + doc["bolts"]:
        assert set(entry) <= set(COMPONENT_KEYS)
        assert "config" not in entry  # per-component `config:` is not in any Storm release
        for method in entry.get("configMethods", []):
            assert set(method) <= set(CONFIG_METHOD_KEYS)
    for stream in doc["streams"]:
        assert set(stream) <= set(STREAM_KEYS) and set(stream["grouping"]) <= set(GROUPING_KEYS)
    source = doc["spouts"][0]
    assert source == {
        "id": "source",
        "className": "org.apache.storm.flux.wrappers.spouts.FluxShellSpout",
        "constructorArgs": [["python", "spout.py", "--rate", "10"]],
        "configMethods": [
            {"name": "setDefaultStream", "args": [["word", "n"]]},
            {"name": "setNamedStream", "args": ["side", ["word"]]},
            {"name": "setNamedStream", "args": ["alerts", ["level", "text"]]},
            {"name": "addComponentConfig", "args": ["topology.max.spout.pending", 5]},
            {"name": "addComponentConfig", "args": ["my.app.flag", True]},
            {"name": "setEnv", "args": [{"PATH": "/opt/extra/bin", "MODE": "fast"}]},
        ],
        "parallelism": 2,
    }
    builtins = {e["id"]: e for e in doc["spouts"] + doc["bolts"] if "Flux" not in e["className"]}
    assert builtins == {
        "counter-source": {
            "id": "counter-source",
            "parallelism": 2,
            "className": "org.apache.storm.testing.TestWordSpout",
        },
        "count": {
            "id": "count",
            "parallelism": 2,
            "className": "org.apache.storm.testing.TestWordCounter",
        },
        "log": {
            "id": "log",
            "parallelism": 1,
            "className": "org.apache.storm.flux.wrappers.bolts.LogInfoBolt",
        },
    }
    # partial key: CUSTOM PartialKeyGrouping given a Fields bean, one bean per field list
    assert doc["components"] == [
        {
            "id": "fields-word",
            "className": "org.apache.storm.tuple.Fields",
            "constructorArgs": [["word"]],
        }
    ]
    partial = [s["grouping"] for s in doc["streams"] if s["to"] == "partial"]
    assert partial[1] == {
        "type": "CUSTOM",
        "streamId": "side",
        "customClass": {
            "className": "org.apache.storm.grouping.PartialKeyGrouping",
            "constructorArgs": [{"ref": "fields-word"}],
        },
    }
    assert partial[2] == {"type": "GLOBAL", "streamId": "totals"}
    types = {s["grouping"]["type"] for s in doc["streams"]}
    assert types == {
        "SHUFFLE",
        "LOCAL_OR_SHUFFLE",
        "FIELDS",
        "ALL",
        "CUSTOM",
        "GLOBAL",
        "DIRECT",
        "NONE",
    }


def test_test_word_spout_not_distributed_round_trips(project):
    text = NATIVE.replace(
        "    outputs: [word]\n    parallelism: 2\n",
        "    outputs: [word]\n    config: {topology.max.task.parallelism: 1}\n",
    )
    (project / "topology.yaml").write_text(text)
    native = load(project / "topology.yaml")
    doc = yaml.safe_load(export_flux(native))
    spout = next(s for s in doc["spouts"] if s["id"] == "counter-source")
    assert spout["constructorArgs"] == [False]
    assert without_source(round_trip(native, project)) == without_source(native)


def test_worker_directory_becomes_change_child_cwd_false(project, monkeypatch, tmp_path_factory):
    elsewhere = tmp_path_factory.mktemp("worker")
    (elsewhere / "spout.py").write_text("# dummy\n")
    monkeypatch.chdir(elsewhere)
    text = NATIVE.replace(
        "    parallelism: 2\n    config: {topology.max.spout.pending: 5",
        f"    parallelism: 2\n    cwd: {elsewhere}\n    config: {{topology.max.spout.pending: 5",
    )
    (project / "topology.yaml").write_text(text)
    native = load(project / "topology.yaml")
    doc = yaml.safe_load(export_flux(native))
    assert {"name": "changeChildCWD", "args": [False]} in doc["spouts"][0]["configMethods"]
    assert without_source(round_trip(native, project)) == without_source(native)


# ---- what Flux cannot say -----------------------------------------------------------------------

SMALL = """\
name: small
spouts:
  spout: {command: [python, spout.py], outputs: [word]}
bolts:
  bolt:
    command: [python, bolt.py]
    outputs: []
    inputs: {spout: shuffle}
"""


def test_stream_without_fields_is_left_out_with_a_warning(project, caplog):
    doc = exported_doc(project, SMALL)
    assert "configMethods" not in doc["bolts"][0]
    assert "stream 'default' has no fields: left out" in caplog.text


def test_subscribed_stream_without_fields_is_an_error(project):
    text = SMALL.replace(
        "spout: {command: [python, spout.py], outputs: [word]}",
        "spout: {command: [python, spout.py], outputs: []}",
    )
    with pytest.raises(TopologyError) as info:
        exported_doc(project, text)
    assert info.value.component == "spout" and "no fields and bolts subscribe" in str(info.value)


def test_host_only_settings_are_left_out_with_warnings(project, caplog, tmp_path_factory):
    other = tmp_path_factory.mktemp("other")
    (other / "bolt.py").write_text("# dummy\n")
    text = SMALL.replace(
        "    outputs: []\n", f"    outputs: [x]\n    heartbeats: false\n    cwd: {other}\n"
    )
    doc = exported_doc(project, text)
    assert doc["bolts"][0]["configMethods"] == [{"name": "setDefaultStream", "args": [["x"]]}]
    assert "heartbeats: False left out" in caplog.text
    assert f"cwd {other} left out" in caplog.text


@pytest.mark.parametrize(
    "change, problem",
    [
        ("outputs: [word, total]", "TestWordCounter declares"),
        ("config: {topology.tick.tuple.freq.secs: 5}", "cannot give it component config"),
    ],
)
def test_builtins_with_settings_java_lacks_are_errors(project, change, problem):
    text = SMALL.replace(
        """    command: [python, bolt.py]
    outputs: []""",
        f"""    command: [python, -m, components.storm_builtins.test_word_counter]
    {change if change.startswith("outputs") else "outputs: [word, count]"}
    {change if change.startswith("config") else ""}""",
    )
    with pytest.raises(TopologyError) as info:
        exported_doc(project, text)
    assert info.value.component == "bolt" and problem in info.value.problem


def test_builtin_kinds_are_not_mixed_up(project):
    assert SPOUT != BOLT  # the exported class follows the component's kind
    doc = exported_doc(
        project,
        SMALL.replace(
            "[python, spout.py]", "[python, -m, components.storm_builtins.test_word_spout]"
        ),
    )
    assert doc["spouts"][0]["className"] == "org.apache.storm.testing.TestWordSpout"


# ---- command line -------------------------------------------------------------------------------


def test_export_flux_cli_writes_a_file_or_stdout(project):
    (project / "topology.yaml").write_text(NATIVE)
    runner = CliRunner()
    out = project / "out.flux.yaml"
    result = runner.invoke(main, ["export-flux", str(project / "topology.yaml"), "-o", str(out)])
    assert result.exit_code == 0, result.output
    assert out.read_text().startswith("# Flux topology exported by `python -m host export-flux`")
    assert "storm jar <topology.jar> org.apache.storm.flux.Flux --remote" in out.read_text()
    result = runner.invoke(main, ["export-flux", str(project / "topology.yaml")])
    assert result.exit_code == 0 and result.output == out.read_text()
    result = runner.invoke(main, ["validate", str(out)])
    assert result.exit_code == 0, result.output


def test_export_flux_cli_reports_what_cannot_be_exported(project):
    (project / "topology.yaml").write_text(
        SMALL.replace(
            "spout: {command: [python, spout.py], outputs: [word]}",
            "spout: {command: [python, spout.py], outputs: []}",
        )
    )
    result = CliRunner().invoke(main, ["export-flux", str(project / "topology.yaml")])
    assert result.exit_code == 2
    assert "error:" in result.output and "no fields and bolts subscribe" in result.output


def test_the_storm_flux_example_round_trips(tmp_path):
    example = Path(__file__).resolve().parents[2] / "examples" / "storm-flux"
    copy = tmp_path / "storm-flux"
    shutil.copytree(example, copy)
    first = load(copy / "topology.yaml")
    doc = yaml.safe_load(export_flux(first))
    assert [b["className"] for b in doc["bolts"]] == [
        "org.apache.storm.flux.wrappers.bolts.FluxShellBolt",
        "org.apache.storm.testing.TestWordCounter",
        "org.apache.storm.flux.wrappers.bolts.LogInfoBolt",
    ]
    assert without_source(round_trip(first, copy)) == without_source(first)
