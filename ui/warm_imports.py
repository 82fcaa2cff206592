"""The model stack (torch, transformers, the tiny policy, scipy.stats) imported once in the
background when the server starts (``studio.py``), and a wait for it before a page first uses it.

``import torch`` and ``import transformers`` take about 7.5 s on a 2-core laptop; starting them
with the server means a page rarely waits. But transformers resolves its names lazily, and a
page thread that asks for ``transformers.AutoTokenizer`` while this thread is still importing
the same submodule can see it half-initialised ("cannot import name 'AutoTokenizer'"). So every
page code path that loads a model first calls :func:`wait`: it returns at once when the imports
are done, or when they were never started (AppTest, ``streamlit run app.py``).
"""

from __future__ import annotations

import threading

_thread: threading.Thread | None = None


def _imports() -> None:
    """Import what the pages' truths, live generation and statistics need; an error surfaces
    on the page that needs the module."""
    try:
        import scipy.stats  # noqa: F401
        import torch  # noqa: F401
        import transformers  # noqa: F401

        import crbc.policy.tiny  # noqa: F401
    except Exception:  # noqa: BLE001 - the page that needs the module reports the error itself
        pass


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
