"""Headless Chromium: a click on a Training runs curve lands on that iteration's groups, and the
page's link reproduces the view in a fresh browser context (issue 55). Screenshots at 1280 and
1140 px go to ``test-artifacts/run-links-*.png``."""

from __future__ import annotations

from urllib.parse import parse_qs, urlparse

import pytest

from devtools.apprunner import run_no, wait_ready
from tests.support.browser_runs import open_drill_down

pytestmark = pytest.mark.browser
TIMEOUT_MS = 90_000
EXPERIMENT = "sokoban-6x6-n64-80"


def _value(pg, key: str) -> str:
    return pg.locator(f".st-key-{key} [role=combobox]").first.input_value()


def _no_exception(pg) -> None:
    exc = pg.locator("[data-testid=stException]")
    assert exc.count() == 0, exc.first.inner_text()[:600]


def test_a_curve_click_opens_the_iterations_groups_and_the_link_reproduces_it(browser, app_url, artifacts_dir):
    ctx = browser.new_context(viewport={"width": 1280, "height": 1000})
    page = ctx.new_page()
    page.goto(f"{app_url}/runs?runs_exp={EXPERIMENT}")
    wait_ready(page, "Training runs", TIMEOUT_MS)
    page.wait_for_selector(".st-key-runs_curve .crbc-svg-view svg [data-pick]", timeout=TIMEOUT_MS)
    _no_exception(page)
    open_drill_down(page, TIMEOUT_MS)
    before = _value(page, "runs_iter")
    target = None
    for el in page.locator(".st-key-runs_curve circle[data-pick]").all():
        it, _, run = el.get_attribute("data-pick").partition("|")
        if run.startswith(f"{EXPERIMENT}/") and run.endswith("-s0") and it not in (before, "80"):
            target = el
            break
    assert target is not None
    target.scroll_into_view_if_needed()
    box = target.bounding_box()
    x, y = box["x"] + box["width"] / 2, box["y"] + box["height"] / 2
    picked = page.evaluate("([x, y]) => document.elementFromPoint(x, y).closest('[data-pick]').getAttribute('data-pick')",
                           [x, y])
    it, _, run = picked.partition("|")
    run = run.rsplit("-s", 1)[0] + "-s0"  # a seed without rollouts opens its experiment's run that saved them
    n = run_no(page)
    page.mouse.click(x, y)
    wait_ready(page, "Training runs", TIMEOUT_MS, after_run=n)
    page.wait_for_function(
        "([run, it]) => document.querySelector('.st-key-runs_run [role=combobox]').value === run"
        " && document.querySelector('.st-key-runs_iter [role=combobox]').value === it", arg=[run, it],
        timeout=30_000)
    _no_exception(page)
    group = _value(page, "runs_group")
    assert page.get_by_text("worst first by success (lowest first)").count() >= 1
    query = parse_qs(urlparse(page.url).query)
    assert query["runs_run"] == [run] and query["runs_iter"] == [it]  # the group: the worst, the default
    page.locator(".st-key-runs_group").scroll_into_view_if_needed()
    page.screenshot(path=str(artifacts_dir / "run-links-click-1280.png"))
    link = page.url
    ctx.close()

    fresh = browser.new_context(viewport={"width": 1140, "height": 1000})  # another browser, the shared link
    pg = fresh.new_page()
    pg.goto(link)
    wait_ready(pg, "Training runs", TIMEOUT_MS)
    pg.wait_for_function(
        "([run, it, g]) => { const v = k => (document.querySelector(`.st-key-${k} [role=combobox]`) || {}).value;"
        " return v('runs_run') === run && v('runs_iter') === it && v('runs_group') === g; }",
        arg=[run, it, group], timeout=TIMEOUT_MS)
    _no_exception(pg)
    pg.locator(".st-key-runs_group").scroll_into_view_if_needed()
    pg.screenshot(path=str(artifacts_dir / "run-links-link-1140.png"))
    fresh.close()


@pytest.mark.parametrize("path", ["/runs", "/lesson", "/"])
def test_a_page_load_asks_nothing_that_is_not_there(browser, app_url, path):
    """No 404 on a page load: the browser used to probe ``/<page>/_stcore/health`` and
    ``/<page>/_stcore/host-config`` before the root (ui/core/nested_urls.py)."""
    ctx = browser.new_context(viewport={"width": 1280, "height": 900})
    page = ctx.new_page()
    failed = []
    page.on("response", lambda r: failed.append((r.status, r.url)) if r.status >= 400 else None)
    page.goto(app_url + path)
    page.wait_for_selector("[data-testid=stMain]", timeout=TIMEOUT_MS)
    page.wait_for_function("() => document.querySelector('.crbc-run')", timeout=TIMEOUT_MS)
    assert failed == []
    ctx.close()
