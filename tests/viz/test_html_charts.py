"""The server-built HTML/SVG charts (crbc.viz.disagreement, intervals, backup_tree): what they draw is what the numbers
say, user strings are escaped, and nothing in them reaches the network."""

from __future__ import annotations

import dataclasses
import re

import pytest

import crbc
import crbc.explain.arithmetic as E
from crbc.estimators.bootstrap import pair_table
from crbc.explain import disagreements as compare
from crbc.io.rollouts import Rollout, RolloutGroup, Step
from crbc.viz.backup_tree import backup_tree_svg
from crbc.viz.core.style import HIGHLIGHT, signed_color
from crbc.viz.disagreement import AGREES, DIFFERS, disagreement_bars_html
from crbc.viz.intervals import EVIDENCE_COLORS, interval_panels_html
from devtools.textworld import alfworld_like_group

HOSTILE = "<script>alert(1)</script> & <b>bold</b> \"q\""


def _group(anchor: str = "s0") -> RolloutGroup:
    """s0 -a-> s1 (success), s0 -b-> s1 (failure), s0 -b-> s2 (failure): two actions at s0."""
    return RolloutGroup("w", tuple(Rollout("w", i, (Step(anchor, a0), Step(s1, "go")), ok) for i, (a0, s1, ok) in
                                   enumerate([(HOSTILE, "s1", True), ("b", "s1", False), ("b", "s2", False)])))


def _widths(out: str) -> list[float]:
    return [float(w) for w in re.findall(r"width:([0-9.]+)%;height:100%", out)]


def test_disagreement_bars_are_proportional_coloured_and_escaped():
    groups = [alfworld_like_group(f"g{s}", seed=s) for s in (1, 2)]
    dis = compare.disagreements(groups, "crbc vs shortest_path")
    out = disagreement_bars_html(dis, top=6)
    rows = dis.anchors[:6]
    assert out.count('class="crbc-dis-bar"') == len(rows) >= 2
    widths = _widths(out)
    assert widths[0] == pytest.approx(100.0)
    for w, r in zip(widths, rows, strict=True):
        assert w == pytest.approx(100 * r.disagreement / rows[0].disagreement, abs=0.01)
    colours = re.findall(r"height:100%;background:(#[0-9a-f]+)", out)
    assert colours == [DIFFERS if r.ranks_differ else AGREES for r in rows]
    assert f"{rows[0].group} / " in out  # two groups: each name says its group
    assert "http" not in out and "<script" not in out


def test_disagreement_bars_escape_a_hostile_anchor_and_say_when_empty():
    dis = compare.disagreements(crbc.merge([_group()]), "crbc vs shortest_path")
    dis = dataclasses.replace(dis, anchors=[dataclasses.replace(dis.anchors[0], anchor=HOSTILE)])
    out = disagreement_bars_html(dis, highlight=HOSTILE)
    assert f"background:{HIGHLIGHT}" in out
    assert "<script>" not in out and "<b>bold" not in out and "&lt;script&gt;" in out
    empty = disagreement_bars_html(dataclasses.replace(dis, anchors=[]))
    assert "No anchor to rank" in empty and 'class="crbc-dis-bar"' not in empty


def test_interval_panels_place_each_dot_on_one_scale_and_mark_zero():
    g = alfworld_like_group(seed=3)
    ci = crbc.credit_intervals([g], "crbc", n_resamples=30, method="range")  # Q and Q - V both have one
    cal = crbc.credit_intervals([g], "crbc", n_resamples=30)  # calibrated: Q - V only, Q's shown as a dash
    assert interval_panels_html(pair_table(cal, int(cal.process.sa_state[0])), 0.9).count('class="crbc-interval"')
    p = ci.process
    s = int(p.sa_state[int(p.n_sa.argmax())])
    rows = pair_table(ci, s)
    out = interval_panels_html(rows, 0.9)
    assert out.count('class="crbc-interval"') == len(rows)
    assert "90% interval" in out and "border-left:1px dashed" in out  # the zero line of Q − V
    # every credit's dot sits at (credit - a) / (b - a) on the panel's shared span
    a, b = (float(x) for x in re.findall(r'<span style="position:absolute;(?:left|right):0">([-+0-9.e]+)</span>',
                                         out)[2:4])
    dots = [float(x) for x in re.findall(r"border-radius:50%;left:([-0-9.]+)%", out)]
    credits = [r["credit"] for r in rows]
    assert dots[1::2] == pytest.approx([100 * (c - a) / (b - a) for c in credits], abs=0.6)  # 3 sig. digits
    for r in rows:
        assert EVIDENCE_COLORS[r["evidence"]] in out


def test_interval_panels_escape_actions_and_show_a_dash_for_a_missing_value():
    rows = [{"action": HOSTILE, "n": 3, "q": None, "q_lo": None, "q_hi": None, "credit": 0.2, "lo": 0.1,
             "hi": 0.3, "evidence": "sure"},
            {"action": "b", "n": 2, "q": 0.5, "q_lo": 0.4, "q_hi": 0.6, "credit": float("nan"), "lo": None,
             "hi": None, "evidence": "none"}]
    out = interval_panels_html(rows, 0.8)
    assert "<script>" not in out and "&lt;script&gt;" in out and "80% interval" in out
    assert out.count(">—</div>") == 2  # the missing Q of the first row, the missing Q − V of the second


def test_backup_tree_draws_every_action_and_successor_with_its_weights():
    p = crbc.merge([_group()])
    s0 = [str(t) for t in p.state_anchor].index("s0")
    ar = E.anchor_arithmetic(p, s0, beta=0.9, depth=None)
    svg = backup_tree_svg(ar)
    assert svg.startswith("<svg") and "http" not in svg and "<script" not in svg
    assert "&lt;script&gt;" in svg  # the hostile action's name, escaped
    assert svg.count('data-node="action"') == len(ar.actions) == 2
    assert set(re.findall(r'data-node="successor" data-label="([^"]*)"', svg)) == {
        x.label for a in ar.actions for x in a.successors}
    # the edges leave the anchor (x = 50) once per action, 1 + 6 mu wide, in the actions' order
    widths = [float(w) for w in re.findall(r'<line x1="50.0"[^>]*stroke-width="([0-9.]+)"', svg)]
    assert widths == pytest.approx([1 + 6 * a.mu for a in ar.actions], abs=0.01)
    amax = max(abs(a.a_s) for a in ar.actions)
    fills = re.findall(r'<rect [^>]*fill="([^"]+)"', svg)
    assert fills == [signed_color(a.a_s, amax)[0] for a in ar.actions]


def test_backup_tree_edge_labels_do_not_overlap_where_edges_cross():
    """Two actions that each reach both successors: the edges a->s2 and b->s1 cross, and at the
    same fraction of their length their P labels would be written 10 units apart."""
    g = RolloutGroup("x", tuple(Rollout("x", i, (Step("s0", a0), Step(s1, "go")), ok) for i, (a0, s1, ok) in
                                enumerate([("a", "s1", True), ("a", "s2", False), ("b", "s1", False),
                                           ("b", "s2", True), ("a", "s3", True), ("b", "s3", False)])))
    p = crbc.merge([g])
    ar = E.anchor_arithmetic(p, [str(t) for t in p.state_anchor].index("s0"), beta=0.9, depth=None)
    svg = backup_tree_svg(ar)
    spots = [(float(x), float(y)) for x, y in re.findall(r'<text x="([0-9.]+)" y="([0-9.]+)"[^>]*>P=', svg)]
    assert len(spots) == sum(len(a.successors) for a in ar.actions) == 6
    for i, (x1, y1) in enumerate(spots):
        for x2, y2 in spots[i + 1:]:
            assert abs(x1 - x2) >= 56 or abs(y1 - y2) >= 16, spots
