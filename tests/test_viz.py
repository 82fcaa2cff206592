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
from crbc.viz import charts, heatmaps
from crbc.viz.board import board_figure
from crbc.viz.graph import anchor_graph_html, external_urls, layout, rollout_edges
from crbc.viz.style import V_SCALE, board_html, is_board, v_color
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


def test_board_figure_draws_one_cell_per_symbol():
    fig = board_figure("#####\n#PX_#\n#_O√#\n#####")
    assert len(fig.layout.shapes) == 20
    assert fig.layout.yaxis.scaleanchor == "x"
    assert board_figure("s0").layout.annotations[0].text == "s0"


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
    from crbc.viz.graph_html import _defang, vis_assets

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
    from crbc.viz.graph_svg import graph_svg
    from crbc.viz.style import HIGHLIGHT, signed_color, v_color

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
    g, p = walk
    c = estimators.compute("crbc", p)
    m = heatmaps.credit_matrix(c, "step_advantage")
    assert m.shape == (16, int(p.rollout_len.max()))
    assert np.isnan(m).sum() == m.size - p.n_steps
    fig = heatmaps.credit_heatmap(c, "step_advantage")
    assert fig.data[0].zmid == 0 and fig.data[0].colorscale is not None
    assert charts.field_N(estimators.compute("grpo", p), "credit") is None


def test_tables(worked):
    g, p = worked
    c = estimators.compute("crbc", p)
    t = charts.rollouts_table(g, c)
    assert list(t["outcome"]) == ["success", "failure", "failure", "failure", "success"]
    assert t["A_G"].iloc[0] == pytest.approx(1.0954, abs=1e-4)
    s = charts.steps_table(g, 0, c)
    assert s["Q(s,a)"].iloc[0] == pytest.approx(0.4802, abs=1e-4)
    sw = depth_sweep(p, 0.98, 4)
    tab = charts.sweep_table(p, sw, 0)
    row = tab[(tab.anchor == "s0") & (tab.action == "a")].iloc[0]
    assert row["Q^(0)"] == pytest.approx(0.9604, abs=1e-4)
    assert row["Q closure"] == pytest.approx(0.4802, abs=1e-4)


def test_convergence_chart_marks_convergence(walk):
    _, p = walk
    sw = depth_sweep(p, 0.9, 200)
    svg = charts.convergence_chart_svg(sw, k=5, tol=1e-6)
    conv = sw.converged_at(1e-6)
    assert conv is not None
    assert f">converged at K = {conv}<" in svg and ">K = 5<" in svg and ">1e-6<" in svg  # log ticks
    # zeros are floored for the log axis, so every K has its point on both error curves
    assert svg.count("<circle") >= 2 * (sw.k_max + 1)


def test_timeline_scatter_and_exports(walk):
    g, p = walk
    all_c = {n: estimators.compute(n, p) for n in estimators.names()}
    tl = charts.timeline_figure(all_c, 3, "step_advantage")
    assert {t.name for t in tl.data} == {estimators.get(n).label for n in estimators.names()}
    sc = charts.scatter_figure(all_c["gigpo"], all_c["crbc"])
    assert sum(len(t.x) for t in sc.data) == p.n_steps
    frame = charts.credits_frame(all_c)
    assert len(frame) == len(all_c) * p.n_steps
    lines = charts.credits_jsonl(all_c["crbc"]).splitlines()
    assert len(lines) == 16
    rec = json.loads(lines[0])
    assert rec["schema"] == "crbc.credit/1" and rec["estimator"] == "crbc"
    html = charts.figure_html(sc)
    assert not re.search(r"<script[^>]+src=", html)  # plotly.js inline, no CDN
    assert len(html) > 1_000_000


def test_viz_never_imports_streamlit():
    import subprocess
    import sys
    code = ("import crbc.viz.graph, crbc.viz.charts, crbc.viz.board, crbc.viz.style, sys; "
            "print('streamlit' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_step_credit_bars_html_signs_and_escaping():
    from crbc.estimators.registry import compute
    from crbc.io.rollouts import Rollout, RolloutGroup, Step
    from crbc.viz.charts import step_credit_bars_html

    g = RolloutGroup("w", tuple(Rollout("w", i, (Step("s0", a0), Step(s1, "<b>")), ok) for i, (a0, s1, ok) in
                                enumerate([("a", "s1", True), ("b", "s1", False), ("b", "s2", False)])))
    c = compute("crbc", [g])
    out = step_credit_bars_html(c, 0, step=1)
    assert out.count('class="crbc-bar"') == 2 and "http" not in out and "<svg" not in out
    assert "&lt;b&gt;" in out and "<b>" not in out          # action names are escaped
    assert "outline:3px solid" in out                       # the current step is outlined
    assert "#2166ac" in out                                 # a positive credit is blue


def test_diagnostics_figure_fast_build_equals_a_validated_build():
    """diagnostics_figure skips plotly's validation (a fast path): its dict must survive
    validation unchanged, and its traces sit on the six panels with the chosen iteration marked."""
    import plotly.graph_objects as go

    from crbc.io.runs import find_runs, read_run
    from crbc.viz.runs import DIAG_PANELS, diagnostics_figure

    runs = [read_run(p) for p in find_runs("sample_rollouts/runs")][:6]
    assert runs
    fig = diagnostics_figure(runs, selected=2)
    fast = json.loads(fig.to_json())
    slow = json.loads(go.Figure(fig.to_dict()).to_json())  # raises on any invalid property
    assert fast == slow
    axes = {(t.get("xaxis", "x"), t.get("yaxis", "y")) for t in fast["data"]}
    assert axes <= {("x" + s, "y" + s) for s in ["", *map(str, range(2, len(DIAG_PANELS) + 1))]}
    assert len(axes) > 1
    assert [s["x0"] for s in fast["layout"]["shapes"]] == [2] * len(DIAG_PANELS)
    # one trace per (estimator, panel) with data, holding every run's line, broken between runs
    ests = {r.estimator for r in runs}
    n_series = sum(any(len(r.series(k)[0]) for r in runs if r.estimator == e) for e in ests for k, _, _ in DIAG_PANELS)
    assert len(fast["data"]) == n_series
    for t in fig.data:
        named = {run for _, run in t.customdata if run}
        assert named == {r.name for r in runs if r.estimator == t.name and len(r.series(DIAG_PANELS[0][0])[0])} \
            or t.xaxis != "x"


@pytest.mark.parametrize("n_panels,cols", [(1, 2), (2, 2), (5, 2), (4, 3)])
def test_credit_heatmaps_grid_equals_plotly_make_subplots(walk, n_panels, cols):
    """credit_heatmaps assembles its grid as JSON without plotly's checks (a fast path): the
    figure must survive validation unchanged, and every panel's axis domains, anchors and title
    must be where plotly's own make_subplots puts them (the slow, obvious twin)."""
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    _, p = walk
    c = estimators.compute("crbc", p)
    names = [f"e{i}" for i in range(n_panels)]
    fig = heatmaps.credit_heatmaps({n: heatmaps.credit_heatmap(c, "step_advantage", zmax=1.0) for n in names},
                                   height_per_panel=300, cols=cols)
    fast = json.loads(fig.to_json())
    assert fast == json.loads(go.Figure(fig.to_dict()).to_json())  # raises on any invalid property
    rows = -(-n_panels // cols)
    ref = make_subplots(rows=rows, cols=min(cols, n_panels), subplot_titles=names,
                        horizontal_spacing=0.12 if min(cols, n_panels) > 1 else 0.02,
                        vertical_spacing=min(0.3, 90 / (300 * rows))).to_dict()["layout"]
    for n in names:
        xa, ya = fast["layout"]["meta"]["panels"][n]
        xk, yk = xa.replace("x", "xaxis"), ya.replace("y", "yaxis")
        assert np.allclose(fast["layout"][xk]["domain"], ref[xk]["domain"])
        assert np.allclose(fast["layout"][yk]["domain"], ref[yk]["domain"])
        assert fast["layout"][xk]["anchor"] == ref[xk]["anchor"] and fast["layout"][yk]["anchor"] == ref[yk]["anchor"]
        mine = next(a for a in fast["layout"]["annotations"] if a["text"] == n)
        theirs = next(a for a in ref["annotations"] if a["text"] == n)
        assert (mine["x"], mine["y"]) == pytest.approx((theirs["x"], theirs["y"]))
        panel = [t for t in fast["data"] if t.get("legendgroup") == n]
        assert [t["name"] for t in panel] == ["credit", "cells"]
        assert all((t["xaxis"], t["yaxis"]) == (xa, ya) for t in panel)
        assert panel[0]["coloraxis"] == "coloraxis" and "zmin" not in panel[0]


def test_evidence_veils_every_cell_that_is_not_sure(walk):
    """A sure step's cell keeps its colour; every other cell carries the white veil (one heatmap
    trace under the clickable cells, no element per cell); each point's hover names its step's
    evidence; the grid keeps the veil's own colours and stays valid."""
    import plotly.graph_objects as go

    from crbc.estimators.bootstrap import credit_intervals
    from crbc.viz.intervals import VEIL, evidence_marks

    _, p = walk
    c = estimators.compute("crbc", p)
    ev = credit_intervals(p, "crbc", n_resamples=20, seed=0).evidence_N
    assert {"sure", "unsure"} <= set(ev.tolist())
    fig = evidence_marks(heatmaps.credit_heatmap(c, "credit"), p, ev)
    assert [t.name for t in fig.data] == ["credit", "evidence", "cells"]
    veil = np.asarray(fig.data[1].z, float)
    for n in range(p.n_steps):
        r, t = p.step_rollout[n], p.step_t[n] - 1
        assert np.isfinite(veil[r, t]) == (ev[n] != "sure")
    assert np.isnan(veil[np.isnan(np.asarray(fig.data[0].z, float))]).all()  # no veil beyond a rollout's end
    cells = fig.data[2]
    assert [ev[int(p.rollout_offsets[int(cd[0])]) + int(cd[1]) - 1] for cd in cells.customdata] == list(cells.text)
    assert "evidence: %{text}" in cells.hovertemplate
    grid = heatmaps.credit_heatmaps({"crbc": fig, "again": evidence_marks(heatmaps.credit_heatmap(c, "credit"), p, ev)})
    veils = [t for t in grid.data if t.name == "evidence"]
    assert len(veils) == 2 and all(v.colorscale[0][1] == VEIL and v.coloraxis is None for v in veils)
    json.loads(go.Figure(grid.to_dict()).to_json())  # valid


def test_sure_only_on_binned_columns_keeps_a_bin_with_a_sure_step():
    """Beyond MAX_COLUMNS steps a cell is a bin of steps; "sure only" keeps a bin when any of its
    steps is sure (checked against a per-step loop) and blanks the others."""
    from crbc.viz.binning import MAX_COLUMNS, bin_width
    from crbc.viz.intervals import evidence_marks

    g = random_walk_group(4, 2 * MAX_COLUMNS + 50, size=9, seed=1)
    p = merge([g])
    c = estimators.compute("crbc", p)
    rng = np.random.default_rng(0)
    ev = rng.choice(np.array(["sure", "unsure", "none"]), size=p.n_steps, p=[0.02, 0.49, 0.49])
    fig = evidence_marks(heatmaps.credit_heatmap(c, "credit"), p, ev, sure_only=True)
    z = np.asarray(fig.data[0].z, float)
    w = bin_width(int(p.rollout_len.max()))
    assert w > 1 and z.shape[1] < int(p.rollout_len.max())
    want = np.zeros(z.shape, dtype=bool)
    for n in range(p.n_steps):
        if ev[n] == "sure":
            want[p.step_rollout[n], (p.step_t[n] - 1) // w] = True
    assert np.array_equal(np.isfinite(z), want & np.isfinite(np.asarray(
        heatmaps.credit_heatmap(c, "credit").data[0].z, float)))


def test_a_heatmap_without_clickable_cells_hovers_the_same_step_from_its_own_matrix(walk):
    """clickable=False drops the per-cell points (their DOM cost) and puts each cell's action and
    anchor in the heatmap's customdata matrix: the same step the point of that cell names."""
    import plotly.graph_objects as go

    _, p = walk
    c = estimators.compute("crbc", p)
    with_points = heatmaps.credit_heatmap(c, "step_advantage")
    bare = heatmaps.credit_heatmap(c, "step_advantage", clickable=False)
    assert [t.name for t in bare.data] == ["credit"]
    hm = bare.data[0]
    assert "customdata[0]" in hm.hovertemplate and hm.hoverinfo is None
    cells = next(t for t in with_points.data if t.name == "cells")
    matrix = np.asarray(hm.customdata, dtype=object)
    for pos, t, action, label, *_ in cells.customdata:
        assert list(matrix[int(pos), int(t) - 1]) == [action, label]
    json.loads(go.Figure(bare.to_dict()).to_json())


def test_a_snapshot_sends_the_same_json_as_its_figure(walk):
    """style.snapshot (the figure cache's JSON-ready copy) must draw exactly what the figure it
    copies draws: same JSON, for figures of numpy arrays, lists, object arrays and subplots."""
    from crbc.io.runs import find_runs, read_run
    from crbc.viz.runs import diagnostics_figure
    from crbc.viz.style import snapshot

    _, p = walk
    c = estimators.compute("crbc", p)
    figs = [heatmaps.credit_heatmap(c, "step_advantage"),
            diagnostics_figure([read_run(r) for r in find_runs("sample_rollouts/runs/sokoban-6x6-prereg")][:4], selected=2)]
    for fig in figs:
        snap = snapshot(fig)
        assert json.loads(snap.to_json()) == json.loads(fig.to_json())
        assert json.loads(snapshot(snap).to_json()) == json.loads(fig.to_json())


def test_layout_is_computed_once_per_process_and_equals_a_fresh_computation(walk):
    """layout() memoises per process (a fast path): the same read-only object twice, equal to
    compute_layout's fresh result."""
    from crbc.viz.layout import compute_layout

    _, p = walk
    first = layout(p)
    assert layout(p) is first
    fresh = compute_layout(p)
    for name in ("x_S", "y_S", "layer_S", "x_B", "y_B"):
        assert np.array_equal(getattr(first, name), getattr(fresh, name))
        assert not getattr(first, name).flags.writeable
