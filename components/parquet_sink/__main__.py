"""`python -m components.parquet_sink`: run the Parquet sink bolt (see the package docstring)."""

from .sink import main

main()
