"""The Inspector's SVG graph (crbc.viz.graph): one pickable node per anchor at the shared
layout's positions, the chosen one ringed, user strings escaped, labels thinned on big groups."""

from __future__ import annotations

import re

import numpy as np

import crbc
from crbc.explain.anchor_names import anchor_labels
from crbc.io.rollouts import Rollout, RolloutGroup, Step
from crbc.viz.core.graph_layout import LABEL_ALL_MAX, layout
from crbc.viz.core.style import HIGHLIGHT, v_color
from crbc.viz.graph import graph_svg
from devtools.synthetic import random_walk_group

HOSTILE = "<img src=x onerror=alert(1)> & </svg>"


def _nodes(svg: str) -> list[tuple[int, float, float, str]]:
    """(state, cx, cy, fill) of every pickable node."""
    return [(int(s), float(x), float(y), fill) for s, x, y, fill in
            re.findall(r'<g data-pick="(\d+)"><title>[^<]*</title><circle cx="([-0-9.]+)" cy="([-0-9.]+)" '
                       r'r="[0-9.]+" fill="([^"]+)"', svg)]


def test_every_anchor_is_a_pickable_node_at_its_layout_position_and_value_colour():
    p = crbc.merge([random_walk_group(8, 12, size=4, seed=1, bias=0.3)])
    v = crbc.compute("crbc", p).value_S
    svg = graph_svg(p, v, selected=2)
    nodes = _nodes(svg)
    lay = layout(p)
    assert [s for s, *_ in nodes] == list(range(p.n_states))
    assert np.allclose([x for _, x, _, _ in nodes], lay.x_S, atol=0.06)
    assert np.allclose([y for _, _, y, _ in nodes], lay.y_S, atol=0.06)
    assert [f for *_, f in nodes] == v_color(v)
    assert len(re.findall(f'stroke="{HIGHLIGHT}"', svg)) == 1  # only the chosen anchor is ringed
    assert "http" not in svg and "<script" not in svg


def test_user_strings_are_escaped_and_labels_thin_out_on_a_big_group():
    g = RolloutGroup("w", tuple(Rollout("w", i, (Step(HOSTILE, "a"), Step("b", "a")), i == 0)
                                for i in range(3)))
    p = crbc.merge([g])
    svg = graph_svg(p, crbc.compute("crbc", p).value_S)
    assert "<img" not in svg and "&lt;img" in svg and svg.count("</svg>") == 1
    big = crbc.merge([random_walk_group(16, 40, size=7, seed=3, bias=0.2)])
    assert big.n_states > LABEL_ALL_MAX
    labels = anchor_labels(big)
    svg = graph_svg(big, crbc.compute("crbc", big).value_S, selected=5)
    drawn = re.findall(r'text-anchor="middle"(?: font-weight="600")?>([^<]*)</text></g>', svg)
    assert drawn[0] == labels[5]  # the chosen anchor keeps its name; the others are in tooltips
    assert len([d for d in drawn if d in labels]) == 1


def test_lesson_graph_has_a_chip_per_rollout_and_a_diamond_per_transition():
    from crbc.viz.lesson_graph import lesson_graph_svg

    g = RolloutGroup("w", tuple(Rollout("w", i, (Step("s0", a), Step("s1", HOSTILE)), ok) for i, (a, ok) in
                                enumerate([("a", True), ("b", False), ("b", False), ("a", False)])))
    p = crbc.merge([g])
    v = crbc.compute("crbc", p).value_S
    d = np.zeros(p.n_states)
    d[0] = 0.25
    svg = lesson_graph_svg(p, v, delta_S=d)
    picks = re.findall(r'data-pick="([a-z]+):(\d+):(\d+)"', svg)
    assert sorted(int(i) for k, i, _ in picks if k == "outcome") == [0, 1, 2, 3]
    # distinct (anchor, action, successor): s0-a->s1, s0-b->s1, s1-HOSTILE->z+, s1-HOSTILE->z-
    edges = [(int(i), int(t)) for k, i, t in picks if k == "edge"]
    assert len(edges) == 4 and (0, 1) in edges and (1, 1) in edges  # each at its first step
    assert sorted(int(s) for k, s, _ in picks if k == "node") == [0, 1]
    assert "<img" not in svg and "&lt;img" in svg
    assert svg.count('class="crbc-moved"') == 1 and "+0.250" in svg  # one ring: the one value that moved
