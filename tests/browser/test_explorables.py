"""Headless Chromium: the page defects that only show when the page is drawn and clicked,
and the explorable features (the pictures are the controls).

A fresh app server per test (see ``app_url``); each test opens a fresh browser context. Screenshots go to
``test-artifacts/explorables-*.png``.
"""

from __future__ import annotations

import pytest

from devtools.apprunner import run_no, wait_ready
from tests.support.browser_runs import open_drill_down

pytestmark = pytest.mark.browser
TIMEOUT_MS = 90_000


@pytest.fixture
def app_url(fresh_app_url):
    """A fresh server per test. On one server shared by these tests, the later ones sometimes
    waited 90 s for widgets that never appeared (a selectbox's options, a row button) although
    each passes alone: a server-side slow-down after several heavy sessions, left open in the
    issue-12 note, that these tests are not about."""
    return fresh_app_url


def _no_exception(pg) -> None:
    exc = pg.locator("[data-testid=stException]")
    assert exc.count() == 0, exc.first.inner_text()[:600]


def _open_options(pg, key: str):
    """Open the selectbox with widget key ``key`` and return its options' locator. A rerun that
    lands just after the click (the sidebar writing the view into the URL) closes the list again,
    so the click is repeated until the options show."""
    box = pg.locator(f".st-key-{key} [role=combobox]").first
    options = pg.get_by_role("option")
    for _ in range(5):
        box.click()
        try:
            options.first.wait_for(state="visible", timeout=5_000)
            return options
        except Exception:  # closed again by a rerun: click again
            pg.keyboard.press("Escape")
    options.first.wait_for(state="visible", timeout=TIMEOUT_MS)
    return options


def _choose(pg, key: str, option: str) -> None:
    """Pick ``option`` (its exact text) in the selectbox with widget key ``key``."""
    _open_options(pg, key)
    pg.get_by_role("option", name=option, exact=True).first.click()


def _value(pg, key: str) -> str:
    """The text a selectbox shows (Streamlit 1.67 draws it as a react-aria combobox input)."""
    return pg.locator(f".st-key-{key} [role=combobox]").first.input_value()


def _shot(pg, artifacts_dir, name: str) -> None:
    pg.screenshot(path=str(artifacts_dir / f"explorables-{name}.png"), full_page=True)


# ---------------------------------------------------------------- defect 1: Open in ... after choosing a run


@pytest.mark.parametrize("bound", ["runs_run", "runs_metric"])
def test_open_in_another_page_after_choosing_a_run(app_url, page, artifacts_dir, bound):
    # an experiment whose arms ship rollouts (the newest folder, the RewardFlow arm, has one such run)
    page.goto(f"{app_url}/runs?runs_exp=sokoban-6x6-prereg")
    wait_ready(page, "Training runs", TIMEOUT_MS)
    open_drill_down(page, TIMEOUT_MS)
    n = run_no(page)
    if bound == "runs_run":
        before = _value(page, "runs_run")
        _open_options(page, "runs_run").nth(1).click()  # another run than the one shown (with rollouts)
        page.wait_for_function(
            f"() => document.querySelector('.st-key-runs_run [role=combobox]').value !== {before!r}",
            timeout=TIMEOUT_MS)
    else:
        _choose(page, "runs_metric", "mean return")
    wait_ready(page, "Training runs", TIMEOUT_MS, after_run=n)
    n = run_no(page)
    page.locator(".st-key-runs_open_backups button").click()
    wait_ready(page, "Bellman backups", TIMEOUT_MS, after_run=n)
    _no_exception(page)
    assert "/backups" in page.url
    page.wait_for_function(
        r"() => /run \S+ (· )?iteration \d+/.test(document.querySelector('[data-testid=stSidebar]').innerText)",
        timeout=TIMEOUT_MS)  # the sidebar names the run and iteration
    _shot(page, artifacts_dir, f"open-in-{bound}")


# ---------------------------------------------------------------- defect 4: the picker after a flip


def test_lesson_picker_label_follows_a_flip(app_url, page, artifacts_dir):
    page.goto(f"{app_url}/lesson?lesson_start=worked+example")
    wait_ready(page, "Lesson", TIMEOUT_MS)
    assert "success" in _value(page, "lesson_flip_r")
    n = run_no(page)
    page.locator(".st-key-lesson_flip button").click()
    wait_ready(page, "Lesson", TIMEOUT_MS, after_run=n)
    page.wait_for_function(
        "() => document.querySelector('.st-key-lesson_flip_r [role=combobox]').value.includes('failure')",
        timeout=10_000)
    _no_exception(page)
    _shot(page, artifacts_dir, "lesson-flip")


# ---------------------------------------------------------------- defect 7: a big group on the lesson


def test_lesson_on_a_39_anchor_group_fits(app_url, page, artifacts_dir):
    page.goto(f"{app_url}/lesson?sample=sokoban-weak.jsonl&group=sokoban-6x6-v0%2Fseed-15"
              "&lesson_start=sidebar+group&lesson_part=all")
    wait_ready(page, "Lesson", TIMEOUT_MS)
    _no_exception(page)
    height = page.evaluate("() => document.querySelector('[data-testid=stMain]').scrollHeight")
    overflow = page.evaluate("""() => Array.from(document.querySelectorAll('[data-testid=stMain] .katex-display'))
        .filter(e => e.scrollWidth > e.clientWidth + 2).length""")
    _shot(page, artifacts_dir, "lesson-39")
    assert overflow == 0, "a LaTeX display overflows its column"
    assert height < 9000, f"the lesson is {height} px tall on a 39-anchor group"


# ---------------------------------------------------------------- defect 6: a heatmap cell, then the Inspector


def test_heatmap_cell_click_shows_the_step_then_opens_its_anchor_in_the_inspector(app_url, page, artifacts_dir):
    page.goto(f"{app_url}/credits?sample=worked-example.jsonl")
    wait_ready(page, "Step credits", TIMEOUT_MS)
    # the heatmaps are server-built SVG: no plotly.js for them
    cell = page.locator('.st-key-heat_credits [data-panel="crbc"] [data-pick="1:1"]').first
    cell.scroll_into_view_if_needed()
    assert "rollout r1, step 0: " in cell.locator("title").text_content()  # the cell of r1, first step (0)
    _shot(page, artifacts_dir, "heatmaps-svg")
    n = run_no(page)
    cell.click()  # the step under every estimator, under the heatmaps (only their fragment reruns)
    wait_ready(page, "Step credits", TIMEOUT_MS, after_run=n)
    panel = page.locator("[data-testid=stMain]").inner_text()
    assert "Rollout 1 (failure), step 0 (steps 0–1)" in panel, panel[:2000]
    assert "/credits" in page.url
    n = run_no(page)
    page.locator(".st-key-credits_open_inspector button").click()
    wait_ready(page, "Anchor inspector", TIMEOUT_MS, after_run=n)
    _no_exception(page)
    assert "/inspector" in page.url
    main = page.inner_text("[data-testid=stMain]")
    assert "Anchor s0" in main
    _shot(page, artifacts_dir, "heatmap-to-inspector")


# ---------------------------------------------------------------- explorables: the pictures are the controls


def test_lesson_graph_chip_flips_an_outcome_and_shows_before_after(app_url, page, artifacts_dir):
    page.goto(f"{app_url}/lesson?lesson_start=worked+example")
    wait_ready(page, "Lesson", TIMEOUT_MS)
    assert page.locator(".js-plotly-plot").count() == 0  # the lesson's graph is SVG
    graph = "[class*=st-key-lesson_graph_]"
    # the chip of rollout 1 (the second; a failure through s1 in docs/MATH.md section 8)
    page.locator(f'{graph} [data-pick="outcome:1:0"] circle').click()
    page.get_by_text("rollout 1: outcome flipped to success").first.wait_for(timeout=TIMEOUT_MS)
    wait_ready(page, "Lesson", TIMEOUT_MS)
    _no_exception(page)
    main = page.inner_text("[data-testid=stMain]")
    assert "Before → after the last change" in main
    # the flipped rollout's chip now says success, and rings mark the values that moved
    page.wait_for_function(f"""() => {{
      const chip = document.querySelector('{graph} [data-pick="outcome:1:0"]');
      return chip && chip.textContent.includes('1 ✓') && document.querySelector('{graph} .crbc-moved');
    }}""", timeout=TIMEOUT_MS)
    # a diamond opens its step in the edit form (rollout 1's first step: s0 -b-> s1)
    n = run_no(page)
    page.locator(f"{graph} [data-pick^='edge:1:']").first.locator("polygon").click()
    wait_ready(page, "Lesson", TIMEOUT_MS, after_run=n)
    assert _value(page, "lesson_edit_r").startswith("rollout 1")
    _shot(page, artifacts_dir, "lesson-chip-flip")


def test_rollouts_row_click_chooses_the_rollout(app_url, page, artifacts_dir):
    page.goto(f"{app_url}/?sample=worked-example.jsonl")  # Rollouts is the default page
    wait_ready(page, "Rollouts", TIMEOUT_MS)
    page.locator(".st-key-rollouts_row_3 button:visible").first.click()
    page.get_by_text("Rollout 3:").first.wait_for(timeout=TIMEOUT_MS)
    wait_ready(page, "Rollouts", TIMEOUT_MS)
    _no_exception(page)
    assert page.locator(".st-key-rollout [role=combobox]").first.input_value() == "3"
    _shot(page, artifacts_dir, "rollouts-row-click")


def test_inspector_graph_click_chooses_the_anchor(app_url, page, artifacts_dir):
    """The Inspector's graph is server-built SVG (no plotly.js on the page): a click on an anchor
    chooses it, as the list does, and the URL says so."""
    page.goto(f"{app_url}/inspector?sample=worked-example.jsonl")
    wait_ready(page, "Anchor inspector", TIMEOUT_MS)
    assert page.locator(".js-plotly-plot").count() == 0
    for anchor in ("s1", "s2"):
        n = run_no(page)
        page.locator(".st-key-inspect_graph [data-pick]").filter(has_text=anchor).first.locator("circle").click()
        wait_ready(page, "Anchor inspector", TIMEOUT_MS, after_run=n)
        page.wait_for_function(f"() => location.search.includes('inspect={anchor}')", timeout=TIMEOUT_MS)
        # the picker and the heading follow (the combobox's text can land a frame after the URL)
        page.wait_for_function(
            f"() => document.querySelector('.st-key-inspect [role=combobox]').value === '{anchor}'"
            f" && document.querySelector('[data-testid=stMain]').innerText.includes('Anchor {anchor} ·')",
            timeout=20_000)
    _no_exception(page)
    _shot(page, artifacts_dir, "inspector-graph-click")


def test_training_runs_curve_click_opens_that_run_and_iteration(app_url, page, artifacts_dir):
    """The Training runs page loads no plotly.js: its curves and diagnostics are server-built
    SVG. A click on a seed's point (data-pick "iteration|run") opens that run's iteration in
    the drill-down, as the plotly click did."""
    page.goto(f"{app_url}/runs")
    wait_ready(page, "Training runs", TIMEOUT_MS)
    page.wait_for_selector(".st-key-runs_curve .crbc-svg-view svg [data-pick]", timeout=TIMEOUT_MS)
    open_drill_down(page, TIMEOUT_MS)
    page.wait_for_selector(".st-key-runs_diag .crbc-svg-view svg polyline", timeout=TIMEOUT_MS)
    assert page.locator(".js-plotly-plot").count() == 0
    _no_exception(page)
    options = _open_options(page, "runs_iter")
    iterations = set(options.all_inner_texts())
    page.keyboard.press("Escape")
    before = _value(page, "runs_run"), _value(page, "runs_iter")
    # a seed's point at an iteration with rollouts, other than the one shown; the click lands on
    # whatever point is on top there, so the expected pick is read from the same spot first
    target = None
    for el in page.locator(".st-key-runs_curve circle[data-pick]").all():
        it, _, run = el.get_attribute("data-pick").partition("|")
        if it in iterations and (run, it) != before:
            target = el
            break
    assert target is not None
    target.scroll_into_view_if_needed()
    box = target.bounding_box()
    x, y = box["x"] + box["width"] / 2, box["y"] + box["height"] / 2
    picked = page.evaluate("([x, y]) => document.elementFromPoint(x, y).closest('[data-pick]').getAttribute('data-pick')",
                           [x, y])
    it, _, run = picked.partition("|")
    n = run_no(page)
    page.mouse.click(x, y)
    wait_ready(page, "Training runs", TIMEOUT_MS, after_run=n)
    page.wait_for_function(
        "([run, it]) => document.querySelector('.st-key-runs_run [role=combobox]').value === run"
        " && document.querySelector('.st-key-runs_iter [role=combobox]').value === it", arg=[run, it],
        timeout=20_000)
    _no_exception(page)
    _shot(page, artifacts_dir, "runs-curve-click")
