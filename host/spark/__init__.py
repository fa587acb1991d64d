"""Running a topology on Spark (docs/spark.md): planning it into stages, and driving its components
inside executors."""
