"""`python -m components.parquet_committer`: run the Parquet committer (see the package
docstring)."""

from .committer import main

main()
