"""Bellman backups asks the sweep only down to its convergence depth (what the page opens on),
and a link asking for more depths still gets every one of them, equal to the full sweep."""

from __future__ import annotations

import numpy as np

from crbc.estimators.closure import depth_sweep
from tests.support.apptest import chosen_group


def _kept_sweeps() -> list:
    """The keys of the depth sweeps in the server's store: (context key, (beta, k_max, tol))."""
    from ui.core import context

    return [key for kind, key in context.shared_entries() if kind == "sweep"]


def test_the_probe_ends_at_convergence_and_a_deeper_link_gets_the_full_sweep(app):
    from crbc.process import merge
    from ui.core import context

    context.clear_shared()
    at = app("pages/backups.py", sample="rare-route.jsonl")
    assert not at.exception
    p = merge([chosen_group(at)])
    full = depth_sweep(p, 0.98, 400)
    conv = full.converged_at(1e-6)
    assert conv is not None and conv < 400
    probes = [k for k in _kept_sweeps() if k[1][1] == 400]
    assert probes and all(k[1][2] is not None for k in probes)  # asked with its tolerance
    deeper = conv + 5
    at2 = app("pages/backups.py", sample="rare-route.jsonl", kmax=str(deeper), K=str(deeper))
    assert not at2.exception
    asked = [k for k in _kept_sweeps() if k[1][1] == deeper]
    assert asked, "the link's depth is computed"
    from ui.core.context import PageContext

    src = at2.session_state["_crbc_source"]
    ctx = PageContext(src, [g.group for g in src.groups].index(chosen_group(at2).group), 0, "crbc", {})
    sw = ctx.sweep(0.98, deeper)
    np.testing.assert_allclose(sw.a_KSA, full.first(deeper).a_KSA)


def test_a_group_too_large_for_its_coverage_says_so_and_builds_none(app, monkeypatch):
    """Evidence coverage holds S x S hop distances and S x R reaches (6 GB and a minute on the
    20,000-anchor random upload of the soak): above ``MAX_CELLS`` the page says why it has no
    coverage chart and the store keeps none; under it the chart is drawn."""
    from crbc.estimators.coverage import coverage_cells
    from crbc.process import merge
    from ui.core import context

    context.clear_shared()
    at = app("pages/backups.py", sample="rare-route.jsonl")
    assert not at.exception
    cells = coverage_cells(merge([chosen_group(at)]))
    assert any(e.proto.id.endswith("cov") for e in at.get("bidi_component"))
    monkeypatch.setattr(context, "COVERAGE_MAX_CELLS", cells - 1)
    context.clear_shared()
    small = app("pages/backups.py", sample="rare-route.jsonl")
    assert not small.exception
    assert not any(e.proto.id.endswith("cov") for e in small.get("bidi_component"))
    assert any("is not drawn for this group" in c.value and f"{cells:,}" in c.value for c in small.caption)
    assert not [key for kind, key in context.shared_entries() if kind == "coverage"]


def test_a_group_above_the_drawing_cap_is_drawn_cut_and_the_page_says_so(app, monkeypatch):
    """A group of more anchors than a drawing shows (crbc.viz.core.graph_layout.MAX_DRAWN): the
    graph draws that many (data-pick nodes) and the caption under it names the cut; at the
    shipped cap the same small group is drawn whole and no caption mentions a cut."""
    import json
    import re

    from crbc.process import merge
    from crbc.viz.core import graph_layout
    from ui.backups import at_depth
    from ui.core import context

    context.clear_shared()
    at = app("pages/backups.py", sample="rare-route.jsonl")
    assert not at.exception
    n = merge([chosen_group(at)]).n_states
    assert not any("The drawing shows" in c.value for c in at.caption)
    cap = n - 3
    monkeypatch.setattr(graph_layout, "MAX_DRAWN", cap)
    monkeypatch.setattr(at_depth, "MAX_DRAWN", cap)
    context.clear_shared()
    cut = app("pages/backups.py", sample="rare-route.jsonl")
    assert not cut.exception
    assert any(f"The drawing shows {cap:,} of the {n:,} anchors" in c.value for c in cut.caption)
    svg = next(json.loads(e.proto.json)["svg"] for e in cut.get("bidi_component") if e.proto.id.endswith("backup_graph"))
    assert len(re.findall(r'<g data-pick="\d+">', svg)) == cap and f"{cap:,} of {n:,} anchors drawn" in svg


def test_the_credit_table_shows_the_largest_gaps_up_to_its_rows_and_says_how_many_it_left(app, monkeypatch):
    """Above TABLE_ROWS (anchor, action) pairs the table keeps the rows with the largest gaps
    (the head of the whole sorted table) and its caption says of how many."""
    from crbc.process import merge
    from ui.core import context

    context.clear_shared()
    at = app("pages/backups.py", sample="rare-route.jsonl")
    assert not at.exception
    pairs = len(merge([chosen_group(at)]).n_sa)
    whole = at.dataframe[0].value
    assert len(whole) == pairs and not any("rows with the largest gaps" in c.value for c in at.caption)
    from ui.backups import at_depth

    rows = pairs - 4
    monkeypatch.setattr(at_depth, "TABLE_ROWS", rows)
    context.clear_shared()
    cut = app("pages/backups.py", sample="rare-route.jsonl")
    assert not cut.exception
    assert cut.dataframe[0].value.reset_index(drop=True).equals(whole.head(rows).reset_index(drop=True))
    assert any(f"the {rows:,} rows with the largest gaps of {pairs:,}" in c.value for c in cut.caption)
