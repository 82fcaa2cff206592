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
if they move, importing this module (so the app) fails loudly, and ``tests/test_routing.py``
says which one moved. Nothing here swallows an ImportError.
"""

from __future__ import annotations

import streamlit as st
from streamlit.runtime.pages_manager import PagesManager
from streamlit.runtime.scriptrunner import get_script_run_ctx

__all__ = ["ensure_navigation", "running_main_script"]


def running_main_script() -> bool | None:
    """True when ``app.py`` itself is the running script, False when a page file runs directly,
    None outside a script run (plain Python, tests)."""
    ctx = get_script_run_ctx()
    if ctx is None:
        return None
    return ctx.page_script_hash == ctx.pages_manager.main_script_hash


def ensure_navigation() -> None:
    """If a page file runs without ``app.py`` under legacy discovery, turn that off and rerun.

    Called when :mod:`pages.common` is imported and at the start of every page
    (:func:`pages.common.page_context`); a no-op when ``app.py`` is running."""
    if running_main_script() is not False:
        return  # app.py itself is running (it calls st.navigation), or no script at all
    if PagesManager.uses_pages_directory:
        PagesManager.uses_pages_directory = False
        st.rerun()
