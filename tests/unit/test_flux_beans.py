"""Flux `components:` (beans), built as Flux's FluxBuilder builds them: in file order, constructor
by arguments (or factory), then properties, then configMethods, with `ref` / `reflist` resolved;
the classes the host emulates configure spouts, bolts and groupings, any other is one error
naming the bean, its class and the component that needs it (a warning when nothing does).
Realistic files are in tests/unit/flux/beans/."""

from __future__ import annotations

import logging
import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from host.cli import main
from host.errors import TopologyError
from host.topology import load
from host.topology.flux_beans import (
    ArgumentError,
    Beans,
    JavaClass,
    Unemulated,
    Where,
    build_object,
)
from host.topology.flux_document import Definition
from host.topology.flux_java import BEAN_CLASSES, SHELL_JAVA, Fields
from host.topology.model import PARTIAL_KEY, Grouping, Input

BEANS = Path(__file__).parent / "flux" / "beans"
SPOUT_CLASS = "org.apache.storm.flux.wrappers.spouts.FluxShellSpout"
BOLT_CLASS = "org.apache.storm.flux.wrappers.bolts.FluxShellBolt"


def load_error(path: Path) -> TopologyError:
    with pytest.raises(TopologyError) as info:
        load(path)
    return info.value


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "spout.py").write_text("# dummy\n")
    (tmp_path / "bolt.py").write_text("# dummy\n")
    return tmp_path


def flux(project: Path, components: str, bolt_extra: str = "") -> Path:
    """A spout and a shell bolt, with these beans and these lines added to the bolt."""
    path = project / "topology.yaml"
    path.write_text(
        textwrap.dedent("""\
        name: t
        components:
        {components}
        spouts:
          - id: spout
            className: {spout}
            constructorArgs: [[python, spout.py], [word]]
        bolts:
          - id: bolt
            className: {bolt}
            constructorArgs: [[python, bolt.py]]
        {bolt_extra}
        streams:
          - {{from: spout, to: bolt, grouping: {{type: SHUFFLE}}}}
        """).format(
            components=textwrap.indent(textwrap.dedent(components), "  "),
            spout=SPOUT_CLASS,
            bolt=BOLT_CLASS,
            bolt_extra=textwrap.indent(textwrap.dedent(bolt_extra), "    "),
        )
    )
    return path


# ---- beans that configure shell components and groupings ----------------------------------------


def test_emulated_beans_configure_shell_components_and_groupings(caplog):
    caplog.set_level(logging.WARNING, logger="host.topology.flux")
    t = load(BEANS / "shell_beans.yaml")
    split, sink = t.component("split"), t.component("sink")
    # constructor refs: an ArrayList command and an ArrayList of fields (Flux makes arrays of them)
    assert split.command == ("bash", "split.sh")
    # setNamedStream(String bean, LinkedList built from a copy of the ArrayList, then add)
    assert split.outputs == {"default": ("word",), "lengths": ("word", "length")}
    # setEnv(HashMap copied from a LinkedHashMap, then put replacing one entry)
    assert split.env == {"SPLIT_MODE": "letters", "LANG": "C.UTF-8"}
    # addComponentConfig with a reflist of String beans and with a map bean filled by putAll
    assert split.config == {
        "split.data_paths": ["/data/actions", "/data/clicks"],
        "split.limits": {"max.words": 50, "max.length": 12},
    }
    # the env property set from a Properties bean
    assert sink.env == {"SINK_FORMAT": "jsonl"}
    # PartialKeyGrouping(Fields bean)
    assert sink.inputs == (Input("split", "default", Grouping(PARTIAL_KEY, ("word",))),)
    # the bean nothing uses, of a class the host cannot build: a warning, not an error
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert warnings == [
        f"{BEANS / 'shell_beans.yaml'}: bean 'metricsReporter' "
        "(com.example.metrics.GraphiteReporter) left out: no spout, bolt or grouping uses it, "
        "and this host does not emulate that class (Flux would build it, then not use it)"
    ]


def test_a_bean_is_shared_by_value_and_not_changed_by_its_users(project):
    path = flux(
        project,
        """\
        - id: env
          className: java.util.HashMap
          configMethods: [{name: put, args: [MODE, fast]}]
        """,
        "configMethods: [{name: setEnv, args: [{ref: env}]}]",
    )
    t = load(path)
    assert t.component("bolt").env == {"MODE": "fast"}


# ---- Java classes the host does not emulate -----------------------------------------------------


def test_kafka_client_spout_with_an_unknown_translator_is_one_error_naming_it():
    # storm-kafka-client's classes are emulated (tests/unit/test_flux_kafka.py); this file's
    # record translator is a class of its own, which is not: the spout names the chain of beans
    error = load_error(BEANS / "kafka_client.yaml")
    assert error.component == "kafka-spout" and error.key == "constructorArgs"
    assert error.problem.startswith(
        "needs bean 'kafkaConfig' (org.apache.storm.kafka.spout.KafkaSpoutConfig), "
        "built from bean 'kafkaConfigBuilder' (org.apache.storm.kafka.spout.KafkaSpoutConfig$Builder), "
        "built from bean 'valueTranslator' (com.example.storm.ValueOnlyTranslator)"
    )


def test_storm_kafka_spout_is_emulated_through_its_beans():
    """ZkHosts, SpoutConfig, the schemes and OffsetRequest's factory configure the built-in
    storm-kafka spout (details: tests/unit/test_storm_kafka_flux.py)."""
    spout = load(BEANS / "storm_kafka.yaml").component("events")
    assert spout.command == ("python", "-m", "components.storm_builtins.storm_kafka_spout")
    assert spout.outputs == {"default": ("str",)}
    assert spout.config["kafka.spoutconfig.topic"] == "events"
    assert spout.config["kafka.spoutconfig.startOffsetTime"] == -2  # EarliestTime()


def test_jdbc_bolt_names_its_provider_and_mapper_but_not_the_emulated_config_map():
    error = load_error(BEANS / "jdbc.yaml")
    assert error.component == "store" and error.key == "className"
    assert "Java class org.apache.storm.jdbc.bolt.JdbcInsertBolt cannot run here" in error.problem
    assert error.problem.endswith(
        "'connectionProvider' (org.apache.storm.jdbc.common.HikariCPConnectionProvider), "
        "'userMapper' (org.apache.storm.jdbc.mapper.SimpleJdbcMapper)"
    )


def test_an_emulated_component_needing_an_unemulated_bean_names_bean_class_and_key(project):
    path = flux(
        project,
        """\
        - id: workerEnv
          className: java.lang.System
          factory: getenv
        """,
        "configMethods: [{name: setEnv, args: [{ref: workerEnv}]}]",
    )
    error = load_error(path)
    assert error.component == "bolt" and error.key == "configMethods[0].args"
    assert error.problem == (
        "needs bean 'workerEnv' (java.lang.System), a Java class this host does not emulate "
        "(docs/flux.md §1.1 lists those it does)"
    )


def test_an_unemulated_bean_held_in_a_map_bean_is_named_with_the_map_it_came_through(project):
    path = flux(
        project,
        """\
        - id: secret
          className: com.example.Vault
        - id: env
          className: java.util.HashMap
          configMethods: [{name: put, args: [TOKEN, {ref: secret}]}]
        """,
        "properties: [{name: env, ref: env}]",
    )
    error = load_error(path)
    assert error.component == "bolt" and error.key == "properties[0].value"
    assert "needs bean 'secret' (com.example.Vault)" in error.problem
    assert error.problem.endswith("(through bean 'env')")


def test_an_emulated_bean_built_from_an_unemulated_one_cannot_be_built_either(project):
    path = flux(
        project,
        """\
        - id: hosts
          className: com.example.HostList
        - id: command
          className: java.util.ArrayList
          constructorArgs: [{ref: hosts}]
        """,
    )
    path.write_text(path.read_text().replace("[[python, bolt.py]]", "[{ref: command}]"))
    error = load_error(path)
    assert error.component == "bolt" and error.key == "constructorArgs"
    assert error.problem.startswith(
        "needs bean 'command' (java.util.ArrayList), built from bean 'hosts' (com.example.HostList)"
    )


def test_the_cli_reports_a_kafka_file_as_one_line_and_exit_code_2():
    result = CliRunner().invoke(main, ["validate", str(BEANS / "kafka_client.yaml")])
    assert result.exit_code == 2
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ")
    assert "component 'kafka-spout'" in lines[0] and "'kafkaConfig'" in lines[0]


# ---- references ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "components, bolt_extra, key, problem",
    [
        (
            "- {id: a, className: java.util.ArrayList, constructorArgs: [{ref: b}]}\n"
            "- {id: b, className: java.util.ArrayList}\n",
            "",
            "constructorArgs[0].ref",
            "ref 'b' names a bean defined after this one: Flux builds beans in file order",
        ),
        (
            "- {id: a, className: java.util.ArrayList, constructorArgs: [{ref: a}]}\n",
            "",
            "constructorArgs[0].ref",
            "ref 'a' names itself: Flux builds beans in file order and would pass null",
        ),
        (
            "- {id: a, className: java.lang.String, constructorArgs: [x]}\n",
            "configMethods: [{name: setEnv, args: [{ref: nope}]}]",
            "configMethods[0].args[0].ref",
            "ref 'nope' names no bean in components; they are: a",
        ),
        (
            "- {id: a, className: java.lang.String, constructorArgs: [x]}\n",
            "configMethods: [{name: addComponentConfig, args: [k, {reflist: a}]}]",
            "configMethods[0].args[1].reflist",
            "reflist must be a list of bean ids",
        ),
        (
            "- {id: a, className: java.util.HashMap}\n",
            "properties: [{name: env, ref: a, value: {X: y}}]",
            "properties[0].ref",
            "a property has a value or a ref, not both",
        ),
        (
            "- {id: a, className: java.util.HashMap, configMethods: [{name: put, args: [k]}]}\n",
            "",
            "configMethods[0].name",
            "no configuration method 'put' taking 1 argument(s) on HashMap",
        ),
        (
            "- {id: a, className: java.util.HashMap, configMethods: [{name: put, args: [k, null]}]}\n",
            "",
            "configMethods[0].args",
            "argument 1 may not be null (Flux refuses null arguments)",
        ),
        (
            "- {id: a, className: java.util.ArrayList, constructorArgs: [-1]}\n",
            "",
            "constructorArgs",
            "the initial capacity may not be negative",
        ),
        (
            "- {id: f, className: org.apache.storm.tuple.Fields, constructorArgs: [[w]]}\n",
            "configMethods: [{name: setDefaultStream, args: [{ref: f}]}]",
            "configMethods[0].args",
            "must be a list of field names, got Fields(names=('w',))",
        ),
    ],
)
def test_reference_and_call_errors_name_the_key(project, components, bolt_extra, key, problem):
    error = load_error(flux(project, components, bolt_extra))
    assert error.key == key and problem in error.problem, error


def test_a_factory_the_class_does_not_have_is_an_error(project):
    path = flux(project, "- {id: a, className: java.util.HashMap}\n", "factory: make")
    path.write_text(path.read_text().replace("    constructorArgs: [[python, bolt.py]]\n", ""))
    error = load_error(path)
    assert error.component == "bolt" and error.key == "factory"
    assert error.problem == "FluxShellBolt has no static factory method 'make' taking 0 argument(s)"


def test_a_factory_given_with_constructor_arguments_is_ignored_as_flux_ignores_it(project, caplog):
    caplog.set_level(logging.WARNING, logger="host.topology.flux")
    t = load(flux(project, "- {id: a, className: java.util.HashMap}\n", "factory: make"))
    assert t.component("bolt").command == ("python", "bolt.py")
    assert "factory ignored: Flux calls the constructor when constructorArgs are given" in (
        caplog.text
    )


def test_a_nested_ref_is_a_plain_map_as_in_flux(project):
    """Flux replaces a ref only when it is a whole argument; deeper, it is a map like any other."""
    path = flux(
        project,
        "- {id: a, className: java.lang.String, constructorArgs: [x]}\n",
        "configMethods: [{name: addComponentConfig, args: [k, [{ref: a}]]}]",
    )
    assert load(path).component("bolt").config == {"k": [{"ref": "a"}]}


# ---- the build order, on a class made for the test ----------------------------------------------


def recording_class(calls: list[str]) -> JavaClass:
    def construct(args: list) -> dict:
        calls.append(f"new{args}")
        return {}

    def factory(args: list) -> dict:
        calls.append(f"create{args}")
        return {}

    def method(obj: dict, args: list) -> None:
        calls.append(f"with{args}")

    def setter(obj: dict, value: object) -> None:
        if value == "bad":
            raise ArgumentError("bad value")
        calls.append(f"set({value!r})")

    return JavaClass(
        "com.example.Recorder",
        constructors={0: construct, 1: construct},
        methods={("with", 1): method},
        setters={"level": setter},
        factories={("create", 1): factory},
    )


def beans_of(*bodies: dict, classes: dict | None = None) -> Beans:
    return Beans(
        {b["id"]: Definition(b, "f.yaml", f"components[{i}]") for i, b in enumerate(bodies)},
        {**BEAN_CLASSES, **(classes or {})},
    )


def test_constructor_then_properties_then_config_methods_whatever_the_key_order():
    calls: list[str] = []
    recorder = recording_class(calls)
    beans = beans_of({"id": "s", "className": "java.lang.String", "constructorArgs": ["v"]})
    body = {
        "configMethods": [{"name": "with", "args": [{"ref": "s"}]}, {"name": "with", "args": [2]}],
        "properties": [{"name": "level", "value": 3}, {"name": "level", "ref": "s"}],
        "constructorArgs": [{"reflist": ["s", "s"]}],
    }
    used: list[str] = []
    build_object(body, recorder, beans, Where("f.yaml", "c"), used.append)
    assert calls == ["new[['v', 'v']]", "set(3)", "set('v')", "with['v']", "with[2]"]
    assert used == ["s", "s", "s", "s"]


def test_factory_with_factory_args_then_no_argument_constructor():
    calls: list[str] = []
    recorder = recording_class(calls)
    beans = beans_of()
    build_object(
        {"factory": "create", "factoryArgs": [1]}, recorder, beans, Where(None, "c"), print
    )
    build_object({}, recorder, beans, Where(None, "c"), print)
    assert calls == ["create[1]", "new[]"]


def test_every_bean_is_built_even_if_unused_and_its_errors_are_errors():
    with pytest.raises(TopologyError) as info:
        beans_of({"id": "m", "className": "java.util.HashMap", "constructorArgs": ["x"]})
    assert info.value.component == "m" and info.value.key == "constructorArgs"
    assert "takes a map or an initial capacity, got 'x'" in info.value.problem


def test_a_failed_call_on_a_placeholder_makes_the_bean_a_placeholder_too():
    calls: list[str] = []
    beans = beans_of(
        {"id": "inner", "className": "com.example.Unknown"},
        {
            "id": "outer",
            "className": "com.example.Recorder",
            "properties": [{"name": "level", "ref": "inner"}],
        },  # fmt: skip
        classes={"com.example.Recorder": recording_class(calls)},
    )
    inner = Unemulated("inner", "com.example.Unknown")
    # a setter that stores anything takes the placeholder, as a map's put would
    assert calls == ["new[]", f"set({inner!r})"]
    failing = beans_of(
        {"id": "inner", "className": "com.example.Unknown"},
        {"id": "s", "className": "java.lang.String", "constructorArgs": [{"ref": "inner"}]},
    )
    value = failing.ref("s", Where(None, "c"), "k", print)
    assert value == Unemulated("s", "java.lang.String", inner)
    assert beans.ref("outer", Where(None, "c"), "k", print) == {}


def test_fields_bean_value():
    beans = beans_of(
        {"id": "f", "className": "org.apache.storm.tuple.Fields", "constructorArgs": [["a", "b"]]}
    )
    assert beans.ref("f", Where(None, "c"), "k", print) == Fields(("a", "b"))


# ---- any bean definition: a TopologyError or a topology, never a crash --------------------------

scalars = st.none() | st.booleans() | st.integers(-3, 3) | st.floats(-2, 2) | st.text(max_size=3)
yaml_values = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(st.sampled_from(["ref", "reflist", "a", "k"]), inner, max_size=2)
    ),
    max_leaves=6,
)
arguments = st.lists(
    yaml_values | st.fixed_dictionaries({"ref": st.sampled_from(["b0", "b1", "b2", "x"])}),
    max_size=3,
)
bean_bodies = st.fixed_dictionaries(
    {"className": st.sampled_from([*BEAN_CLASSES, "com.example.Other"])},
    optional={
        "constructorArgs": arguments | yaml_values,
        "factory": st.sampled_from(["valueOf", "make", ""]) | yaml_values,
        "factoryArgs": arguments,
        "properties": st.lists(
            st.fixed_dictionaries(
                {"name": st.sampled_from(["env", "x"]) | yaml_values},
                optional={"value": yaml_values, "ref": st.sampled_from(["b0", "b1", "x"])},
            ),
            max_size=2,
        ),
        "configMethods": st.lists(
            st.fixed_dictionaries(
                {"name": st.sampled_from(["put", "add", "putAll", "addAll", "setProperty"])},
                optional={"args": arguments | yaml_values},
            ),
            max_size=3,
        ),
    },
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(bean_bodies, max_size=3), arguments)
def test_any_beans_load_or_fail_with_one_topology_error(bodies, bolt_args):
    definitions = {
        f"b{i}": Definition({"id": f"b{i}", **body}, "f.yaml", f"components[{i}]")
        for i, body in enumerate(bodies)
    }
    try:
        beans = Beans(definitions, BEAN_CLASSES)
        build_object(
            {"constructorArgs": [["python", "bolt.py"]], "configMethods": [
                {"name": "addComponentConfig", "args": ["k", *bolt_args[:1]]}
            ]},
            SHELL_JAVA["bolt"],
            beans,
            Where("f.yaml", "bolt"),
            beans.use,
        )  # fmt: skip
        beans.warn_unused()
    except TopologyError as exc:
        assert str(exc).startswith("f.yaml: ")
