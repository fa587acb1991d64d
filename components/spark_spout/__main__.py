"""`python -m components.spark_spout`: run the Spark spout (see the package docstring)."""

from .spout import main

main()
