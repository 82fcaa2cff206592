"""The marker rule: every test under tests/browser carries the ``browser`` marker, and no test
elsewhere does, so ``pytest -m "not browser"`` (make test-fast) starts no browser. conftest.py
refuses a run that breaks it."""

from __future__ import annotations

from pathlib import Path

from tests.support.paths import ROOT

BROWSER_DIR = ROOT / "tests" / "browser"


def misplaced_browser_tests(items) -> list[str]:
    """The collected tests that break the marker rule, with the reason."""
    bad = []
    for item in items:
        inside = BROWSER_DIR in Path(item.path).resolve().parents
        marked = item.get_closest_marker("browser") is not None
        if inside and not marked:
            bad.append(f"{item.nodeid}: under tests/browser without the browser marker")
        elif marked and not inside:
            bad.append(f"{item.nodeid}: marked browser outside tests/browser")
    return bad

