"""Opening the sidebar's run picker in a browser test: click its box until the list shows (a late
rerun that redraws the sidebar can close it again)."""

from __future__ import annotations


def open_run_list(page, tries: int = 4) -> None:
    """Click the run picker's input until its options are listed (10 s per try)."""
    for _ in range(tries):
        page.locator(".st-key-run input").click()
        try:
            page.get_by_role("option").first.wait_for(timeout=10_000)
            return
        except Exception:  # playwright's TimeoutError: the list closed; open it again
            page.keyboard.press("Escape")
    raise AssertionError(f"the run picker's list did not open in {tries} tries")


def open_drill_down(page, timeout_ms: int = 90_000) -> None:
    """Open Training runs' folded drill-down (ui/runs/drilldown.py) as a reader does, with a click
    on its fold, and wait for the run that draws it."""
    from devtools.apprunner import run_no, wait_ready

    n = run_no(page)
    fold = page.locator(".st-key-runs_drill_open summary")
    fold.scroll_into_view_if_needed()
    fold.click()
    wait_ready(page, "Training runs", timeout_ms, after_run=n)
    page.locator(".st-key-runs_run").wait_for(timeout=timeout_ms)
