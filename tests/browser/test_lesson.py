"""Browser test: the lesson's numbers, the two-click path to the inspector, a shared inspector URL.

Runs the real app (``streamlit run app.py`` on a free port of 127.0.0.1) in headless Debian
Chromium through Playwright. Any request to a host other than 127.0.0.1 fails the test.
Screenshots go to ``test-artifacts/``.
"""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from devtools.apprunner import run_no, wait_ready
from tests.support.paths import ROOT

CHROMIUM = "/usr/bin/chromium"
ARTIFACTS = ROOT / "test-artifacts"
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync"]
LOCAL = ("http://127.0.0.1", "ws://127.0.0.1", "data:", "blob:", "about:")
TIMEOUT_MS = 45_000

pytestmark = pytest.mark.browser

if not Path(CHROMIUM).exists():
    if os.environ.get("CI") == "true":
        raise RuntimeError(f"CI=true but {CHROMIUM} is missing: apt-get install -y chromium")
    pytest.skip(f"{CHROMIUM} not found (apt-get install -y chromium); browser tests skipped",
                allow_module_level=True)
playwright_api = pytest.importorskip("playwright.sync_api")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def app_url():
    port = _free_port()
    ARTIFACTS.mkdir(exist_ok=True)
    log = open(ARTIFACTS / "browser-lesson-app.log", "w")
    env = dict(os.environ, STREAMLIT_BROWSER_GATHER_USAGE_STATS="false", HF_HUB_OFFLINE="1")
    proc = subprocess.Popen(
        [sys.executable, "studio.py", "--server.address", "127.0.0.1",
         "--server.port", str(port), "--server.headless", "true", "--browser.gatherUsageStats", "false"],
        cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.time() + 60
        while True:
            try:
                urllib.request.urlopen(f"{base}/_stcore/health", timeout=2)
                break
            except OSError:
                if time.time() > deadline or proc.poll() is not None:
                    pytest.fail(f"the app did not start; see {ARTIFACTS / 'browser-lesson-app.log'}")
                time.sleep(0.5)
        yield base
    finally:
        os.killpg(proc.pid, 15)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, 9)
        log.close()


@pytest.fixture(scope="module")
def browser():
    with playwright_api.sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=FLAGS)
        yield b
        b.close()


@pytest.fixture()
def context(browser):
    """A fresh browser context that records every request leaving 127.0.0.1."""
    outside: list[str] = []
    ctx = browser.new_context(viewport={"width": 1400, "height": 1100})
    ctx.on("request", lambda r: outside.append(r.url) if not r.url.startswith(LOCAL) else None)
    ctx.outside = outside
    yield ctx
    ctx.close()
    assert not outside, f"requests left the machine: {sorted(set(outside))}"


def _main_text(page) -> str:
    return page.inner_text("[data-testid=stMain]")


def _wait_text(page, text: str, timeout: int = TIMEOUT_MS) -> None:
    page.get_by_text(text, exact=False).first.wait_for(state="visible", timeout=timeout)


def _wait_idle(page, timeout: float = 30.0) -> None:
    """Wait until the script run finished (the running indicator is gone for a moment)."""
    deadline = time.time() + timeout
    quiet = 0
    while time.time() < deadline:
        running = page.locator("[data-testid=stStatusWidget]").count() > 0
        quiet = 0 if running else quiet + 1
        if quiet >= 3:
            return
        time.sleep(0.3)


def _choose(page, label: str, option: str) -> None:
    """Pick ``option`` (its exact text) in the selectbox whose label starts with ``label``."""
    box = page.get_by_role("combobox", name=re.compile("^" + re.escape(label))).first
    box.click()
    page.get_by_role("option", name=option, exact=True).first.click()
    _wait_idle(page)


def _url_with(page, *parts: str, timeout: float = 15.0) -> str:
    """The address bar once it holds every one of ``parts`` (the app updates it after a run)."""
    deadline = time.time() + timeout
    while True:
        url = page.evaluate("window.location.href")
        if all(p in url for p in parts) or time.time() > deadline:
            return url
        time.sleep(0.3)


def _shot(page, name: str) -> None:
    page.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=True)


def test_lesson_numbers_match_crbc_md_section_8(app_url, context):
    page = context.new_page()
    page.goto(f"{app_url}/lesson?lesson_start=worked+example")
    _wait_text(page, "8 · The shortest-path foil")
    _wait_text(page, "Continue on the rare-route sample")
    _wait_text(page, "Q^(0)(s0,a) = realised return")  # the K = 0 column can be drawn last
    _wait_idle(page)
    text = _main_text(page)
    # docs/MATH.md section 8, closure column
    assert "Q(s0,a) = 0.98 × (1 × V(s1)) = 0.98 × (1 × 0.4900) = 0.4802" in text
    assert "0.98 × (0.25 × 0.4900 + 0.75 × 0.3267) = 0.3601" in text
    assert "V(s0) = Σ_a mu(a|s0) Q(s0,a) = 0.2 × 0.4802 + 0.8 × 0.3601 = 0.3842" in text
    assert "A(s0,a) = Q - V = 0.4802 - 0.3842 = +0.0960" in text
    # K = 0 column
    assert "Q^(0)(s0,a) = realised return 0.9604" in text
    assert re.search(r"Q\^\(0\)\(s0,b\) = mean of realised returns = .* / 4 = 0\.2401", text.replace("\n", " "))
    # predict first: the closure's verdict on A(s0, a) shows once the reader has answered
    assert "A = +0.5762 at K = 0 but +0.0960 at the closure" not in text
    assert "At K = 0, A(s0, a) = +0.5762. At K = ∞, will it rise or fall?" in text
    page.locator('[class*="st-key-lesson_pred_k_"]').first.get_by_text("fall", exact=True).click()
    _wait_text(page, "Right: action a at s0 has A = +0.5762 at K = 0 but +0.0960 at the closure")
    _wait_idle(page)
    text = _main_text(page)
    for v in ("0.4900", "0.3267", "0.3842"):
        assert v in text
    assert page.locator(".katex").count() > 0  # the linear system is typeset
    _shot(page, "lesson-worked-example")

    # flip rollout 0 (s0 -a-> s1 -c-> z+; the file's ids, as docs/MATH.md numbers them) to a failure: s1 never succeeds any more
    page.get_by_role("button", name="Flip its outcome").click()
    _wait_text(page, "rollout 0: outcome flipped to failure")
    _wait_idle(page)
    text = _main_text(page)
    assert "Q(s0,a) = 0.98 × (1 × V(s1)) = 0.98 × (1 × 0.0000) = 0.0000" in text
    _shot(page, "lesson-flipped")
    page.get_by_role("button", name="Reset the group").click()
    _wait_text(page, "none — this is the original group")
    _wait_idle(page)
    assert "= 0.98 × (1 × 0.4900) = 0.4802" in _main_text(page)


def test_two_clicks_from_a_disagreement_to_its_arithmetic(app_url, context):
    page = context.new_page()
    # click 1 is the navigation entry "Disagreements" (its URL is opened directly here, so the test
    # does not depend on how the sidebar carries the sample across a navigation click)
    page.goto(f"{app_url}/disagreements?sample=worked-example.jsonl")
    _wait_text(page, "Anchors, most disagreement first")
    _wait_idle(page)
    assert "crbc against shortest_path on group worked-example." in _main_text(page)
    _shot(page, "disagreements-worked-example")
    wait_ready(page, "Disagreements", TIMEOUT_MS)  # its script finished: the links are final
    n = run_no(page)
    page.locator("[data-testid=stPageLink]").filter(has_text="Inspect").first.click()  # click 2: Inspect
    wait_ready(page, "Anchor inspector", 2 * TIMEOUT_MS, after_run=n)
    if "Anchor s0 · K = ∞ (closure)" not in _main_text(page):
        _shot(page, "inspector-from-disagreements-failed")
        pytest.fail(f"the Inspector did not open on s0: {page.url}\n{_main_text(page)[:1500]}")
    url = _url_with(page, "/inspector", "inspect_sort=disagreement")
    assert "/inspector" in url and "inspect_sort=disagreement" in url, url
    text = _main_text(page)
    assert "Q(s0,a) = 0.98 × (1 × V(s1)) = 0.98 × (1 × 0.4900) = 0.4802" in text
    assert "A_S(s0,a) = +0.9604" in text
    _shot(page, "inspector-from-disagreements")


def test_a_shared_inspector_url_opens_the_same_view(app_url, browser, context):
    page = context.new_page()
    page.goto(f"{app_url}/inspector?sample=worked-example.jsonl")
    _wait_text(page, "Anchor s0 · K = ∞ (closure)")
    _wait_idle(page)
    _choose(page, "Anchor", "s2")
    _wait_text(page, "Anchor s2 · K = ∞ (closure)")
    # the depth is a slider (0, 1, ..., 64, inf): Home is K = 0
    page.locator(".st-key-inspect_K input[type=range], .st-key-inspect_K [role=slider]").first.focus()
    page.keyboard.press("Home")
    _wait_text(page, "Anchor s2 · K = 0")
    _wait_idle(page)
    view = _main_text(page)
    url = _url_with(page, "inspect=s2", "inspect_K=0", "sample=worked-example.jsonl")
    assert "/inspector" in url and "inspect=s2" in url and "inspect_K=0" in url, url
    assert "Q^(0)(s2,g) = realised return 0.9800 = 0.9800" in view
    _shot(page, "inspector-shared-source")

    other = browser.new_context(viewport={"width": 1400, "height": 1100})
    outside: list[str] = []
    other.on("request", lambda r: outside.append(r.url) if not r.url.startswith(LOCAL) else None)
    try:
        p2 = other.new_page()
        p2.goto(url)
        _wait_text(p2, "Anchor s2 · K = 0")
        lines = [ln for ln in view.splitlines() if ln.startswith(("Q^(0)(s2,", "V^(0)(s2)", "A_S(s2,"))]
        assert len(lines) == 5
        _wait_text(p2, lines[-1])
        _wait_idle(p2)
        shared = _main_text(p2)
        for line in lines:
            assert line in shared, line
        _shot(p2, "inspector-shared-opened")
    finally:
        other.close()
    assert not outside, f"requests left the machine: {sorted(set(outside))}"
