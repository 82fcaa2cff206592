"""A shared server in a real browser (issue 46): the hostile anchor_key link in several tabs ends
in one short notice each, an audit is one per person across the tabs of one browser (Streamlit's
XSRF cookie names the person), another person's waits in the queue with its place shown, and
closing the tabs ends the audit nobody waits for, so the next one starts."""

from __future__ import annotations

import time
import urllib.parse

import pytest

from devtools.apprunner import wait_ready

pytestmark = [pytest.mark.browser, pytest.mark.slow]
HOSTILE = "(" * 5000 + ")" * 5000


@pytest.fixture(scope="module")
def runs_root(tmp_path_factory):
    from devtools.textworld import alfworld_like_run

    root = tmp_path_factory.mktemp("shared-runs")
    alfworld_like_run(root / "long", iterations=60, groups=8)  # an audit of some tens of seconds
    return root


@pytest.fixture(scope="module")
def studio_env(runs_root, tmp_path_factory):
    """One audit at a time, and a closed tab's audit ends 3 s after its last poll."""
    return {"CRBC_RUNS_DIRS": str(runs_root), "CRBC_CACHE_DIR": str(tmp_path_factory.mktemp("cache")),
            "CRBC_MAX_JOBS": "1", "CRBC_JOB_HEARTBEAT_S": "3"}


def _main(page) -> str:
    return page.locator("[data-testid=stMain]").inner_text()


def _until(page, text: str, timeout_ms: int = 90_000) -> None:
    page.wait_for_function("(t) => (document.querySelector('[data-testid=stMain]') || {innerText: ''})"
                           ".innerText.includes(t)", arg=text, timeout=timeout_ms, polling=250)


def test_a_hostile_key_link_in_several_tabs_is_a_short_notice_in_each(app_url, browser):
    ctx = browser.new_context(viewport={"width": 1400, "height": 1000})
    try:
        tabs = [ctx.new_page() for _ in range(3)]
        t = time.perf_counter()
        for pg in tabs:
            pg.goto(f"{app_url}/rollouts?anchor_key={urllib.parse.quote(HOSTILE)}")
        for pg in tabs:
            _until(pg, "at most 1,000")
            assert not pg.locator("[data-testid=stException]").count()
            (alert,) = pg.locator("[data-testid=stAlertContentError]").all_inner_texts()
            assert "10,000 characters" in alert and len(alert) < 200
        assert time.perf_counter() - t < 60
    finally:
        ctx.close()


def test_one_audit_per_person_a_queue_for_the_others_and_a_closed_tab_ends_its_audit(app_url, browser, runs_root):
    url = f"{app_url}/runs?source=run&run={urllib.parse.quote(str(runs_root / 'long'))}"
    mine = browser.new_context(viewport={"width": 1400, "height": 1000})
    other = browser.new_context(viewport={"width": 1400, "height": 1000})
    try:
        first, second = mine.new_page(), mine.new_page()
        for pg in (first, second):
            pg.set_default_timeout(90_000)
            pg.goto(url)
            wait_ready(pg, "Training runs")
        first.locator(".st-key-runs_audit_go button").click()
        _until(first, "Auditing every iteration")
        second.locator(".st-key-runs_audit_go button").click()
        _until(second, "another tab of yours")  # the same browser: one audit at a time
        colleague = other.new_page()
        colleague.set_default_timeout(90_000)
        colleague.goto(url)
        wait_ready(colleague, "Training runs")
        colleague.locator(".st-key-runs_audit_go button").click()
        _until(colleague, "Queued: 1 audit(s) ahead of yours")
        mine.close()  # both tabs gone: nobody waits for the first audit
        mine = None
        # it is cancelled (had it finished, the colleague's would be skipped as done already)
        _until(colleague, "Auditing every iteration", timeout_ms=60_000)
    finally:
        if mine is not None:
            mine.close()
        other.close()
