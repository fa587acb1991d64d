"""Fuzzing the topology loaders: whatever the file holds, `host validate FILE` gives exit code 0,
or exit code 2 and one line `error: FILE: ...` (naming the component and key where one applies);
never a traceback. In-process (host.topology.load; any exception but TopologyError is a bug) for
speed, through click's CliRunner for a share of the examples, and a few through a real process.

Documents are built from the formats' own vocabularies (our YAML and Flux), with valid and
invalid values mixed, then written as YAML; raw-text mutations of valid files cover the syntax.
"""

from __future__ import annotations

import itertools
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from host.cli import main as cli
from host.errors import TopologyError
from host.topology.files import is_flux, load

from .harness import BOLTS, ROOT, SPOUTS

pytestmark = pytest.mark.chaos

SETTINGS = settings(
    max_examples=int(os.environ.get("CHAOS_FUZZ_EXAMPLES", "150")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
WORK = Path(tempfile.mkdtemp(prefix="chaos-fuzz-"))
_names = itertools.count()

FLUX_SPOUT = "org.apache.storm.flux.wrappers.spouts.FluxShellSpout"
FLUX_BOLT = "org.apache.storm.flux.wrappers.bolts.FluxShellBolt"


# ---- value strategies ---------------------------------------------------------------------------

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**70), 2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=12),
    st.sampled_from(
        [
            "",
            "-1",
            "0",
            "1",
            "shuffle",
            "fields",
            "python",
            "word",
            "default",
            "${ENV-HOME}",
            "${ENV-NOPE_NOT_SET}",
            "$(touch /tmp/chaos-pwned)",
            "`id`",
            "__system",
            "__tick",
            "a/b",
            "../..",
            "\x00",
            "é€",
            "\ud800",
        ]
    ),
)
junk = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3),
        st.dictionaries(st.one_of(st.text(max_size=6), st.integers()), inner, max_size=3),
    ),
    max_leaves=8,
)


def maybe(valid, invalid=junk, p_valid: int = 3):
    """Mostly a valid value, sometimes junk."""
    return st.one_of(*([valid] * p_valid), invalid)


config_keys = st.sampled_from(
    [
        "topology.message.timeout.secs",
        "topology.max.spout.pending",
        "topology.acker.executors",
        "topology.shellbolt.max.pending",
        "topology.subprocess.timeout.secs",
        "topology.tick.tuple.freq.secs",
        "topology.debug",
        "topology.enable.message.timeouts",
        "host.handshake.timeout.secs",
        "host.restart.backoff.initial.secs",
        "host.restart.backoff.max.secs",
        "host.restart.max",
        "host.max.frame.bytes",
        "host.nonsense",
        "topology.workers",
        "topology.max.task.parallelism",
        "my.custom.key",
        "storm.zookeeper.servers",
    ]
)
configs = maybe(
    st.dictionaries(
        st.one_of(config_keys, st.text(max_size=8)), maybe(st.integers(0, 100), junk), max_size=4
    )
)
ids = maybe(
    st.sampled_from(["spout", "split", "sink", "count", "__acker", "a b", ""]),
    st.one_of(st.integers(), st.text(max_size=5)),
)
fields = maybe(st.lists(st.sampled_from(["word", "n", "count", ""]), max_size=3))
commands = maybe(
    st.sampled_from(
        [
            SPOUTS["python"],
            BOLTS["bash"],
            BOLTS["node"],
            ["python", "-c", "pass"],
            ["no-such-program-xyz"],
            ["python", "missing_script.py"],
            "python bolt.py",
            [],
            ["python", 3],
            [None],
        ]
    )
)
groupings = st.sampled_from(
    [
        "shuffle",
        "fields",
        "all",
        "global",
        "none",
        "direct",
        "local_or_shuffle",
        "partial_key",
        "bogus",
    ]
)
inputs = st.dictionaries(
    ids,
    st.one_of(
        groupings,
        st.fixed_dictionaries(
            {},
            optional={
                "grouping": groupings,
                "fields": fields,
                "stream": maybe(st.just("default")),
                "partial_key": fields,
            },
        ),
        junk,
    ),
    max_size=3,
)

our_component = st.fixed_dictionaries(
    {"command": commands},
    optional={
        "outputs": maybe(
            st.one_of(
                fields, st.dictionaries(st.sampled_from(["default", "side"]), fields, max_size=2)
            )
        ),
        "inputs": maybe(inputs),
        "parallelism": maybe(st.integers(-1, 4)),
        "config": configs,
        "cwd": maybe(st.sampled_from([".", "..", "/nonexistent", str(ROOT)])),
        "env": maybe(st.dictionaries(st.sampled_from(["A", "PATH", "1X", ""]), junk, max_size=2)),
        "serializer": maybe(st.sampled_from(["json", "msgpack", "xml"])),
        "heartbeats": maybe(st.booleans()),
        "activate": maybe(st.booleans()),
        "bogus": junk,
    },
)
our_documents = st.fixed_dictionaries(
    {},
    optional={
        "name": maybe(st.sampled_from(["t", "word count", "a/b", ""])),
        "config": configs,
        "spouts": maybe(st.dictionaries(ids, maybe(our_component), max_size=2)),
        "bolts": maybe(st.dictionaries(ids, maybe(our_component), max_size=3)),
        "extra": junk,
    },
)

flux_args = maybe(st.lists(st.one_of(commands, fields), max_size=3))
config_methods = st.lists(
    st.fixed_dictionaries(
        {
            "name": maybe(
                st.sampled_from(
                    [
                        "setDefaultStream",
                        "setNamedStream",
                        "addComponentConfig",
                        "setEnv",
                        "changeChildCWD",
                        "bogus",
                    ]
                )
            ),
            "args": maybe(st.lists(junk, max_size=3)),
        }
    ),
    max_size=2,
)
flux_component = st.fixed_dictionaries(
    {"id": ids},
    optional={
        "className": maybe(
            st.sampled_from(
                [
                    FLUX_SPOUT,
                    FLUX_BOLT,
                    "org.apache.storm.testing.TestWordSpout",
                    "org.apache.storm.testing.TestWordCounter",
                    "org.apache.storm.flux.wrappers.bolts.LogInfoBolt",
                    "com.example.Nope",
                ]
            )
        ),
        "constructorArgs": flux_args,
        "parallelism": maybe(st.integers(-1, 3)),
        "numTasks": maybe(st.integers(-1, 3)),
        "configMethods": maybe(config_methods),
        "config": configs,
        "properties": junk,
        "factory": junk,
    },
)
flux_stream = st.fixed_dictionaries(
    {"from": ids, "to": ids},
    optional={
        "name": st.text(max_size=8),
        "grouping": maybe(
            st.fixed_dictionaries(
                {
                    "type": maybe(
                        st.sampled_from(
                            [
                                "SHUFFLE",
                                "FIELDS",
                                "ALL",
                                "GLOBAL",
                                "NONE",
                                "DIRECT",
                                "LOCAL_OR_SHUFFLE",
                                "CUSTOM",
                                "bogus",
                            ]
                        )
                    )
                },
                optional={
                    "args": fields,
                    "streamId": maybe(st.just("default")),
                    "customClass": junk,
                },
            )
        ),
    },
)
flux_documents = st.fixed_dictionaries(
    {
        "spouts": maybe(st.lists(flux_component, max_size=2)),
        "streams": maybe(st.lists(flux_stream, max_size=3)),
    },
    optional={
        "name": maybe(st.just("flux")),
        "config": configs,
        "bolts": maybe(st.lists(flux_component, max_size=3)),
        "components": maybe(st.lists(flux_component, max_size=1)),
        "includes": maybe(
            st.lists(
                st.fixed_dictionaries(
                    {
                        "file": maybe(st.sampled_from(["nope.yaml", "/etc/passwd", "."])),
                        "resource": st.booleans(),
                        "override": junk,
                    }
                ),
                max_size=1,
            )
        ),
        "topologySource": junk,
        "workerHooks": junk,
        "extra": junk,
    },
)


# ---- the properties -----------------------------------------------------------------------------


def write(text: str | bytes, suffix: str = ".yaml") -> Path:
    path = WORK / f"t{next(_names)}{suffix}"
    if isinstance(text, str):
        text = text.encode("utf-8", "surrogatepass")
    path.write_bytes(text)
    return path


def check_load(path: Path) -> TopologyError | None:
    """Load `path`: a Topology, or a TopologyError that names the file, in one line. Anything
    else propagates and fails the test."""
    try:
        load(path)
    except TopologyError as exc:
        text = str(exc)
        assert exc.file == str(path), f"the error does not name the file: {text!r}"
        assert text.startswith(str(path)), text
        assert "\n" not in text, f"not one line: {text!r}"
        return exc
    return None


def check_cli(path: Path, env_filter: bool = False) -> None:
    result = CliRunner().invoke(cli, ["validate", str(path), *(["-e"] if env_filter else [])])
    assert result.exception is None or isinstance(result.exception, SystemExit), (
        f"{type(result.exception).__name__}: {result.exception}\n{result.output}"
    )
    assert result.exit_code in (0, 2), result.output
    assert "Traceback" not in result.output
    if result.exit_code == 2:
        errors = [line for line in result.output.splitlines() if line.startswith("error: ")]
        assert len(errors) == 1 and str(path) in errors[0], result.output


def dump(doc) -> str:
    return yaml.safe_dump(doc, allow_unicode=True, sort_keys=False)


@SETTINGS
@given(our_documents, st.booleans())
def test_fuzzed_documents_in_our_format_fail_cleanly(doc, via_cli):
    try:
        text = dump(doc)
    except (yaml.YAMLError, UnicodeEncodeError):
        return  # not writable as YAML: nothing to test
    path = write(text)
    exc = check_load(path)
    if via_cli:
        check_cli(path)
    if exc is not None and exc.component:  # named (escaped when it holds control characters)
        assert "component '" in str(exc), str(exc)


@SETTINGS
@given(flux_documents, st.booleans(), st.booleans())
def test_fuzzed_flux_documents_fail_cleanly(doc, via_cli, env_filter):
    try:
        text = dump(doc)
    except (yaml.YAMLError, UnicodeEncodeError):
        return
    assert is_flux(yaml.safe_load(text))
    path = write(text)
    try:
        load(path, env_filter=env_filter)
    except TopologyError as exc:
        assert exc.file is not None and str(exc).startswith(exc.file), str(exc)
        assert "\n" not in str(exc), repr(str(exc))
    if via_cli:
        check_cli(path, env_filter)


VALID_OURS = f"""\
name: fuzz
config:
  topology.max.spout.pending: 10
spouts:
  spout:
    command: {SPOUTS["python"]}
    outputs: [sentence]
bolts:
  split:
    command: {BOLTS["bash"]}
    outputs: [word]
    parallelism: 2
    inputs: {{spout: shuffle}}
  sink:
    command: {BOLTS["node"]}
    inputs:
      split: {{grouping: fields, fields: [word]}}
"""

VALID_FLUX = f"""\
name: fuzz-flux
config: {{topology.workers: 1}}
spouts:
  - id: spout
    className: {FLUX_SPOUT}
    constructorArgs: [{SPOUTS["python"]}, [sentence]]
bolts:
  - id: split
    className: {FLUX_BOLT}
    constructorArgs: [{BOLTS["bash"]}, [word]]
    parallelism: 2
streams:
  - from: spout
    to: split
    grouping: {{type: SHUFFLE}}
"""

yaml_noise = st.sampled_from(
    [
        ":",
        "-",
        "- ",
        "{",
        "}",
        "[",
        "]",
        "&a",
        "*a",
        "*nope",
        "<<: *a",
        "!!python/object:os.system",
        "!!python/name:os.system",
        "!!binary",
        "!!set",
        "!!timestamp 2001-01-01",
        "? ",
        "|",
        ">",
        "\t",
        "\n",
        "  ",
        "'",
        '"',
        "#",
        "%YAML 1.1\n",
        "---\n",
        "...\n",
        "~",
        "null",
        "1e309",
        ".nan",
        "0x1F",
        "\ufeff",
        "\x00",
        "\x85",
        "\ud800",
        "é",
    ]
)


@st.composite
def mutated(draw, base: str):
    text = base
    for _ in range(draw(st.integers(1, 4))):
        at = draw(st.integers(0, len(text)))
        op = draw(st.sampled_from(["insert", "delete", "replace"]))
        piece = draw(st.one_of(yaml_noise, st.text(max_size=4)))
        if op == "insert":
            text = text[:at] + piece + text[at:]
        elif op == "delete":
            text = text[:at] + text[at + draw(st.integers(1, 20)) :]
        else:
            text = text[:at] + piece + text[at + len(piece) :]
    return text


@SETTINGS
@example(VALID_OURS)  # the unmutated files load
@example(VALID_FLUX)
@given(st.one_of(mutated(VALID_OURS), mutated(VALID_FLUX)))
def test_mutated_topology_files_fail_cleanly(text):
    path = write(text)
    check_load(path)


@SETTINGS
@given(st.binary(max_size=200))
def test_arbitrary_bytes_fail_cleanly(data):
    check_load(write(data))


def test_base_documents_are_valid():
    assert check_load(write(VALID_OURS)) is None
    assert check_load(write(VALID_FLUX)) is None


def test_bad_values_name_component_and_key():
    """A wrong value deep in a component: the one line names file, component and key."""
    doc = yaml.safe_load(VALID_OURS)
    for key, value in [
        ("parallelism", "two"),
        ("outputs", 3),
        ("config", [1]),
        ("command", "python x.py"),
        ("serializer", "xml"),
        ("env", {"A": [1]}),
    ]:
        bad = {**doc, "bolts": {**doc["bolts"], "split": {**doc["bolts"]["split"], key: value}}}
        exc = check_load(write(dump(bad)))
        assert exc is not None and exc.component == "split", (key, exc)
        assert exc.key is not None and exc.key.split(".")[0] in (key, "A"), (key, str(exc))


# ---- a few through a real process ---------------------------------------------------------------

SUBPROCESS_CASES = {
    "syntax": "name: t\nspouts: [unclosed\n",
    "python-object": "!!python/object/apply:os.system ['touch /tmp/chaos-pwned']\n",
    "not-a-mapping": "- just\n- a list\n",
    "bad-bolt": VALID_OURS.replace("parallelism: 2", "parallelism: -2"),
    "bad-flux": VALID_FLUX.replace("SHUFFLE", "SHUFFLE_ALL"),
    "invalid-utf8": b"name: \xff\xfe\n",
}


@pytest.mark.parametrize("case", sorted(SUBPROCESS_CASES))
def test_validate_in_a_real_process_is_one_line_and_exit_2(case):
    path = write(SUBPROCESS_CASES[case])
    result = subprocess.run(
        [sys.executable, "-m", "host", "validate", str(path)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=60,
        check=False,
    )
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error: {path}"), result.stderr
    assert "Traceback" not in result.stderr and not os.path.exists("/tmp/chaos-pwned")


def _alias_bomb(levels: int = 9) -> str:
    lines = ["name: t", "config:", "  a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    lines += [f"  a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 10) + "]" for i in range(1, levels)]
    return "\n".join(lines) + "\n"


# Each of these once escaped as a traceback, hung the validator or printed several lines.
EDGE_CASES = {
    "timestamp-tag": "name: !!timestamp x\n",  # AttributeError inside PyYAML
    "int-tag": "name: t\nconfig: {a: !!int abc}\n",  # ValueError
    "bool-tag": "name: t\nconfig: {a: !!bool maybe}\n",  # KeyError
    "set-tag": "name: t\nconfig: {a: !!set [1]}\n",  # TypeError
    "deep-nesting": "name: t\nconfig: {a: " + "[" * 3000 + "]" * 3000 + "}\n",
    "self-alias": "name: t\nconfig:\n  a: &a [*a]\n",  # RecursionError in the config check
    "alias-bomb": _alias_bomb(),  # 10^9 values from 1 KB: the validator hung
    "control-char": "\x1fname: t\n",  # PyYAML's ReaderError spans two lines
    "newline-in-id": 'name: t\nspouts:\n  "a\\nb": {command: [python], outputs: [x]}\n'
    "bolts: {b: {command: [python], inputs: {nope: shuffle}}}\n",
}


@pytest.mark.parametrize("case", sorted(EDGE_CASES))
def test_yaml_edge_cases_fail_cleanly(case):
    path = write(EDGE_CASES[case])
    exc = check_load(path)
    assert exc is not None
    check_cli(path)
