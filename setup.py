"""Only the optional C extension lives here; everything else is in pyproject.toml.

multilang._speedups speeds up the host's message decoding and the values' JSON of a Python
component's emits. `optional=True`: where it cannot be compiled (no C compiler or Python headers),
the install goes on and the host uses the pure Python version of the same code
(multilang/component_decoding.py and multilang/codec.py), which behaves the same.
"""

from setuptools import Extension, setup

SOURCES = ["multilang/_speedups.c", "multilang/_json_values.c"]
setup(ext_modules=[Extension("multilang._speedups", SOURCES, optional=True)])
