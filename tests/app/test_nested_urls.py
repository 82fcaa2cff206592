"""ui.core.nested_urls: which addresses the static server redirects to the app's root, and
ui.core.widgets.code: a user string as an inline code span that nothing can break out of."""

from __future__ import annotations

from urllib.parse import parse_qs, urlsplit

import pytest
from markdown_it import MarkdownIt

from ui.core.nested_urls import NOT_FOUND_PARAM, redirect_target
from ui.core.widgets import code


@pytest.fixture
def static_dir(tmp_path):
    (tmp_path / "static" / "js").mkdir(parents=True)
    (tmp_path / "static" / "js" / "index.js").write_text("//")
    (tmp_path / "index.html").write_text("<html>")
    return str(tmp_path)


def test_a_nested_address_goes_to_the_root_with_its_query_and_where_it_was(static_dir):
    target = redirect_target(static_dir, "lesson/foo", "", b"beta=0.5&group=a%2Fb")
    parts = urlsplit(target)
    assert parts.path == "/"
    q = parse_qs(parts.query)
    assert q == {"beta": ["0.5"], "group": ["a/b"], NOT_FOUND_PARAM: ["/lesson/foo"]}


def test_a_root_path_is_kept_and_an_old_not_found_is_replaced(static_dir):
    target = redirect_target(static_dir, "a/b/c", "/studio/", b"not_found=/x/y")
    assert target.startswith("/studio/?")
    assert parse_qs(urlsplit(target).query) == {NOT_FOUND_PARAM: ["/a/b/c"]}


@pytest.mark.parametrize("path", ["", "lesson", "static/js/index.js", "index.html",
                                  "_stcore/health", "x/_stcore/stream"])
def test_files_one_part_addresses_and_the_servers_routes_are_served_as_before(static_dir, path):
    assert redirect_target(static_dir, path, "", b"") is None


def _inline(md: str) -> list:
    return MarkdownIt("commonmark").parseInline(md)[0].children


@pytest.mark.parametrize("raw", ["plain", "a`b", "``", "`edge`", "![x](http://127.0.0.1:9/i.png)",
                                 "<img src=x>", "$23.99 and $40", "*a* _b_", "line\nbreak", " "])
def test_code_is_one_code_span_holding_exactly_the_text(raw):
    tokens = _inline(f"before {code(raw)} after")
    spans = [t for t in tokens if t.type == "code_inline"]
    assert len(spans) == 1 and [t.type for t in tokens] == ["text", "code_inline", "text"]
    assert spans[0].content == raw.replace("\n", " ") or (raw == " " and spans[0].content.strip() == "")


def test_the_default_pages_own_address_goes_to_the_root():
    from ui.core.nested_urls import redirect_target

    assert redirect_target("/nonexistent", "rollouts", "", b"source=upload&group=g") == "/?source=upload&group=g"
    assert redirect_target("/nonexistent", "rollouts", "/app", b"") == "/app/"
    assert redirect_target("/nonexistent", "lesson", "", b"") is None
