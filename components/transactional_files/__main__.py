"""`python -m components.transactional_files`: run the file spout (see the package docstring)."""

from .spout import main

main()
