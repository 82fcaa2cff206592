"""crbc.viz: pure figure builders (no Streamlit), offline pyvis HTML, colours, tables."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

from crbc.estimators import registry as estimators
from crbc.estimators.closure import depth_sweep
from crbc.explain.anchor_names import is_short
from crbc.io.rollouts import Rollout, RolloutGroup, Step, read_rollouts
from crbc.process import merge
from crbc.viz.anchor_graph import anchor_graph_html, external_urls
from crbc.viz.backups import convergence_chart_svg, sweep_table
from crbc.viz.board import board_html, is_board
from crbc.viz.core.cells import step_matrix
from crbc.viz.core.credits import field_N
from crbc.viz.core.graph_layout import layout, rollout_edges
from crbc.viz.core.style import V_SCALE, v_color
from crbc.viz.downloads import credit_table, credits_jsonl
from crbc.viz.heatmap import credit_matrix, shared_range
from crbc.viz.rollout import rollouts_table, steps_table, timeline_chart_svg
from crbc.viz.scatter import scatter_chart_svg
from devtools.synthetic import random_walk_group

WORKED = "sample_rollouts/worked-example.jsonl"


@pytest.fixture(scope="module")
def worked():
    g = read_rollouts(WORKED)
    return g[0], merge(g)


@pytest.fixture(scope="module")
def walk():
    g = random_walk_group(16, 50, size=5, seed=3)
    return g, merge([g])


def test_board_detection_and_html_escapes():
    board = "####\n#P_#\n#_G#\n####"
    assert is_board(board)
    assert not is_board("s0")
    assert not is_board("#P\n#")  # ragged rows
    html = board_html(board)
    assert html.count("<td") == 16
    evil = "<script>alert(1)</script>"
    assert "<script>" not in board_html(evil)
    assert is_short("s0") and not is_short(board)


def test_v_colours_are_the_fixed_scale():
    lo, hi = v_color([0.0, 1.0])
    assert lo != hi
    assert v_color(2.0) == v_color(1.0)  # clipped
    assert V_SCALE == "Viridis"


def test_layout_layers_and_boundaries(worked, walk):
    _, p = worked
    lay = layout(p)
    s0 = p.state_anchor.index("s0")
    assert lay.layer_S[s0] == 0
    assert set(lay.layer_S.tolist()) == {0, 1}
    assert np.all(lay.x_B > lay.x_S.max())  # boundaries on the right
    assert lay.y_B[0] < lay.y_B[1]  # z+ above z-
    _, pw = walk
    l1, l2 = layout(pw), layout(pw)
    assert np.array_equal(l1.x_S, l2.x_S) and np.array_equal(l1.y_S, l2.y_S)  # deterministic


def test_rollout_edges_end_at_their_boundary(worked):
    _, p = worked
    path = rollout_edges(p, 0)
    assert path[-1][2] == p.z_plus
    assert rollout_edges(p, 1)[-1][2] == p.z_minus


def test_pyvis_html_is_offline_fixed_and_escaped():
    evil = "<img src=x onerror=alert(1)>"
    g = RolloutGroup("g", (
        Rollout("g", 0, (Step(evil, "a"), Step("s1", "b")), True),
        Rollout("g", 1, (Step(evil, "c"),), False),
    ))
    p = merge([g])
    page = anchor_graph_html(p, np.array([0.5, 0.9]), highlight_rollout=0)
    assert external_urls(page) == []
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", page)
    assert "cdnjs" not in page and "jsdelivr" not in page
    assert "vis.Network" in page  # vis-network inlined
    assert '"enabled": false' in page.replace("'", '"')  # physics off
    nodes = json.loads(re.search(r"nodes = new vis\.DataSet\((\[.*?\])\);", page, re.S).group(1))
    assert all(n["physics"] is False and "x" in n and "y" in n for n in nodes)
    assert {n["label"] for n in nodes} >= {"z+ success", "z- failure"}
    assert evil not in page  # anchor text only reaches the page JSON-escaped
    assert "textContent" in page  # tooltips are built as text, never innerHTML


def test_pyvis_page_with_linked_assets_is_the_inline_page_with_two_references(walk):
    """The studio's page (vis-network loaded from its own server) is the self-contained page with
    exactly the two inlined blocks replaced by references (slow twin: the inline page)."""
    from crbc.viz.anchor_graph import _defang, vis_assets

    g, p = walk
    v = estimators.compute("crbc", p).value_S
    inline = anchor_graph_html(p, v, highlight_rollout=1)
    linked = anchor_graph_html(p, v, highlight_rollout=1, assets_url="/app/static/")
    files = vis_assets()
    js, css = (files[n].read_text(encoding="utf-8").removesuffix("\n") for n in ("vis-network.min.js", "vis-network.css"))
    expected = (inline.replace(f"<script>{_defang(js)}</script>", '<script src="/app/static/vis-network.min.js"></script>')
                .replace(f"<style>{_defang(css)}</style>", '<link rel="stylesheet" href="/app/static/vis-network.css">'))
    assert expected != inline and linked == expected
    assert len(linked) < len(inline) - 600_000 and external_urls(linked) == []


def test_pyvis_big_graph_labels_only_on_path(walk):
    g, p = walk
    c = estimators.compute("crbc", p)
    page = anchor_graph_html(p, c.value_S, highlight_rollout=2, max_edge_labels=10)
    edges = json.loads(re.search(r"edges = new vis\.DataSet\((\[.*?\])\);", page, re.S).group(1))
    labelled = [e for e in edges if e["label"]]
    assert labelled and len(labelled) < len(edges)
    assert all(e["width"] == 4.0 for e in labelled)


def test_graph_svg_colours_by_value_and_draws_the_path(worked):
    from crbc.viz.core.style import HIGHLIGHT, signed_color, v_color
    from crbc.viz.graph import graph_svg

    _, p = worked
    v = np.array([0.1, 0.5, 0.9])
    svg = graph_svg(p, v, highlight_rollout=1)
    fills = re.findall(r'<g data-pick="\d+"><title>[^<]*</title><circle [^>]*fill="([^"]+)"', svg)
    assert fills == v_color(v)  # the V scale, fixed to [0, 1]
    path = re.search(f'<g stroke="{HIGHLIGHT}"[^>]*>(.*?)</g>', svg).group(1)
    assert path.count("<line") == len([e for e in rollout_edges(p, 1) if e[0] != e[2]])
    signed = graph_svg(p, np.array([-0.2, 0.0, 0.4]), signed=True)
    fills = re.findall(r'<g data-pick="\d+"><title>[^<]*</title><circle [^>]*fill="([^"]+)"', signed)
    assert fills == signed_color(np.array([-0.2, 0.0, 0.4]), 0.4)  # centred on 0


def test_credit_matrix_and_heatmap(walk):
    from crbc.viz.heatmap import credit_fill, credit_heatmaps_svg
    from tests.support.heatmap_cells import panels

    g, p = walk
    c = estimators.compute("crbc", p)
    m = credit_matrix(c, "step_advantage")
    assert m.shape == (16, int(p.rollout_len.max()))
    assert np.isnan(m).sum() == m.size - p.n_steps
    cells = panels(credit_heatmaps_svg({"crbc": c}, "step_advantage"))["crbc"]
    assert len(cells) == p.n_steps  # a cell per step, in the process's step order
    vals = c.step_advantage_N
    z = float(np.abs(vals).max())
    assert [x.fill for x in cells] == credit_fill(vals, z).tolist()  # the diverging scale, centred on 0
    assert credit_fill(np.array([-z, 0.0, z]), z).tolist() == ["#67001f", "#f7f7f7", "#053061"]
    assert field_N(estimators.compute("grpo", p), "credit") is None


def test_tables(worked):
    g, p = worked
    c = estimators.compute("crbc", p)
    t = rollouts_table(g, c)
    assert list(t["outcome"]) == ["success", "failure", "failure", "failure", "success"]
    assert t["A_G"].iloc[0] == pytest.approx(1.0954, abs=1e-4)
    s = steps_table(g, 0, c)
    assert s["Q(s,a)"].iloc[0] == pytest.approx(0.4802, abs=1e-4)
    sw = depth_sweep(p, 0.98, 4)
    tab = sweep_table(p, sw, 0)
    row = tab[(tab.anchor == "s0") & (tab.action == "a")].iloc[0]
    assert row["Q^(0)"] == pytest.approx(0.9604, abs=1e-4)
    assert row["Q closure"] == pytest.approx(0.4802, abs=1e-4)


def test_convergence_chart_marks_convergence(walk):
    _, p = walk
    sw = depth_sweep(p, 0.9, 200)
    svg = convergence_chart_svg(sw, k=5, tol=1e-6)
    conv = sw.converged_at(1e-6)
    assert conv is not None
    assert f">converged at K = {conv}<" in svg and ">K = 5<" in svg and ">1e-6<" in svg  # log ticks
    # zeros are floored for the log axis, so every K has its point on both error curves
    assert svg.count("<circle") >= 2 * (sw.k_max + 1)


def test_timeline_scatter_and_exports(walk):
    g, p = walk
    all_c = {n: estimators.compute(n, p) for n in estimators.names()}
    tl = timeline_chart_svg(all_c, 3, "step_advantage")
    assert all(f">{estimators.get(n).label}<" in tl for n in estimators.names())  # the legend
    sl = all_c["crbc"].rollout_slice(3)
    assert tl.count('stroke="#2a6fdb"') >= 1 and len(range(sl.start, sl.stop)) >= 2
    # with the truth: a dashed line on a right axis, both axes symmetric about 0
    truth = np.linspace(-0.2, 0.4, sl.stop - sl.start)
    tlt = timeline_chart_svg(all_c, 3, "step_advantage", truth)
    assert "truth (A_t, right axis)" in tlt and ">true A_t<" in tlt and 'stroke-dasharray="6 4"' in tlt
    sc = scatter_chart_svg(all_c["gigpo"], all_c["crbc"])
    assert len(re.findall(r'<circle [^>]*fill-opacity="0.6"><title>rollout r', sc)) == p.n_steps  # a dot per step
    n = p.n_steps - 1  # the last step's tooltip names both values
    want = f"step {int(p.step_t[n]) - 1}: GiGPO {all_c['gigpo'].step_advantage_N[n]:+.3f}, CRBC {all_c['crbc'].step_advantage_N[n]:+.3f}"
    assert want in sc
    frame = credit_table(all_c)
    assert len(frame) == len(all_c) * p.n_steps
    lines = credits_jsonl(all_c["crbc"]).splitlines()
    assert len(lines) == 16
    rec = json.loads(lines[0])
    assert rec["schema"] == "crbc.credit/1" and rec["estimator"] == "crbc"


def test_viz_never_imports_streamlit():
    import subprocess
    import sys
    code = ("import importlib, pkgutil, sys, crbc.viz; "
            "[importlib.import_module(m.name) for m in pkgutil.walk_packages(crbc.viz.__path__, 'crbc.viz.')]; "
            "print('streamlit' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_step_credit_bars_html_signs_and_escaping():
    from crbc.estimators.registry import compute
    from crbc.io.rollouts import Rollout, RolloutGroup, Step
    from crbc.viz.rollout import step_credit_bars_html

    g = RolloutGroup("w", tuple(Rollout("w", i, (Step("s0", a0), Step(s1, "<b>")), ok) for i, (a0, s1, ok) in
                                enumerate([("a", "s1", True), ("b", "s1", False), ("b", "s2", False)])))
    c = compute("crbc", [g])
    out = step_credit_bars_html(c, 0, step=1)
    assert out.count('class="crbc-bar"') == 2 and "http" not in out and "<svg" not in out
    assert "&lt;b&gt;" in out and "<b>" not in out          # action names are escaped
    assert "outline:3px solid" in out                       # the current step is outlined
    assert "#2166ac" in out                                 # a positive credit is blue


def test_diagnostics_svg_draws_every_run_in_six_panels_with_the_chosen_iteration():
    """diagnostics_svg: six titled panels, in each one polyline per run that has the diagnostic
    (titled with the run's name, in its estimator's colour), the chosen iteration as a dotted
    orange line at the same x in every panel, one legend of the estimators; no plotly."""
    from crbc.io.runs import find_runs, read_run
    from crbc.viz.core.credits import est_color_at
    from crbc.viz.core.text import esc
    from crbc.viz.run_curves import DIAG_PANELS, diagnostics_svg

    runs = [read_run(p) for p in find_runs("sample_rollouts/runs/sokoban-6x6-prereg")][:6]
    assert runs
    svg = diagnostics_svg(runs, selected=2)
    assert svg.startswith("<svg") and "plotly" not in svg
    titles = re.findall(r'<text class="crbc-panel-title"[^>]*>([^<]*)</text>', svg)
    assert titles == [esc(t) for _, t, _ in DIAG_PANELS]
    panels = svg.split('<g transform="translate(')[1:]
    assert len(panels) == len(DIAG_PANELS)
    ests = list(dict.fromkeys(r.estimator for r in runs))
    xs = set()
    for (key, _, _), panel in zip(DIAG_PANELS, panels, strict=True):
        drawn = re.findall(r'<g class="crbc-series crbc-faint"><title>([^<]*)</title><polyline [^>]*stroke="([^"]+)"',
                           panel)
        assert drawn == [(r.name, est_color_at(r.estimator, ests.index(r.estimator))) for r in runs if len(r.series(key)[0])]
        marks = re.findall(r'<line x1="([-0-9.]+)" x2="([-0-9.]+)" [^>]*stroke="#ff7f0e" stroke-width="2" '
                           r'stroke-dasharray="2 3"/>', panel)
        assert len(marks) == 1 and marks[0][0] == marks[0][1]
        xs.add(marks[0][0])
    assert len(xs) == 1  # the same iteration at the same x in every panel
    legend = svg.rsplit("</g>", 1)[1]
    assert [t for t in re.findall(r">([^<]+)</text>", legend)] == ests
    assert diagnostics_svg([]) == ""


@pytest.mark.parametrize("n_panels,cols", [(1, 2), (2, 2), (5, 2), (4, 3)])
def test_heatmaps_svg_grid_one_scale_and_every_cell_opens_its_step(walk, n_panels, cols):
    """One SVG of every panel: a grid of ``cols`` columns (row-major), one colour bar on the
    shared range, rows labelled with outcome and length, and a cell per step whose pick
    ("i:t") is that step and whose tooltip names its action, anchor and value."""
    from crbc.explain.anchor_names import anchor_labels
    from crbc.viz.heatmap import Panel, credit_fill, heatmaps_svg
    from tests.support.heatmap_cells import panels, parse

    _, p = walk
    rng = np.random.default_rng(n_panels)
    vals = {f"e{i}": rng.normal(size=p.n_steps) * (i + 1) for i in range(n_panels)}
    svg = heatmaps_svg(p, [Panel(n, v) for n, v in vals.items()], zmax=2.0, cols=cols)
    root = parse(svg)
    assert "viewBox" in root.attrib and "xmlns" not in svg
    # a full grid fills the column; fewer panels than columns keep a grid panel's width
    width = root.get("width")
    assert width == "100%" if n_panels >= cols else float(width.rstrip("%")) < 50
    assert svg.count(">−2<") == 1 and svg.count(">+2  credit") == 1  # one colour bar
    spots = [re.search(r"translate\(([\d.]+),([\d.]+)\)", g.get("transform")).groups()
             for g in root.iter("g") if g.get("class") == "crbc-panel"]
    xs, ys = sorted({float(x) for x, _ in spots}), sorted({float(y) for _, y in spots})
    assert len(xs) == min(cols, n_panels) and len(ys) == -(-n_panels // cols)
    assert [(xs.index(float(x)), ys.index(float(y))) for x, y in spots] == \
        [(i % cols, i // cols) for i in range(n_panels)]
    labels = anchor_labels(p)
    got = panels(svg)
    assert list(got) == list(vals)
    for name, cells in got.items():
        assert [x.fill for x in cells] == credit_fill(vals[name], 2.0).tolist()  # clipped at +-2
        for n, cell in enumerate(cells):
            i, t = cell.step
            assert (i, t) == (int(p.step_rollout[n]), int(p.step_t[n]))
            act = p.action_names[int(p.sa_action[p.step_sa[n]])]
            assert cell.title.startswith(f"rollout r{int(p.rollout_index[i])}, step {t - 1}: {act} at "
                                         f"{labels[int(p.step_state[n])]} · value ")
            assert cell.value == pytest.approx(vals[name][n], abs=6e-4)
    # each row says its outcome and length
    rows = ["".join(t.itertext()) for t in root.iter("text") if t.find("tspan") is not None]
    assert rows[:len(p.rollout_len)] == [f"{'✓' if ok else '✗'} r{int(i)} ({int(n)})" for ok, i, n in
                                         zip(p.rollout_success, p.rollout_index, p.rollout_len, strict=True)]
    # not clickable: the same cells and tooltips without data-pick
    bare = heatmaps_svg(p, [Panel(n, v) for n, v in vals.items()], zmax=2.0, cols=cols, pickable=False)
    assert "data-pick" not in bare and bare.count("<title>") == svg.count("<title>")


def test_evidence_washes_out_every_cell_that_is_not_sure(walk):
    """A sure step's cell keeps its colour; every other cell is washed out (its colour mixed with
    white) and its tooltip names its step's evidence; "sure only" blanks those cells instead,
    still clickable."""
    from crbc.estimators.bootstrap import credit_intervals
    from crbc.viz.heatmap import credit_fill, credit_heatmaps_svg
    from tests.support.heatmap_cells import panels

    _, p = walk
    c = estimators.compute("crbc", p)
    ev = credit_intervals(p, "crbc", n_resamples=20, seed=0).evidence_N
    assert {"sure", "unsure"} <= set(ev.tolist())
    z = shared_range([c], "credit")
    cells = panels(credit_heatmaps_svg({"crbc": c}, "credit", zmax=z, evidence={"crbc": ev}))["crbc"]
    assert [x.fill for x in cells] == credit_fill(c.credit_N, z, washed=ev != "sure").tolist()
    words = {"sure": "evidence: sure", "unsure": "evidence: not sure", "none": "evidence: none"}
    assert all(words[e] in x.title for x, e in zip(cells, ev, strict=True))
    blank = panels(credit_heatmaps_svg({"crbc": c}, "credit", zmax=z, evidence={"crbc": ev}, sure_only=True))["crbc"]
    assert [x.fill for x in blank] == np.where(ev == "sure", credit_fill(c.credit_N, z), "#ffffff").tolist()
    assert [x.pick for x in blank] == [x.pick for x in cells]
    assert "washed out" not in credit_heatmaps_svg({"crbc": c}, "credit") and "not sure: blank" in \
        credit_heatmaps_svg({"crbc": c}, "credit", evidence={"crbc": ev}, sure_only=True)


def test_sure_only_on_binned_columns_keeps_a_bin_with_a_sure_step():
    """Beyond MAX_COLUMNS steps a cell is a bin of steps (their mean); "sure only" keeps a bin
    when any of its steps is sure (checked against a per-step loop) and blanks the others; a
    bin's pick is its step of largest |value|."""
    from crbc.viz.core.cells import MAX_COLUMNS, bin_width
    from crbc.viz.heatmap import Panel, heatmaps_svg
    from tests.support.heatmap_cells import panels

    g = random_walk_group(4, 2 * MAX_COLUMNS + 50, size=9, seed=1)
    p = merge([g])
    c = estimators.compute("crbc", p)
    rng = np.random.default_rng(0)
    ev = rng.choice(np.array(["sure", "unsure", "none"]), size=p.n_steps, p=[0.02, 0.49, 0.49])
    svg = heatmaps_svg(p, [Panel("crbc", c.credit_N, ev)], sure_only=True)
    w = bin_width(int(p.rollout_len.max()))
    assert w > 1 and f"step, 0-based ({w} steps per cell: their mean)" in svg
    want = {}
    for n in range(p.n_steps):
        key = (int(p.step_rollout[n]), (int(p.step_t[n]) - 1) // w)
        want[key] = want.get(key, False) or ev[n] == "sure"
    cells = panels(svg)["crbc"]
    assert len(cells) == len(want)
    m = step_matrix(p, c.credit_N)
    for cell in cells:
        i, t = cell.step
        b = (t - 1) // w
        assert (cell.fill != "#ffffff") == want[(i, b)]
        row = m[i, b * w:(b + 1) * w]
        assert abs(m[i, t - 1]) == np.nanmax(np.abs(row))  # the bin's strongest step
        assert cell.value == pytest.approx(np.nanmean(row), abs=6e-4)


def test_layout_is_computed_once_per_process_and_equals_a_fresh_computation(walk):
    """layout() memoises per process (a fast path): the same read-only object twice, equal to
    compute_layout's fresh result."""
    from crbc.viz.core.graph_layout import compute_layout

    _, p = walk
    first = layout(p)
    assert layout(p) is first
    fresh = compute_layout(p)
    for name in ("x_S", "y_S", "layer_S", "x_B", "y_B"):
        assert np.array_equal(getattr(first, name), getattr(fresh, name))
        assert not getattr(first, name).flags.writeable
