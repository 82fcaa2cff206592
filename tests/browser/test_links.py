"""Headless Chromium: a choice shared in a link opens the same choice.

A widget bound to the URL with a ``format_func`` writes the option's label into the address
(``?backups_colour=truth+V``), and a person writing a link by hand writes the option's name
(``?backups_colour=error``). Both must open that choice without a notice; an unknown value gets
the notice and the default (ui/core/url.py ``check_choice``).
"""

from __future__ import annotations

import urllib.parse

import pytest

from devtools.apprunner import wait_ready

pytestmark = pytest.mark.browser


def _checked(pg, key: str) -> list[str]:
    """The texts of the checked options of the radio with widget key ``key``."""
    return pg.evaluate("""(key) => [...document.querySelectorAll(`.st-key-${key} input`)]
        .filter((i) => i.checked)
        .map((i) => (i.closest('label') || i.parentElement.parentElement).innerText.trim())""", key)


@pytest.mark.parametrize(("query", "chosen", "notice"), [
    ("backups_colour=error", "error V^(K) − truth", False),
    ("backups_colour=" + urllib.parse.quote_plus("truth V"), "truth V", False),
    ("backups_colour=bogus", "estimate V^(K)", True),
])
def test_a_bound_choice_opens_from_its_name_or_its_label(app_url, page, query, chosen, notice):
    pg = page
    pg.goto(f"{app_url}/backups?{query}")
    wait_ready(pg, "Bellman backups")
    pg.locator(".st-key-backups_colour input").first.wait_for(state="attached")
    assert _checked(pg, "backups_colour") == [chosen]
    text = pg.locator("[data-testid=stMain]").inner_text()
    assert ("Ignored URL parameter" in text) is notice, text[:400]


def test_a_clicked_choice_survives_its_shared_link(app_url, page, second_page):
    pg = page
    pg.goto(f"{app_url}/backups")
    wait_ready(pg, "Bellman backups")
    pg.locator(".st-key-backups_colour label", has_text="error").click()
    pg.wait_for_function("() => location.search.includes('backups_colour=')")
    shared = pg.url
    p2 = second_page
    p2.goto(shared)
    wait_ready(p2, "Bellman backups")
    p2.locator(".st-key-backups_colour input:checked").first.wait_for(state="attached")  # drawn after the title
    assert _checked(p2, "backups_colour") == ["error V^(K) − truth"]
    assert "Ignored URL parameter" not in p2.locator("[data-testid=stMain]").inner_text()


def test_a_200000_character_link_gets_the_notice_not_an_http_error(app_url, page):
    """The server reads a request head of up to 1 MB (ui/core/long_urls.py), so a link with a
    200,000-character Lesson state loads the Lesson, which names the parameter and ignores it."""
    pg = page
    response = pg.goto(f"{app_url}/lesson?ls=" + "A" * 200_000)
    assert response is not None and response.status == 200
    wait_ready(pg, "Lesson")
    text = pg.locator("[data-testid=stMain]").inner_text()
    assert "Ignored URL parameter" in text and "ls" in text, text[:400]
