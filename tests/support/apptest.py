"""The studio in Streamlit's AppTest, opened the way every app test opens it: one entry script,
one timeout, URL parameters, an optional page, and no exception. Tests get it through
conftest's ``app`` fixture."""

from __future__ import annotations

import contextlib

from streamlit.testing.v1 import AppTest

from tests.support.paths import APP

#: seconds one script run may take (the slowest page, Estimator accuracy with its exact truth,
#: on a loaded 2-core machine); a passing test never waits for it
TIMEOUT = 180


def open_app(page: str | None = None, *, run: bool = True, run_folder=None, **query: str) -> AppTest:
    """``app.py`` with ``query`` as its URL parameters; with ``run``, run once, then switched to
    ``page`` (a ``pages/`` path) when given, failing the test if the script raised anything.
    Without ``run`` the AppTest is returned unrun, for a test that times or orders the runs.
    ``run_folder``: open that run folder as the sidebar's source (URL ``source=run&run=PATH``;
    the URL's ``run`` is not this function's own keyword)."""
    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    if run_folder is not None:
        query = {"source": "run", "run": str(run_folder.resolve()), **query}
    for k, v in query.items():
        at.query_params[k] = v
    if not run:
        return at
    at.run()
    if page:
        at.switch_page(page).run()
    assert not at.exception, [e.message for e in at.exception]
    return at


def chosen_group(at: AppTest):
    """The rollout group the sidebar has chosen (the only one, or the group picker's)."""
    src = at.session_state["_crbc_source"]
    gid = at.selectbox(key="group").value if len(src.groups) > 1 else src.groups[0].group
    return next(g for g in src.groups if g.group == gid)


@contextlib.contextmanager
def distinct_session_ids():
    """Every AppTest its own session id for Streamlit's session-scoped caches while inside.

    AppTest runs every script with the one id ``"test session id"``
    (streamlit/testing/v1/local_script_runner.py:72), so two AppTests would share a
    ``scope="session"`` cache that two browser sessions never share; the id is made of it and the
    run's own ``SessionState`` object (inside the run's SafeSessionState), one per AppTest."""
    from streamlit.runtime.caching import cache_resource_api
    from streamlit.runtime.scriptrunner_utils.script_run_context import get_script_run_ctx

    def session_id() -> str:
        ctx = get_script_run_ctx()
        return f"{ctx.session_id}#{id(ctx.session_state._state)}"

    saved = cache_resource_api.get_session_id_or_throw
    cache_resource_api.get_session_id_or_throw = session_id
    try:
        yield
    finally:
        cache_resource_api.get_session_id_or_throw = saved
