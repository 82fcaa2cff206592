"""Work whose size a user controls, run in a worker process with time and memory limits.

:mod:`.upload` reads, keys and merges an upload (the importers of :mod:`crbc.io` and the merge
statistics of :mod:`crbc.process`, hence its own layer just above ``process``).
"""
