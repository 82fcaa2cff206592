"""The studio in Streamlit's AppTest, opened the way the app tests share: URL parameters, one
run, an optional page, and no exception."""

from __future__ import annotations

from streamlit.testing.v1 import AppTest

from tests.support.paths import APP


def open_app(page: str | None = None, timeout: int = 120, **query: str) -> AppTest:
    """``app.py`` run once with ``query`` as its URL parameters, then switched to ``page`` (a
    ``pages/`` path) when given; fails the test if the script raised anything."""
    at = AppTest.from_file(APP, default_timeout=timeout)
    for k, v in query.items():
        at.query_params[k] = v
    at.run()
    if page:
        at.switch_page(page).run()
    assert not at.exception, [e.message for e in at.exception]
    return at
