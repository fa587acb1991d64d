"""The Spark side of the example: the text file as a DataFrame of clean, numbered lines.

Named in topology.yaml as `spark.spout.job: job:lines`; the Spark spout calls it with the
SparkSession and the component's config, stages the result once and emits one tuple per row.
"""

from __future__ import annotations

import os

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F


def lines(spark: SparkSession, conf: dict) -> DataFrame:
    """[line_no, line]: the lines of `wordcount.text`, lower-cased, punctuation turned into
    spaces, blank lines dropped, in file order."""
    path = conf.get("wordcount.text", "text.txt")
    if "://" not in path:
        path = os.path.abspath(path)  # relative to the topology's directory
    raw = spark.read.text(path).withColumn("line_no", F.monotonically_increasing_id())
    words_only = F.regexp_replace(F.lower(F.col("value")), r"[^a-z']+", " ")
    clean = F.trim(F.regexp_replace(words_only, r"(^| )'+|'+( |$)", " "))
    # no sort needed: the ids follow the partitions, which follow the file, and the spout's
    # staging keeps partition order
    return raw.select("line_no", clean.alias("line")).where(F.length("line") > 0)
