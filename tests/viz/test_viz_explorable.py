"""Figure builders of the explorable views: the graph beyond ~25 anchors, the shared credit scale
with outcome marks, the tolerance label, the inspector at K = 0, the change of V per node and the
evidence-coverage chart."""

from __future__ import annotations

import json
import math
import re

import numpy as np
import pytest

import crbc.explain.arithmetic as E
import crbc.io.run_writer as RW  # noqa: E402
from crbc.estimators import registry as estimators
from crbc.estimators.closure import depth_sweep
from crbc.estimators.coverage import coverage
from crbc.io.rollouts import read_rollouts
from crbc.process import merge
from crbc.viz.anchor_graph import anchor_graph_html
from crbc.viz.backup_tree import backup_tree_svg
from crbc.viz.backups import convergence_chart_svg, coverage_chart_svg
from crbc.viz.core.credits import field_N
from crbc.viz.core.graph_layout import LABEL_ALL_MAX, layout, rollout_edges
from crbc.viz.core.style import NO_VALUE_COLOR, v_color
from crbc.viz.heatmap import shared_range
from devtools.synthetic import random_walk_group

WORKED = "sample_rollouts/worked-example.jsonl"


def _big():
    g = next(x for x in read_rollouts("sample_rollouts/sokoban-weak.jsonl") if x.group.endswith("seed-15"))
    return g, merge([g])


def _pyvis(page: str, what: str) -> list[dict]:
    return json.loads(re.search(rf"{what} = new vis\.DataSet\((\[.*?\])\);", page, re.S).group(1))


# ---------------------------------------------------------------- defect 9: the tolerance label


def _log_gap(y: float, tol: float) -> float:
    return math.inf if y is None or not np.isfinite(y) or y <= 0 else abs(math.log10(y) - math.log10(tol))


def test_tolerance_label_sits_on_its_own_line_not_on_the_bound():
    # beta = 0.5: the Cor. 3 bound crosses the tolerance near the right end of the range shown
    g = random_walk_group(12, 30, size=4, seed=1)
    p = merge([g])
    tol = 1e-6
    probe = depth_sweep(p, 0.5, 80)
    k_max = int(np.flatnonzero(probe.bound_K <= tol)[0])  # the bound meets tol at the right edge
    sw = depth_sweep(p, 0.5, k_max)
    svg = convergence_chart_svg(sw, k=None, tol=tol)
    marks = re.findall(r'y1="([-0-9.]+)" y2="[-0-9.]+" stroke="[^"]+"[^>]*/><text class="crbc-mark" '
                       r'data-x="([-0-9.e]+)" x="[-0-9.]+" y="([-0-9.]+)"[^>]*>tolerance', svg)
    assert len(marks) == 1
    line_y, x, text_y = marks[0]
    assert float(text_y) == pytest.approx(float(line_y) - 4), "on the tolerance line, just above it"
    k = int(float(x))  # the K above which the label sits
    assert 0 <= k <= sw.k_max
    # at least a decade away from every other curve drawn at that K
    for name, y in (("bound", sw.bound_K[k]), ("V", sw.err_v_K[k]), ("A", sw.err_a_K[k])):
        assert _log_gap(y, tol) >= 1.0, f"the tolerance label collides with the {name} curve at K={k}"


# ---------------------------------------------------------------- defect 10: inspector at K = 0


def _successor_fills(svg: str) -> dict[str, str]:
    """label -> fill of each successor node of a backup tree SVG."""
    return dict(re.findall(r'data-node="successor" data-label="([^"]*)" data-fill="([^"]*)"', svg))


def test_backup_tree_at_depth_zero_does_not_colour_successors_as_zero():
    p = merge(read_rollouts(WORKED))
    ar = E.anchor_arithmetic(p, 0, beta=0.98, depth=0)
    colours = _successor_fills(backup_tree_svg(ar))
    assert colours["s1"] == colours["s2"] == NO_VALUE_COLOR
    assert colours["s1"] != v_color(0.0)[0]
    # with a backup (K = 1) the successors are coloured by V^(0) again
    ar1 = E.anchor_arithmetic(p, 0, beta=0.98, depth=1)
    assert _successor_fills(backup_tree_svg(ar1))["s1"] == v_color(ar1.action("a").successors[0].v)[0]


# ---------------------------------------------------------------- defect 6: heatmaps


def test_heatmaps_share_one_symmetric_scale_and_mark_outcomes():
    from crbc.viz.core.style import OUTCOME_COLORS
    from crbc.viz.heatmap import credit_fill, credit_heatmaps_svg
    from tests.support.heatmap_cells import panels

    g = random_walk_group(10, 20, size=4, seed=2, bias=0.4)
    p = merge([g])
    cs = {n: estimators.compute(n, p) for n in ("crbc", "gigpo", "shortest_path")}
    z = shared_range(cs.values(), "step_advantage")
    want = max(float(np.nanmax(np.abs(field_N(c, "step_advantage")))) for c in cs.values())
    assert z == pytest.approx(want)
    svg = credit_heatmaps_svg(cs, "step_advantage", zmax=z)
    assert svg.count(f">+{z:.3g}  A_S (one scale for every panel)<") == 1  # one colour bar
    got = panels(svg)
    for name, c in cs.items():  # every panel on the one range [-z, z]
        assert [x.fill for x in got[name]] == credit_fill(c.step_advantage_N, z).tolist()
    # each row says its outcome
    ticks = re.findall(r'<text [^>]*text-anchor="end"[^>]*><tspan fill="([^"]+)">([✓✗])</tspan> r(\d+) ', svg)
    ticks = ticks[:len(g)]
    assert len(ticks) == len(g)
    for r, (colour, mark, rid) in zip(g.rollouts, ticks, strict=True):
        assert (mark == "✓") == (r.success and not r.truncated) and int(rid) == r.rollout
        assert colour == OUTCOME_COLORS["success" if mark == "✓" else "failure"]
    # every step is a clickable cell that names its rollout (position) and step
    cells = got["crbc"]
    assert len(cells) == p.n_steps
    assert {c_.step for c_ in cells} == {
        (int(r), int(t)) for r, t in zip(p.step_rollout, p.step_t, strict=True)}


# ---------------------------------------------------------------- defect 5: big graphs


def test_big_graph_labels_only_on_path_and_no_parallel_edges():
    g, p = _big()
    assert p.n_states > LABEL_ALL_MAX
    c = estimators.compute("crbc", p)
    page = anchor_graph_html(p, c.value_S, highlight_rollout=1)
    nodes = [n for n in _pyvis(page, "nodes") if n["id"] < p.n_states]
    on_path = {a for a, _, _ in rollout_edges(p, 1)} | {x for _, _, x in rollout_edges(p, 1) if x < p.n_states}
    labelled = {n["id"] for n in nodes if n["label"].strip()}
    assert labelled == on_path
    assert all(n["info"] for n in nodes)  # every anchor still names itself on hover
    edges = _pyvis(page, "edges")
    pairs = [(e["from"], e["to"]) for e in edges]
    assert len(pairs) == len(set(pairs)), "one edge (with one combined label) per pair of nodes"


def test_small_graph_keeps_every_label():
    p = merge(read_rollouts(WORKED))
    page = anchor_graph_html(p, np.zeros(3), highlight_rollout=0)
    assert all(n["label"].strip() for n in _pyvis(page, "nodes"))


def _angle(dx, dy):  # vis-network's self-loop angle: counter-clockwise from +x, screen y down
    return math.atan2(-dy, dx)


def test_self_loops_point_into_the_widest_free_gap():
    g, p = _big()
    c = estimators.compute("crbc", p)
    page = anchor_graph_html(p, c.value_S, highlight_rollout=1)
    nodes = {n["id"]: n for n in _pyvis(page, "nodes")}
    edges = _pyvis(page, "edges")
    loops = [e for e in edges if e["from"] == e["to"]]
    assert loops
    for e in loops:
        s = e["from"]
        ang = e.get("selfReference", {}).get("angle", math.pi / 4)  # vis default: pi/4
        others = []
        for f in edges:
            if f["from"] == f["to"] or s not in (f["from"], f["to"]):
                continue
            o = nodes[f["to"] if f["from"] == s else f["from"]]
            others.append(_angle(o["x"] - nodes[s]["x"], o["y"] - nodes[s]["y"]))
        others.append(-math.pi / 2)  # the node's own label sits below it
        gap = min(abs((ang - o + math.pi) % (2 * math.pi) - math.pi) for o in others)
        assert gap >= math.radians(30), f"self-loop at {s} within {math.degrees(gap):.0f} deg of an edge"


def test_graph_page_has_an_anchor_search_and_readable_labels():
    g, p = _big()
    c = estimators.compute("crbc", p)
    page = anchor_graph_html(p, c.value_S, highlight_rollout=1)
    assert 'id="crbc-search"' in page
    opts = re.findall(r'<option value="([^"]+)">', page)
    assert set(opts) >= {f"s{i}" for i in range(p.n_states)}
    assert "MIN_LABEL_PX" in page  # fonts are rescaled to stay readable at the zoom that fits


def test_layout_is_left_to_right_by_layer():
    _, p = _big()
    lay = layout(p)
    assert np.all(np.diff(np.unique(lay.x_S)) > 0)
    for L in np.unique(lay.layer_S):
        assert np.ptp(lay.x_S[lay.layer_S == L]) == 0
    assert lay.x_B.min() > lay.x_S.max()


def test_svg_graph_labels_only_on_path_when_big_and_draws_change_of_v():
    from crbc.viz.graph import graph_svg

    p = merge([random_walk_group(16, 40, size=7, seed=3, bias=0.2)])  # > 25 anchors, some successes
    assert p.n_states > LABEL_ALL_MAX
    sw = depth_sweep(p, 0.98, 3)
    delta = sw.v_KS[1] - sw.v_KS[0]  # the first round of backup moves some values
    assert (np.abs(delta) > 1e-9).any()
    svg = graph_svg(p, sw.v_KS[1], highlight_rollout=1, delta_S=delta)
    nodes = re.findall(r'<g data-pick="\d+"><title>[^<]*</title><circle [^>]*/></g>', svg)
    assert len(nodes) == p.n_states
    names = re.search(r'<g class="crbc-names"[^>]*>(.*?)</g>', svg).group(1)  # drawn over every circle
    shown = re.findall(r"<text[^>]*>([^<]*)</text>", names)  # the anchors whose name is drawn
    on_path = {a for a, _, _ in rollout_edges(p, 1)}
    assert 0 < len(shown) <= len(on_path) + 1
    rings = re.search(r'<g class="crbc-moved"[^>]*>(.*?)</g>', svg).group(1)
    assert rings.count("<circle") == int((np.abs(delta) > 1e-9).sum())


# ---------------------------------------------------------------- coverage chart


def test_coverage_chart_marks_depth():
    g = random_walk_group(8, 20, size=4, seed=5)
    p = merge([g])
    cov = coverage(p, 15)
    svg = coverage_chart_svg(cov, k=4)
    assert ">K = 4<" in svg and ">100%<" in svg and "mean share of outcomes heard" in svg
    # the mean share's points (the only series with dots) sit at their percentages of the axis
    ys = [float(y) for y in re.findall(r'<circle cx="[-0-9.]+" cy="([-0-9.]+)"', svg)]
    assert len(ys) == cov.k_max + 1
    top, bottom = ys[int(np.argmax(cov.mean_fraction_K))], ys[int(np.argmin(cov.mean_fraction_K))]
    assert top < bottom or cov.mean_fraction_K.max() == cov.mean_fraction_K.min()


# ---------------------------------------------------------------- defect 2: a curve point names its run


def test_every_curve_point_names_its_run_and_iteration(tmp_path):
    """Every point of the curves SVG picks "iteration|run": a seed's point its own run at its
    iteration (x where the iteration is), a mean curve's point its estimator's first run; a
    hostile run name is escaped in the drawing and read back whole."""
    import html

    import crbc.io.runs as R
    from crbc.run_analysis.training_stats import curves
    from crbc.viz.run_curves import curves_chart_svg, metric_label, parse_pick

    groups = read_rollouts(WORKED)
    names = {"grpo-s0": "grpo", "crbc-s0": "crbc", "<b>c|1</b> & 'x'": "crbc"}
    for i, ((name, est), curve) in enumerate(zip(names.items(), ((0.2, 0.3), (0.2, 0.5), (0.1, 0.4)), strict=True)):
        w = RW.RunWriter.create(tmp_path / f"run{i}", {"name": name, "config": {"estimator": est, "seed": i}})
        for it, s in enumerate(curve):
            w.write_rollouts(it, groups)
            w.append_metrics({"iteration": it, "success_rate": s})
    runs = [R.read_run(p) for p in sorted(tmp_path.iterdir())]
    svg = curves_chart_svg(curves(runs, "success_rate"), "success_rate")
    assert "<b>" not in svg and "&lt;b&gt;c|1&lt;/b&gt; &amp; &#x27;x&#x27;" in svg
    seeds = re.findall(r'<circle data-pick="([^"]*)" cx="([-0-9.]+)"', svg)
    assert len(seeds) == 6  # two points per run
    x_of = {}
    for value, cx in seeds:
        it, run = parse_pick(html.unescape(value))
        assert run in names
        x_of.setdefault(it, set()).add(cx)
    assert sorted(x_of) == [0, 1] and all(len(v) == 1 for v in x_of.values())  # one x per iteration
    means = [parse_pick(html.unescape(v)) for v in re.findall(r'<g data-pick="([^"]*)"><title>', svg)]
    assert len(means) == 4 and {run for _, run in means} <= set(names)
    crbc_first = next(r.name for r in runs if r.estimator == "crbc")
    assert {run for _, run in means if run != "grpo-s0"} == {crbc_first}
    assert parse_pick("3|a|b") == (3, "a|b") and parse_pick("x|a") is None and parse_pick("3") is None
    assert metric_label("diag.rank_crbc_gigpo").startswith("diagnostic:")
    assert "_" not in metric_label("eval_success_ci")

