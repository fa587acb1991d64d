"""Our Python client under `serializer: msgpack` (docs/protocol.md §11), with real processes.

Part 1 runs every client scenario of test_conformance.py over our conformance components
(tests/integration/components/conformance/), unchanged, with the scripted host speaking msgpack:
the components carry no flag, the client finds the serializer in the setup message.

Part 2 goes through the real host: a topology of our Python components under msgpack, with JSON
bolts mixed in, where a spout emits bytes that are not UTF-8: msgpack bolts get them as bytes,
JSON bolts as base64 text (as Storm's JSON serializer writes a Java byte[]).
"""

from __future__ import annotations

import base64
import inspect
import json
import sys
from pathlib import Path

import pytest

from host.runtime.supervisor import Supervisor
from host.topology import TopologyBuilder
from tests.integration import test_conformance as conformance
from tests.integration.test_conformance import CONFORMANCE, Client, _py, acked_ids, run_until

HERE = Path(__file__).resolve().parent
COMPONENTS = HERE / "components" / "msgpack"
sys.path.insert(0, str(COMPONENTS))
from bytes_spout import payload  # noqa: E402  (the spout's own function: no copy to drift)

sys.path.remove(str(COMPONENTS))

PYTHON_MSGPACK = Client(
    "python-msgpack",
    _py(CONFORMANCE / "bolt.py"),
    _py(CONFORMANCE / "spout.py"),
    serializer="msgpack",
    features=frozenset({"msgpack", "pipeline"}),
)

# ---- part 1: the conformance scenarios over msgpack ----------------------------------------------

bolt = conformance.bolt
spout = conformance.spout
_SCENARIOS = {
    name: fn
    for name, fn in vars(conformance).items()
    if name.startswith("test_") and "client" in inspect.signature(fn).parameters
}
assert len(_SCENARIOS) >= 17, sorted(_SCENARIOS)  # a rename there must not empty this run
globals().update(_SCENARIOS)


def pytest_generate_tests(metafunc):  # pragma: no cover - called by pytest for this module
    if "client" in metafunc.fixturenames:
        metafunc.parametrize("client", [PYTHON_MSGPACK], ids=[PYTHON_MSGPACK.name])


# ---- part 2: bytes through the host ---------------------------------------------------------------


def records(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def test_bytes_cross_msgpack_components_as_bytes_and_reach_json_ones_as_base64(tmp_path):
    n = 40
    b = TopologyBuilder(
        "bytes", config={"host.shutdown.grace.secs": 2, "topology.max.spout.pending": 10}
    )
    bolt_cmd = ["python", str(COMPONENTS / "bytes_bolt.py")]
    b.spout(
        "spout",
        ["python", str(COMPONENTS / "bytes_spout.py")],
        outputs=["n", "data"],
        serializer="msgpack",
        config={"test.messages": n, "test.ledger": str(tmp_path / "ledger")},
    )
    b.bolt(
        "relay",
        [*bolt_cmd, str(tmp_path / "relay"), "relay"],
        outputs=["n", "data"],
        serializer="msgpack",
        parallelism=2,
    ).shuffle("spout")
    b.bolt(
        "json_relay", [*bolt_cmd, str(tmp_path / "json_relay"), "relay"], outputs=["n", "data"]
    ).shuffle("spout")
    b.bolt(
        "sink_msgpack",
        [*bolt_cmd, str(tmp_path / "sink_msgpack")],
        outputs=[],
        serializer="msgpack",
    ).shuffle("relay")
    b.bolt("sink_json", [*bolt_cmd, str(tmp_path / "sink_json")], outputs=[]).fields(
        "relay", "data"
    )
    # a JSON bolt's base64 text stays text on the way to a msgpack bolt
    b.bolt(
        "sink_after_json",
        [*bolt_cmd, str(tmp_path / "sink_after_json")],
        outputs=[],
        serializer="msgpack",
    ).shuffle("json_relay")
    sup = Supervisor(b.build(base_dir=tmp_path))
    assert run_until(sup, lambda s: s["topology"]["spout_tuples_acked"] >= n) == 0

    assert sorted(acked_ids(tmp_path / "ledger"), key=int) == [str(i) for i in range(n)]
    as_bytes = sorted([["int", i], ["bytes", b64(payload(i))]] for i in range(n))
    as_text = sorted([["int", i], ["str", b64(payload(i))]] for i in range(n))
    for name, serializer, expected in [
        ("relay", "msgpack", as_bytes),
        ("sink_msgpack", "msgpack", as_bytes),
        ("sink_json", "json", as_text),
        ("json_relay", "json", as_text),
        ("sink_after_json", "msgpack", as_text),
    ]:
        got = records(tmp_path / name)
        assert {r["serializer"] for r in got} == {serializer}, name
        assert sorted(r["values"] for r in got) == expected, name
    comps = sup.snapshot()["components"]
    assert all(c["restarts"] == 0 and c["errors"] == 0 for c in comps.values()), comps


@pytest.mark.parametrize("serializer", ["json", "msgpack"])
def test_a_component_says_which_serializer_the_host_speaks(tmp_path, serializer):
    b = TopologyBuilder("which", config={"host.shutdown.grace.secs": 2})
    b.spout(
        "spout",
        ["python", str(COMPONENTS / "bytes_spout.py")],
        outputs=["n", "data"],
        serializer=serializer,
        config={"test.messages": 1, "test.ledger": str(tmp_path / "ledger")},
    )
    b.bolt(
        "sink", ["python", str(COMPONENTS / "bytes_bolt.py"), str(tmp_path / "sink")], outputs=[]
    ).shuffle("spout")
    sup = Supervisor(b.build(base_dir=tmp_path))
    assert run_until(sup, lambda s: s["topology"]["spout_tuples_acked"] >= 1) == 0
    assert (tmp_path / "ledger").read_text().splitlines()[0] == f"serializer {serializer}"
    # the JSON sink got base64 text from either: a JSON spout's client writes bytes as base64 too
    assert records(tmp_path / "sink")[0]["values"] == [["int", 0], ["str", b64(payload(0))]]
