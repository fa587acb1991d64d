"""PySpark jobs for the Spark spout tests, named in `spark.spout.job` as `jobs:<function>`.

Each takes the SparkSession and the component conf (the spout passes both to a two-argument
function), so a test sets its sizes and paths through the topology config (`test.*`).
"""

from __future__ import annotations

POISON = "poison"


def numbers(spark, conf):
    """`test.rows` rows (id, text) in id order, in `test.partitions` partitions (= staged files;
    `spark.range` slices in order, so no sort or shuffle is needed); row `test.poison.id` has
    the text "poison"."""
    n = int(conf["test.rows"])
    poison = int(conf.get("test.poison.id", -1))
    return spark.range(0, n, 1, int(conf.get("test.partitions", 3))).selectExpr(
        "id", f"CASE WHEN id = {poison} THEN '{POISON}' ELSE concat('row ', id) END AS text"
    )


def stream(spark, conf):
    """The JSON-lines files in `test.input`, one file per micro-batch."""
    return (
        spark.readStream.schema("id LONG, text STRING")
        .option("maxFilesPerTrigger", 1)
        .json(conf["test.input"])
    )
