"""The browser marker rule (tests/support/markers.py), checked on every collection by conftest.py:
here on made-up items, so that it is seen to fail."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from tests.support.markers import misplaced_browser_tests
from tests.support.paths import ROOT


@dataclass
class Item:
    """What the rule reads of a collected pytest item."""

    path: Path
    nodeid: str
    markers: set[str] = field(default_factory=set)

    def get_closest_marker(self, name: str):
        return name if name in self.markers else None


MADE_UP = "test_made_up"  # a module that does not exist


def test_a_browser_test_without_the_marker_is_refused():
    path = ROOT / "tests" / "browser" / f"{MADE_UP}.py"
    items = [Item(path, "browser::test_a"), Item(path, "browser::test_b", {"browser", "slow"})]
    assert misplaced_browser_tests(items) == ["browser::test_a: under tests/browser without the browser marker"]


def test_a_browser_marker_elsewhere_is_refused():
    path = ROOT / "tests" / "app" / f"{MADE_UP}.py"
    items = [Item(path, "app::test_c", {"browser"}), Item(path, "app::test_d", {"slow"})]
    assert misplaced_browser_tests(items) == ["app::test_c: marked browser outside tests/browser"]


def test_the_collected_suite_keeps_the_rule(request):
    """This run's own items (conftest.py would have refused the run before any test, so this
    only restates what the hook guarantees, for a reader of the test list)."""
    assert misplaced_browser_tests(request.session.items) == []
