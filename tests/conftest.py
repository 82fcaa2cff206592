"""Fixtures every layer's tests share (the studio in AppTest, tiny models, the toy estimator), the
CI rule that nothing skips, and the marker rule: every test under tests/browser carries the
``browser`` marker and no test elsewhere opens a browser, so ``-m "not browser"`` (make test-fast)
runs no browser. The browser's own fixtures are in tests/browser/conftest.py."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.support.markers import misplaced_browser_tests
from tests.support.paths import ROOT

ARTIFACTS = ROOT / "test-artifacts"


def pytest_collection_modifyitems(config, items):
    """Refuse the run when a test breaks the marker rule (the module docstring): otherwise
    ``make test-fast`` would quietly start Chromium, or a browser test would hide elsewhere."""
    bad = misplaced_browser_tests(items)
    if bad:
        raise pytest.UsageError("the browser marker rule is broken:\n  " + "\n  ".join(bad))


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
def toy():
    """tests/support/toy_estimator.py's estimator, registered for one test (the registry's own
    tests, and the accuracy experiment's: a new estimator is scored without code changes)."""
    from crbc.estimators import registry as estimators
    from tests.support.toy_estimator import TOY, registered_toy

    with registered_toy():
        yield estimators.get(TOY)


@pytest.fixture
def own_session_ids():
    """Each AppTest a session of its own for Streamlit's session-scoped caches
    (tests/support/apptest.py: distinct_session_ids)."""
    pytest.importorskip("streamlit")
    from tests.support.apptest import distinct_session_ids

    with distinct_session_ids():
        yield


@pytest.fixture
def app(monkeypatch):
    """The studio in AppTest (tests/support/apptest.py: one entry script, one timeout):
    ``app(page=None, *, samples=None, run=True, run_folder=None, **query) -> AppTest``.
    ``samples`` points the sidebar's sample list at a folder of the test's own files;
    ``run_folder`` opens a run folder as the sidebar's source."""
    pytest.importorskip("streamlit")
    from tests.support.apptest import open_app

    def make(page: str | None = None, *, samples=None, run: bool = True, **query: str):
        if samples is not None:
            from ui.core import state

            monkeypatch.setattr(state, "SAMPLES_DIR", samples)
        return open_app(page, run=run, **query)

    return make
