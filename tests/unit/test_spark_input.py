"""host/spark/spark_input.py: the Spark spout's settings as the engine reads them, and how its
input is cut into micro-batches (pure: no Spark)."""

from __future__ import annotations

from pathlib import Path

import pytest

from host.errors import TopologyError
from host.spark.spark_input import (
    StreamingRelation,
    dataframe_batch,
    input_spec,
    next_directory,
    next_files,
    not_replayable,
    warnings,
)
from host.topology.model import BOLT, SPOUT, Component, Input, Topology
from host.topology.model import Grouping as G


def topology(spout_config: dict, *, parallelism: int = 1, outputs: dict | None = None) -> Topology:
    spout = Component(
        "rows",
        SPOUT,
        ("python", "-m", "components.spark_spout"),
        outputs=outputs or {"default": ("id", "text")},
        parallelism=parallelism,
        config=spout_config,
        cwd="/topo",
    )
    bolt = Component(
        "sink",
        BOLT,
        ("python", "sink.py"),
        inputs=(Input("rows", "default", G("shuffle")),),
        cwd="/topo",
    )
    return Topology("t", (spout, bolt), source="t.yaml")


def test_micro_batches_of_files_stay_within_the_row_limit_with_at_least_one_file() -> None:
    rows = [200, 200, 200, 200, 200]
    assert next_files(rows, 0, 450) == 2
    assert next_files(rows, 2, 450) == 4
    assert next_files(rows, 4, 450) == 5
    assert next_files([900, 10], 0, 450) == 1  # a file larger than the limit is one batch
    assert next_files([0, 0, 5], 0, 4) == 2
    assert next_files(rows, 5, 450) == 5  # nothing left


def test_dataframe_batches_follow_each_other_then_stop() -> None:
    manifest = {"files": [{"name": f"part-{i}", "rows": 200} for i in range(5)]}
    first = dataframe_batch(manifest, "/s", None, 450)
    assert first == {
        "input": "dataframe",
        "staging": "/s",
        "files": ["/s/part-0", "/s/part-1"],
        "rows": 400,
        "end": 2,
    }
    second = dataframe_batch(manifest, "/s", first, 450)
    assert second["files"] == ["/s/part-2", "/s/part-3"]
    third = dataframe_batch(manifest, "/s", second, 450)
    assert third["files"] == ["/s/part-4"] and third["rows"] == 200
    assert dataframe_batch(manifest, "/s", third, 450) is None


def test_directories_are_read_in_the_spouts_name_order_each_waiting_for_the_one_before() -> None:
    names = ["b", "a", "c"]
    done = {"a": True, "b": False, "c": True}
    assert next_directory(names, done, None) == "a"
    assert next_directory(names, done, "a") is None  # b is not complete: c waits for it
    assert next_directory(names, {**done, "b": True}, "a") == "b"
    assert next_directory(names, done, "c") is None  # nothing after the last one
    assert next_directory(names, done, "0") == "a"  # names before the last one are done
    # numbered parts compare as numbers, as the spout's checkpoint orders them
    assert next_directory(["part-10", "part-9"], {"part-9": True}, None) == "part-9"


def test_the_spouts_settings_are_read_as_the_spout_reads_them() -> None:
    spec = input_spec(
        topology(
            {
                "spark.spout.source": "directory",
                "spark.spout.path": "outputs",
                "spark.spout.checkpoint.dir": "state",
            }
        ),
        "rows",
    )
    assert spec.source == "directory"
    assert spec.cfg.fields == ("id", "text")
    # relative paths are the spout's working directory's, not the driver's
    assert spec.cfg.path == "/topo/outputs"
    assert spec.cfg.checkpoint_dir == "/topo/state"
    assert spec.cwd == "/topo" and spec.task == 2


@pytest.mark.parametrize(
    ("config", "parallelism", "message"),
    [
        ({"spark.spout.source": "dataframe"}, 1, "exactly one of spark.spout.job"),
        ({"spark.spout.source": "nope"}, 1, "spark.spout.source must be one of"),
        ({"spark.spout.job": "j:f", "spark.spout.typo": 1}, 1, "unknown setting"),
        ({"spark.spout.job": "j:f"}, 2, "runs as one task"),
    ],
)
def test_what_the_spout_refuses_is_refused_naming_the_file_and_component(
    config: dict, parallelism: int, message: str
) -> None:
    conf = {"spark.spout.checkpoint.dir": "state", **config}
    with pytest.raises(TopologyError, match=message) as info:
        input_spec(topology(conf, parallelism=parallelism), "rows")
    assert info.value.file == "t.yaml" and info.value.component == "rows"


def test_settings_without_effect_on_spark_are_warned_about() -> None:
    t = topology(
        {"spark.spout.job": "j:f", "spark.spout.retries": 5, "spark.spout.checkpoint.dir": "s"},
        outputs={"default": ("id", "text"), "dead": ("key", "reason")},
    )
    text = " ".join(warnings(t, "rows"))
    assert "spark.spout.retries: no effect on Spark" in text
    assert "the `dead` stream gets nothing on Spark" in text
    assert warnings(topology({"spark.spout.job": "j:f"}), "rows") == ()


def test_a_streaming_input_is_warned_that_its_source_is_checked_when_the_engine_starts() -> None:
    conf = {"spark.spout.source": "streaming", "spark.spout.job": "j:f"}
    assert any("refused then" in w for w in warnings(topology(conf), "rows"))


# the relations as Spark 4.3's analyzed plans name them (tests/integration/
# test_spark_input_source.py finds the socket's in a real plan)
SPARK_SOURCES = "org.apache.spark.sql.execution.streaming.sources."
SOCKET = StreamingRelation("socket", SPARK_SOURCES + "TextSocketSourceProvider")
REPLAYABLE = (
    StreamingRelation(
        "FileSource[in]", "org.apache.spark.sql.execution.datasources.json.JsonFileFormat"
    ),
    StreamingRelation("rate", SPARK_SOURCES + "RateStreamProvider"),
    StreamingRelation("rate-micro-batch", SPARK_SOURCES + "RatePerMicroBatchProvider"),
    StreamingRelation("kafka", "org.apache.spark.sql.kafka010.KafkaSourceProvider"),
)
UNKNOWN = StreamingRelation(
    "mine", "org.apache.spark.sql.execution.datasources.v2.python.PythonDataSourceV2"
)


def test_only_a_source_spark_cannot_replay_is_refused() -> None:
    assert not_replayable([*REPLAYABLE, UNKNOWN]) == []
    refused = not_replayable([REPLAYABLE[0], SOCKET, UNKNOWN])
    assert [r for r, _ in refused] == [SOCKET]
    assert "not fault-tolerant" in refused[0][1]
    # named by its full class name in format(): the same provider, the same refusal
    by_class = StreamingRelation(SOCKET.provider, SOCKET.provider)
    assert [r for r, _ in not_replayable([by_class])] == [by_class]


def test_the_module_needs_no_spark() -> None:
    source = Path(__file__).resolve().parents[2] / "host" / "spark" / "spark_input.py"
    assert "pyspark" not in source.read_text().split('"""', 2)[2]
