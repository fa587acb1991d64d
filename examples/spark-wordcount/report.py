"""The last step: read the topology's Parquet output back with Spark and print the top words.

    python report.py [OUTPUT_DIR] [N]     (defaults: .run/counts, 15)

The count bolt emits a running count per word and the sink writes every one of them, so a word's
count is the largest value written for it.
"""

from __future__ import annotations

import sys

from pyspark.sql import functions as F

from components.spark_spout.session import start_session


def main(path: str = ".run/counts", n: int = 15) -> None:
    spark = start_session(
        {"spark.master": "local[2]", "spark.ui.enabled": "false"}, "spark-wordcount-report"
    )
    counts = spark.read.parquet(path).groupBy("word").agg(F.max("count").alias("count"))
    top = counts.orderBy(F.desc("count"), "word").limit(n).collect()
    total = counts.agg(F.sum("count")).first()[0]
    print(f"{counts.count()} distinct words, {total} in all; the top {len(top)}:")
    for row in top:
        print(f"  {row['count']:5d}  {row['word']}")
    spark.stop()


if __name__ == "__main__":
    main(*(sys.argv[1:2] or [".run/counts"]), *(int(a) for a in sys.argv[2:3]))
