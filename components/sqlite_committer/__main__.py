"""`python -m components.sqlite_committer`: run the SQLite committer (see the package docstring)."""

from .committer import main

main()
