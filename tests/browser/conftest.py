"""The browser tests' fixtures: one headless Chromium per module (Debian's /usr/bin/chromium
through Playwright), one studio server per module (devtools.apprunner: 127.0.0.1, a free port,
ready once /_stcore/health answers), and a guarded page.

Every test here carries the ``browser`` marker (tests/conftest.py refuses one that does not), and
waits with Playwright: ``expect(...)``, ``wait_for_selector``, ``wait_for_function`` or
devtools.apprunner.wait_ready, never a fixed sleep. Without Chromium or playwright the tests
skip, except under CI=true, where they fail."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

import pytest

from devtools.apprunner import CHROMIUM, LOCAL_PREFIXES

#: what a page waits for by default: a first script run can load the model on 2 loaded cores
TIMEOUT_MS = 90_000


def require_chromium() -> None:
    """Skip (or, under CI=true, fail) when the browser or playwright is missing."""
    if not Path(CHROMIUM).exists():
        msg = f"{CHROMIUM} not found: install it with `apt-get install -y chromium` to run browser tests"
        if os.environ.get("CI") == "true":
            pytest.fail(f"CI=true: {msg}", pytrace=False)
        pytest.skip(msg)
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        if os.environ.get("CI") == "true":
            pytest.fail("CI=true: the playwright package is missing", pytrace=False)
        pytest.skip("the playwright package is missing (pip install -r requirements-dev.txt)")


@pytest.fixture(scope="module")
def browser():
    """One headless Chromium per test module (devtools.apprunner.launch: local only)."""
    require_chromium()
    from playwright.sync_api import sync_playwright

    from devtools.apprunner import launch

    with sync_playwright() as pw:
        b = launch(pw)
        yield b
        b.close()


@pytest.fixture(scope="module")
def studio_env() -> dict[str, str]:
    """Extra environment of the module's studio server; a module overrides this fixture to
    point the server at its own files (``CRBC_RUNS_DIRS``, ...)."""
    return {}


def _serve(artifacts_dir: Path, name: str, env: dict[str, str]):
    require_chromium()
    from devtools.apprunner import running_app

    return running_app(log_path=artifacts_dir / f"browser-{name}.log", extra_env=env)


@pytest.fixture(scope="module")
def app_url(request, artifacts_dir, studio_env):
    """The base URL of one studio server for the whole module; its log goes to
    ``test-artifacts/browser-<module>.log``."""
    with _serve(artifacts_dir, request.module.__name__.rsplit(".", 1)[-1], studio_env) as base:
        yield base


@pytest.fixture
def fresh_app_url(request, artifacts_dir, studio_env):
    """A studio server of the test's own, for tests that must not share one (a server that has
    served several heavy sessions can slow down; see tests/browser/test_explorables.py)."""
    with _serve(artifacts_dir, request.node.name[:60], studio_env) as base:
        yield base


@contextlib.contextmanager
def guarded(browser, **context):
    """A fresh context's page (1400 x 1000, 90 s default timeout) that fails its test on any
    request or websocket off the machine or any JavaScript error."""
    ctx = browser.new_context(viewport={"width": 1400, "height": 1000}, **context)
    outside: list[str] = []
    errors: list[str] = []
    ctx.on("request", lambda r: None if r.url.startswith(LOCAL_PREFIXES) else outside.append(r.url))
    pg = ctx.new_page()
    pg.set_default_timeout(TIMEOUT_MS)
    pg.on("websocket", lambda ws: None if ws.url.startswith(LOCAL_PREFIXES) else outside.append(ws.url))
    pg.on("pageerror", lambda e: errors.append(str(e)))
    yield pg
    ctx.close()
    assert not outside, f"requests left the machine: {sorted(set(outside))}"
    assert not errors, f"javascript errors: {errors}"


@pytest.fixture
def page(browser):
    """The test's page, guarded (see :func:`guarded`), downloads accepted."""
    with guarded(browser, accept_downloads=True) as pg:
        yield pg


@pytest.fixture
def second_page(browser):
    """Another browser, as a colleague's who opens a shared link: its own context, guarded too."""
    with guarded(browser) as pg:
        yield pg
