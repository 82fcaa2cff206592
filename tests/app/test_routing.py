"""The deep-link workaround (ui/core/routing.py) and the Streamlit internals it relies on.

If a test here fails after a Streamlit upgrade, the internal moved: update ui/core/routing.py
(see its docstring) rather than silencing the test.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

pytest.importorskip("streamlit")


def test_the_internals_are_where_routing_expects_them():
    from streamlit.runtime.pages_manager import PagesManager
    from streamlit.runtime.scriptrunner import get_script_run_ctx  # noqa: F401
    from streamlit.runtime.scriptrunner_utils.script_run_context import ScriptRunContext

    assert "uses_pages_directory" in vars(PagesManager), "PagesManager.uses_pages_directory moved"
    assert isinstance(vars(PagesManager)["main_script_hash"], property), "PagesManager.main_script_hash moved"
    assert "pages_manager" in {f.name for f in dataclasses.fields(ScriptRunContext)}, \
        "ScriptRunContext.pages_manager moved"
    assert isinstance(vars(ScriptRunContext)["page_script_hash"], property), \
        "ScriptRunContext.page_script_hash moved"


def test_the_module_imports_them_without_a_fallback():
    from ui.core import routing

    src = Path(routing.__file__).read_text()
    assert "except ImportError" not in src
    assert routing.running_main_script() is None  # no script is running here
    routing.ensure_navigation()  # and then it does nothing


def test_a_page_started_directly_gets_the_sidebar_of_app_py(app):
    """AppTest reruns a page file directly (legacy discovery): routing must send it through app.py."""
    from streamlit.runtime.pages_manager import PagesManager

    PagesManager.uses_pages_directory = None  # as in a fresh process with pages/ beside app.py
    at = app(run=False)
    at.run()
    at.switch_page("pages/credits.py").run()
    assert not at.exception, [e.message for e in at.exception]
    assert PagesManager.uses_pages_directory is False
    assert at.radio(key="source").value == "sample"  # the sidebar of app.py ran
    assert any("Step credits" in t.value for t in at.title)  # and the page itself
