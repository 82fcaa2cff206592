"""Only the optional C extension; the metadata is in pyproject.toml.

crbc.io.blockmatch (crbc/io/blockmatch.c) is the compiled twin of crbc.io.similarity's block
search. ``optional=True``: without a C compiler the build goes on without it and the library
uses its pure-Python path (the same answers, slower).
"""

from setuptools import Extension, setup

setup(ext_modules=[Extension("crbc.io.blockmatch", ["crbc/io/blockmatch.c"], optional=True)])
