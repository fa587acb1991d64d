"""Security basics: commands are argv lists run without a shell, YAML is loaded safely, `${ENV-X}`
substitution only substitutes, the pid directory is owner-only, and nothing listens on a port."""

from __future__ import annotations

import json
import os
import stat
import sys

import psutil
import pytest

from host.errors import TopologyError
from host.runtime.supervisor import Supervisor
from host.topology import TopologyBuilder, load

from .harness import (
    COMPONENTS,
    SPOUTS,
    HostProcess,
    LedgerSpec,
    bolt_yaml,
    read_ledger,
    run_until,
    spout_yaml,
    write_topology,
)

pytestmark = pytest.mark.chaos

FLUX_SPOUT = "org.apache.storm.flux.wrappers.spouts.FluxShellSpout"
FLUX_BOLT = "org.apache.storm.flux.wrappers.bolts.FluxShellBolt"
SHELL_TRAPS = [
    "$(touch {0}/subst)",
    "`touch {0}/backtick`",
    "; touch {0}/semicolon",
    "| touch {0}/pipe",
    "&& touch {0}/and",
    "*",
    "~",
    "$HOME",
    "'\"\\",
]


def test_a_string_command_is_refused(tmp_path):
    (tmp_path / "t.yaml").write_text(
        "name: t\nspouts:\n  s: {command: 'python spout.py; rm -rf ~', outputs: [x]}\n"
    )
    with pytest.raises(TopologyError) as info:
        load(tmp_path / "t.yaml")
    assert info.value.key == "command" and "not a string" in info.value.problem
    b = TopologyBuilder("t")
    b.spout("s", "python spout.py", outputs=["x"])
    with pytest.raises(TopologyError, match="not a string"):
        b.build(base_dir=tmp_path)


ARGV_SPOUT = """
import json, sys
from multilang import Spout
class S(Spout):
    def initialize(self, conf, context):
        with open(conf["test.out"], "w") as fh:
            json.dump(sys.argv[1:], fh)
S().run()
"""


def test_arguments_reach_the_component_verbatim_without_a_shell(tmp_path):
    traps = [t.format(tmp_path) for t in SHELL_TRAPS]
    out = tmp_path / "argv.json"
    b = TopologyBuilder("t", config={"host.shutdown.grace.secs": 0.5})
    b.spout(
        "s",
        [sys.executable, "-c", ARGV_SPOUT, *traps],
        outputs=["x"],
        config={"test.out": str(out)},
    )
    sup = Supervisor(b.build(base_dir=tmp_path))
    assert run_until(sup, lambda snap: out.exists(), limit=20) == 0
    assert json.loads(out.read_text()) == traps
    assert sorted(p.name for p in tmp_path.iterdir()) == ["argv.json"]  # nothing was touched


@pytest.mark.parametrize(
    "tag",
    [
        "!!python/object/apply:os.system ['touch {0}/pwned']",
        "!!python/object/new:os.system ['touch {0}/pwned']",
        "!!python/name:os.system",
        "!!python/object:os.system {{}}",
    ],
)
def test_python_yaml_tags_are_refused_not_constructed(tmp_path, tag):
    path = tmp_path / "t.yaml"
    path.write_text(f"name: t\nconfig:\n  x: {tag.format(tmp_path)}\nspouts: {{}}\n")
    with pytest.raises(TopologyError) as info:
        load(path)
    assert "could not determine a constructor" in info.value.problem, info.value.problem
    assert not (tmp_path / "pwned").exists()


def test_env_substitution_never_executes_anything(tmp_path, monkeypatch):
    """Flux's `-e`: ${ENV-NAME} becomes the variable's text, verbatim, whatever it holds; shell
    syntax around or inside a placeholder stays text; unknown placeholders stay as they are.
    (Substitution is textual, as in Flux: a value with quotes can change the YAML around it, so
    the traps here hold none.)"""
    traps = [t.format(tmp_path) for t in SHELL_TRAPS if '"' not in t]
    for i, trap in enumerate(traps):
        monkeypatch.setenv(f"CHAOS_TRAP_{i}", trap)
    args = [f"${{ENV-CHAOS_TRAP_{i}}}" for i in range(len(traps))]
    args += [
        f"$(touch {tmp_path}/outside)",
        f"${{ENV-$(touch {tmp_path}/inside)}}",
        "${ENV-CHAOS_NOT_SET_ANYWHERE}",
    ]
    (tmp_path / "spout.py").write_text("")
    lines = [
        "name: env",
        "spouts:",
        "  - id: s",
        f"    className: {FLUX_SPOUT}",
        "    constructorArgs:",
        "      -",
        "        - python",
        "        - spout.py",
        *[f"        - {json.dumps(a)}" for a in args],
        "      - [x]",
        "streams: []",
    ]
    path = tmp_path / "flux.yaml"
    path.write_text("\n".join(lines) + "\n")
    topology = load(path, env_filter=True)
    command = topology.component("s").command
    assert list(command[2 : 2 + len(traps)]) == traps
    assert command[-3] == f"$(touch {tmp_path}/outside)"
    assert command[-1] == "${ENV-CHAOS_NOT_SET_ANYWHERE}"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["flux.yaml", "spout.py"]


def test_pid_directory_is_owner_only_and_removed(tmp_path):
    ledger = LedgerSpec(tmp_path / "ledger", 20)
    b = TopologyBuilder("t", config={"host.shutdown.grace.secs": 0.5})
    b.spout(
        "s",
        SPOUTS["python"],
        outputs=["sentence"],
        config={"test.messages": ledger.n, "test.ledger": str(ledger.path)},
    )
    sup = Supervisor(b.build(base_dir=COMPONENTS))
    seen = {}

    def look(snap):
        if "mode" not in seen and snap["components"]["s"]["states"] == ["running"]:
            seen["mode"] = stat.S_IMODE(os.stat(sup.pid_dir).st_mode)
            seen["pids"] = [str(pid) for pid in sup.pids().values()]
            seen["files"] = [
                (n, stat.S_IMODE(os.stat(os.path.join(sup.pid_dir, n)).st_mode))
                for n in os.listdir(sup.pid_dir)
            ]
        if len(read_ledger(ledger.path)[0]) >= ledger.n:
            sup.request_stop("done")

    sup.report_every = 0.2
    sup.on_report = look
    assert sup.run(20) == 0
    assert seen["mode"] == 0o700
    # the spout's pid file, made by the client library inside the directory
    assert [name for name, _ in seen["files"]] == seen["pids"]
    assert not os.path.exists(sup.pid_dir)


def test_nothing_listens_on_a_network_port(tmp_path):
    """During a run, neither the host nor any process under it has an internet socket (TCP or
    UDP, listening or not): the host talks to its components over pipes only."""
    ledger = LedgerSpec(tmp_path / "ledger", 20_000)
    topology = write_topology(
        tmp_path / "t.yaml",
        "ports",
        spouts={"spout": spout_yaml("node", ledger)},
        bolts={
            "split": bolt_yaml("bash", {"spout": "shuffle"}),
            "sink": bolt_yaml("python", {"split": "shuffle"}, sink=True),
        },
    )
    h = HostProcess(topology, tmp_path)
    try:
        h.wait_for(lambda: len(read_ledger(ledger.path)[0]) >= 20, what="tuples flowing")
        sockets = {}
        for p in [h.ps, *h.descendants()]:
            try:
                conns = p.net_connections(kind="inet")
            except psutil.Error:
                continue
            if conns:
                sockets[(p.pid, p.name())] = conns
        assert not sockets, f"internet sockets: {sockets}"
    finally:
        assert h.finish() == 0, h.stderr[-2000:]
