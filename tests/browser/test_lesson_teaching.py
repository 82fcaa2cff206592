"""Browser test: the Lesson as a teacher uses it: a link to a section lands on it, the keyboard
never answers a question by itself, and the projector's width breaks no number across lines and
hides no column behind a sideways scroll (every question answered, so every table is drawn)."""

from __future__ import annotations

import pytest

from devtools.apprunner import run_no, wait_ready

TIMEOUT_MS = 90_000

pytestmark = pytest.mark.browser


def _open(page, url: str) -> None:
    page.goto(url)
    wait_ready(page, "Lesson", TIMEOUT_MS)


def test_a_link_to_section_8_lands_on_section_8(app_url, page):
    page.set_viewport_size({"width": 1024, "height": 768})
    _open(page, f"{app_url}/lesson?lesson_start=worked+example#8-the-shortest-path-foil")
    head = page.locator('[id="8-the-shortest-path-foil"]')
    page.screenshot(path="test-artifacts/lesson-hash-link.png")
    page.wait_for_function(
        """() => { const h = document.getElementById('8-the-shortest-path-foil');
                   if (!h) return false; const t = h.getBoundingClientRect().top;
                   return t >= -5 && t < 200; }""", timeout=TIMEOUT_MS)
    assert "8 · The shortest-path foil" in head.inner_text()
    assert "lesson_part=7-8" in page.url  # the part that holds section 8 was opened for it
    seven = page.locator('[id="7-finite-depth"]').bounding_box()
    assert seven is None or seven["y"] + seven["height"] < 0  # section 7 is above the screen


def test_next_part_lands_on_its_first_section(app_url, page):
    """The Lesson opens on its first part; the button under it draws the next part and scrolls its
    first header to the top (the page would otherwise stay scrolled down where the button was)."""
    page.set_viewport_size({"width": 1024, "height": 768})
    _open(page, f"{app_url}/lesson?lesson_start=worked+example")
    assert page.locator('[id="3-anchors"]').count() == 0
    button = page.locator(".st-key-lesson_part_next button")
    button.scroll_into_view_if_needed()
    n = run_no(page)
    button.click()
    wait_ready(page, "Lesson", TIMEOUT_MS, after_run=n)
    page.wait_for_function(
        """() => { const h = document.getElementById('3-anchors');
                   if (!h) return false; const t = h.getBoundingClientRect().top;
                   return t >= -5 && t < 200; }""", timeout=TIMEOUT_MS)
    assert "lesson_part=3-6" in page.url
    assert page.locator('[id="1-the-group"]').count() == 0
    page.screenshot(path="test-artifacts/lesson-next-part.png")


def test_arrow_keys_do_not_answer_and_numbers_stay_on_one_line(app_url, page):
    page.set_viewport_size({"width": 1024, "height": 768})
    _open(page, f"{app_url}/lesson?lesson_start=worked+example&lesson_part=all")
    box = page.locator('[class*="st-key-lesson_pred_k_"]').first
    box.locator("button", has_text="rise").first.focus()
    page.keyboard.press("ArrowRight")  # pills move the focus with the arrows; they never choose
    page.keyboard.press("ArrowRight")
    # the focused control shows a ring (ui.lesson.page: 3 px, #1f5fbf)
    ring = page.evaluate("() => { const s = getComputedStyle(document.activeElement); "
                         "return [s.outlineStyle, parseFloat(s.outlineWidth)]; }")
    assert ring[0] != "none" and ring[1] >= 2, ring
    wait_ready(page, "Lesson", TIMEOUT_MS)
    assert "Answer the question above to reveal the closure's numbers." in page.inner_text("[data-testid=stMain]")
    assert "ls=" not in page.url.replace("lesson_part=all", "")  # an answer would be in the address (ui.lesson.state.write_url)
    # every number cell of every table sits on one line at 1024 px; headers wrap between words only
    broken = page.evaluate("""() => [...document.querySelectorAll('.crbc-table td.num')]
        .filter(td => td.getClientRects().length && td.getBoundingClientRect().height > 30)
        .map(td => td.innerText).slice(0, 5)""")
    assert broken == []
    th = page.evaluate("""() => { const s = getComputedStyle(document.querySelector('.crbc-table th'));
        return [s.wordBreak, s.overflowWrap]; }""")
    assert th == ["normal", "normal"], th


#: tables whose content is wider than their box (a sideways scroll) and buttons whose label is cut
CLIPPED = """() => [...document.querySelectorAll('[data-testid=stMain] .crbc-table-wrap')]
    .filter(w => w.getClientRects().length && w.scrollWidth > w.clientWidth + 1)
    .map(w => [...w.querySelectorAll('th')].map(t => t.innerText).join(' | ').slice(0, 120))"""
CUT = """() => [...document.querySelectorAll('[data-testid=stMain] button')]
    .filter(b => b.getClientRects().length && [b, ...b.querySelectorAll('div, p')]
        .some(e => e.scrollWidth > e.clientWidth + 1))
    .map(b => b.innerText.trim())"""


def _answer_every_question(page) -> list[str]:
    """Click the first option of every predict-first question on the page (each answer reveals
    more tables), until none is left unanswered; returns the questions' keys."""
    done: list[str] = []
    for _ in range(12):
        keys = page.evaluate("""() => [...document.querySelectorAll('[class*="st-key-lesson_pred_"]')]
            .map(e => [...e.classList].find(c => c.startsWith('st-key-')))""")
        todo = [k for k in keys if k not in done]
        if not todo:
            return done
        box = page.locator("." + todo[0]).first
        box.scroll_into_view_if_needed()
        n = run_no(page)
        box.locator("button").first.click()
        wait_ready(page, "Lesson", TIMEOUT_MS, after_run=n)
        done.append(todo[0])
    return done


@pytest.mark.parametrize("start", ["worked+example", "rare+route"])
def test_at_1024_px_no_table_scrolls_sideways_and_no_button_is_cut(app_url, page, start):
    page.set_viewport_size({"width": 1024, "height": 768})
    _open(page, f"{app_url}/lesson?lesson_start={start}&lesson_part=all")
    answered = _answer_every_question(page)
    assert len(answered) >= 3, answered  # depth, foil, backups side by side (and luck, with gymnasium)
    page.screenshot(path=f"test-artifacts/lesson-1024-{start.replace('+', '-')}.png", full_page=True)
    assert page.evaluate(CLIPPED) == []
    assert page.evaluate(CUT) == []
    assert page.locator("[data-testid=stSidebar]").bounding_box()["width"] <= 240
    ring = page.evaluate("""() => document.querySelector('.st-key-lesson_start [role=radiogroup] label > div > div')
        .getBoundingClientRect().width""")
    assert ring >= 18, ring  # the radio circles a projector's pointer can hit
    page.emulate_media(media="print")  # printed, the page leaves the sidebar out
    assert not page.locator("[data-testid=stSidebar]").is_visible()
    page.emulate_media(media="screen")


def _slider_value(page, key: str) -> int:
    return int(page.locator(f".st-key-{key} input[type=range]").first.evaluate("e => e.value"))


def _press_on_slider(page, key: str, times: int) -> None:
    """Move the slider ``key`` right by ``times`` with the keyboard, as a reader would, and wait
    for the run it starts."""
    thumb = page.locator(f".st-key-{key} input[type=range]").first
    thumb.scroll_into_view_if_needed()
    thumb.focus()
    n = run_no(page)
    for _ in range(times):
        page.keyboard.press("ArrowRight")
    wait_ready(page, "Lesson", TIMEOUT_MS, after_run=n)


def _shared_k(page) -> tuple[int | None, int | None]:
    from urllib.parse import parse_qs, urlparse

    from crbc.explain.lesson_share import decode

    raw = parse_qs(urlparse(page.url).query).get("ls", [None])[0]
    share = decode(raw) if raw else None
    return (share.k, share.k_max) if share else (None, None)


def test_k_reaches_the_link_and_a_new_deepest_k_keeps_it(app_url, page):
    _open(page, f"{app_url}/lesson?lesson_start=worked+example&lesson_part=7-8")
    _press_on_slider(page, "lesson_K", 3)
    page.wait_for_function("() => new URLSearchParams(location.search).has('ls')", timeout=TIMEOUT_MS)
    assert _slider_value(page, "lesson_K") == 3
    assert _shared_k(page) == (3, None)  # only the K slider moved: its K is in the address ...
    n = run_no(page)
    page.locator(".st-key-lesson_share_open summary").click()  # the link's box is folded
    wait_ready(page, "Lesson", TIMEOUT_MS, after_run=n)
    link = page.locator("[data-testid=stMain] [data-testid=stCode]").first.inner_text()
    assert page.url.split("ls=")[1].split("&")[0] in link  # ... and in the link shown at the top
    _press_on_slider(page, "lesson_kmax", 1)
    assert _slider_value(page, "lesson_kmax") == 7
    assert _slider_value(page, "lesson_K") == 3  # a new deepest K keeps the K shown
    page.wait_for_function("() => location.search.length > 0", timeout=TIMEOUT_MS)
    assert _shared_k(page) == (3, 7)
