"""Deep links into ``pages/``: make sure a page never runs without ``app.py`` (and its sidebar).

Why this exists. A ``pages/`` folder next to the entry script switches on Streamlit's legacy
multipage discovery (``PagesManager.uses_pages_directory``, set once per process when the first
``PagesManager`` is built). Until some script has called ``st.navigation``, Streamlit then runs a
page file directly, bypassing ``app.py``: on a deep link (e.g. ``/graph``) as the first request
after the server starts, and on every AppTest rerun. When that happens, :func:`ensure_navigation`
switches the legacy mode off and reruns, so ``app.py`` runs and routes the page through
``st.navigation``. The product brief fixes the folder name ``pages/``, so the workaround stays.

It touches Streamlit internals (checked against 1.67): ``streamlit.runtime.pages_manager.
PagesManager.uses_pages_directory`` (class attribute), ``ScriptRunContext.page_script_hash`` and
``ScriptRunContext.pages_manager.main_script_hash``. They are imported at module level on purpose:
if they move, importing this module (so the app) fails loudly, and ``tests/app/test_routing.py``
says which one moved. Nothing here swallows an ImportError.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator

import streamlit as st
from streamlit.runtime.pages_manager import PagesManager
from streamlit.runtime.scriptrunner import get_script_run_ctx

__all__ = ["app_is_running", "app_running", "ensure_navigation", "running_main_script"]

# set while app.py's main() runs, per script thread (each session runs its script in its own
# thread): under st.navigation the run context names the requested page, not app.py, so the
# context alone cannot tell a routed page from a page file run directly
_APP = threading.local()


@contextlib.contextmanager
def app_running() -> Iterator[None]:
    """Wrap app.py's run: pages started inside it are routed by st.navigation."""
    _APP.on = True
    try:
        yield
    finally:
        _APP.on = False


def app_is_running() -> bool:
    """True while ``app.py``'s run is on this thread (so containers it made in this run exist)."""
    return bool(getattr(_APP, "on", False))


def running_main_script() -> bool | None:
    """True when ``app.py`` itself is the running script, False when a page file runs directly,
    None outside a script run (plain Python, tests)."""
    ctx = get_script_run_ctx()
    if ctx is None:
        return None
    return ctx.page_script_hash == ctx.pages_manager.main_script_hash


def ensure_navigation() -> None:
    """If a page file runs without ``app.py`` under legacy discovery, turn that off and rerun.

    Called at the start of every page (:func:`pages.state.page_context`), never while a module
    is being imported (a rerun raised inside an import leaves a half-initialised module behind,
    and a concurrent session then fails with "cannot import name 'common'"); a no-op when
    ``app.py`` is running. The rerun happens even when another session has already switched the
    legacy mode off: with a class opening deep links at once, this session's run may have
    started before that switch (found by benchmarks/bench_classroom.py). A session-state
    counter stops a rerun loop should Streamlit keep running the page directly."""
    if getattr(_APP, "on", False) or running_main_script() is not False:
        st.session_state.pop("_crbc_route_reruns", None)
        return  # app.py is running (it routes through st.navigation), or no script at all
    PagesManager.uses_pages_directory = False
    n = int(st.session_state.get("_crbc_route_reruns", 0))
    if n < 3:
        st.session_state["_crbc_route_reruns"] = n + 1
        st.rerun()
