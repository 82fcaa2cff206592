"""The studio's "Download this view as a report" in headless Chromium: the downloaded bytes are
the very file ``crbc report`` writes (the button itself: tests/app/test_report_studio.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

import crbc.report
from devtools.apprunner import wait_ready
from tests.support.paths import ROOT

pytestmark = pytest.mark.browser
LABEL = "Download this view as a report"


@pytest.mark.slow
@pytest.mark.parametrize("sample", ["worked-example.jsonl", "sokoban-weak.jsonl"])
def test_the_download_is_the_file_the_command_writes(sample, app_url, page):
    """Step credits of a sample's opening group (for sokoban-weak with its exact truth, which the
    page computed and the download reuses): the downloaded bytes are ``crbc report``'s."""
    page.goto(f"{app_url}/credits?sample={sample}")
    wait_ready(page, "Step credits", 120_000)
    button = page.get_by_role("button", name=LABEL)
    button.scroll_into_view_if_needed()
    with page.expect_download(timeout=120_000) as info:
        button.click()
    got = Path(info.value.path()).read_bytes()
    want = crbc.report.report(ROOT / "sample_rollouts" / sample).encode("utf-8")
    assert got == want
    assert (b'data-panel="truth"' in got) == (sample == "sokoban-weak.jsonl")
