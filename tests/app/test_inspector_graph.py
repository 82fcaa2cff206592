"""The Inspector draws the group's graph at any size: above the drawing cap
(crbc.viz.core.graph_layout.MAX_DRAWN) cut like every other drawing, keeping the chosen anchor and
its neighbours, and the drawing says so."""

from __future__ import annotations

import json
import re

from crbc.explain.anchor_names import anchor_labels
from tests.support.apptest import chosen_group


def _graph_svg(at) -> str:
    return next(json.loads(e.proto.json)["svg"] for e in at.get("bidi_component") if e.proto.id.endswith("inspect_graph"))


def test_a_group_above_the_cap_is_drawn_cut_around_the_chosen_anchor(app, monkeypatch):
    from crbc.process import merge
    from crbc.viz.core import graph_layout
    from ui.core import context

    context.clear_shared()
    at = app("pages/inspector.py", sample="sokoban-weak.jsonl")
    p = merge([chosen_group(at)])
    whole = _graph_svg(at)
    assert len(re.findall(r'<g data-pick="\d+">', whole)) == p.n_states
    assert "anchors drawn" not in whole

    cap = p.n_states // 2
    monkeypatch.setattr(graph_layout, "MAX_DRAWN", cap)
    context.clear_shared()
    cut = app("pages/inspector.py", sample="sokoban-weak.jsonl")
    assert not cut.exception
    svg = _graph_svg(cut)
    drawn = {int(s) for s in re.findall(r'<g data-pick="(\d+)">', svg)}
    chosen = anchor_labels(p).index(cut.selectbox(key="inspect").value)
    sa, nxt, _ = p.transitions()
    neighbours = {int(x) for a, x in zip(p.sa_state[sa].tolist(), nxt.tolist(), strict=True) if a == chosen
                  and x < p.n_states} | {int(a) for a, x in zip(p.sa_state[sa].tolist(), nxt.tolist(), strict=True)
                                         if x == chosen}
    assert len(drawn) == cap and f"{cap:,} of {p.n_states:,} anchors drawn" in svg
    assert chosen in drawn and neighbours <= drawn
