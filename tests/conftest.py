"""Shared fixtures. Browser tests (marker ``browser``) need Debian's /usr/bin/chromium: without it
they are skipped with a clear message, except under CI=true where a missing browser fails."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.support.paths import ROOT

ARTIFACTS = ROOT / "test-artifacts"
CHROMIUM = "/usr/bin/chromium"


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


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """Under CI=true nothing skips: a skipped test (a missing package, browser or model) fails
    with its reason, so a green CI run means every test ran."""
    outcome = yield
    report = outcome.get_result()
    if os.environ.get("CI") == "true" and report.skipped and not hasattr(report, "wasxfail"):
        reason = report.longrepr[-1] if isinstance(report.longrepr, tuple) else str(report.longrepr)
        report.outcome = "failed"
        report.longrepr = f"CI=true: this test would have been skipped: {reason}"


@pytest.fixture(scope="session")
def artifacts_dir() -> Path:
    ARTIFACTS.mkdir(exist_ok=True)
    return ARTIFACTS


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


@pytest.fixture(scope="session")
def make_tiny_model(tmp_path_factory):
    """Factory of random tiny policies (``crbc.tiny-policy/1`` folders: safetensors weights and
    the tokenizer), one folder per shape and seed, built once per test session:
    ``make_tiny_model(seed=0, layers=1, heads=2, hidden=32, intermediate=64) -> Path``."""
    made: dict[tuple, Path] = {}

    def make(seed: int = 0, layers: int = 1, heads: int = 2, hidden: int = 32, intermediate: int = 64) -> Path:
        key = (seed, layers, heads, hidden, intermediate)
        if key not in made:
            from crbc.policy.tiny import TinyModelConfig, build_model, build_tokenizer, save_tiny

            out = tmp_path_factory.mktemp("tiny") / "tiny-random"
            tok = build_tokenizer()
            cfg = TinyModelConfig(hidden_size=hidden, intermediate_size=intermediate, num_layers=layers,
                                  num_heads=heads)
            save_tiny(build_model(tok, cfg, seed=seed), tok, out, cfg)
            made[key] = out
        return made[key]

    return make


@pytest.fixture
def guarded_page(browser):
    """A 1400 x 1000 page that fails its test on any request off the machine or any JavaScript
    error (90 s default timeout). A browser test module returns it from its own ``page`` fixture."""
    from devtools.apprunner import LOCAL_PREFIXES

    ctx = browser.new_context(viewport={"width": 1400, "height": 1000})
    outside: list[str] = []
    errors: list[str] = []
    ctx.on("request", lambda r: None if r.url.startswith(LOCAL_PREFIXES) else outside.append(r.url))
    pg = ctx.new_page()
    pg.set_default_timeout(90_000)
    pg.on("pageerror", lambda e: errors.append(str(e)))
    yield pg
    ctx.close()
    assert not outside, f"requests left the machine: {outside}"
    assert not errors, f"javascript errors: {errors}"


@pytest.fixture
def toy():
    """tests/support/toy_estimator.py's estimator, registered for one test (the registry's own
    tests, and the accuracy experiment's: a new estimator is scored without code changes)."""
    from crbc.estimators import registry as estimators
    from tests.support.toy_estimator import TOY, registered_toy

    with registered_toy():
        yield estimators.get(TOY)


@pytest.fixture
def app(monkeypatch):
    """The studio in AppTest (tests/support/apptest.py: one entry script, one timeout):
    ``app(page=None, *, samples=None, run=True, **query) -> AppTest``. ``samples`` points the
    sidebar's sample list at a folder of the test's own files."""
    pytest.importorskip("streamlit")
    from tests.support.apptest import open_app

    def make(page: str | None = None, *, samples=None, run: bool = True, **query: str):
        if samples is not None:
            from ui import state

            monkeypatch.setattr(state, "SAMPLES_DIR", samples)
        return open_app(page, run=run, **query)

    return make
