"""Headless Chromium: a recorded run travels whole (issue 48).

record (devtools/textarena_run.py: textarena Sokoban transcripts through verl's ``DataProto`` and
``RunRecorder`` into the documented recipe's ``<experiment>/crbc-run``) -> audit with the board key
(``crbc audit --anchor``) -> the studio (Training runs, the sidebar's key) -> "Download this run
as a report" -> the file opened offline shows the same share of steps at shared anchors as the
sidebar. A run recorded with the key and audited without ``--anchor`` is described with its key,
and setting the same key neither warns nor offers a recompute. The trainer-ranked groups open
Disagreements on "trainer vs crbc". At 1140 px, Rollouts and the Inspector of a group with long
text actions do not scroll sideways. Screenshots: test-artifacts/recorded-*.png.
"""

from __future__ import annotations

import re
import urllib.parse

import pytest

from devtools.apprunner import run_no, wait_ready
from tests.support.webshop_upload import upload_webshop_long

pytest.importorskip("textarena")
pytest.importorskip("verl")
pytestmark = [pytest.mark.browser, pytest.mark.slow]

SHARED = re.compile(r"steps at shared anchors (\d+)%")


@pytest.fixture(scope="module")
def runs_root(tmp_path_factory):
    from crbc.cli.main import main
    from devtools.textarena_run import BOARD, record_run

    root = tmp_path_factory.mktemp("recorded-runs")
    plain = record_run(root / "sokoban-exp" / "crbc-run", iterations=2, groups=4, rollouts=4)
    assert main(["audit", str(plain), "--anchor", BOARD, "--workers", "1"]) == 0
    keyed = record_run(root / "keyed-exp" / "crbc-run", iterations=2, groups=2, rollouts=4, anchor=BOARD)
    assert main(["audit", str(keyed), "--workers", "1"]) == 0  # no --anchor: the anchors carry the key
    return root


@pytest.fixture(scope="module")
def studio_env(runs_root):
    return {"CRBC_RUNS_DIRS": str(runs_root)}


def _text(page, where: str) -> str:
    return page.locator(f"[data-testid={where}]").inner_text()


def _wait_main(page, text: str) -> None:
    """Wait until the page's main part shows ``text`` (the audit's grid and caption draw late)."""
    page.wait_for_function("t => document.querySelector('[data-testid=stMain]').innerText.includes(t)",
                           arg=text, timeout=120_000)


def _runs_url(app_url: str, run, **extra: str) -> str:
    q = {"source": "run", "run": str(run), "runs_kind": "any", **extra}
    return f"{app_url}/runs?{urllib.parse.urlencode(q)}"


def test_record_audit_studio_report_offline_same_share(app_url, page, runs_root, artifacts_dir):
    from devtools.textarena_run import BOARD

    run = runs_root / "sokoban-exp" / "crbc-run"
    page.goto(_runs_url(app_url, run, anchor_key=BOARD, run_iter="1"))
    wait_ready(page, "Training runs", 120_000)
    _wait_main(page, "The trainer's metrics")
    side, main = _text(page, "stSidebar"), _text(page, "stMain")
    assert "Loaded: run sokoban-exp/crbc-run · iteration 1" in side, side[-600:]  # a real name
    assert "computed with the anchor key (?s)(Current Board:" in main, main[:1500]
    assert "Recompute" not in main and "This overview was computed with" not in main
    assert "The trainer's metrics" in main  # verl's names drawn on Training runs
    studio_share = SHARED.search(side).group(1)
    page.screenshot(path=str(artifacts_dir / "recorded-1-runs.png"))
    button = page.get_by_role("button", name="Download this run as a report")
    with page.expect_download(timeout=180_000) as info:
        button.click()
    html = open(info.value.path(), encoding="utf-8").read()
    # the file, opened with no server: every request it made would fail the guarded page
    page.set_content(html)
    line = page.locator(".merge-line").inner_text()
    assert "(?s)(Current Board:" in line and SHARED.search(line).group(1) == studio_share, (line, studio_share)
    assert "anchor key: (?s)(Current Board:" in page.locator("body").inner_text()
    page.screenshot(path=str(artifacts_dir / "recorded-2-report.png"))


def test_trainer_ranked_groups_open_disagreements_on_trainer_vs_crbc(app_url, page, runs_root, artifacts_dir):
    from devtools.textarena_run import BOARD

    page.goto(_runs_url(app_url, runs_root / "sokoban-exp" / "crbc-run", anchor_key=BOARD))
    wait_ready(page, "Training runs", 120_000)
    n = run_no(page)
    page.locator(".st-key-review_open_iter button").click()
    wait_ready(page, "Training runs", after_run=n)
    page.locator(".st-key-review_open_disagreements button").wait_for()
    n = run_no(page)
    page.locator(".st-key-review_open_disagreements button").click()
    wait_ready(page, "Disagreements", 120_000, after_run=n)
    main = _text(page, "stMain")
    assert "trainer against crbc on group" in main, main[:800]  # the comparison "trainer vs crbc"
    assert "mean |trainer's advantage − crbc's A_final| per anchor" in main, main[:800]
    assert "mean |Δ A_S| per anchor" not in main
    page.screenshot(path=str(artifacts_dir / "recorded-3-disagreements.png"))


def test_a_run_recorded_with_the_key_is_described_with_it(app_url, page, runs_root):
    from devtools.textarena_run import BOARD

    run = runs_root / "keyed-exp" / "crbc-run"
    for extra in ({}, {"anchor_key": BOARD}):  # the field empty, then the same key typed in
        page.goto(_runs_url(app_url, run, **extra))
        wait_ready(page, "Training runs", 120_000)
        _wait_main(page, "The trainer's metrics")
        main, side = _text(page, "stMain"), _text(page, "stSidebar")
        assert "computed with the anchor key (?s)(Current Board:" in main, main[:1200]
        assert "exact text" not in main and "Recompute" not in main
        assert "This overview was computed with" not in main
        assert "anchors keyed when the run was recorded" in side, side[-600:]


@pytest.mark.parametrize("where", ["Rollouts", "Inspector"])
def test_long_text_actions_do_not_push_the_page_sideways(where, app_url, page, tmp_path, artifacts_dir):
    upload_webshop_long(page, app_url, tmp_path)
    wait_ready(page, "Rollouts")
    if where == "Inspector":
        n = run_no(page)
        page.locator("[data-testid=stSidebarNavLink]", has_text="Inspector").click()
        wait_ready(page, "Anchor inspector", 180_000, after_run=n)
        page.locator(".st-key-inspect_K").wait_for(timeout=120_000)  # drawn to its depth slider
    fits = """() => { const m = document.querySelector('[data-testid=stMain]');
        return document.documentElement.scrollWidth <= innerWidth && m.scrollWidth <= m.clientWidth + 2; }"""
    try:  # the page settles (its figures and fragments draw after the run's end marker)
        page.wait_for_function(fits, timeout=15_000)
    except Exception:
        pass
    page.screenshot(path=str(artifacts_dir / f"recorded-4-{where.lower()}-1140.png"))
    over = page.evaluate("""() => { const m = document.querySelector('[data-testid=stMain]');
        const right = m.getBoundingClientRect().right + 2;
        return [document.documentElement.scrollWidth, m.scrollWidth, m.clientWidth,
                [...m.querySelectorAll('*')].filter(e => e.getBoundingClientRect().right > right)
                  .slice(-4).map(e => e.outerHTML.slice(0, 300))]; }""")
    assert over[0] <= 1140 and over[1] <= over[2] + 2, over
