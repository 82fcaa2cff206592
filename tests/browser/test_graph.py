"""The anchor graph page (vis-network HTML) drawn by headless Chromium: readable labels on a 39-anchor
group and the anchor search (issue 12, defect 5)."""

from __future__ import annotations

import pytest

from crbc.estimators import registry as estimators
from crbc.io.rollouts import read_rollouts
from crbc.process import merge
from crbc.viz.anchor_graph import anchor_graph_html

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def graph_page(browser, tmp_path_factory):
    g = next(x for x in read_rollouts("sample_rollouts/sokoban-weak.jsonl") if x.group.endswith("seed-15"))
    p = merge([g])
    c = estimators.compute("crbc", p)
    f = tmp_path_factory.mktemp("graph") / "graph.html"
    f.write_text(anchor_graph_html(p, c.value_S, highlight_rollout=1, height_px=620))
    ctx = browser.new_context(viewport={"width": 1100, "height": 640})
    pg = ctx.new_page()
    errors = []
    pg.on("pageerror", lambda e: errors.append(str(e)))
    pg.goto(f.as_uri())
    pg.wait_for_function("() => document.body.getAttribute('data-graph-ready') === '1'", timeout=30000)
    yield pg, p, errors
    ctx.close()


def test_labels_are_readable_at_the_fitted_zoom(graph_page):
    pg, p, errors = graph_page
    assert not errors
    px = pg.evaluate("""(n_states) => {
      const s = network.getScale();
      return nodes.get().filter(n => n.id < n_states && n.label.trim())
                        .map(n => s * ((n.font && n.font.size) || 14));
    }""", p.n_states)
    assert px, "the chosen path is labelled"
    assert min(px) >= 11.5, f"labels drawn at {min(px):.1f} px"


def test_search_finds_and_selects_an_anchor(graph_page):
    pg, p, errors = graph_page
    target = "s27"
    pg.fill("#crbc-search", target)
    pg.press("#crbc-search", "Enter")
    pg.wait_for_function("() => document.body.getAttribute('data-search-hit') !== null", timeout=5000)
    sel = pg.evaluate("() => network.getSelectedNodes()")
    assert sel == [27]
    assert pg.evaluate("() => nodes.get(27).label") == target  # a found anchor shows its label
    assert "s27" in pg.inner_text("#crbc-search-msg")
    pg.fill("#crbc-search", "no such anchor")
    pg.press("#crbc-search", "Enter")
    assert "no anchor matches" in pg.inner_text("#crbc-search-msg")
    assert not errors
