"""The model stack (torch, transformers, the tiny policy, scipy.stats) imported once in the
background when the server starts (``studio.py``), and a wait for it before a page first uses it.

``import torch`` and ``import transformers`` take about 7.5 s on a 2-core laptop; starting them
with the server means a page rarely waits. But transformers resolves its names lazily, and a
page thread that asks for ``transformers.AutoTokenizer`` while this thread is still importing
the same submodule can see it half-initialised ("cannot import name 'AutoTokenizer'"). So every
page code path that loads a model first calls :func:`wait`: it returns at once when the imports
are done, or when they were never started (AppTest, ``streamlit run app.py``).

The modules only some pages or a heavy job import (the Training runs page, the report, the
audit, the archive reader, Parquet, RE2: :data:`PAGE_MODULES`) are imported here too. Imported
lazily, during a first large upload say, their objects (a few MB, alive for the process's life)
land in the allocator's arenas among the upload's short-lived ones and keep those arenas
resident after the upload has gone: a probe of the server after the soak's first two rounds
found 51 more 1 MiB arenas than after a walk of every page, holding 6.4 MB of live objects.

Once imported, those modules' objects (several hundred thousand, most of them torch's and
transformers') are moved out of the garbage collector's sight with ``gc.freeze()``: they live
as long as the process, yet every full collection walked all of them, 260-340 ms each on a
2-core laptop, and a page's rerun allocates enough to trigger one on almost every click.
"""

from __future__ import annotations

import gc
import importlib
import threading

_thread: threading.Thread | None = None

#: imported at start besides the model stack: what only some pages, or a heavy job, import
PAGE_MODULES = ("ui.runs.review", "ui.runs.picker", "ui.runs.listing", "ui.runs.drilldown", "ui.runs.compare",
                "ui.runs.doctor", "ui.runs.upload", "ui.core.jobs", "crbc.report", "crbc.run_analysis.audit_job",
                "crbc.jobs.run_archive", "crbc.io.parquet_rollouts", "pyarrow.parquet", "re2")


def _imports() -> None:
    """Import what the pages' truths, live generation and statistics need; an error surfaces
    on the page that needs the module."""
    try:
        from crbc.jobs import upload as worker

        worker.warm()  # the uploads' worker processes fork from a server that has the readers loaded
    except Exception:  # noqa: BLE001 - the first upload starts it instead
        pass
    try:
        import scipy.stats  # noqa: F401
        import torch  # noqa: F401
        import transformers  # noqa: F401

        import crbc.policy.tiny  # noqa: F401
    except Exception:  # noqa: BLE001 - the page that needs the module reports the error itself
        pass
    for name in PAGE_MODULES:
        try:
            importlib.import_module(name)
        except Exception:  # noqa: BLE001 - an optional one missing (re2): the page says so itself
            pass
    freeze_heap()


def freeze_heap() -> None:
    """Collect once, then exempt every object alive now from later collections (``gc.freeze``:
    they are not freed or moved, only no longer traversed). Objects made afterwards, the pages'
    data and caches among them, are collected as usual."""
    gc.collect()
    gc.freeze()


def start() -> None:
    """Begin the imports in a daemon thread (once per process)."""
    global _thread
    if _thread is None:
        _thread = threading.Thread(target=_imports, name="crbc-warm-imports", daemon=True)
        _thread.start()


def wait(timeout: float | None = 120.0) -> None:
    """Block until the background imports have finished (at once if never started)."""
    t = _thread
    if t is not None and t.is_alive():
        t.join(timeout)
