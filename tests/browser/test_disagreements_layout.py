"""Headless Chromium: Disagreements at 1140 px with WebShop-like long actions (a search of 100
characters, an item id of 80 without a space) fits its page: no row of the anchors' or steps'
tables pushes it sideways (issue 55.5: 1,629 px of content in 840). Screenshot:
test-artifacts/disagreements-webshop-1140.png."""

from __future__ import annotations

import pytest

from devtools.apprunner import run_no, wait_ready
from tests.support.webshop_upload import upload_webshop_long

pytestmark = [pytest.mark.browser, pytest.mark.slow]


def test_disagreements_with_long_actions_fit_at_1140_px(app_url, page, tmp_path, artifacts_dir):
    upload_webshop_long(page, app_url, tmp_path)
    wait_ready(page, "Rollouts", 180_000)
    for attempt in range(4):  # a click that lands while the upload's rerun redraws the sidebar is lost
        n = run_no(page)
        page.locator("[data-testid=stSidebarNavLink]", has_text="Disagreements").click()
        try:
            wait_ready(page, "Disagreements", 60_000, after_run=n)
            break
        except Exception:  # playwright's TimeoutError: click again
            if attempt == 3:
                raise
    page.wait_for_function("() => document.querySelectorAll('.crbc-grid-row').length > 2", timeout=120_000)
    page.screenshot(path=str(artifacts_dir / "disagreements-webshop-1140.png"), full_page=True)
    over = page.evaluate("""() => { const m = document.querySelector('[data-testid=stMain]');
        const right = m.getBoundingClientRect().right + 2;
        return [document.documentElement.scrollWidth, m.scrollWidth, m.clientWidth,
                [...m.querySelectorAll('.crbc-grid-row, .crbc-dis-bars')].map(e => e.scrollWidth - e.clientWidth)
                  .filter(d => d > 2).length,
                [...m.querySelectorAll('*')].filter(e => e.getBoundingClientRect().right > right)
                  .slice(-4).map(e => e.outerHTML.slice(0, 300))]; }""")
    assert over[0] <= 1140 and over[1] <= over[2] + 2 and over[3] == 0, over
    assert "B09QWERTYUIOP" in page.locator("[data-testid=stMain]").inner_text()  # the long action is shown
