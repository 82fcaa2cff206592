"""Headless Chromium: what only a browser shows (the Lesson's Play animation, what a
page fetches for user strings, the address bar after navigation).

One app server for the module; each test opens a fresh browser context. Screenshots go to
``test-artifacts/text-and-play-*.png``.
"""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import TimeoutError as PlaywrightTimeout
from playwright.sync_api import expect

from devtools.apprunner import nav_link, run_no, wait_ready
from ui.lesson.depth import K_DEFAULT

pytestmark = pytest.mark.browser
TIMEOUT_MS = 90_000


def _k(pg) -> int:
    return int(pg.locator(".st-key-lesson_K input[type=range]").first.evaluate("e => e.value"))


def _play_label(pg) -> str:
    return pg.locator(".st-key-lesson_play button").first.inner_text().strip()


# every K the slider shows while the timer plays, recorded by the page on each animation frame
# until the button says Play again (and not Pause) after K has reached ``deepest``
PLAYED_TO = """(deepest) => {
  const seen = (window.crbcSeenK = window.crbcSeenK || new Set([0]));
  const k = document.querySelector('.st-key-lesson_K input[type=range]');
  if (k) seen.add(+k.value);
  const b = document.querySelector('.st-key-lesson_play button');
  const label = b ? b.innerText : '';
  return Math.max(...seen) >= deepest && label.includes('Play') && !label.includes('Pause');
}"""


def test_lesson_play_animates_k_to_the_deepest_and_says_play_again(app_url, page, artifacts_dir):
    page.goto(f"{app_url}/lesson?lesson_start=worked+example&lesson_part=7-8")
    wait_ready(page, "Lesson", TIMEOUT_MS)
    page.locator(".st-key-lesson_play button").first.wait_for()
    page.locator(".st-key-lesson_go_rare button").first.wait_for()  # the whole part is drawn
    assert _k(page) == 0 and "Play" in _play_label(page)
    page.locator(".st-key-lesson_play button").first.click()
    try:  # no other interaction: the timer alone moves K
        page.wait_for_function(PLAYED_TO, arg=K_DEFAULT, timeout=40_000)
    except PlaywrightTimeout:  # the assertions below say what was seen
        pass
    seen = set(page.evaluate("() => [...(window.crbcSeenK || [])]"))
    page.screenshot(path=str(artifacts_dir / "text-and-play-play.png"), full_page=True)
    assert max(seen) >= 2, f"K stopped at {max(seen)}: {sorted(seen)}"
    assert max(seen) == K_DEFAULT, sorted(seen)  # the default deepest K
    assert "Play" in _play_label(page) and "Pause" not in _play_label(page), _play_label(page)


# ------------------------------------------------------------------ item 2: user strings are text

class _Listener:
    """An HTTP server on another port of 127.0.0.1 that records every request it gets."""

    def __init__(self) -> None:
        import http.server
        import threading

        hits = self.hits = []

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):  # noqa: N802 (http.server's name)
                hits.append(self.path)
                self.send_response(404)
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


PRICE, EMPH = "$23.99 and $40", "*a*_b_"


def _hostile_file(port: int, path) -> None:
    """A crbc.rollout/1 file whose group, anchor, action and meta carry a Markdown image, an HTML
    image and a link to the listener, LaTeX dollars and Markdown emphasis."""
    import json

    img = f"![m](http://127.0.0.1:{port}/md-%s.png)"
    tag = f"<img src=\"http://127.0.0.1:{port}/html-%s.png\">"
    link = f"<a href=\"http://127.0.0.1:{port}/a-%s\">x</a>"
    group = f"g {img % 'group'} {tag % 'group'} {PRICE} {EMPH}"
    start = f"start {img % 'anchor'} {tag % 'anchor'} {link % 'anchor'} {EMPH}"
    act = f"click[{PRICE}] {img % 'action'} {tag % 'action'} {link % 'action'} {EMPH}"
    rows = [([(start, act), ("mid", "go")], True), ([(start, act), ("mid", "stop")], False),
            ([(start, "other"), ("mid", "go")], True), ([(start, "other"), ("end", "x")], False)]
    with open(path, "w") as f:
        for i, (steps, ok) in enumerate(rows):
            f.write(json.dumps({"schema": "crbc.rollout/1", "group": group, "rollout": i,
                                "steps": [{"anchor": a, "action": b} for a, b in steps],
                                "success": ok, "meta": {"note": f"{img % 'meta'} {PRICE}"}}) + "\n")


PAGES = ["Rollouts", "Anchor graph", "Bellman backups", "Step credits", "Inspector",
         "Disagreements", "Lesson", "Training runs", "Estimator accuracy"]
TITLES = {"Inspector": "Anchor inspector", "Lesson": "Lesson"}


# every image and iframe of the page has finished loading (or failed to): a request the page
# would make for a user's string has been made by then
LOADED = """() => [...document.images].every(i => i.complete) &&
  [...document.querySelectorAll('iframe')].every(f => {
    let d = null;
    try { d = f.contentDocument; } catch (e) { return true; }
    return !d || d.readyState === 'complete';
  })"""


def _settle(pg, title: str, after_run: int | None = None) -> None:
    """The page titled ``title`` completely drawn and everything it loads loaded."""
    wait_ready(pg, title, TIMEOUT_MS, after_run=after_run)
    pg.wait_for_function(LOADED, timeout=TIMEOUT_MS)
    wait_ready(pg, title, TIMEOUT_MS)


def test_user_strings_are_shown_as_text_and_fetch_nothing(app_url, page, artifacts_dir, tmp_path):
    listener = _Listener()
    try:
        f = tmp_path / "hostile.jsonl"
        _hostile_file(listener.port, f)
        page.goto(f"{app_url}/?source=upload")
        _settle(page, "Rollouts")
        page.locator("[data-testid=stSidebar] input[type=file]").first.set_input_files(str(f))
        page.get_by_text("Loaded: upload hostile.jsonl").first.wait_for()
        _settle(page, "Rollouts")
        bad = []
        for name in PAGES:
            title = TITLES.get(name, name)
            n = run_no(page)
            nav_link(page, name).click()
            _settle(page, title, after_run=n)
            if name == "Lesson":  # the lesson on the uploaded group, once that run has finished
                n = run_no(page)
                page.locator(".st-key-lesson_start").get_by_text("sidebar group").click()
                _settle(page, title, after_run=n)
            exc = page.locator("[data-testid=stException]")
            assert exc.count() == 0, f"{name}: {exc.first.inner_text()[:600]}"
            body = page.inner_text("body")
            if name not in ("Training runs", "Estimator accuracy"):  # these show no group
                for s in (PRICE, EMPH):
                    if s not in body:
                        bad.append(f"{name}: {s!r} not shown as it is")
            links = page.locator(f'a[href*="127.0.0.1:{listener.port}"]').count()
            if links:
                bad.append(f"{name}: {links} link(s) made of the user's strings")
            if page.locator("[data-testid=stMain] .katex").count() and name != "Lesson":
                bad.append(f"{name}: typeset LaTeX")
            page.screenshot(path=str(artifacts_dir / f"text-and-play-text-{name.replace(' ', '_')}.png"),
                            full_page=True)
        # a hover holding a link: the Step credits cell click must not throw
        n = run_no(page)
        nav_link(page, "Step credits").click()
        _settle(page, "Step credits", after_run=n)
        cell = page.locator('.st-key-heat_credits [data-pick="0:1"]').first  # r0, its first step (0): the hostile action
        cell.scroll_into_view_if_needed()
        cell.hover()
        tip = cell.locator("title").text_content()
        if f"step 0: click[{PRICE}] ![m](http://127.0.0.1:{listener.port}/md-action.png) <img src=" not in tip:
            bad.append(f"Step credits: the cell's tooltip does not show the action as it is: {tip[:200]!r}")
        n = run_no(page)
        cell.click()  # the step under the heatmaps: a rerun, then whatever it loads
        _settle(page, "Step credits", after_run=n)
        assert not listener.hits, f"the page fetched the user's strings: {listener.hits}"
        assert not bad, bad
    finally:
        listener.close()


# ------------------------------------------------------------------ item 3: the Lesson keeps the URL

def _nudge_beta(pg, title: str) -> None:
    inp = pg.locator(".st-key-beta input[type=range]").first
    if not inp.count():  # the sidebar's Parameters fold is closed: open it, as a user does
        n = run_no(pg)
        pg.locator(".st-key-params_open summary").click()
        wait_ready(pg, title, TIMEOUT_MS, after_run=n)
    n = run_no(pg)
    inp.focus()
    inp.press("ArrowLeft")
    wait_ready(pg, title, TIMEOUT_MS, after_run=n)


def _nav(pg, name: str, title: str) -> None:
    n = run_no(pg)
    nav_link(pg, name).click()
    wait_ready(pg, title, TIMEOUT_MS, after_run=n)


def _url_with(pg, part: str) -> str:
    """The page's URL once it holds ``part`` (the app writes the address after a run)."""
    expect(pg).to_have_url(re.compile(re.escape(part)), timeout=45_000)
    return pg.url


def test_the_lesson_writes_beta_to_the_url_and_keeps_it_when_left(app_url, page):
    page.goto(f"{app_url}/credits?beta=0.9")  # its parameters start expanded
    wait_ready(page, "Step credits", TIMEOUT_MS)
    # the deep link has settled (its routing rerun done, the bound widget holding 0.9) before
    # the user leaves: a click during that rerun is a different story from the one told here
    assert "beta=0.9" in _url_with(page, "beta=0.9"), page.url
    wait_ready(page, "Step credits", TIMEOUT_MS)
    _nav(page, "Lesson", "Lesson")  # coming from another page
    assert "beta=0.9" in _url_with(page, "beta=0.9"), page.url
    _nudge_beta(page, "Lesson")
    assert "beta=0.895" in _url_with(page, "beta=0.895"), page.url
    assert "beta = 0.895" in page.inner_text("[data-testid=stMain]")
    _nav(page, "Step credits", "Step credits")  # leaving the lesson keeps it
    assert "beta=0.895" in _url_with(page, "beta=0.895"), page.url


def test_a_nested_address_opens_the_studio_with_a_not_found_notice(app_url, page):
    page.goto(f"{app_url}/lesson/foo?sample=gridworld.jsonl")  # was a blank white page
    wait_ready(page, "Rollouts", TIMEOUT_MS)
    main = page.inner_text("[data-testid=stMain]")
    assert "There is no page at /lesson/foo" in main, main[:500]
    assert page.locator("[data-testid=stSidebarNav]").count() == 1
    assert "sample=gridworld.jsonl" in _url_with(page, "sample=gridworld") and "not_found" not in page.url, page.url


def test_the_lesson_linear_system_fits_a_projector_screen(app_url, page):
    page.set_viewport_size({"width": 1024, "height": 768})
    page.goto(f"{app_url}/lesson?lesson_start=worked+example&lesson_part=3-6")  # section 5's system
    wait_ready(page, "Lesson", TIMEOUT_MS)
    page.locator(".katex-display").first.wait_for()
    page.wait_for_function("() => document.fonts.status === 'loaded'")  # KaTeX's fonts
    cut = page.evaluate("""() => [...document.querySelectorAll('[data-testid=stMain] .katex-display')]
        .map(d => [d.scrollWidth, d.clientWidth, d.innerText.slice(0, 40)])
        .filter(([wide, shown]) => wide > shown + 4)""")
    assert not cut, cut  # no display scrolls (KaTeX rounds by a pixel or two; it was cut by 110 px after "=> V")
