"""Validation for a target (host/topology/targets.py): a topology is validated once, by its loader,
for the runtime that is to run it. On Spark every spout is transactional (docs/spark.md §4.6-4.8),
so batch bolts and committers may follow a plain spout; `host local` refuses that with a message
that says `host spark` runs the file as it is. Every other transactional rule applies to both."""

from __future__ import annotations

import copy
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml

from host.errors import TopologyError
from host.topology import TopologyBuilder, load
from host.topology.model import COMMITTER
from host.topology.targets import LOCAL, SPARK, TARGETS

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A topology directory with the scripts the documents below refer to."""
    for name in ("sentences.py", "split.py", "count.py", "store.py", "other.py"):
        (tmp_path / name).write_text("# dummy\n")
    return tmp_path


def spark_doc() -> dict:
    """A plain spout, a plain bolt, a batch bolt and a committer; no `transactional:`."""
    return {
        "name": "plain-committer",
        "spouts": {"sentences": {"command": ["python", "sentences.py"], "outputs": ["sentence"]}},
        "bolts": {
            "split": {
                "command": ["python", "split.py"],
                "outputs": ["word"],
                "inputs": {"sentences": "shuffle"},
            },
            "count": {
                "command": ["python", "count.py"],
                "outputs": ["word", "count"],
                "batch": "bolt",
                "inputs": {"split": {"fields": ["word"]}},
            },
            "store": {
                "command": ["python", "store.py"],
                "outputs": [],
                "batch": "committer",
                "inputs": {"count": "global"},
            },
        },
    }


def write(project: Path, document: object) -> Path:
    path = project / "topology.yaml"
    path.write_text(yaml.safe_dump(document, sort_keys=False))
    return path


def with_(mutate: Callable[[dict], object]) -> dict:
    d = copy.deepcopy(spark_doc())
    mutate(d)
    return d


def add_other_spout(d: dict, **body: object) -> None:
    d["spouts"]["other"] = {"command": ["python", "other.py"], "outputs": ["x"], **body}


# ---- accepted for Spark, refused for host local -------------------------------------------------


@pytest.mark.parametrize("transactional", [None, {"id": "counts"}], ids=["no id", "an id"])
def test_committer_after_a_plain_spout_loads_for_spark(project, transactional):
    d = spark_doc()
    if transactional is not None:
        d["transactional"] = transactional
    topology = load(write(project, d), target=SPARK)
    assert topology.component("store").batch == COMMITTER
    assert topology.component("count").batch == "bolt"
    # without an id the engine keys the state by the topology's name (docs/spark.md §3)
    assert topology.transactional_id == (transactional or {}).get("id")


@pytest.mark.parametrize("transactional", [None, {"id": "counts"}], ids=["no id", "an id"])
def test_host_local_refuses_it_naming_file_component_key_and_host_spark(project, transactional):
    d = spark_doc()
    if transactional is not None:
        d["transactional"] = transactional
    path = write(project, d)
    with pytest.raises(TopologyError) as info:
        load(path)  # host local's target is the default
    error = info.value
    assert (error.file, error.component, error.key) == (str(path), "count", "batch")
    assert str(error) == (
        f"{path}: component 'count': key 'batch': 'batch: bolt' needs a transactional batch "
        "spout under `host local` (a spout with 'batch: spout'), and no spout here has one; on "
        "Spark every spout is transactional (each micro-batch one transaction), so "
        f"`python -m host spark {path}` runs this topology as it is"
    )
    with pytest.raises(TopologyError) as explicit:
        load(path, target=LOCAL)
    assert str(explicit.value) == str(error)


def test_an_id_alone_with_a_plain_spout_loads_for_spark_only(project):
    d = with_(lambda d: [b.pop("batch") for b in (d["bolts"]["count"], d["bolts"]["store"])])
    d["transactional"] = {"id": "counts"}
    path = write(project, d)
    assert load(path, target=SPARK).transactional_id == "counts"
    with pytest.raises(TopologyError, match="needs exactly one spout with 'batch: spout'"):
        load(path)


# ---- every other rule, for both targets ----------------------------------------------------------


def tx(d: dict) -> None:
    """`sentences` the batch spout of a transactional topology: the same rules for both."""
    d["transactional"] = {"id": "t"}
    d["spouts"]["sentences"]["batch"] = "spout"


def cycle(d: dict) -> None:
    d["bolts"]["store"]["outputs"] = ["word"]
    d["bolts"]["count"]["inputs"]["store"] = "shuffle"


# (case id, document, component named, key named, words of the problem)
WITH_A_BATCH_SPOUT = [
    (
        "two batch spouts",
        with_(lambda d: (tx(d), add_other_spout(d, batch="spout"))),
        "other",
        "batch",
        "a second batch spout ('sentences' is the first)",
    ),
    (
        "a batch spout without an id",
        with_(lambda d: d["spouts"]["sentences"].update(batch="spout")),
        "sentences",
        "batch",
        "'batch: spout' needs a transactional topology: add 'transactional: {id: NAME}'",
    ),
    (
        "batch bolt not downstream of the batch spout",
        with_(
            lambda d: (
                tx(d),
                add_other_spout(d),
                d["bolts"]["split"].update(inputs={"other": "shuffle"}),
            )
        ),
        "count",
        "inputs",
        "a 'batch: bolt' bolt must be downstream of the batch spout 'sentences'",
    ),
    (
        "member fed from outside the group",
        with_(
            lambda d: (
                tx(d),
                add_other_spout(d),
                d["bolts"]["store"]["inputs"].update(other="shuffle"),
            )
        ),
        "store",
        "inputs.other",
        "is also fed by 'other', which is not",
    ),
    (
        "committer without inputs",
        with_(lambda d: (tx(d), d["bolts"]["store"].pop("inputs"))),
        "store",
        "inputs",
        "a committer must have inputs",
    ),
    (
        "committer speaking msgpack",
        with_(lambda d: (tx(d), d["bolts"]["store"].update(serializer="msgpack"))),
        "store",
        "serializer",
        "a 'batch: committer' component speaks JSON",
    ),
    (
        "cycle in the batch group",
        with_(lambda d: (tx(d), cycle(d))),
        "count",
        "inputs",
        "the batch group has a cycle: count -> store -> count",
    ),
]


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize(
    ("document", "component", "key", "words"),
    [case[1:] for case in WITH_A_BATCH_SPOUT],
    ids=[case[0] for case in WITH_A_BATCH_SPOUT],
)
def test_with_a_batch_spout_the_rules_are_the_same_for_both_targets(
    project, target, document, component, key, words
):
    path = write(project, document)
    with pytest.raises(TopologyError) as info:
        load(path, target=target)
    assert (info.value.file, info.value.component, info.value.key) == (str(path), component, key)
    assert words in info.value.problem


def unreachable(d: dict) -> None:
    """`split` and `count` feed each other and no spout reaches them."""
    d["bolts"]["split"]["inputs"] = {"count": "shuffle"}
    d["bolts"]["count"].pop("batch")


# Spark, no batch spout: the spouts open the batches, and the same rules apply to their group
WITHOUT_A_BATCH_SPOUT = [
    (
        "committer without inputs",
        with_(lambda d: d["bolts"]["store"].pop("inputs")),
        "store",
        "inputs",
        "a committer must have inputs",
    ),
    (
        "committer speaking msgpack",
        with_(lambda d: d["bolts"]["store"].update(serializer="msgpack")),
        "store",
        "serializer",
        "a 'batch: committer' component speaks JSON",
    ),
    (
        "cycle in the batch group",
        with_(cycle),
        "count",
        "inputs",
        "the batch group has a cycle: count -> store -> count",
    ),
    (
        "committer downstream of no spout",
        with_(unreachable),
        "store",
        "inputs",
        "a 'batch: committer' bolt must be downstream of the spout 'sentences'",
    ),
    (
        "committer downstream of no spout, two spouts",
        with_(lambda d: (unreachable(d), add_other_spout(d))),
        "store",
        "inputs",
        "must be downstream of one of the spouts sentences, other",
    ),
]


@pytest.mark.parametrize(
    ("document", "component", "key", "words"),
    [case[1:] for case in WITHOUT_A_BATCH_SPOUT],
    ids=[case[0] for case in WITHOUT_A_BATCH_SPOUT],
)
def test_on_spark_without_a_batch_spout_the_rules_still_hold(
    project, document, component, key, words
):
    path = write(project, document)
    with pytest.raises(TopologyError) as info:
        load(path, target=SPARK)
    assert (info.value.file, info.value.component, info.value.key) == (str(path), component, key)
    assert words in info.value.problem


# ---- the Python builder and Flux ----------------------------------------------------------------


def spark_builder() -> TopologyBuilder:
    b = TopologyBuilder("plain-committer")
    b.spout("sentences", ["python", "sentences.py"], ["sentence"])
    b.bolt("split", ["python", "split.py"], ["word"]).shuffle("sentences")
    b.bolt("store", ["python", "store.py"], batch="committer").global_("split")
    return b


def test_builder_validates_for_the_target_it_is_given(project):
    assert spark_builder().build(project, target=SPARK).component("store").batch == COMMITTER
    with pytest.raises(TopologyError) as info:
        spark_builder().build(project, source="topo.py")
    assert str(info.value).startswith(
        "topo.py: component 'store': key 'batch': 'batch: committer' needs a transactional "
        "batch spout under `host local`"
    )


@pytest.mark.parametrize("ends_with", ["topology = b\n", "topology = b.build()\n"])
def test_python_file_is_validated_for_the_target_it_is_loaded_for(project, ends_with):
    """`build()` called inside the file validates for the target the file is loaded for."""
    (project / "topo.py").write_text(
        "from host.topology import TopologyBuilder\n"
        "b = TopologyBuilder('plain-committer')\n"
        "b.spout('sentences', ['python', 'sentences.py'], ['sentence'])\n"
        "b.bolt('store', ['python', 'store.py'], batch='committer').global_('sentences')\n"
        + ends_with
    )
    assert load(project / "topo.py", target=SPARK).component("store").batch == COMMITTER
    with pytest.raises(TopologyError, match="needs a transactional batch spout under `host local`"):
        load(project / "topo.py")


def test_flux_has_no_batch_but_its_transactional_id_follows_the_target(project):
    """Flux cannot declare `batch:`; a transactional id in its config with a plain spout is a
    transactional topology on Spark only."""
    path = project / "flux.yaml"
    path.write_text(
        "name: t\n"
        "config: {topology.transactional.id: t}\n"
        "spouts:\n"
        "  - id: sentences\n"
        "    className: org.apache.storm.flux.wrappers.spouts.FluxShellSpout\n"
        "    constructorArgs: [[python, sentences.py], [sentence]]\n"
        "bolts:\n"
        "  - id: split\n"
        "    className: org.apache.storm.flux.wrappers.bolts.FluxShellBolt\n"
        "    constructorArgs: [[python, split.py]]\n"
        "streams:\n"
        "  - {from: sentences, to: split, grouping: {type: SHUFFLE}}\n"
    )
    assert load(path, target=SPARK).transactional_id == "t"
    with pytest.raises(TopologyError, match="needs exactly one spout with 'batch: spout'"):
        load(path)


# ---- the commands ------------------------------------------------------------------------------


def run_host(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "host", *args],
        cwd=cwd,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_validate_refuses_it_and_spark_explain_plans_it(project):
    path = write(project, spark_doc())
    refused = run_host("validate", str(path), cwd=project)
    assert refused.returncode == 2
    assert refused.stderr.startswith(
        f"error: {path}: component 'count': key 'batch': 'batch: bolt' needs a transactional "
        "batch spout under `host local`"
    )
    assert f"`python -m host spark {path}` runs this topology as it is" in refused.stderr
    explained = run_host("spark", str(path), "--explain", cwd=project)
    assert explained.returncode == 0, explained.stderr
    assert "stage 4: bolt store: committer\n" in explained.stdout
    assert "stage 1: spout sentences: driver-staged plain spout\n" in explained.stdout
